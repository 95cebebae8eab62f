# patch: `patchfuzz bench` smoke runs (the real measurements are not a unit test: run
# `patchfuzz bench --sweep --profile pyperf180,pyperf600 --plot sweep.svg` by hand).
add_test(NAME bench_smoke_json
         COMMAND $<TARGET_FILE:patchfuzz> bench --insns 2000 --patches 80 --reps 1 --json)
set_tests_properties(bench_smoke_json PROPERTIES TIMEOUT 120
  PASS_REGULAR_EXPRESSION "\"workload\": \"synthetic-2000/80\", \"insns\": 2000, \"patches\": 80, .*\"incremental_ns\": [0-9]+, .*\"batched_ns\": [0-9]+, .*\"memcpy_ns\": [0-9]+, \"ratio\": [0-9.]+, .*\"verified\": true")
add_test(NAME bench_smoke_csv
         COMMAND $<TARGET_FILE:patchfuzz> bench --insns 2000 --patches 80 --reps 1 --patchers batched)
set_tests_properties(bench_smoke_csv PROPERTIES TIMEOUT 120
  PASS_REGULAR_EXPRESSION "workload,insns,patches,new_insns,incremental_ns.*\nsynthetic-2000/80,2000,80,2160,,,,[0-9]+,")
add_test(NAME bench_usage_error COMMAND $<TARGET_FILE:patchfuzz> bench --insns 2000)
set_tests_properties(bench_usage_error PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz bench: --insns and --patches go together")
add_test(NAME bench_bad_profile COMMAND $<TARGET_FILE:patchfuzz> bench --profile nope)
set_tests_properties(bench_bad_profile PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz bench: --profile: unknown profile 'nope'")
add_test(NAME bench_help COMMAND $<TARGET_FILE:patchfuzz> bench --help)
set_tests_properties(bench_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: patchfuzz bench")
add_test(NAME bench_usage_exit2 COMMAND sh -c "$<TARGET_FILE:patchfuzz> bench --reps 0 --sweep 2>/dev/null; test $? -eq 2")
# bench --object: the real batches of a real object's programs, both patchers agreeing on each.
add_test(NAME bench_object_real_batches
         COMMAND $<TARGET_FILE:patchfuzz> bench --object ${CMAKE_BINARY_DIR}/bpf_objs/loop_callback.bpf.o --reps 1 --budget 2)
set_tests_properties(bench_object_real_batches PROPERTIES
                     PASS_REGULAR_EXPRESSION "loop_callback.bpf.o:[a-z_]+#0,[0-9]+,[1-9][0-9]*,[0-9]+,.*,yes\n")
