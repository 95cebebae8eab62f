(bf) r0 = 1
exit
