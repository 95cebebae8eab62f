// The C ABI conversion (pf_convert.hpp) carries every field the ABI has: each InsnAux field and
// each field of a subprog, line-info, func-info and poke record, set alone to a value other than
// its default, comes back from to_pf() then from_pf() (and from_pf_into()).
#include "harness/plugin/pf_convert.hpp"

#include <gtest/gtest.h>

#include <type_traits>

#include "bpf/isa/insn.hpp"
#include "bpf/program/aux_fields.hpp"
#include "bpf/program/record_fields.hpp"

namespace patchfuzz::plugin {
namespace {

Program sample() {
    Program p = make_program({isa::mov64_imm(0, 0), isa::mov64_imm(1, 0), isa::exit_insn()});
    p.linfo = {LineInfo{.insn_off = 0, .line_col = 1u << 10}};
    p.finfo = {FuncInfo{.insn_off = 0, .type_id = 1}};
    p.pokes = {PokeDesc{.insn_idx = 1, .map_index = 0, .key = 0}};
    p.insn_arrays = {InsnArray{.map_index = 0, .entries = {{.orig_off = 1, .xlated_off = 1}}}};
    return p;
}

void expect_round_trip(const Program& p, const char* what) {
    PfProgramStorage s;
    to_pf(p, s);
    EXPECT_EQ(from_pf(s.view, p), p) << what;
    Program into = sample();
    from_pf_into(s.view, into);
    EXPECT_EQ(into, p) << what;
}

template <class T>
void change(T& field) {
    if constexpr (std::is_same_v<T, bool>) field = !field;
    else if constexpr (std::is_enum_v<T>) field = static_cast<T>(static_cast<int>(field) + 1);
    else field = static_cast<T>(field + 2);
}

TEST(PfConvert, EveryAuxFieldCrossesTheAbi) {
    size_t n = 0;
    for_each_aux_field([&](const char* name, auto member) {
        Program p = sample();
        change(p.aux[1].*member);
        expect_round_trip(p, name);
        ++n;
    });
    EXPECT_EQ(n, kAuxFieldCount);
}

template <class R>
void every_record_field_crosses(std::vector<R> Program::*table) {
    size_t n = 0;
    RecordFields<R>::visit([&](const char* name, auto member, FieldForm) {
        Program p = sample();
        change((p.*table)[0].*member);
        expect_round_trip(p, name);
        ++n;
    });
    EXPECT_EQ(n, RecordFields<R>::count);
}

TEST(PfConvert, EverySideTableFieldCrossesTheAbi) {
    every_record_field_crosses(&Program::subprogs);
    every_record_field_crosses(&Program::linfo);
    every_record_field_crosses(&Program::finfo);
    every_record_field_crosses(&Program::pokes);
}

}  // namespace
}  // namespace patchfuzz::plugin
