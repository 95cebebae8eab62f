#pragma once
// The InsnAux fields as one list: each field's name in a .case `-- aux` line and the member it
// names, in the order a case writes them. The .case reader and writer, the wire format
// (bpf/loader/program_wire.cpp) and the structural diff's listing visit the fields through
// for_each_aux_field, so adding a field to InsnAux is adding its line here (and InsnAux's
// static_assert on its size reminds whoever adds one).
//
// `f(name, member)` is called once per field, in order; member is a pointer to an InsnAux member
// of type bool (written 0/1), PtrType (written by name) or an integer (written as a number).
#include "bpf/program/program.hpp"

namespace patchfuzz {

template <class F>
constexpr void for_each_aux_field(F&& f) {
    f("orig", &InsnAux::orig_idx);
    f("seen", &InsnAux::seen);
    f("zext_dst", &InsnAux::zext_dst);
    f("needs_zext", &InsnAux::needs_zext);
    f("nospec", &InsnAux::nospec);
    f("nospec_result", &InsnAux::nospec_result);
    f("alu_state", &InsnAux::alu_state);
    f("alu_limit", &InsnAux::alu_limit);
    f("ptr", &InsnAux::ptr_type);
    f("ctx_field_size", &InsnAux::ctx_field_size);
    f("map", &InsnAux::map_index);
    f("map_ptr_poisoned", &InsnAux::map_ptr_poisoned);
    f("map_key_poisoned", &InsnAux::map_key_poisoned);
    f("map_key", &InsnAux::map_key);
    f("map_key_known", &InsnAux::map_key_known);
    f("loop_inline", &InsnAux::loop_fit_for_inline);
    f("loop_cb", &InsnAux::loop_callback_subprogno);
    f("percpu_alloc_ptr", &InsnAux::call_with_percpu_alloc_ptr);
    f("arg_prog", &InsnAux::arg_prog);
    f("indirect_target", &InsnAux::indirect_target);
}

// The number of fields the list names: with sizeof(InsnAux), what a test holds the list to.
inline constexpr size_t kAuxFieldCount = 20;

}  // namespace patchfuzz
