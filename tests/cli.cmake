# The CLI as a whole: `--help` on every verb (harness/cli/flags.hpp prints it from the verb's flag
# table). Each verb's flags are listed here by hand, from what the verb is documented to take: a
# flag the table loses, or a usage line naming a flag the table does not have, fails its test.
set(PF_CLI_HELP
  "asm|-o --no-validate --user --internal"
  "disasm|--numbered --opcodes --no-validate"
  "load|--json --coverage"
  "rewrite|--patcher --arch --passes --iter-inline --privilege --unprivileged --rnd-hi32 --loop-inline --func-arg-inline --nop-removal --kernel-profile --json"
  "bench|--profile --object --arch --insns --patches --sweep --density --sweep-max --patchers --reps --budget --max-incremental --no-verify --seed --json --plot --check-bars"
  "gen|--profile --from --seed --size --count --density --far-jumps --subprogs --privilege --json -o --out --cells"
  "check|--oracle --oracles --arch --privilege --all --json --kernel --kernel-arch"
  "prove-contract|--max-patches --max-len --max-patch-len --timeout-ms --seed --json"
  "prove-inline|--arch --iter-inline --family --loop-inline --func-arg-inline --timeout-ms --seed --json"
  "conformance|--expect-fail --json --verbose -v"
  "costmodel|--json"
  "fuzz|--seconds --runs --seed --jobs --oracles --arch --profile --max-insns --iter-inline --loop-inline --func-arg-inline --nop-removal --corpus --seeds --out --known --no-known --json --quiet --patcher-lib --plugin-isolated --plugin-stateful --plugin-timeout --kernel --kernel-arch --kernel-profile --kernel-batch --privilege"
  "report|-o --bench"
  "triage|--out"
  "minimize|-o --signature --max-runs --seconds"
  "replay|--oracles --times --verbose"
  "kernel|--kernel --arch --kernel-profile --cache --run --rnd-hi32 --privilege --json --verbose --expect-accept --no-compare --per-boot --timeout --prog-type --count --seed --save --out --rounds --seconds"
  "kernel check|--kernel --arch --kernel-profile --run --privilege --per-boot"
  "version|--patcher-lib")
foreach(entry IN LISTS PF_CLI_HELP)
  string(FIND "${entry}" "|" bar)
  string(SUBSTRING "${entry}" 0 ${bar} verb)
  math(EXPR after "${bar} + 1")
  string(SUBSTRING "${entry}" ${after} -1 flags)
  separate_arguments(flags)
  string(REPLACE " " "_" name "${verb}")
  add_test(NAME cli_help_${name} COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli_help.sh $<TARGET_FILE:patchfuzz> "${verb}" ${flags})
endforeach()
