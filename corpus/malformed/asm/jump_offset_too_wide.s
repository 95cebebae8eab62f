goto pc+32768
exit
