goto pc+1
r1 = 0x100000000
exit
