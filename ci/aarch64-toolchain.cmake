# Cross toolchain for the arm64 run of bpf/ and its tests (ci/arm64): g++-aarch64-linux-gnu,
# tests executed under qemu-aarch64 through CMAKE_CROSSCOMPILING_EMULATOR. Configure with
# -DPATCHFUZZ_BPF_ONLY=ON (no libbpf/Z3/RapidCheck for aarch64; GTest is built from
# /usr/src/googletest by the top-level CMakeLists.txt).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc-12)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++-12)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
