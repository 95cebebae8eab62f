#pragma once
// What the runner's two loops share (runner.cpp's plain one and memo_runner.cpp's): the name of a
// batch's patch kinds, the passes' trigger slots, the per-slot patch counts of a run.
#include <array>
#include <span>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/passes/pass.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/util/check.hpp"
#include "harness/runner/runner.hpp"
#include "oracles/oracle.hpp"

namespace patchfuzz::harness::runner_parts {

// What a batch's patches do: their kinds, each once, in the order they first appear, joined by
// '+' ("none" for no patch). Recorded for every batch, and so looked up in a table made once
// instead of built: a batch's kinds in first-seen order are a code of up to three 2-bit digits
// (a kind's number + 1), and the table holds every code's name.
inline std::string_view kind_of(const patch::PatchBatch& b) {
    static constexpr std::string_view kNames[] = {"replace", "remove", "insert-before"};
    static constexpr unsigned kKinds = std::size(kNames), kBits = 2;
    static const std::array<std::string, 1u << (kBits * kKinds)> names_by_code = [] {
        std::array<std::string, 1u << (kBits * kKinds)> t;
        for (unsigned code = 0; code < t.size(); ++code) {
            for (unsigned rest = code; rest != 0; rest >>= kBits) {
                const unsigned digit = rest & ((1u << kBits) - 1);
                if (digit == 0 || digit > kKinds) break;  // no batch gives such a code
                t[code] += t[code].empty() ? "" : "+";
                t[code] += kNames[digit - 1];
            }
            if (t[code].empty()) t[code] = "none";
        }
        return t;
    }();
    unsigned code = 0, seen = 0, digits = 0;
    for (const auto& p : b.patches) {
        const unsigned kind = p.kind == patch::PatchKind::Replace  ? 0
                              : p.kind == patch::PatchKind::Remove ? 1
                                                                   : 2;
        if (seen & (1u << kind)) continue;
        seen |= 1u << kind;
        code |= (kind + 1) << (kBits * digits++);
        if (digits == kKinds) break;  // every kind seen
    }
    return names_by_code[code];
}

// The passes in kernel order, and the slot after them that counts explicit batches.
inline const std::vector<std::string_view>& trigger_names() {
    static const std::vector<std::string_view> names = [] {
        const std::span<const std::string_view> kernel_order = passes::pass_names_view();
        std::vector<std::string_view> v(kernel_order.begin(), kernel_order.end());
        v.emplace_back("explicit");
        return v;
    }();
    return names;
}

// Patches emitted per trigger_names() slot by one profile's run; a slot exists (`ran`) once its
// pass has run, even when it patched nothing, as in CaseReport::pass_triggers.
struct Triggers {
    static constexpr size_t kSlots = 8;
    std::array<uint32_t, kSlots> patches{};
    std::array<bool, kSlots> ran{};
    void add(size_t slot, uint32_t n) {
        ran[slot] = true;
        patches[slot] += n;
    }
    void add(const Triggers& other) {
        for (size_t i = 0; i < kSlots; ++i)
            if (other.ran[i]) add(i, other.patches[i]);
    }
    void add_to(std::vector<PassTrigger>& out) const {
        out.reserve(out.size() + kSlots);  // one allocation, not one per doubling
        for (size_t i = 0; i < kSlots; ++i)
            if (ran[i]) out.push_back({trigger_names()[i], patches[i]});
    }
};

// The profile name a case oracle's verdict is filed under: its own (a failure names the profile
// it was seen on), else every profile the case was judged under, comma-joined.
inline std::string filed_arch(const oracles::Verdict& v, std::span<const ArchProfile> judged) {
    std::string arch = v.arch;
    if (arch.empty())
        for (const ArchProfile& a : judged) arch += (arch.empty() ? "" : ",") + std::string(a.name);
    return arch;
}

// The evidence the case oracles judge: the case's program, options, inputs and loader level, and
// the profiles whose rewrite succeeded.
inline oracles::Evidence case_evidence(const Case& c, std::span<const ArchProfile> judged) {
    oracles::Evidence e;
    e.program = &c.program;
    e.options = &c.options;
    e.arches = judged;
    e.inputs = c.inputs;
    e.privilege = c.privilege;
    return e;
}

// The names of the patchers a case runs with (the case's own, else the configuration's): the
// reference first. The verdicts and the exec oracle name them.
inline std::vector<std::string> patcher_names_of(const Case& c, const RunConfig& cfg) {
    const std::vector<patch::PatcherId>& ids = c.patchers.empty() ? cfg.patchers : c.patchers;
    std::vector<std::string> names;
    names.reserve(ids.size());
    for (patch::PatcherId id : ids) names.emplace_back(patch::name_of(id));
    return names;
}

}  // namespace patchfuzz::harness::runner_parts
