r0 = 0
r0 =+ 1
exit
