; a counted loop with a label and a helper call
	r0 = 0
	r1 = 10
loop:
	r0 += r1
	r1 -= 1
	if r1 != 0 goto loop
	call bpf_get_prandom_u32#7
	exit
