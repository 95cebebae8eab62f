r0 = 1
mov64 r1, 2
exit
