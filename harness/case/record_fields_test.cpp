// The side-table field lists (bpf/program/record_fields.hpp) drive the .case sections, the loader's
// wire format and the structural diff's listing: each field of a subprog, line-info, func-info and
// poke record, set alone to a value other than its default, must come back through a .case and
// through the wire, and show in the structural counterexample.
#include "bpf/program/record_fields.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/loader/program_wire.hpp"
#include "harness/case/case_file.hpp"
#include "oracles/structural.hpp"

namespace patchfuzz::harness {
namespace {

Case four_insn_case() {
    Case c;
    c.program = make_program({isa::mov64_imm(0, 0), isa::mov64_imm(1, 0), isa::mov64_imm(2, 0), isa::exit_insn()});
    c.program.maps.push_back(MapDef{.name = "m", .type = 3, .key_size = 4, .value_size = 4, .max_entries = 1});
    c.program.linfo = {LineInfo{.insn_off = 0, .line_col = 1u << 10}};
    c.program.finfo = {FuncInfo{.insn_off = 0, .type_id = 1}};
    c.program.pokes = {PokeDesc{.insn_idx = 1, .map_index = 0, .key = 0}};
    return c;
}

// The record of type R in `p` a test changes: the main subprog, the first line/func info, the poke.
template <class R>
R& the_record(Program& p) {
    if constexpr (std::is_same_v<R, SubprogInfo>) return p.subprogs[0];
    else if constexpr (std::is_same_v<R, LineInfo>) return p.linfo[0];
    else if constexpr (std::is_same_v<R, FuncInfo>) return p.finfo[0];
    else return p.pokes[0];
}

// What the structural oracle names a difference in R's table.
template <class R>
const char* divergence_of_table() {
    if constexpr (std::is_same_v<R, SubprogInfo>) return "subprog-start";
    else if constexpr (std::is_same_v<R, LineInfo>) return "linfo";
    else if constexpr (std::is_same_v<R, FuncInfo>) return "finfo";
    else return "poke";
}

template <class R>
class RecordFieldsTest : public ::testing::Test {};
using Records = ::testing::Types<SubprogInfo, LineInfo, FuncInfo, PokeDesc>;
TYPED_TEST_SUITE(RecordFieldsTest, Records);

TYPED_TEST(RecordFieldsTest, TheListNamesEveryFieldOnce) {
    using R = TypeParam;
    std::set<std::string> names;
    size_t n = 0, leads = 0;
    RecordFields<R>::visit([&](const char* name, auto, FieldForm form) {
        names.insert(name);
        ++n;
        leads += form == FieldForm::Lead;
    });
    EXPECT_EQ(n, RecordFields<R>::count);
    EXPECT_EQ(names.size(), n);
    EXPECT_EQ(leads, RecordFields<R>::lead != nullptr ? 1u : 0u);
}

TYPED_TEST(RecordFieldsTest, EveryFieldTravelsThroughACaseAndTheWire) {
    using R = TypeParam;
    size_t checked = 0;
    RecordFields<R>::visit([&](const char* name, auto member, FieldForm) {
        using T = std::remove_cvref_t<decltype(std::declval<R&>().*member)>;
        Case c = four_insn_case();
        R& r = the_record<R>(c.program);
        if constexpr (std::is_same_v<T, bool>) r.*member = !(r.*member);
        else r.*member = static_cast<T>(r.*member + 2);
        const std::string text = write_case(c);
        auto back = parse_case(text, "t.case");
        ASSERT_TRUE(back.ok()) << name << ": " << back.error().to_string() << "\n" << text;
        EXPECT_EQ(the_record<R>(back->program), r) << name << "\n" << text;
        auto wire = loader::decode_program(loader::encode_program(c.program));
        ASSERT_TRUE(wire.ok()) << name;
        EXPECT_EQ(the_record<R>(*wire), r) << name;
        const Case plain = four_insn_case();
        const auto v = oracles::compare_patcher_outputs({"incremental", &plain.program, {}}, {"batched", &c.program, {}});
        EXPECT_EQ(v.divergence, divergence_of_table<R>()) << name;
        EXPECT_NE(v.counterexample.find(std::string(name) + "="), std::string::npos) << name << ": " << v.counterexample;
        ++checked;
    });
    EXPECT_EQ(checked, RecordFields<R>::count);
}

}  // namespace
}  // namespace patchfuzz::harness
