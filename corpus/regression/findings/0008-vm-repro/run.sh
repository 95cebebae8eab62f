#!/usr/bin/env bash
# Finding 0008 on a real kernel: builds a static /init (fa.c) into a one-file initramfs and boots
# VMLINUX under qemu (TCG; never the host kernel). Usage: ./run.sh VMLINUX [N,N,...] [CAPS] (hex;
# default 1,100000001,ffffffff00000001; CAPS = bpf or bpf+perfmon: the loader keeps only those
# capabilities, default root). An oops ends the VM: give one large N per run to see each.
# Kernels: `patchfuzz kernel fetch --kernel 6.12` puts one in ~/.cache/patchfuzz/kernels/6.12/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ $# -ge 1 ]] || { echo "usage: $0 VMLINUX [N,N,...]" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -static -O2 -Wall -I "$here/../../../.." -o "$work/init" "$here/fa.c"
mkdir -p "$work/root/proc" "$work/root/sys" "$work/root/dev"
cp "$work/init" "$work/root/init"
(cd "$work/root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) > "$work/initramfs.cpio"
timeout -k 5 120 qemu-system-x86_64 -accel tcg -cpu max -m 1024 -nographic -nodefaults -serial stdio -no-reboot \
  -kernel "$1" -initrd "$work/initramfs.cpio" \
  -append "console=ttyS0 panic=-1 oops=panic nokaslr${2:+ fa.n=$2}${3:+ fa.caps=$3}" </dev/null || true
