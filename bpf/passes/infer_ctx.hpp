#pragma once
// infer_ctx_accesses(): which loads and stores of a program without verifier facts (a .bpf.o, a
// .s, a raw .bin) go through the context pointer, as the verifier's register types would show
// (aux.ptr_type = Ctx, and the ctx_field_size it records for a narrow read). Only for the program
// types whose ctx accesses the rewrite converts (socket filter, tc, XDP: ctx_fields::ctx_kind),
// and only accesses the ctx model knows (ctx_fields::allowed_access): another access stays
// unmarked, its conversion unmodelled (a real kernel then shows the difference as a model gap).
//
// A forward must-analysis over each function's control flow (bpf/program/cfg.hpp): the main
// function starts with the ctx in r1; a register holds the ctx after a 64-bit move from one that
// does, or a fill of an 8-byte stack slot a ctx was spilled to (r10-relative); a call leaves it in
// r6-r9 only, and passes it to a bpf-to-bpf callee in r1-r5 when every call site does. Any other
// write of a register, and a store through a register other than r10 and the ctx (it may reach a
// spill slot), forget it. For a program the verifier accepts this is what its types say: a ctx
// access must be through an unmodified ctx pointer on every path to it.
#include "bpf/program/program.hpp"

namespace patchfuzz::passes {

void infer_ctx_accesses(Program& prog);

}  // namespace patchfuzz::passes
