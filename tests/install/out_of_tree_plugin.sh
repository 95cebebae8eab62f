#!/bin/sh
# The example plugin built outside patchfuzz's tree against an installed prefix, the way the
# README tells a kernel developer to build their own, then loaded by the installed patchfuzz.
# Usage: out_of_tree_plugin.sh PREFIX WORKDIR cmake|pkg-config
# Passes when the plugin builds, `patchfuzz fuzz --patcher-lib` exits 0 after running cases, and the
# campaign's version names the plugin's own name and version.
set -eu
prefix=$1 work=$2 how=$3
src=$prefix/share/patchfuzz/examples/batched-plugin
rm -rf "$work" && mkdir -p "$work"
case $how in
  cmake)
    cmake -S "$src" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 ||
      { cat "$work/configure.log"; exit 1; }
    cmake --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
    lib=$work/build/libexample_batched_plugin.so ;;
  pkg-config)
    # Only the installed prefix: no path into the source or build tree.
    pc=$(find "$prefix" -name patchfuzz-plugin.pc | head -n 1)
    export PKG_CONFIG_PATH="${pc%/*}"
    lib=$work/libexample_batched_plugin.so
    # shellcheck disable=SC2046
    c++ -std=c++20 -O2 -shared -fPIC -o "$lib" "$src/example_batched_plugin.cpp" \
      $(pkg-config --cflags --libs patchfuzz-reference-patcher) ;;
  *) echo "unknown way '$how'"; exit 2 ;;
esac
test -f "$lib"
"$prefix/bin/patchfuzz" fuzz --patcher-lib "$lib" --seconds 5 --seed 7 --oracles structural --no-known \
  --out "$work/out" --json --quiet >"$work/summary.json"
cat "$work/summary.json"
grep -Eq '"cases": [1-9]' "$work/summary.json" || { echo "no cases ran"; exit 1; }
grep -q '; plugin example-batched 1.0.0"' "$work/summary.json" || { echo "the plugin is not in the version"; exit 1; }
