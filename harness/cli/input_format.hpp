#pragma once
// What an input file is, by its content rather than its name: a BPF ELF object, a .case file, BPF
// assembly, or raw struct bpf_insn bytes. Every verb that takes a program (check, rewrite, bench
// --object, fuzz --seeds) reads it the same way, whatever the file is called.
#include <string>
#include <vector>

#include "bpf/util/error.hpp"
#include "harness/case/case_file.hpp"

namespace patchfuzz::cli {

enum class InputFormat { elf, case_text, asm_text, raw };
const char* to_string(InputFormat f);

// ELF magic -> elf; text with a "-- " section line -> case_text; binary, or text named *.bin ->
// raw; other text -> asm_text. Errors: unreadable file, empty file.
Expected<InputFormat> detect_input_format(const std::string& path);

// The file as cases: a .case as written; every program of an ELF object (loaded with `privileged`
// deciding its maps' bypass_spec_v1), assembly or raw bytes as one program, each with the verifier
// facts inferred (passes::infer_facts). Each case's comments name where it came from.
Expected<std::vector<harness::Case>> read_input_cases(const std::string& path, bool privileged = true);

}  // namespace patchfuzz::cli
