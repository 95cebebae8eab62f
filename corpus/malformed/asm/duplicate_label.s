top:
r0 = 0
top:
exit
