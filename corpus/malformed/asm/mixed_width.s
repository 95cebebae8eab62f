r1 += w2
exit
