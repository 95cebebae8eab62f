call bpf_frobnicate#1
exit
