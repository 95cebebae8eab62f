# Kernel oracle (issue 9): the static guest loader and the VM test.
#
# pfk-guest: PID 1 of the oracle's VM, built -static with the host C compiler and placed next to
# the `patchfuzz` binary, where `patchfuzz kernel` looks for it.
add_executable(pfk-guest ${PATCHFUZZ_SOURCE_ROOT}/guest/pfk_loader.c)
target_include_directories(pfk-guest PRIVATE ${PATCHFUZZ_SOURCE_ROOT}/guest)
target_link_options(pfk-guest PRIVATE -static)
# The guest runs inside the VM as a static PID 1: sanitizer runtimes cannot link statically, and it
# never runs on the host, so the sanitizer build compiles it plain.
if(PATCHFUZZ_SANITIZE OR PATCHFUZZ_FUZZ)
  target_compile_options(pfk-guest PRIVATE -fno-sanitize=all)
  target_link_options(pfk-guest PRIVATE -fno-sanitize=all)
endif()
set_target_properties(pfk-guest PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
add_dependencies(patchfuzz pfk-guest)

# pfk-guest-arm64 and pfk-guest-armhf (issue 23): the same loader cross-compiled -static for the
# arm64 and armhf guests, when the cross compilers (ci/setup: gcc-aarch64-linux-gnu with
# libc6-dev-arm64-cross, gcc-arm-linux-gnueabihf with libc6-dev-armhf-cross) are installed.
# Without them `patchfuzz kernel --arch` builds the loader into its cache on first use, or says
# which compiler is missing.
foreach(pfk_arch arm64 armhf)
  if(pfk_arch STREQUAL "arm64")
    set(pfk_cc aarch64-linux-gnu-gcc)
  else()
    set(pfk_cc arm-linux-gnueabihf-gcc)
  endif()
  find_program(PFK_CC_${pfk_arch} ${pfk_cc})
  if(PFK_CC_${pfk_arch})
    set(pfk_out ${CMAKE_BINARY_DIR}/pfk-guest-${pfk_arch})
    add_custom_command(OUTPUT ${pfk_out}
      COMMAND ${PFK_CC_${pfk_arch}} -O2 -static -I${PATCHFUZZ_SOURCE_ROOT}/guest -o ${pfk_out}
              ${PATCHFUZZ_SOURCE_ROOT}/guest/pfk_loader.c
      DEPENDS ${PATCHFUZZ_SOURCE_ROOT}/guest/pfk_loader.c ${PATCHFUZZ_SOURCE_ROOT}/guest/pfk_batch.h
              ${PATCHFUZZ_SOURCE_ROOT}/guest/pfk_btf.h ${PATCHFUZZ_SOURCE_ROOT}/guest/pfk_ksyms.h
              ${PATCHFUZZ_SOURCE_ROOT}/guest/pfk_privilege.h
      COMMENT "cross-compiling the ${pfk_arch} guest loader")
    add_custom_target(pfk-guest-${pfk_arch} ALL DEPENDS ${pfk_out})
  endif()
endforeach()

# CLI behaviour that needs no VM.
add_test(NAME kernel_cli_help COMMAND $<TARGET_FILE:patchfuzz> kernel --help)
set_tests_properties(kernel_cli_help PROPERTIES PASS_REGULAR_EXPRESSION "kernel fetch")
add_test(NAME kernel_cli_bad_kernel COMMAND $<TARGET_FILE:patchfuzz> kernel check x.case --kernel 5.4)
set_tests_properties(kernel_cli_bad_kernel PROPERTIES WILL_FAIL TRUE)
add_test(NAME kernel_cli_bad_kernel_msg COMMAND $<TARGET_FILE:patchfuzz> kernel check x.case --kernel 5.4)
set_tests_properties(kernel_cli_bad_kernel_msg PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz kernel: unknown kernel '5.4'")
add_test(NAME kernel_cli_unknown_sub COMMAND $<TARGET_FILE:patchfuzz> kernel frobnicate)
set_tests_properties(kernel_cli_unknown_sub PROPERTIES PASS_REGULAR_EXPRESSION "unknown subcommand 'frobnicate'")

# The real thing: ci/kernel boots the cached 6.12 kernel (fetching it when apt can) and checks a
# fixed batch. It exits 77 when qemu or the kernel package is unavailable: ctest reports SKIPPED.
add_test(NAME kernel_vm_ci COMMAND ${PATCHFUZZ_SOURCE_ROOT}/ci/kernel $<TARGET_FILE:patchfuzz>)
set_tests_properties(kernel_vm_ci PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "kernel;vm")

# ci/kernel-arm (issue 23): one batch each through the arm64 (7.3) and armhf (6.12) kernels under
# qemu's `virt` machine; SKIPPED (77) when qemu-system-aarch64 or the kernel packages are unavailable.
add_test(NAME kernel_arm_vm_ci COMMAND ${PATCHFUZZ_SOURCE_ROOT}/ci/kernel-arm $<TARGET_FILE:patchfuzz>)
set_tests_properties(kernel_arm_vm_ci PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "kernel;vm")

# The `kernel` oracle of campaigns: flag errors need no VM.
add_test(NAME fuzz_kernel_oracle_bad_tag COMMAND $<TARGET_FILE:patchfuzz> fuzz --oracles structural,kernel --kernel 5.4)
set_tests_properties(fuzz_kernel_oracle_bad_tag PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz fuzz: --kernel takes one of 6.1, 6.12, 7.2, 7.3 \\(for amd64\\)")
add_test(NAME fuzz_kernel_oracle_bad_batch COMMAND $<TARGET_FILE:patchfuzz> fuzz --oracles kernel --kernel-batch 0)
set_tests_properties(fuzz_kernel_oracle_bad_batch PROPERTIES PASS_REGULAR_EXPRESSION "--kernel-batch: 0 is out of range \\(1..100000\\)")

# `kernel minimize` and `fuzz --kernel-profile`: bad usage is exit 2 with a precise message, before any VM.
add_test(NAME kernel_cli_minimize_needs_one_case COMMAND $<TARGET_FILE:patchfuzz> kernel minimize)
set_tests_properties(kernel_cli_minimize_needs_one_case PROPERTIES PASS_REGULAR_EXPRESSION "minimize takes exactly one case file")
add_test(NAME kernel_cli_minimize_missing_case COMMAND $<TARGET_FILE:patchfuzz> kernel minimize /nonexistent/x.case)
set_tests_properties(kernel_cli_minimize_missing_case PROPERTIES PASS_REGULAR_EXPRESSION "/nonexistent/x.case")
add_test(NAME kernel_cli_minimize_bad_rounds COMMAND $<TARGET_FILE:patchfuzz> kernel minimize x.case --rounds 0)
set_tests_properties(kernel_cli_minimize_bad_rounds PROPERTIES PASS_REGULAR_EXPRESSION "--rounds: 0 is out of range \\(at least 1\\)")
add_test(NAME fuzz_kernel_profile_needs_the_oracle COMMAND $<TARGET_FILE:patchfuzz> fuzz --kernel-profile 6.1 --runs 1)
set_tests_properties(fuzz_kernel_profile_needs_the_oracle PROPERTIES PASS_REGULAR_EXPRESSION "--kernel-profile is the kernel oracle's")

# The kernel's own rewrite, executed (issue 22 item 5): finding 0007 on the cached 7.3 kernel must
# come out of the xlated program's interpretation as a located kernel finding. SKIPPED (77) when
# qemu or the cached 7.3 kernel is unavailable (it never fetches).
add_test(NAME kernel_xlated_findings_0007_0003 COMMAND ${PATCHFUZZ_SOURCE_ROOT}/ci/kernel-xlated-finding $<TARGET_FILE:patchfuzz>)
set_tests_properties(kernel_xlated_findings_0007_0003 PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "kernel;vm")
