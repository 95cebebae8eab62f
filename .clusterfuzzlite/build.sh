#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build: the engine's $CC/$CXX/$CFLAGS/$CXXFLAGS/$LIB_FUZZING_ENGINE,
# every fuzz/*_fuzz.cpp target to $OUT with its seed corpus zip and the dictionary.
cmake -S . -B build-oss -G Ninja -DCMAKE_BUILD_TYPE=Release -DPATCHFUZZ_FUZZ=OFF \
      -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
      -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS -Wno-error"
ninja -C build-oss patchfuzz_fuzz_common
for src in fuzz/*_fuzz.cpp; do
  name=$(basename "$src" .cpp)
  $CXX $CXXFLAGS -std=c++20 -I. "$src" -o "$OUT/$name" $LIB_FUZZING_ENGINE \
       build-oss/fuzz/libpatchfuzz_fuzz_common.a build-oss/harness/libpatchfuzz_harness.a \
       $(find build-oss -name 'libpatchfuzz_*.a' ! -name 'libpatchfuzz_harness.a' ! -name 'libpatchfuzz_fuzz_common.a') \
       $(find build-oss -name 'libpatchfuzz_*.a' ! -name 'libpatchfuzz_fuzz_common.a') \
       -lrapidcheck -lbpf -lelf -lz -lz3 -lpthread -ldl
  (cd "corpus/seeds/$name" && zip -q -r "$OUT/${name}_seed_corpus.zip" .)
  cp gen/bpf.dict "$OUT/$name.dict"
done
