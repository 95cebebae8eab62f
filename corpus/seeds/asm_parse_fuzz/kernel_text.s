   0: (b7) r0 = 0
   1: (18) r1 = map[id:0]
   3: (85) call bpf_map_lookup_elem#1
   4: (15) if r0 == 0x0 goto pc+1
   5: (61) r0 = *(u32 *)(r0 +0)
   6: (95) exit
