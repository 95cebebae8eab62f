r0 = 0 r1
exit
