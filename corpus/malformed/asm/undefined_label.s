if r1 > 2 goto done
exit
