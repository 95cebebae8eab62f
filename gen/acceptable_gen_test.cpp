// Structural guarantees of verifier-acceptable generation (the real verifier is the VM test's
// job): determinism, aux facts where the passes read them, NULL checks, dead blocks, ctx accesses
// the verifier allows (typed as it types them) on the ctx a test run shows, and no 6.12-only
// feature in 6.1 mode.
#include "gen/acceptable_gen.hpp"

#include <gtest/gtest.h>
#include <linux/bpf.h>

#include "bpf/isa/insn.hpp"
#include "bpf/passes/ctx_fields.hpp"
#include "gen/test_run_ctx.hpp"

namespace patchfuzz::gen {
namespace {

using namespace isa;

TEST(AcceptableGen, SameSeedSameProgram) {
    Rng a(99), b(99);
    auto x = generate_acceptable(a, {});
    auto y = generate_acceptable(b, {});
    EXPECT_TRUE(x.program == y.program);
    ASSERT_EQ(x.inputs.size(), y.inputs.size());
    EXPECT_EQ(x.inputs[0].packet, y.inputs[0].packet);
}

bool in_cb(const Program& p, size_t pc) {
    for (uint32_t s = 0; s < p.subprog_cnt(); s++)
        if (p.subprogs[s].is_cb && pc >= p.subprogs[s].start && pc < p.subprogs[s + 1].start) return true;
    return false;
}

uint32_t bytes_of(const Insn& in) { return size(in) == BPF_B ? 1 : size(in) == BPF_H ? 2 : size(in) == BPF_W ? 4 : 8; }

TEST(AcceptableGen, StructuralInvariants) {
    Rng rng(7);
    uint32_t lookups = 0, loops = 0, dead = 0, ctx_reads = 0, ctx_stores = 0, packet_reads = 0;
    for (int n = 0; n < 300; n++) {
        auto c = generate_acceptable(rng, {});
        const Program& p = c.program;
        ASSERT_EQ(p.aux.size(), p.insns.size());
        ASSERT_FALSE(p.maps.empty());
        ASSERT_EQ(c.inputs.size(), 2u);
        EXPECT_TRUE(p.prog_type == BPF_PROG_TYPE_SOCKET_FILTER || p.prog_type == BPF_PROG_TYPE_XDP ||
                    p.prog_type == BPF_PROG_TYPE_SCHED_CLS);
        EXPECT_EQ(p.subprogs[0].stack_depth, 64u);
        const ctx_fields::CtxKind kind = ctx_fields::ctx_kind(p.prog_type);
        bool r1_is_ctx = true;  // until a call or an insn writes r1
        for (size_t i = 0; i < p.insns.size(); i++) {
            const Insn& in = p.insns[i];
            // every jump lands inside the program
            if (relative_field(in) != RelField::None) {
                int64_t t = static_cast<int64_t>(i) + displacement(in) + 1;
                EXPECT_GE(t, 0);
                EXPECT_LT(t, static_cast<int64_t>(p.insns.size()));
            }
            // the context: accessed through r1 while it still holds the ctx pointer, each access
            // one the verifier allows and typed as it types it; nothing else is typed ctx
            const bool load = cls(in) == BPF_LDX, store = cls(in) == BPF_STX || cls(in) == BPF_ST;
            if ((load && in.src_reg == BPF_REG_1) || (store && in.dst_reg == BPF_REG_1)) {
                EXPECT_TRUE(r1_is_ctx) << "pc " << i;
                EXPECT_EQ(p.aux[i].ptr_type, PtrType::Ctx) << "pc " << i;
                const ctx_fields::UapiField* f = ctx_fields::allowed_access(kind, in.off, bytes_of(in), store);
                ASSERT_NE(f, nullptr) << "pc " << i;
                EXPECT_EQ(p.aux[i].ctx_field_size, f->narrow && load ? 4 : 0) << "pc " << i;
                (load ? ctx_reads : ctx_stores)++;
            } else {
                EXPECT_NE(p.aux[i].ptr_type, PtrType::Ctx) << "pc " << i;
            }
            if (load && p.aux[i].ptr_type == PtrType::Packet) packet_reads++;
            if (is_call(in) || ((is_alu_class(in) || load || is_ldimm64(in)) && in.dst_reg == BPF_REG_1)) r1_is_ctx = false;
            if (is_helper_call(in) && in.imm == BPF_FUNC_map_lookup_elem) {
                lookups++;
                ASSERT_GE(p.aux[i].map_index, 0);
                ASSERT_LT(static_cast<size_t>(p.aux[i].map_index), p.maps.size());
                ASSERT_LT(i + 1, p.insns.size());
                const Insn& chk = p.insns[i + 1];  // the NULL check follows at once
                EXPECT_EQ(chk.code, BPF_JMP | BPF_JEQ | BPF_K);
                EXPECT_EQ(chk.dst_reg, BPF_REG_0);
                EXPECT_EQ(chk.imm, 0);
            }
            if (is_helper_call(in) && in.imm == BPF_FUNC_loop) {
                loops++;
                EXPECT_TRUE(p.aux[i].loop_fit_for_inline);
                uint32_t cb = p.aux[i].loop_callback_subprogno;
                ASSERT_LT(cb, p.subprog_cnt());
                EXPECT_TRUE(p.subprogs[cb].is_cb);
            }
            if (!p.aux[i].seen && in_cb(p, i)) {
                // an unseen callback: on 6.12 every bpf_loop call runs it zero times (r1 = 0)
                for (size_t j = 0; j < p.insns.size(); j++)
                    if (is_helper_call(p.insns[j]) && p.insns[j].imm == BPF_FUNC_loop) {
                        EXPECT_TRUE(same(p.insns[j - 6], mov64_imm(BPF_REG_1, 0))) << "pc " << j;
                    }
            } else if (!p.aux[i].seen) {
                dead++;
                // an unseen insn sits in the fallthrough of an always-taken `if r0 == 0` after `r0 = 0`
                bool covered = false;
                for (size_t j = 1; j <= i && j + 1 <= i + 1; j++) {
                    const Insn& br = p.insns[j];
                    if (br.code == (BPF_JMP | BPF_JEQ | BPF_K) && br.dst_reg == 0 && br.imm == 0 && same(p.insns[j - 1], mov64_imm(0, 0)) &&
                        i > j && i <= j + static_cast<size_t>(br.off))
                        covered = true;
                }
                EXPECT_TRUE(covered) << "unseen pc " << i;
            }
        }
    }
    EXPECT_GT(lookups, 300u);
    EXPECT_GT(loops, 20u);
    EXPECT_GT(dead, 20u);
    EXPECT_GT(ctx_reads, 300u);
    EXPECT_GT(ctx_stores, 50u);
    EXPECT_GT(packet_reads, 30u);
}

// Without ctx accesses (32-bit guests, whose structs the ctx tables do not hold): socket filters and XDP,
// nothing typed as a ctx access.
TEST(AcceptableGen, NoCtxAccessesWhenTurnedOff) {
    Rng rng(17);
    AcceptableOptions o;
    o.ctx = false;
    for (int n = 0; n < 200; n++) {
        auto c = generate_acceptable(rng, o);
        EXPECT_NE(c.program.prog_type, static_cast<uint32_t>(BPF_PROG_TYPE_SCHED_CLS));
        for (const auto& a : c.program.aux) EXPECT_NE(a.ptr_type, PtrType::Ctx);
    }
}

// The inputs are what BPF_PROG_TEST_RUN shows each program: a __sk_buff whose computed fields
// follow the packet (and whose settable ones are random), or the loopback's xdp_md.
TEST(AcceptableGen, InputsCarryTheTestRunsCtx) {
    Rng rng(13);
    uint32_t skb = 0, xdp = 0;
    for (int n = 0; n < 200; n++) {
        auto c = generate_acceptable(rng, {});
        const uint32_t type = c.program.prog_type;
        for (const auto& in : c.inputs) {
            ASSERT_EQ(in.packet.size(), 64u);
            if (type == BPF_PROG_TYPE_XDP) {
                xdp++;
                EXPECT_EQ(in.ctx, test_run_ctx_view(type, in.packet, {}));
                continue;
            }
            skb++;
            ASSERT_EQ(in.ctx.size(), ctx_fields::kSkbUapiSize);
            // the fields ctx_in carries come back from it; the rest the test run computes
            SkbCtxIn from;
            auto u32 = [&in](uint32_t off) { return in.ctx[off] | in.ctx[off + 1] << 8 | in.ctx[off + 2] << 16 | uint32_t{in.ctx[off + 3]} << 24; };
            from.mark = u32(8);
            from.priority = u32(32);
            from.ingress_ifindex = u32(36);
            for (uint32_t k = 0; k < 5; k++) from.cb[k] = u32(48 + 4 * k);
            EXPECT_EQ(in.ctx, test_run_ctx_view(type, in.packet, from));
            EXPECT_EQ(u32(0), type == BPF_PROG_TYPE_SOCKET_FILTER ? 50u : 64u);  // len
        }
    }
    EXPECT_GT(skb, 100u);
    EXPECT_GT(xdp, 50u);
}

TEST(AcceptableGen, LruMapsAreLargeEnoughNeverToEvict) {
    Rng rng(5);
    for (int n = 0; n < 200; n++)
        for (const auto& m : generate_acceptable(rng, {}).program.maps)
            if (m.type == BPF_MAP_TYPE_LRU_HASH) {
                EXPECT_GE(m.max_entries, 256u);
            }
}

TEST(AcceptableGen, SixOneModeUsesNoSixTwelveFeature) {
    Rng rng(3);
    AcceptableOptions o;
    o.v612 = false;
    for (int n = 0; n < 300; n++) {
        auto c = generate_acceptable(rng, o);
        for (const auto& a : c.program.aux) EXPECT_TRUE(a.seen || !a.loop_fit_for_inline);
        for (uint32_t s = 0; s < c.program.subprog_cnt(); s++)
            if (c.program.subprogs[s].is_cb) {  // 6.1 always verifies the callback once
                EXPECT_TRUE(c.program.aux[c.program.subprogs[s].start].seen);
            }
        for (const auto& in : c.program.insns) {
            EXPECT_FALSE(is_may_goto(in));
            EXPECT_FALSE(cls(in) == BPF_LDX && mode(in) == BPF_MEMSX);  // 6.1 has no sign-extending loads
            if (is_alu_class(in) && (op(in) == BPF_DIV || op(in) == BPF_MOD)) {
                EXPECT_EQ(in.off, 0);
            }
            if (is_helper_call(in)) {
                EXPECT_NE(in.imm, BPF_FUNC_jiffies64);
                EXPECT_NE(in.imm, BPF_FUNC_get_smp_processor_id);
            }
        }
    }
}

// Below root: what a CAP_BPF-only or unprivileged loader may load (socket filters; unprivileged:
// no calls, callbacks, back-edges, LRU maps or bpf_jiffies64), arrays as the kernel sizes them for a
// creator without bypass_spec_v1, and the speculative facts: a barrier after every stack store
// (each goes to a slot never written before), masked pointer arithmetic with its limit.
TEST(AcceptableGen, LowerLevelsLoadWhatTheKernelAllowsThemWithTheirFacts) {
    for (auto level : {passes::Privilege::Bpf, passes::Privilege::Unpriv}) {
        Rng rng(11);
        AcceptableOptions o;
        o.privilege = level;
        const bool unpriv = level == passes::Privilege::Unpriv;
        uint32_t masked = 0, unseen = 0;
        for (int n = 0; n < 300; n++) {
            auto c = generate_acceptable(rng, o);
            const Program& p = c.program;
            EXPECT_EQ(p.prog_type, static_cast<uint32_t>(BPF_PROG_TYPE_SOCKET_FILTER));
            for (const auto& m : p.maps) {
                EXPECT_FALSE(m.bypass_spec_v1);
                if (unpriv) { EXPECT_NE(m.type, static_cast<uint32_t>(BPF_MAP_TYPE_LRU_HASH)); }
                if (m.type == BPF_MAP_TYPE_ARRAY) { EXPECT_EQ(m.max_entries & (m.max_entries - 1), 0u); }
            }
            if (unpriv) { EXPECT_EQ(p.subprog_cnt(), 1u); }
            for (uint32_t i = 0; i < p.len(); i++) {
                const Insn& in = p.insns[i];
                const InsnAux& a = p.aux[i];
                if (unpriv) {
                    EXPECT_FALSE(is_pseudo_call(in) || is_pseudo_func(in) || is_may_goto(in));
                    if (is_jmp_class(in) && !is_call(in) && !is_exit(in)) { EXPECT_GE(in.off, 0) << "back-edge at " << i; }
                    if (is_helper_call(in)) { EXPECT_NE(in.imm, BPF_FUNC_jiffies64); }
                }
                // every stack store of main gets its barrier (the bpf_loop callback's included)
                if ((cls(in) == BPF_ST || cls(in) == BPF_STX) && mode(in) == BPF_MEM && in.dst_reg == BPF_REG_10) {
                    EXPECT_TRUE(a.nospec_result) << "stack store at " << i;
                }
                if (a.alu_state) {
                    ++masked;
                    EXPECT_EQ(in.code, BPF_ALU64 | BPF_ADD | BPF_X);
                    EXPECT_TRUE(a.alu_limit == 1 || a.alu_limit == 3 || a.alu_limit == 7);
                }
                unseen += !a.seen;
            }
        }
        EXPECT_GT(masked, 50u);  // the speculative side is reached, not just allowed
        EXPECT_GT(unseen, 50u);
    }
}

TEST(AcceptableGen, RootPlantsNoSpeculativeFacts) {
    Rng rng(11);
    for (int n = 0; n < 200; n++) {
        auto c = generate_acceptable(rng, {});
        for (const auto& m : c.program.maps) EXPECT_TRUE(m.bypass_spec_v1);
        for (const auto& a : c.program.aux) {
            EXPECT_FALSE(a.nospec_result || a.nospec);
            EXPECT_EQ(a.alu_state, 0);
        }
    }
}

// gotox (7.x, root): every table is a BPF_MAP_TYPE_INSN_ARRAY map after the program's other maps,
// its entries name the first insn of each case (never a `goto +0`, finding 0003), the table load
// names that map, inputs never fill it; the option is off by default and below root.
TEST(AcceptableGen, JumpTablesAreWellFormed) {
    AcceptableOptions o;
    o.gotox = true;
    size_t tables = 0;
    for (uint64_t seed = 0; seed < 200; seed++) {
        Rng rng(seed);
        const auto c = generate_acceptable(rng, o);
        const Program& p = c.program;
        for (const InsnArray& ia : p.insn_arrays) {
            ++tables;
            ASSERT_GE(ia.map_index, 0);
            const MapDef& m = p.maps[static_cast<size_t>(ia.map_index)];
            EXPECT_EQ(m.type, isa::kMapTypeInsnArray);
            EXPECT_EQ(m.max_entries, ia.entries.size());
            for (size_t k = static_cast<size_t>(ia.map_index); k < p.maps.size(); k++)
                EXPECT_EQ(p.maps[k].type, isa::kMapTypeInsnArray) << "a table map before a lookup map";
            for (const InsnArrayEntry& e : ia.entries) {
                ASSERT_LT(e.orig_off, p.len());
                EXPECT_EQ(e.orig_off, e.xlated_off);
                EXPECT_FALSE(isa::is_ja0(p.insns[e.orig_off])) << "seed " << seed;
                EXPECT_TRUE(p.aux[e.orig_off].indirect_target);
                EXPECT_TRUE(p.aux[e.orig_off].seen);
            }
            size_t loads = 0;
            for (uint32_t i = 0; i + 1 < p.len(); i++)
                if (isa::is_ldimm64(p.insns[i]) && p.insns[i].src_reg == BPF_PSEUDO_MAP_VALUE && p.insns[i].imm == ia.map_index) loads++;
            EXPECT_EQ(loads, 1u);
            for (const auto& in : c.inputs) EXPECT_TRUE(in.maps[static_cast<size_t>(ia.map_index)].empty());
        }
    }
    EXPECT_GT(tables, 20u);
    for (auto level : {passes::Privilege::Bpf, passes::Privilege::Unpriv}) {
        o.privilege = level;
        for (uint64_t seed = 0; seed < 50; seed++) {
            Rng rng(seed);
            EXPECT_TRUE(generate_acceptable(rng, o).program.insn_arrays.empty());
        }
    }
    AcceptableOptions off;
    for (uint64_t seed = 0; seed < 50; seed++) {
        Rng rng(seed);
        EXPECT_TRUE(generate_acceptable(rng, off).program.insn_arrays.empty());
    }
}

}  // namespace
}  // namespace patchfuzz::gen
