# oracles/smt: the CLI tests of prove-contract / prove-inline (the benchmark is in bench/).

add_test(NAME smt_cli_prove_contract_help COMMAND $<TARGET_FILE:patchfuzz> prove-contract --help)
set_tests_properties(smt_cli_prove_contract_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: patchfuzz prove-contract")
add_test(NAME smt_cli_prove_contract_k2 COMMAND $<TARGET_FILE:patchfuzz> prove-contract --max-patches 2)
set_tests_properties(smt_cli_prove_contract_k2 PROPERTIES PASS_REGULAR_EXPRESSION "pass: 2[0-9] obligations proved for up to 2 patches")
add_test(NAME smt_cli_prove_contract_json COMMAND $<TARGET_FILE:patchfuzz> prove-contract --max-patches 1 --json)
set_tests_properties(smt_cli_prove_contract_json PROPERTIES PASS_REGULAR_EXPRESSION "\\{\"verdict\": \"pass\"")
add_test(NAME smt_cli_prove_contract_bad_k COMMAND sh -c "$<TARGET_FILE:patchfuzz> prove-contract --max-patches 9 2>&1; test $? -eq 2")
set_tests_properties(smt_cli_prove_contract_bad_k PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz prove-contract: --max-patches: 9 is out of range \\(1..6\\)")
add_test(NAME smt_cli_prove_contract_bad_value COMMAND sh -c "$<TARGET_FILE:patchfuzz> prove-contract --max-len 12x 2>&1; test $? -eq 2")
set_tests_properties(smt_cli_prove_contract_bad_value PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz prove-contract: --max-len: '12x' is not a whole number")

add_test(NAME smt_cli_prove_inline_help COMMAND $<TARGET_FILE:patchfuzz> prove-inline --help)
set_tests_properties(smt_cli_prove_inline_help PROPERTIES PASS_REGULAR_EXPRESSION "usage: patchfuzz prove-inline")
# default v4 iterator inline proved on all three profiles: exit 0
add_test(NAME smt_cli_prove_inline_v4 COMMAND $<TARGET_FILE:patchfuzz> prove-inline --family iter)
set_tests_properties(smt_cli_prove_inline_v4 PROPERTIES PASS_REGULAR_EXPRESSION "9 sequences: 9 proved, 0 refuted")
# v1 refuted on jit32 only: exit 1, a counterexample with start/end
add_test(NAME smt_cli_prove_inline_v1_jit32 COMMAND sh -c
  "$<TARGET_FILE:patchfuzz> prove-inline --arch jit32 --iter-inline v1 --family iter --json; test $? -eq 1")
set_tests_properties(smt_cli_prove_inline_v1_jit32 PROPERTIES PASS_REGULAR_EXPRESSION
  "\"sequence\": \"bpf_iter_num_new/v1\", \"arch\": \"jit32\", \"verdict\": \"fail\", \"reason\": [^\n]*\"counterexample\": \"start -?[0-9]+, end -?[0-9]+")
add_test(NAME smt_cli_prove_inline_v1_x86 COMMAND $<TARGET_FILE:patchfuzz> prove-inline --arch x86_64 --iter-inline v1 --family iter)
set_tests_properties(smt_cli_prove_inline_v1_x86 PROPERTIES PASS_REGULAR_EXPRESSION "3 sequences: 3 proved")
add_test(NAME smt_cli_prove_inline_v3 COMMAND sh -c
  "$<TARGET_FILE:patchfuzz> prove-inline --arch arm64 --iter-inline v3 --family iter; test $? -eq 1")
set_tests_properties(smt_cli_prove_inline_v3 PROPERTIES PASS_REGULAR_EXPRESSION "fail +arm64 +bpf_iter_num_new/v3")
add_test(NAME smt_cli_prove_inline_bad_arch COMMAND sh -c "$<TARGET_FILE:patchfuzz> prove-inline --arch sparc 2>&1; test $? -eq 2")
set_tests_properties(smt_cli_prove_inline_bad_arch PROPERTIES PASS_REGULAR_EXPRESSION "patchfuzz prove-inline: --arch: unknown arch 'sparc'")
add_test(NAME smt_cli_prove_inline_bad_variant COMMAND sh -c "$<TARGET_FILE:patchfuzz> prove-inline --iter-inline v2 2>&1; test $? -eq 2")
set_tests_properties(smt_cli_prove_inline_bad_variant PROPERTIES PASS_REGULAR_EXPRESSION "unknown variant 'v2' \\(expected v1, v3 or v4\\)")
