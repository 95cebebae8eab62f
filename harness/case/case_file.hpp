#pragma once
// The `.case` text format: one whole test case (program with side tables, maps, rewrite options,
// explicit patch batches, execution inputs, expected verdict), readable, diffable, and exact:
// parse_case(write_case(c)) == c for every Case. corpus/README.md documents the format; in short:
//
//   # found-by: patchfuzz fuzz --seed 7        <- comments, only before the first section
//   -- program name=hash_lookup type=xdp       <- kernel-syntax asm (assemble()), labels allowed
//   r1 = map[id:0]
//   call bpf_map_lookup_elem
//   exit
//   -- maps                                    <- "IDX NAME type=hash key=4 value=8 max_entries=N ..."
//   -- kfuncs  -- aux  -- subprogs  -- linfo  -- finfo  -- insn-arrays  -- pokes
//   -- patches  -- options  -- input (repeatable)  -- expect
//
// A missing side-table section means "what make_program() gives"; a present one is the exact
// content. Errors are located: "x.case:11: unknown section '-- pach'", "x.case:14:5: ...".
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/interp/exec_input.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/passes/privilege.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::harness {

struct Case {
    std::string path;                    // where it was read from (not written)
    std::vector<std::string> comments;   // "# ..." lines before the first section, without "# "
    Program program;
    passes::RewriteOptions options;      // options.arch follows `arch`
    // The loader's level (`privilege=` option; an older file's privileged=0|1 reads as unpriv|root).
    // options.privileged is always bpf_capable(privilege).
    passes::Privilege privilege = passes::Privilege::Root;
    std::string arch = "x86_64";
    std::vector<patch::PatcherId> patchers;  // `patchers=`; empty = the runner's default
    std::vector<patch::PatchBatch> patches;  // explicit batches: a patcher-only case (no passes)
    std::vector<interp::ExecInput> inputs;
    std::string expect = "pass";         // "pass" or "fail <signature>"
    uint64_t seed = 0;
};

// A .case file from disk: parse_case() plus the structural validation of its program
// (isa::validate_program: encodings, jump targets, ldimm64 pairs, subprog table, line info, ...),
// so every file-level consumer (CLI verbs, corpus loading) gets a located error ("x.case: pc 3:
// ...") instead of running a program the verifier would have rejected before any rewrite.
Expected<Case> read_case(const std::string& path);
// The text only (syntax and ranges of every field); the program is not validated here, so tests
// and generators can build deliberately broken programs.
Expected<Case> parse_case(std::string_view text, const std::string& path);
std::string write_case(const Case& c);
// Temp file in the same directory + fsync + rename: a reader never sees a partial file.
Status write_case_file_atomic(const Case& c, const std::string& path);

// Field-by-field equality of everything the format stores (path excluded).
bool same_case(const Case& a, const Case& b);

}  // namespace patchfuzz::harness
