#include "bpf/interp/loop_programs.hpp"

#include <linux/bpf.h>

#include <map>
#include <string>

#include "bpf/interp/exec_input.hpp"
#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/util/check.hpp"

namespace patchfuzz::interp {
namespace {
using namespace isa;

// A tiny label assembler: jumps name their target label; offsets are resolved at the end.
class Builder {
public:
    Builder& put(Insn i) {
        insns_.push_back(i);
        return *this;
    }
    Builder& label(const std::string& l) {
        labels_[l] = static_cast<int32_t>(insns_.size());
        return *this;
    }
    // A jump (off field) or pseudo call / gotol (imm field) whose target is `l`.
    Builder& jump(Insn i, const std::string& l) {
        fix_.emplace_back(static_cast<int32_t>(insns_.size()), l);
        insns_.push_back(i);
        return *this;
    }
    std::vector<Insn> done() {
        for (auto& [at, l] : fix_) {
            auto it = labels_.find(l);
            PATCHFUZZ_CHECK(it != labels_.end(), "unknown label");
            int32_t rel = it->second - at - 1;
            Insn& i = insns_[static_cast<size_t>(at)];
            if (relative_field(i) == RelField::Imm32) i.imm = rel;
            else i.off = static_cast<int16_t>(rel);
        }
        return std::move(insns_);
    }

private:
    std::vector<Insn> insns_;
    std::map<std::string, int32_t> labels_;
    std::vector<std::pair<int32_t, std::string>> fix_;
};

int32_t kf(kfunc::Kind k) { return kfunc::by_kind(k)->btf_id; }

void add_kfuncs(Program& p) {
    for (const auto& i : kfunc::kTable)
        if (i.kind == kfunc::Kind::IterNumNew || i.kind == kfunc::Kind::IterNumNext || i.kind == kfunc::Kind::IterNumDestroy)
            p.kfuncs.push_back(KfuncDesc{.btf_id = i.btf_id, .offset = 0, .kind = static_cast<uint32_t>(i.kind), .name = std::string(i.name)});
}

void add_bound_map(Program& p) {
    p.maps.push_back(MapDef{.name = "bss", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 4, .max_entries = 1});
}

Builder& slot_ptr(Builder& b) { return b.put(mov64_reg(BPF_REG_1, BPF_REG_10)).put(alu64_imm(BPF_ADD, BPF_REG_1, -8)); }
}  // namespace

Program iter_sum_program(const IterSumOptions& o) {
    Builder b;
    b.put(mov64_reg(BPF_REG_6, BPF_REG_1)).put(mov64_imm(BPF_REG_7, 0)).put(mov64_imm(BPF_REG_8, 0));
    slot_ptr(b);
    if (o.bounds_from_ctx) {
        b.put(ldx(BPF_W, BPF_REG_2, BPF_REG_6, 0)).put(ldx(BPF_W, BPF_REG_3, BPF_REG_6, 4));
    } else {
        b.put(mov32_imm(BPF_REG_2, o.start)).put(mov32_imm(BPF_REG_3, o.end));
    }
    b.put(call_kfunc(kf(kfunc::Kind::IterNumNew)));
    b.put(stx(BPF_W, BPF_REG_10, BPF_REG_0, -16));
    b.label("loop");
    slot_ptr(b).put(call_kfunc(kf(kfunc::Kind::IterNumNext)));
    b.jump(jmp_imm(BPF_JEQ, BPF_REG_0, 0, 0), "done");
    b.put(ldx(BPF_W, BPF_REG_1, BPF_REG_0, 0));
    b.put(alu64_reg(BPF_ADD, BPF_REG_7, BPF_REG_1));
    b.put(alu64_imm(BPF_ADD, BPF_REG_8, 1));
    b.jump(jmp_imm(BPF_JSGE, BPF_REG_8, o.max_iters, 0), "done");
    b.jump(ja(0), "loop");
    b.label("done");
    slot_ptr(b).put(call_kfunc(kf(kfunc::Kind::IterNumNext)));
    b.put(stx(BPF_DW, BPF_REG_10, BPF_REG_0, -24));
    slot_ptr(b).put(call_kfunc(kf(kfunc::Kind::IterNumDestroy)));
    b.put(stx(BPF_DW, BPF_REG_10, BPF_REG_7, -32)).put(stx(BPF_DW, BPF_REG_10, BPF_REG_8, -40));
    b.put(mov64_reg(BPF_REG_0, BPF_REG_8)).put(alu64_imm(BPF_LSH, BPF_REG_0, 40)).put(alu64_reg(BPF_XOR, BPF_REG_0, BPF_REG_7));
    b.put(exit_insn());
    Program p = make_program(b.done());
    // `r1 = *(u32 *)(r0 + 0)` feeds the 64-bit `r7 += r1`: the verifier marks it zext_dst, so a
    // JIT that needs explicit zero extension gets a zext after it.
    for (uint32_t i = 0; i < p.len(); ++i)
        if (same(p.insns[i], ldx(BPF_W, BPF_REG_1, BPF_REG_0, 0))) p.aux[i].zext_dst = true;
    p.name = "iter_sum";
    p.subprogs[0].stack_depth = 40;
    add_kfuncs(p);
    return p;
}

Program bpf_for_program() {
    Builder b;
    b.put(ldimm64_lo(BPF_REG_6, BPF_PSEUDO_MAP_VALUE, 0)).put(ldimm64_hi(0));
    b.put(mov64_imm(BPF_REG_7, 0));
    slot_ptr(b).put(mov32_imm(BPF_REG_2, 0)).put(ldx(BPF_W, BPF_REG_3, BPF_REG_6, 0));
    b.put(call_kfunc(kf(kfunc::Kind::IterNumNew)));
    b.label("loop");
    slot_ptr(b).put(call_kfunc(kf(kfunc::Kind::IterNumNext)));
    b.jump(jmp_imm(BPF_JEQ, BPF_REG_0, 0, 0), "done");
    b.put(ldx(BPF_W, BPF_REG_1, BPF_REG_0, 0));                // i = *p
    b.put(ldx(BPF_W, BPF_REG_2, BPF_REG_6, 0));                // nr_loops, reloaded every round
    b.jump(jmp32_imm(BPF_JSLT, BPF_REG_1, 0, 0), "done");      // bpf_for's re-check: start <= i
    b.jump(jmp32_reg(BPF_JSGE, BPF_REG_1, BPF_REG_2, 0), "done");  // i < end
    b.put(alu64_imm(BPF_ADD, BPF_REG_7, 1));
    b.jump(ja(0), "loop");
    b.label("done");
    slot_ptr(b).put(call_kfunc(kf(kfunc::Kind::IterNumDestroy)));
    b.put(mov64_reg(BPF_REG_0, BPF_REG_7)).put(exit_insn());
    Program p = make_program(b.done());
    p.name = "bpf_for";
    p.subprogs[0].stack_depth = 8;
    add_kfuncs(p);
    add_bound_map(p);
    return p;
}

Program bpf_loop_program(bool inlined) {
    Builder b;
    b.put(ldimm64_lo(BPF_REG_1, BPF_PSEUDO_MAP_VALUE, 0)).put(ldimm64_hi(0));
    b.put(ldx(BPF_W, BPF_REG_1, BPF_REG_1, 0));
    if (!inlined) {
        b.jump(ldimm64_lo(BPF_REG_2, BPF_PSEUDO_FUNC, 0), "cb").put(ldimm64_hi(0));
        b.put(mov64_imm(BPF_REG_3, 0)).put(mov64_imm(BPF_REG_4, 0));
        b.put(call_helper(BPF_FUNC_loop));
        b.put(exit_insn());
    } else {
        // inline_bpf_loop: spill R6-R8, bound check, counter in R8, callback by pseudo call.
        b.put(stx(BPF_DW, BPF_REG_10, BPF_REG_6, -24)).put(stx(BPF_DW, BPF_REG_10, BPF_REG_7, -16)).put(stx(BPF_DW, BPF_REG_10, BPF_REG_8, -8));
        b.jump(jmp_imm(BPF_JGT, BPF_REG_1, kMaxLoops, 0), "e2big");
        b.put(mov64_imm(BPF_REG_7, 0));  // callback ctx (NULL)
        b.put(mov64_reg(BPF_REG_6, BPF_REG_1)).put(mov64_imm(BPF_REG_8, 0));
        b.label("loop");
        b.jump(jmp_reg(BPF_JGE, BPF_REG_8, BPF_REG_6, 0), "end");
        b.put(mov64_reg(BPF_REG_1, BPF_REG_8)).put(mov64_reg(BPF_REG_2, BPF_REG_7));
        b.jump(call_pseudo(0), "cb");
        b.put(alu64_imm(BPF_ADD, BPF_REG_8, 1));
        b.jump(jmp_imm(BPF_JEQ, BPF_REG_0, 0, 0), "loop");
        b.label("end");
        b.put(mov64_reg(BPF_REG_0, BPF_REG_8));
        b.jump(ja(0), "restore");
        b.label("e2big");
        b.put(mov32_imm(BPF_REG_0, -7));
        b.label("restore");
        b.put(ldx(BPF_DW, BPF_REG_6, BPF_REG_10, -24)).put(ldx(BPF_DW, BPF_REG_7, BPF_REG_10, -16)).put(ldx(BPF_DW, BPF_REG_8, BPF_REG_10, -8));
        b.put(exit_insn());
    }
    b.label("cb");
    b.put(mov64_imm(BPF_REG_0, 0)).put(exit_insn());
    Program p = make_program(b.done());
    p.name = inlined ? "bpf_loop_inlined" : "bpf_loop";
    p.subprogs[0].stack_depth = inlined ? 24 : 0;
    add_bound_map(p);
    return p;
}

void set_nr_loops(ExecInput& in, uint32_t nr_loops) {
    in.maps.resize(1);
    in.maps[0] = {MapEntry{{0, 0, 0, 0},
                           {static_cast<uint8_t>(nr_loops), static_cast<uint8_t>(nr_loops >> 8), static_cast<uint8_t>(nr_loops >> 16),
                            static_cast<uint8_t>(nr_loops >> 24)}}};
}

}  // namespace patchfuzz::interp
