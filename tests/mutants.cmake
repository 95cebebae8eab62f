# ci/mutants: every seeded bug of the catalogue still applies to the code it mutates (a refactor
# of the batched patcher or an inline must not disarm a mutant silently). The mutation score
# itself is a campaign per mutant, run by hand or nightly: ci/mutants.
add_test(NAME mutants_apply COMMAND ${PATCHFUZZ_SOURCE_ROOT}/ci/mutants --check)
