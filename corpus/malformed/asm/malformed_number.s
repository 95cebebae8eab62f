r1 += 12abc
exit
