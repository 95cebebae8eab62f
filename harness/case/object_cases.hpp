#pragma once
// The programs of a BPF ELF object as cases: what `check`, `rewrite`, `fuzz --corpus` and the
// seeds of a campaign make of a .bpf.o. Each program is loaded as libbpf would hand it to
// BPF_PROG_LOAD (bpf/loader), with the verifier facts inferred (passes::infer_facts) and the
// load's privilege deciding its maps' bypass_spec_v1.
#include <string>
#include <vector>

#include "bpf/util/error.hpp"
#include "harness/case/case_file.hpp"

namespace patchfuzz::harness {

// Whether the file starts with the ELF magic (false for a file that cannot be read).
bool is_elf_file(const std::string& path);

Expected<std::vector<Case>> cases_from_object(const std::string& path, bool privileged = true);

// A corpus file as cases: a BPF object's programs (ELF magic), else the .case it must be.
Expected<std::vector<Case>> read_corpus_file(const std::string& path);

// `fuzz --seeds PATH`: a corpus file's cases, or every .case and BPF object under a directory
// (in path order). Any other file there, an unreadable one or none at all is an error.
Expected<std::vector<Case>> read_seeds(const std::string& path);

}  // namespace patchfuzz::harness
