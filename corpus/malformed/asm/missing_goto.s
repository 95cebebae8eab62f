if r1 > 2 pc+1
exit
