call bpf_map_lookup_elem#2
exit
