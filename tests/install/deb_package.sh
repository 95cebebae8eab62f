#!/bin/sh
# cpack -G DEB from a build tree, then the package's fields and contents read back with dpkg-deb.
# Usage: deb_package.sh BUILD_DIR WORKDIR
set -eu
build=$1 work=$2
# A sanitizer build is not what one packages (no tcmalloc, other libraries): skipped there.
if [ "${PATCHFUZZ_SANITIZED:-0}" = 1 ]; then echo "skipped: sanitizer build"; exit 77; fi
rm -rf "$work" && mkdir -p "$work"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work" >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/patchfuzz_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libbpf1 libz3-4 libelf1 libtcmalloc-minimal4 libstdc++6; do
  echo "$depends" | grep -Fq -e "$lib " -e "$lib," || [ "${depends##*, }" = "$lib" ] || { echo "Depends lacks $lib"; exit 1; }
done
test "$(dpkg-deb -f "$deb" Package)" = patchfuzz
dpkg-deb -f "$deb" Version | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$'
dpkg-deb -c "$deb" >"$work/contents"
for f in bin/patchfuzz include/patchfuzz/patcher.h lib/cmake/patchfuzz/patchfuzzConfig.cmake \
         lib/pkgconfig/patchfuzz-plugin.pc share/patchfuzz/examples/batched-plugin/example_batched_plugin.cpp; do
  grep -q " \./usr/$f\$" "$work/contents" || { echo "package lacks /usr/$f"; cat "$work/contents"; exit 1; }
done
echo "ok: $deb"
