# Campaigns (`patchfuzz fuzz`): every case is judged without the exec oracle's traces
# (RunConfig::failure_details); a new finding is run again in full, so that its bucket's verdict.txt
# still shows the input and both traces. The V3 iterator inline (bug class B2) is found on x86_64
# within the first two thousand cases of seed 1, a bucket no filed finding covers (exit 1: findings).
set(CAMPAIGN_OUT ${CMAKE_BINARY_DIR}/test-campaign)
add_test(NAME fuzz_new_finding_is_reported_in_full
         COMMAND sh -c "rm -rf '${CAMPAIGN_OUT}' && \
   '$<TARGET_FILE:patchfuzz>' fuzz --runs 2000 --seed 1 --iter-inline v3 --oracles exec --arch x86_64 \
     --out '${CAMPAIGN_OUT}' --quiet >/dev/null 2>&1; test $? -eq 1 && \
   v=$(ls '${CAMPAIGN_OUT}'/findings/*/verdict.txt | head -n 1) && test -n \"$v\" && \
   grep -q 'input: ' \"$v\" && grep -q 'reference trace (last' \"$v\" && grep -q 'rewritten trace (last' \"$v\" && \
   ! grep -q 'traces not made' \"$v\"")

# ci/throughput (issue 7's throughput bars) runs each configuration and reports every figure with its
# rounds, median and best. Only the report's shape is checked here: timing is the script's business.
add_test(NAME throughput_reports_each_bar
         COMMAND sh -c "'${PATCHFUZZ_SOURCE_ROOT}/ci/throughput' --binary '$<TARGET_FILE:patchfuzz>' --seconds 1 --rounds 1 --json | \
   python3 -c 'import json,sys; d=json.load(sys.stdin); f=d[\"figures\"]; \
assert len(f) == (3 if d[\"cores\"] > 1 else 2), f; \
assert all(len(x[\"rounds\"]) == 1 and x[\"median\"] > 0 and x[\"best\"] >= x[\"median\"] for x in f), f'")

# Start-up (running the filed findings) is not part of --seconds: a 3-second campaign runs cases
# for 3 seconds after it, and says so in its figures.
add_test(NAME campaign_short_seconds_runs_cases
         COMMAND $<TARGET_FILE:patchfuzz> fuzz --seconds 3 --seed 4 --quiet --json --out ${CMAKE_BINARY_DIR}/campaign-short-out)
set_tests_properties(campaign_short_seconds_runs_cases PROPERTIES
                     PASS_REGULAR_EXPRESSION "\"seconds\": 3(\\.[0-9]*)?, \"cases\": [1-9][0-9]*,")
# replay of a directory without any case is an error, not a silent success.
add_test(NAME replay_empty_dir_fails
         COMMAND sh -c "mkdir -p '${CMAKE_BINARY_DIR}/replay-empty-dir' && '$<TARGET_FILE:patchfuzz>' replay '${CMAKE_BINARY_DIR}/replay-empty-dir'; test $? -eq 2")
# A BPF object in --corpus is replayed (every program of it), not silently ignored.
add_test(NAME campaign_corpus_replays_objects
         COMMAND sh -c "rm -rf '${CMAKE_BINARY_DIR}/corpus-objs' && mkdir -p '${CMAKE_BINARY_DIR}/corpus-objs' && cp '${CMAKE_BINARY_DIR}/bpf_objs/optional_sec.bpf.o' '${CMAKE_BINARY_DIR}/bpf_objs/loop_callback.bpf.o' '${CMAKE_BINARY_DIR}/corpus-objs/' && '$<TARGET_FILE:patchfuzz>' fuzz --runs 5 --seed 2 --quiet --json --corpus '${CMAKE_BINARY_DIR}/corpus-objs' --out '${CMAKE_BINARY_DIR}/corpus-objs-out'")
set_tests_properties(campaign_corpus_replays_objects PROPERTIES PASS_REGULAR_EXPRESSION "\"corpus_cases\": 3,")
# --seeds: half the cases are mutants of the seeds' programs (.case files and BPF objects); with
# their facts rebuilt, a fixed seed's 400 cases report no new finding (a stale fact would).
add_test(NAME campaign_seeds_are_mutated
         COMMAND sh -c "rm -rf '${CMAKE_BINARY_DIR}/seeds-out' && '$<TARGET_FILE:patchfuzz>' fuzz --runs 400 --seed 9 --jobs 1 --quiet --json \
   --seeds '${PATCHFUZZ_SOURCE_ROOT}/corpus/regression/passes' --seeds '${CMAKE_BINARY_DIR}/bpf_objs/loop_callback.bpf.o' \
   --out '${CMAKE_BINARY_DIR}/seeds-out' | python3 -c 'import json,sys; d=json.load(sys.stdin); n=d[\"knobs\"][\"seeds\"][\"cases\"]; \
assert 100 < n < 300, n; assert d[\"findings\"] == 0, d[\"findings\"]'")
# A seed path that is not there, or a file in a seed directory that is neither a .case nor an ELF
# object: exit 2 naming it, never a silent skip.
add_test(NAME campaign_seeds_bad_path_is_an_error
         COMMAND sh -c "d='${CMAKE_BINARY_DIR}/seeds-bad' && rm -rf \"$d\" && mkdir -p \"$d\" && echo notes > \"$d/notes.txt\" && \
   { '$<TARGET_FILE:patchfuzz>' fuzz --runs 1 --seeds /nonexistent-seeds 2>\"$d.err1\"; test $? -eq 2; } && \
   grep -q '/nonexistent-seeds: no such file' \"$d.err1\" && \
   { '$<TARGET_FILE:patchfuzz>' fuzz --runs 1 --seeds \"$d\" 2>\"$d.err2\"; test $? -eq 2; } && \
   grep -q 'notes.txt: neither a .case file nor a BPF object' \"$d.err2\"")
