*(s32 *)(r10 -4) = r1
exit
