// Reference semantics: bpf_iter_num_new/next/destroy as in docs/iterator-isa-arch.md §1.2-1.4 (v4
// kfunc text), the ISA division rules of §3.3, and the lookup helpers array_map_lookup_elem,
// percpu_array_map_lookup_elem, array_of_map_lookup_elem, htab_map_lookup_elem,
// htab_lru_map_lookup_elem, htab_percpu_map_lookup_elem, htab_of_map_lookup_elem (models, not code).
#include "oracles/smt/inline_equiv.hpp"

#include <linux/bpf.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <functional>
#include <string>

#include "bpf/passes/bpf_loop_inline.hpp"
#include "bpf/passes/div_mod_guard.hpp"
#include "bpf/passes/helper_call_inlines.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "bpf/passes/iter_inline.hpp"
#include "bpf/passes/map_lookup_inline.hpp"
#include "bpf/util/hex.hpp"
#include "oracles/smt/bv_semantics.hpp"
#include "oracles/smt/expr.hpp"

namespace patchfuzz::oracles::smt {
namespace {

std::string s32(uint64_t v) { return std::to_string(static_cast<int32_t>(static_cast<uint32_t>(v))); }

Verdict with_arch(Verdict v, const ArchProfile& arch) {
    v.arch = std::string(arch.name);
    return v;
}

// A named conjunct of the equivalence claim, so a counterexample can say which part broke.
struct Part {
    std::string name;
    Term holds;
};

struct Claim {
    std::vector<Part> parts;
    Term all(TermContext& ctx) const {
        Term t = ctx.boolean(true);
        for (const auto& p : parts) t = t && p.holds;
        return t;
    }
};

// R6-R10 unchanged, no trap, memory equal to `ref_mem` at a free address.
void common_parts(TermContext& ctx, Claim& c, const BvState& in, const BvState& out, const Mem& ref_mem, const Term& probe) {
    Term regs = ctx.boolean(true);
    for (int r = 6; r <= 10; ++r) regs = regs && (out.regs[r] == in.regs[r]);
    c.parts.push_back({"R6-R10 preserved", regs});
    c.parts.push_back({"no trap", !out.trap});
    c.parts.push_back({"memory", mem_read(out.mem, probe) == mem_read(ref_mem, probe)});
}

std::string broken_parts(const Claim& c, const ProofResult& r) {
    std::string s;
    for (const auto& [name, v] : r.values)
        if (name.rfind("part:", 0) == 0 && v == 0) s += (s.empty() ? "" : ", ") + name.substr(5);
    (void)c;
    return s;
}

uint64_t val(const ProofResult& r, const std::string& name) {
    for (const auto& [n, v] : r.values)
        if (n == name) return v;
    return 0;
}

Verdict finish(const ProofResult& r, const Claim& c, const ArchProfile& arch, const std::string& what,
               const std::function<std::string(const ProofResult&)>& describe) {
    switch (r.status) {
        case ProofResult::Status::Proved:
            return with_arch(Verdict::pass_(kInlineOracleName, what + " proved equivalent for all inputs"), arch);
        case ProofResult::Status::Unknown:
            return with_arch(Verdict::unknown(kInlineOracleName, what + ": solver " + (r.why.empty() ? "unknown" : r.why)), arch);
        case ProofResult::Status::Refuted: {
            const std::string broken = broken_parts(c, r);
            Verdict v = Verdict::fail(kInlineOracleName, "inline-mismatch", what + " differs from the reference: " + broken,
                                      describe(r) + "; broken: " + broken);
            return with_arch(v, arch);
        }
    }
    return with_arch(Verdict::unknown(kInlineOracleName, "unreachable"), arch);
}

// One Z3 context per thread for the proofs of one prove_inlines() call: creating a context costs
// more than most of these proofs. Names are reused deliberately (same name and sort = same
// constant; every proof has its own solver). Each call starts from a new context: the models Z3
// finds depend on what its context has seen, and a question must get the same counterexample
// however often, and after whichever others, it is asked.
std::optional<TermContext>& ctx_slot() {
    thread_local std::optional<TermContext> ctx;
    return ctx;
}
TermContext& shared_ctx() {
    std::optional<TermContext>& ctx = ctx_slot();
    if (!ctx) ctx.emplace();
    return *ctx;
}

std::vector<std::pair<std::string, Term>> watch_parts(const Claim& c) {
    std::vector<std::pair<std::string, Term>> w;
    for (const auto& p : c.parts) w.emplace_back("part:" + p.name, p.holds);
    return w;
}

Verdict unsupported(const Error& e, const ArchProfile& arch, const std::string& what) {
    return with_arch(Verdict::skip(kInlineOracleName, what + ": not modelled: " + e.to_string()), arch);
}

}  // namespace

Verdict prove_iter_num_new(std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts) {
    TermContext& ctx = shared_ctx();
    const BvState in = initial_state(ctx);
    auto out = run_sequence(ctx, seq, in, arch);
    if (!out) return unsupported(out.error(), arch, "bpf_iter_num_new inline");
    const Term it = in.regs[1];
    const Term start = extract(in.regs[2], 31, 0), end = extract(in.regs[3], 31, 0);
    // bpf_iter_num_new (v4): start > end (s32) -> -EINVAL; (u32)(end - start) > BPF_MAX_LOOPS -> -E2BIG;
    // errors write (0, 0), success writes (start - 1, end).
    const Term einval = sgt(start, end);
    const Term e2big = !einval && ugt(end - start, ctx.bv(isa::kMaxLoops, 32));
    const Term ok = !einval && !e2big;
    const Term zero32 = ctx.bv(0, 32);
    const Term cur_new = ite(ok, start - ctx.bv(1, 32), zero32);
    const Term end_new = ite(ok, end, zero32);
    Mem ref_mem = store_le(in.mem, it, cur_new, ctx);
    ref_mem = store_le(ref_mem, it + ctx.bv(4, 64), end_new, ctx);
    const Term rc = ite(einval, ctx.bv(static_cast<uint32_t>(-EINVAL), 32), ite(e2big, ctx.bv(static_cast<uint32_t>(-E2BIG), 32), zero32));
    const Term probe = ctx.var("probe_addr", 64);
    Claim c;
    c.parts.push_back({"R0 (low 32 bits)", extract(out->regs[0], 31, 0) == rc});
    common_parts(ctx, c, in, *out, ref_mem, probe);
    auto w = watch_parts(c);
    w.emplace_back("r2", in.regs[2]);
    w.emplace_back("r3", in.regs[3]);
    w.emplace_back("rc_ref", rc);
    w.emplace_back("rc_inl", extract(out->regs[0], 31, 0));
    w.emplace_back("probe", probe);
    w.emplace_back("mem_ref", mem_read(ref_mem, probe));
    w.emplace_back("mem_inl", mem_read(out->mem, probe));
    const ProofResult r = prove(ctx, ctx.boolean(true), c.all(ctx), w, opts);
    return finish(r, c, arch, "bpf_iter_num_new inline", [&](const ProofResult& m) {
        return "start " + s32(val(m, "r2")) + ", end " + s32(val(m, "r3")) + " (r2 = " + hex(val(m, "r2")) +
               ", r3 = " + hex(val(m, "r3")) + "): kfunc rc " + s32(val(m, "rc_ref")) + ", inline rc " +
               s32(val(m, "rc_inl")) + "; slot byte at " + hex(val(m, "probe")) + ": kfunc " + hex(val(m, "mem_ref")) +
               ", inline " + hex(val(m, "mem_inl"));
    });
}

Verdict prove_iter_num_next(std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts) {
    TermContext& ctx = shared_ctx();
    const BvState in = initial_state(ctx);
    auto out = run_sequence(ctx, seq, in, arch);
    if (!out) return unsupported(out.error(), arch, "bpf_iter_num_next inline");
    const Term it = in.regs[1];
    const Term cur = load_le(in.mem, it, 32, ctx), end = load_le(in.mem, it + ctx.bv(4, 64), 32, ctx);
    // bpf_iter_num_next (v4): cur + 1 (wrapping) s>= end -> slot (0, 0), NULL; else cur += 1, &cur.
    const Term c1 = cur + ctx.bv(1, 32);
    const Term drained = sge(c1, end);
    const Term not_drained = !drained;
    Mem ref_mem = store_le(in.mem, it, ctx.bv(0, 64), ctx, &drained);
    ref_mem = store_le(ref_mem, it, c1, ctx, &not_drained);
    const Term r0 = ite(drained, ctx.bv(0, 64), it);
    const Term probe = ctx.var("probe_addr", 64);
    Claim c;
    c.parts.push_back({"R0 (pointer or NULL, 64 bits)", out->regs[0] == r0});
    common_parts(ctx, c, in, *out, ref_mem, probe);
    auto w = watch_parts(c);
    w.emplace_back("it", it);
    w.emplace_back("cur", cur);
    w.emplace_back("end", end);
    w.emplace_back("r0_ref", r0);
    w.emplace_back("r0_inl", out->regs[0]);
    const ProofResult r = prove(ctx, ctx.boolean(true), c.all(ctx), w, opts);
    return finish(r, c, arch, "bpf_iter_num_next inline", [&](const ProofResult& m) {
        return "slot at " + hex(val(m, "it")) + " with cur " + s32(val(m, "cur")) + ", end " + s32(val(m, "end")) +
               ": kfunc R0 " + hex(val(m, "r0_ref")) + ", inline R0 " + hex(val(m, "r0_inl"));
    });
}

Verdict prove_iter_num_destroy(std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts) {
    TermContext& ctx = shared_ctx();
    const BvState in = initial_state(ctx);
    auto out = run_sequence(ctx, seq, in, arch);
    if (!out) return unsupported(out.error(), arch, "bpf_iter_num_destroy inline");
    const Term probe = ctx.var("probe_addr", 64);
    Claim c;  // v4 kfunc: no effect at all
    common_parts(ctx, c, in, *out, in.mem, probe);
    auto w = watch_parts(c);
    w.emplace_back("probe", probe);
    const ProofResult r = prove(ctx, ctx.boolean(true), c.all(ctx), w, opts);
    return finish(r, c, arch, "bpf_iter_num_destroy inline",
                  [&](const ProofResult& m) { return "memory at " + hex(val(m, "probe")) + " or R6-R10 changed"; });
}

Verdict prove_get_func_arg(std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts) {
    TermContext& ctx = shared_ctx();
    const BvState in = initial_state(ctx);
    auto out = run_sequence(ctx, seq, in, arch);
    if (!out) return unsupported(out.error(), arch, "bpf_get_func_arg inline");
    // get_func_arg (kernel/trace/bpf_trace.c): u32 n; nr_args from the trampoline's ctx word at -8
    // (low byte in 7.x); n >= nr_args -> -EINVAL (a long), else *value = ((u64 *)ctx)[n], 0.
    const Term ctxp = in.regs[1], valp = in.regs[3];
    const Term nr = load_le(in.mem, ctxp - ctx.bv(8, 64), 64, ctx) & ctx.bv(0xff, 64);
    const Term n = zext(extract(in.regs[2], 31, 0), 32);
    const Term bad = uge(n, nr);
    const Term ok = !bad;
    const Term arg = load_le(in.mem, ctxp + n * ctx.bv(8, 64), 64, ctx);
    const Mem ref_mem = store_le(in.mem, valp, arg, ctx, &ok);
    const Term r0 = ite(bad, ctx.bv(static_cast<uint64_t>(-EINVAL), 64), ctx.bv(0, 64));
    const Term probe = ctx.var("probe_addr", 64);
    Claim c;
    c.parts.push_back({"R0 (64 bits)", out->regs[0] == r0});
    common_parts(ctx, c, in, *out, ref_mem, probe);
    auto w = watch_parts(c);
    w.emplace_back("r2", in.regs[2]);
    w.emplace_back("nr", nr);
    w.emplace_back("probe", probe);
    w.emplace_back("mem_ref", mem_read(ref_mem, probe));
    w.emplace_back("mem_inl", mem_read(out->mem, probe));
    const ProofResult r = prove(ctx, ctx.boolean(true), c.all(ctx), w, opts);
    return finish(r, c, arch, "bpf_get_func_arg inline", [&](const ProofResult& m) {
        return "n (r2) = " + hex(val(m, "r2")) + ", nr_args " + std::to_string(val(m, "nr")) + ": memory byte at " +
               hex(val(m, "probe")) + ": helper " + hex(val(m, "mem_ref")) + ", inline " + hex(val(m, "mem_inl"));
    });
}

Verdict prove_bpf_loop_entry(std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts) {
    if (seq.size() != passes::kBpfLoopInlineLen) return with_arch(Verdict::skip(kInlineOracleName, "not a bpf_loop inline"), arch);
    // The entry: insns 0-8 as emitted; the loop (9-18, a back jump and the callback's pseudo call)
    // replaced by nops, so both the -E2BIG exit ([2] goto end) and the set-up end at the end.
    std::vector<isa::Insn> entry(seq.begin(), seq.begin() + 9);
    entry.resize(seq.size(), isa::ja(0));
    TermContext& ctx = shared_ctx();
    const BvState in = initial_state(ctx);
    auto out = run_sequence(ctx, entry, in, arch);
    if (!out) return unsupported(out.error(), arch, "bpf_loop inline entry");
    // bpf_loop (kernel/bpf/bpf_iter.c): u32 nr_loops; nr_loops > BPF_MAX_LOOPS -> -E2BIG (a long).
    const Term nr = zext(extract(in.regs[1], 31, 0), 32);
    const Term e2big = ugt(nr, ctx.bv(isa::kMaxLoops, 64));
    Claim c;
    c.parts.push_back({"R0 = -E2BIG (64 bits) when nr_loops > BPF_MAX_LOOPS", !e2big || out->regs[0] == ctx.bv(static_cast<uint64_t>(-E2BIG), 64)});
    c.parts.push_back({"loop bound R6 = the u32 nr_loops otherwise", e2big || out->regs[6] == nr});
    c.parts.push_back({"counter R7 = 0, R8 = ctx otherwise", e2big || (out->regs[7] == ctx.bv(0, 64) && out->regs[8] == in.regs[3])});
    c.parts.push_back({"no trap", !out->trap});
    auto w = watch_parts(c);
    w.emplace_back("r1", in.regs[1]);
    w.emplace_back("r0_inl", out->regs[0]);
    w.emplace_back("r6_inl", out->regs[6]);
    const ProofResult r = prove(ctx, ctx.boolean(true), c.all(ctx), w, opts);
    return finish(r, c, arch, "bpf_loop inline entry", [&](const ProofResult& m) {
        return "nr_loops (r1) = " + hex(val(m, "r1")) + ": inline R0 " + hex(val(m, "r0_inl")) + ", loop bound R6 " +
               hex(val(m, "r6_inl"));
    });
}

Verdict prove_div_mod(const isa::Insn& orig, std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts) {
    const bool is64 = isa::cls(orig) == BPF_ALU64;
    const unsigned w = is64 ? 64 : 32;
    const bool is_div = isa::op(orig) == BPF_DIV;
    const bool is_signed = orig.off == 1;
    const bool x_src = isa::src_bit(orig) == BPF_X;
    // The comparison width of dst: on a JIT that needs explicit zext, a 32-bit result's upper half is
    // the zext pass's business (every patched 32-bit def gets zext_dst, docs/patching.md §3.1), not the guard's.
    const bool low_only = !is64 && arch.alu32_no_implicit_zext;
    struct Case {
        const char* name;
        int kind;  // 0: divisor 0, 1: divisor -1, 2: other
    };
    std::vector<Case> cases;
    if (x_src) {
        cases.push_back({"divisor 0", 0});
        if (is_signed) cases.push_back({"divisor -1", 1});
        cases.push_back({is_signed ? "divisor not 0 or -1" : "divisor not 0", 2});
    } else {
        cases.push_back({"divisor imm", 3});
    }
    TermContext& ctx = shared_ctx();
    const BvState in = initial_state(ctx);
    auto out = run_sequence(ctx, seq, in, arch);
    if (!out) return unsupported(out.error(), arch, "div/mod guard");
    for (const auto& cs : cases) {
        const Term dv = is64 ? in.regs[orig.dst_reg] : extract(in.regs[orig.dst_reg], 31, 0);
        const Term sv = x_src ? (is64 ? in.regs[orig.src_reg] : extract(in.regs[orig.src_reg], 31, 0))
                              : ctx.bv(is64 ? static_cast<uint64_t>(static_cast<int64_t>(orig.imm)) : static_cast<uint32_t>(orig.imm), w);
        Term assume = ctx.boolean(true);
        if (cs.kind == 0) assume = sv == ctx.bv(0, w);
        if (cs.kind == 1) assume = sv == ctx.bv(~0ULL, w);
        if (cs.kind == 2) assume = sv != ctx.bv(0, w) && (is_signed ? sv != ctx.bv(~0ULL, w) : ctx.boolean(true));
        const Term res = is_div ? isa_div(ctx, dv, sv, is_signed) : isa_mod(ctx, dv, sv, is_signed);
        const Term ref = is64 ? res : zext(res, 32);
        Claim c;
        const Term got = out->regs[orig.dst_reg];
        c.parts.push_back({std::string("dst r") + std::to_string(orig.dst_reg) + (low_only ? " (low 32 bits)" : ""),
                           low_only ? extract(got, 31, 0) == extract(ref, 31, 0) : got == ref});
        Term others = ctx.boolean(true);
        for (int r = 0; r <= 10; ++r)
            if (r != orig.dst_reg) others = others && (out->regs[r] == in.regs[r]);
        c.parts.push_back({"other registers R0-R10 preserved", others});
        c.parts.push_back({"no trap (division by 0 or MIN/-1 reached)", !out->trap});
        const Term probe = ctx.var("probe_addr", 64);
        c.parts.push_back({"memory unchanged", mem_read(out->mem, probe) == mem_read(in.mem, probe)});
        auto wt = watch_parts(c);
        wt.emplace_back("dst", in.regs[orig.dst_reg]);
        wt.emplace_back("src", x_src ? in.regs[orig.src_reg] : ctx.bv(0, 64));
        wt.emplace_back("ref", ref);
        wt.emplace_back("got", got);
        const ProofResult r = prove(ctx, assume, c.all(ctx), wt, opts);
        if (r.status != ProofResult::Status::Proved) {
            return finish(r, c, arch, std::string("div/mod guard, case ") + cs.name, [&](const ProofResult& m) {
                return "dst " + hex(val(m, "dst")) + ", src " + hex(val(m, "src")) + ": ISA result " + hex(val(m, "ref")) +
                       ", guarded sequence " + hex(val(m, "got"));
            });
        }
    }
    return with_arch(Verdict::pass_(kInlineOracleName, "div/mod guard proved for all " + std::to_string(cases.size()) +
                                                           " divisor cases"),
                     arch);
}

Verdict prove_map_lookup(const MapDef& map, std::span<const isa::Insn> seq, const ArchProfile& arch, const SmtOptions& opts) {
    if (!arch.bits64 || !arch.jit_requested)
        return with_arch(Verdict::skip(kInlineOracleName, "map lookups are inlined only when jit_requested && BITS_PER_LONG == 64"), arch);
    if (seq.empty()) return with_arch(Verdict::skip(kInlineOracleName, "no inline for this map on this arch (call kept)"), arch);
    TermContext& ctx = shared_ctx();
    const BvState in = initial_state(ctx);
    auto out = run_sequence(ctx, seq, in, arch);
    if (!out) return unsupported(out.error(), arch, "map lookup inline");
    const Term mapp = in.regs[1], key = in.regs[2];
    const uint64_t hval = static_cast<uint64_t>(isa::kHtabElemKeyOffset) + ((map.key_size + 7u) & ~7u);
    const Term zero = ctx.bv(0, 64);
    Term r0;
    Mem ref_mem = in.mem;
    auto htab = [&] {
        // __htab_map_lookup_elem(map, key): the same uninterpreted function the inline's internal call is.
        return ctx.apply("call_" + std::to_string(isa::kInternalHtabLookup), {in.regs[1], in.regs[2], in.regs[3], in.regs[4], in.regs[5]}, 64);
    };
    auto array_slot = [&](uint64_t elem) {
        const Term index = zext(load_le(in.mem, key, 32, ctx), 32);
        const Term in_range = ult(index, ctx.bv(map.max_entries, 64));
        return std::make_pair(in_range, mapp + ctx.bv(static_cast<uint64_t>(isa::kArrayValueOffset), 64) + index * ctx.bv(elem, 64));
    };
    switch (map.type) {
        case BPF_MAP_TYPE_HASH: {
            const Term e = htab();
            r0 = ite(e == zero, zero, e + ctx.bv(hval, 64));
            break;
        }
        case BPF_MAP_TYPE_LRU_HASH: {
            // htab_lru_map_lookup_elem: marks the element referenced (bpf_lru_node_set_ref) when found.
            const Term e = htab();
            const Term refb = e + ctx.bv(static_cast<uint64_t>(isa::kHtabElemLruRefOffset), 64);
            const Term set = e != zero && mem_read(in.mem, refb) == ctx.bv(0, 8);
            ref_mem = store_le(in.mem, refb, ctx.bv(1, 8), ctx, &set);
            r0 = ite(e == zero, zero, e + ctx.bv(hval, 64));
            break;
        }
        case BPF_MAP_TYPE_HASH_OF_MAPS: {
            const Term e = htab();
            r0 = ite(e == zero, zero, load_le(in.mem, e + ctx.bv(hval, 64), 64, ctx));
            break;
        }
        case BPF_MAP_TYPE_PERCPU_HASH: {
            const Term e = htab();
            r0 = ite(e == zero, zero, ctx.apply("this_cpu_ptr", {load_le(in.mem, e + ctx.bv(hval, 64), 64, ctx)}, 64));
            break;
        }
        case BPF_MAP_TYPE_ARRAY: {
            auto [ok, addr] = array_slot((map.value_size + 7u) & ~7u);
            r0 = ite(ok, addr, zero);
            break;
        }
        case BPF_MAP_TYPE_PERCPU_ARRAY: {
            auto [ok, addr] = array_slot(8);
            r0 = ite(ok, ctx.apply("this_cpu_ptr", {load_le(in.mem, addr, 64, ctx)}, 64), zero);
            break;
        }
        case BPF_MAP_TYPE_ARRAY_OF_MAPS: {
            auto [ok, addr] = array_slot(8);
            r0 = ite(ok, load_le(in.mem, addr, 64, ctx), zero);
            break;
        }
        default: return with_arch(Verdict::skip(kInlineOracleName, "no lookup-helper model for map type " + std::to_string(map.type)), arch);
    }
    const Term probe = ctx.var("probe_addr", 64);
    Claim c;
    c.parts.push_back({"R0 (64 bits)", out->regs[0] == r0});
    common_parts(ctx, c, in, *out, ref_mem, probe);
    auto w = watch_parts(c);
    w.emplace_back("map", mapp);
    w.emplace_back("key", key);
    w.emplace_back("r0_ref", r0);
    w.emplace_back("r0_inl", out->regs[0]);
    const ProofResult r = prove(ctx, ctx.boolean(true), c.all(ctx), w, opts);
    return finish(r, c, arch, "map_lookup_elem inline (" + map.name + ")", [&](const ProofResult& m) {
        return "map " + hex(val(m, "map")) + ", key ptr " + hex(val(m, "key")) + ": helper R0 " + hex(val(m, "r0_ref")) +
               ", inline R0 " + hex(val(m, "r0_inl"));
    });
}

namespace {

std::string iter_name(passes::IterInline v) {
    switch (v) {
        case passes::IterInline::V4: return "v4";
        case passes::IterInline::V1: return "v1";
        case passes::IterInline::V3: return "v3";
        case passes::IterInline::Off: return "off";
    }
    return "?";
}

std::string div_name(const isa::Insn& i) {
    const bool is64 = isa::cls(i) == BPF_ALU64;
    std::string s = std::string(i.off == 1 ? "s" : "u") + (isa::op(i) == BPF_DIV ? "div" : "mod") + (is64 ? "64" : "32");
    if (isa::src_bit(i) == BPF_X) s += " r" + std::to_string(i.dst_reg) + ", r" + std::to_string(i.src_reg);
    else s += " r" + std::to_string(i.dst_reg) + ", " + std::to_string(i.imm);
    return s;
}

}  // namespace

std::vector<InlineProof> prove_inlines(const InlineProofOptions& opts) {
    ctx_slot().emplace();
    std::vector<ArchProfile> arches = opts.arches;
    if (arches.empty()) arches = {arch_x86_64(), arch_arm64(), arch_jit32()};
    std::vector<InlineProof> out;
    auto timed = [&](const std::string& seqname, const ArchProfile& arch, auto&& fn) {
        const auto t0 = std::chrono::steady_clock::now();
        Verdict v = fn();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        v.arch = std::string(arch.name);
        if (v.pass.empty()) v.pass = "inline";
        v.patch_kind = seqname;
        out.push_back(InlineProof{.sequence = seqname, .arch = std::string(arch.name), .verdict = std::move(v), .ms = ms});
    };
    for (const ArchProfile& arch : arches) {
        if (opts.families & static_cast<unsigned>(InlineFamily::Iter)) {
            const std::string vn = iter_name(opts.iter);
            const auto nw = passes::emit_iter_num_new(opts.iter);
            const auto nx = passes::emit_iter_num_next(opts.iter);
            const auto ds = passes::emit_iter_num_destroy(opts.iter);
            timed("bpf_iter_num_new/" + vn, arch, [&] { return prove_iter_num_new(nw, arch, opts.smt); });
            timed("bpf_iter_num_next/" + vn, arch, [&] { return prove_iter_num_next(nx, arch, opts.smt); });
            timed("bpf_iter_num_destroy/" + vn, arch, [&] { return prove_iter_num_destroy(ds, arch, opts.smt); });
        }
        if (opts.families & static_cast<unsigned>(InlineFamily::DivMod)) {
            std::vector<isa::Insn> insns;
            for (uint8_t cls : {BPF_ALU64, BPF_ALU})
                for (uint8_t op : {BPF_DIV, BPF_MOD})
                    for (int16_t off : {0, 1}) {
                        insns.push_back(isa::make(cls | op | BPF_X, 2, 3, off, 0));
                        insns.push_back(isa::make(cls | op | BPF_X, 2, 2, off, 0));  // dst == src
                    }
            for (uint8_t cls : {BPF_ALU64, BPF_ALU})
                for (uint8_t op : {BPF_DIV, BPF_MOD}) insns.push_back(isa::make(cls | op | BPF_K, 2, 0, 1, -1));
            for (const auto& i : insns) {
                const auto seq = passes::emit_div_mod_guard(i);
                timed(div_name(i), arch, [&] {
                    if (seq.empty()) return Verdict::skip(kInlineOracleName, "no guard emitted");
                    return prove_div_mod(i, seq, arch, opts.smt);
                });
            }
        }
        if (opts.families & static_cast<unsigned>(InlineFamily::Helpers)) {
            const std::string ln = opts.loop == passes::InlineFix::Fixed ? "fixed" : "buggy";
            const std::string fn = opts.func_arg == passes::InlineFix::Fixed ? "fixed" : "buggy";
            const auto loop = passes::emit_bpf_loop_inline(-24, 0, opts.loop);
            const auto arg = passes::emit_get_func_arg(TraceAttach::Fentry, 2, passes::KernelProfile::K7_3, opts.func_arg);
            timed("bpf_loop/" + ln, arch, [&] { return prove_bpf_loop_entry(loop, arch, opts.smt); });
            timed("get_func_arg/" + fn, arch, [&] { return prove_get_func_arg(arg, arch, opts.smt); });
        }
        if (opts.families & static_cast<unsigned>(InlineFamily::MapLookup)) {
            const std::vector<MapDef> maps = {
                {.name = "hash", .type = BPF_MAP_TYPE_HASH, .key_size = 4, .value_size = 8, .max_entries = 64},
                {.name = "lru_hash", .type = BPF_MAP_TYPE_LRU_HASH, .key_size = 12, .value_size = 8, .max_entries = 64},
                {.name = "hash_of_maps", .type = BPF_MAP_TYPE_HASH_OF_MAPS, .key_size = 4, .value_size = 4, .max_entries = 8},
                {.name = "percpu_hash", .type = BPF_MAP_TYPE_PERCPU_HASH, .key_size = 8, .value_size = 16, .max_entries = 8},
                {.name = "array_pow2", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 16, .max_entries = 100},
                {.name = "array_mul", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 20, .max_entries = 100},
                {.name = "array_bypass_spec", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 7,
                 .bypass_spec_v1 = true},
                {.name = "percpu_array", .type = BPF_MAP_TYPE_PERCPU_ARRAY, .key_size = 4, .value_size = 8, .max_entries = 33},
                {.name = "array_of_maps", .type = BPF_MAP_TYPE_ARRAY_OF_MAPS, .key_size = 4, .value_size = 4, .max_entries = 4},
            };
            for (const auto& m : maps) {
                const auto seq = passes::emit_map_lookup_inline(m, arch);
                timed("map_lookup/" + m.name, arch, [&] { return prove_map_lookup(m, seq, arch, opts.smt); });
            }
        }
    }
    return out;
}

}  // namespace patchfuzz::oracles::smt
