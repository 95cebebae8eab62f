r0 = *(u128 *)(r1 +0)
exit
