// The InsnAux field list (bpf/program/aux_fields.hpp) drives the .case aux lines, the loader's wire
// format and the structural diff's listing: each field, set alone to a value other than its
// default, must come back through a .case and through the wire, and show in the listing.
#include "bpf/program/aux_fields.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>

#include "bpf/isa/insn.hpp"
#include "bpf/loader/program_wire.hpp"
#include "harness/case/case_file.hpp"
#include "oracles/structural.hpp"

namespace patchfuzz::harness {
namespace {

Case one_insn_case() {
    Case c;
    c.program = make_program({isa::mov64_imm(0, 0), isa::exit_insn()});
    c.program.maps.push_back(MapDef{.name = "m", .type = 2, .key_size = 4, .value_size = 8, .max_entries = 1});
    for (auto& a : c.program.aux) a.seen = true;
    return c;
}

TEST(AuxFields, TheListNamesEveryFieldOnce) {
    std::set<std::string> names;
    size_t n = 0;
    for_each_aux_field([&](const char* name, auto) {
        names.insert(name);
        ++n;
    });
    EXPECT_EQ(n, kAuxFieldCount);
    EXPECT_EQ(names.size(), kAuxFieldCount);
}

TEST(AuxFields, EveryFieldTravelsThroughACaseAndTheWire) {
    size_t checked = 0;
    for_each_aux_field([&](const char* name, auto member) {
        using T = std::remove_cvref_t<decltype(std::declval<InsnAux&>().*member)>;
        Case c = one_insn_case();
        InsnAux& a = c.program.aux[0];
        if constexpr (std::is_same_v<T, bool>) a.*member = !(a.*member);
        else if constexpr (std::is_same_v<T, PtrType>) a.*member = PtrType::Stack;
        else a.*member = static_cast<T>(a.*member + 1);
        const std::string text = write_case(c);
        EXPECT_NE(text.find(std::string(" ") + name + "="), std::string::npos) << name << "\n" << text;
        auto back = parse_case(text, "t.case");
        ASSERT_TRUE(back.ok()) << name << ": " << back.error().to_string() << "\n" << text;
        EXPECT_EQ(back->program.aux[0], a) << name;
        auto wire = loader::decode_program(loader::encode_program(c.program));
        ASSERT_TRUE(wire.ok()) << name;
        EXPECT_EQ(wire->aux[0], a) << name;
        // the structural oracle fails on the field and shows it in its counterexample
        const Case plain = one_insn_case();
        const auto v = oracles::compare_patcher_outputs({"incremental", &plain.program, {}}, {"batched", &c.program, {}});
        EXPECT_EQ(v.divergence, "aux-slot") << name;
        EXPECT_NE(v.counterexample.find(std::string(name) + "="), std::string::npos) << name << ": " << v.counterexample;
        ++checked;
    });
    EXPECT_EQ(checked, kAuxFieldCount);
}

}  // namespace
}  // namespace patchfuzz::harness
