r0 = r15
exit
