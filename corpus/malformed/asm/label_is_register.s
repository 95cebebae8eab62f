r3:
exit
