// Pass "misc_fixups": models bpf_do_misc_fixups() (kernel/bpf/fixups.c) for the rows of
// docs/patching.md §5.3: the pre-loop add_hidden_subprog (hidden exception callback), a
// (address-space cast), b (needs_zext narrowing), c/d (div/mod guards), e (PROBE_MEM guard), f
// (LD_ABS/IND via gen_ld_abs), g (Spectre v1 pointer-arith masking), h/h' (may_goto) with the
// post-loop counter prologue, i (bpf-next per-CPU ld_imm64), j (cast_to_kern_ctx / rdonly_cast),
// k (JIT-inlined helpers), m (tail calls, pokes), n (prog->aux argument), o (per-CPU allocation
// pointer), p (map lookup inlining), q (jiffies64), r/s (x86-64 helper inlines), t-w (tracing
// get_func_*), x (get_branch_snapshot), y (kptr_xchg) and z (patch_call_imm, only with
// RewriteOptions::patch_call_imm). Not modelled: prog->jit_required (rows i, k, p set it; Program has
// no field), row l's side effects, and the map-op direct-call imm of row p.
// RewriteOptions::kernel selects where bpf-next, 6.12 and 6.1 differ (profile_arch, rows h, n, o, r,
// s, t-v, x, y, the hidden subprog and the cpu v4 / may_goto rejections of 6.1; partly measured
// under qemu, harness/kernel/README.md).
#include <algorithm>
#include <cerrno>
#include <string>

#include "bpf/passes/div_mod_guard.hpp"
#include "bpf/passes/helper_call_inlines.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "bpf/passes/ld_abs.hpp"
#include "bpf/passes/map_lookup_inline.hpp"
#include "bpf/passes/misc_fixups_opcodes.hpp"
#include "bpf/passes/pass_util.hpp"
#include "bpf/passes/ptr_arith_mask.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;

Insn percpu(uint8_t reg) { return make(BPF_ALU64 | BPF_MOV | BPF_X, reg, reg, kAddrPercpuOff, 0); }

// Row e: [AX = src; (AX += off); AX >>= 32; if AX <= limit>>32 goto zero; insn; goto end; dst = 0]
std::vector<Insn> probe_mem_guard(const Insn& insn, uint64_t limit) {
    std::vector<Insn> p{mov64_reg(kRegAx, insn.src_reg)};
    if (insn.off != 0) p.push_back(alu64_imm(BPF_ADD, kRegAx, insn.off));
    p.push_back(alu64_imm(BPF_RSH, kRegAx, 32));
    p.push_back(jmp_imm(BPF_JLE, kRegAx, static_cast<int32_t>(limit >> 32), 2));
    p.push_back(insn);
    p.push_back(ja(1));
    p.push_back(mov64_imm(insn.dst_reg, 0));
    return p;
}

// Rows h/h': the expansion of `may_goto off` (patch-local: the outgoing jump at [1] is computed
// from the original off, the generator contract of docs/patching.md §7.2).
std::vector<Insn> may_goto_expansion(const Insn& insn, uint32_t depth, bool timed) {
    const int32_t slot = -static_cast<int32_t>(depth) - (timed ? 16 : 8);
    const int32_t x = insn.off >= 0 ? insn.off + (timed ? 5 : 2) : insn.off - 1;
    if (timed) {
        return {ldx(BPF_DW, kRegAx, BPF_REG_10, static_cast<int16_t>(slot)),
                jmp_imm(BPF_JEQ, kRegAx, 0, static_cast<int16_t>(x)),
                alu64_imm(BPF_SUB, kRegAx, 1),
                jmp_imm(BPF_JNE, kRegAx, 0, 2),
                mov64_imm(kRegAx, slot),
                call_helper(kInternalTimedMayGoto),
                stx(BPF_DW, BPF_REG_10, kRegAx, static_cast<int16_t>(slot))};
    }
    return {ldx(BPF_DW, kRegAx, BPF_REG_10, static_cast<int16_t>(slot)),
            jmp_imm(BPF_JEQ, kRegAx, 0, static_cast<int16_t>(x)),
            alu64_imm(BPF_SUB, kRegAx, 1),
            stx(BPF_DW, BPF_REG_10, kRegAx, static_cast<int16_t>(slot))};
}

// The JIT capabilities as the profile's kernel has them: the internal per-CPU address mov
// (BPF_MOV64_PERCPU_REG, kernel-patches/bpf PR 6709 "Bpf percpu insn", April 2024) is missing from
// 6.1, so its per-CPU array/hash lookup inlines (-EOPNOTSUPP there) and the helper inlines are too.
// bpf-next lacks none of them: its profile is opts.arch itself; an older kernel's is a copy of it
// in `older`.
const ArchProfile& profile_arch(const RewriteOptions& opts, ArchProfile& older) {
    if (is_7x_or_next(opts.kernel)) return opts.arch;
    older = opts.arch;
    if (opts.kernel == KernelProfile::K6_1) {
        older.supports_percpu_insn = false;
        older.verifier_inlines_helpers = false;
    }
    // Row h' (timed may_goto, bpf_jit_supports_timed_may_goto()) arrived after 6.12: 6.12 on x86-64
    // takes the untimed 8-byte counter path (measured on 6.12.117, harness/kernel/README.md).
    older.timed_may_goto = false;
    return older;
}


// Rows r and s: the helpers the x86-64 verifier inlines itself (ArchProfile::verifier_inlines_helpers).
bool is_verifier_inlined_helper(int32_t id) {
    return id == BPF_FUNC_get_smp_processor_id || id == BPF_FUNC_get_current_task || id == BPF_FUNC_get_current_task_btf;
}

class MiscFixupsPass final : public Pass {
public:
    // prefilter: skip the row chain for the insns no row can act on (misc_fixups_opcodes.hpp)
    explicit MiscFixupsPass(bool prefilter) : prefilter_(prefilter) {}
    std::string_view name() const override { return "misc_fixups"; }

    PatchOutcome run(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) const override {
        ArchProfile older;
        const ArchProfile& arch = profile_arch(opts, older);
        const uint32_t n = prog.len();  // the loop bound stays the original length
        if (auto r = add_hidden_exception_cb(prog, patcher, opts); !r.ok()) return r;
        const uint32_t nsub = prog.subprog_cnt();  // after the hidden subprog, as the kernel's loop
        bool no_user_conv = false;
        for (const auto& m : prog.maps) no_user_conv |= (m.map_flags & kFlagNoUserConv) != 0;

        patch::PatchBatch batch;
        auto replace = [&](uint32_t pos, std::vector<Insn> insns) {
            add_patch(batch, {.kind = patch::PatchKind::Replace, .pos = pos, .insns = std::move(insns)});
        };
        std::vector<uint32_t> extra(nsub, 0);  // stack_depth_extra per subprog
        uint32_t cur = 0;
        uint32_t depth = nsub ? prog.subprogs[0].stack_depth : 0;
        // subprogs[cur + 1].start while cur < nsub (the next_insn bookkeeping below), else never
        constexpr uint32_t kNoBoundary = UINT32_MAX;  // i + 1 <= n < UINT32_MAX
        uint32_t next_start = nsub ? prog.subprogs[1].start : kNoBoundary;
        // next_insn bookkeeping: at a subprog's last insn its stack grows by the extra.
        auto next_insn = [&](uint32_t at) {
            if (next_start != at + 1) return;
            ++cur;
            depth = cur < nsub ? prog.subprogs[cur].stack_depth : depth;
            next_start = cur < nsub ? prog.subprogs[cur + 1].start : kNoBoundary;
        };
        // Read once: an in-place edit (unsigned char fields) may alias anything, so the compiler
        // would reload these on every insn. The rows never resize insns or aux.
        const Insn* const insns = prog.insns.data();
        const InsnAux* const aux = prog.aux.data();

        for (uint32_t i = 0; i < n; ++i) {
            // No row acts on most insns, and their opcode alone says so (misc_fixups_opcodes.hpp):
            // a tight loop passes them.
            while (prefilter_ && i < n && !misc_fixups_may_act(insns[i], aux[i].needs_zext)) next_insn(i++);
            if (i == n) break;
            Insn& insn = prog.insns[i];  // in-place edits precede any copy (§7.5)
            const InsnAux& ax = aux[i];
            do {
                // a: address-space cast
                if (insn.code == (BPF_ALU64 | BPF_MOV | BPF_X) && insn.imm != 0) {
                    if (insn.imm == 1 || no_user_conv) insn = mov32_reg(insn.dst_reg, insn.src_reg);
                    break;
                }
                // b: needs_zext narrows ALU64 to ALU in place, then the checks continue
                if (ax.needs_zext && cls(insn) == BPF_ALU64)
                    insn.code = static_cast<uint8_t>(BPF_ALU | op(insn) | src_bit(insn));
                // c, d: div/mod
                if (is_alu_class(insn) && (op(insn) == BPF_DIV || op(insn) == BPF_MOD)) {
                    // cpu v4 sdiv/smod (off 1) postdate 6.1: it rejects them with a clean verifier
                    // log (harness/kernel/README.md "Model profiles", measured).
                    if (insn.off == 1 && opts.kernel == KernelProfile::K6_1)
                        return fail(-EINVAL, "insn " + std::to_string(i) + ": sdiv/smod needs cpu v4 (not in 6.1)");
                    auto g = emit_div_mod_guard(insn);
                    if (!g.empty()) replace(i, std::move(g));
                    break;
                }
                // e: PROBE_MEM guard
                if (cls(insn) == BPF_LDX && (mode(insn) == kModeProbeMem || mode(insn) == kModeProbeMemSx) &&
                    arch.uaddress_limit != 0) {
                    replace(i, probe_mem_guard(insn, arch.uaddress_limit));
                    break;
                }
                // f: LD_ABS / LD_IND (env->ops->gen_ld_abs; contains an EXIT)
                if (cls(insn) == BPF_LD && (mode(insn) == BPF_ABS || mode(insn) == BPF_IND)) {
                    if (!prog_type_has_gen_ld_abs(prog.prog_type))
                        return fail(-EINVAL, "insn " + std::to_string(i) +
                                                 ": BPF_LD_[ABS|IND] instructions not allowed for this program type");
                    auto p = emit_gen_ld_abs(insn);
                    if (p.empty())
                        return fail(-EFAULT, "verifier bug: insn " + std::to_string(i) + ": gen_ld_abs produced no code");
                    replace(i, std::move(p));
                    break;
                }
                // g: Spectre v1 pointer-arithmetic masking (ALU64 ADD/SUB X; every other case of
                // this opcode ends here too, as in the kernel)
                if (insn.code == (BPF_ALU64 | BPF_ADD | BPF_X) || insn.code == (BPF_ALU64 | BPF_SUB | BPF_X)) {
                    auto p = emit_ptr_arith_mask(insn, ax.alu_state, ax.alu_limit);
                    if (!p.empty()) replace(i, std::move(p));
                    break;
                }
                // h, h': may_goto
                if (is_may_goto(insn)) {
                    // may_goto postdates 6.1: it rejects the opcode (harness/kernel/README.md "Model profiles", measured).
                    if (opts.kernel == KernelProfile::K6_1)
                        return fail(-EINVAL, "insn " + std::to_string(i) + ": may_goto is unknown to 6.1");
                    const bool timed = arch.timed_may_goto;
                    extra[cur] = timed ? 16 : 8;
                    replace(i, may_goto_expansion(insn, depth, timed));
                    break;
                }
                // i: (bpf-next) ld_imm64 of a PERCPU_ARRAY value: the per-CPU address conversion
                // goes after the second slot, which is the slot patched; the loop skips it.
                if (is_ldimm64(insn) && (insn.src_reg == BPF_PSEUDO_MAP_VALUE || insn.src_reg == BPF_PSEUDO_MAP_IDX_VALUE)) {
                    if (is_7x_or_next(opts.kernel) && arch.supports_percpu_insn && i + 1 < n && insn.imm >= 0 &&
                        static_cast<size_t>(insn.imm) < prog.maps.size() &&
                        prog.maps[static_cast<size_t>(insn.imm)].type == BPF_MAP_TYPE_PERCPU_ARRAY) {
                        replace(i + 1, {prog.insns[i + 1], percpu(insn.dst_reg)});
                        ++i;  // the kernel's `i++, insn++`: the next_insn bookkeeping sees the 2nd slot
                    }
                    break;
                }
                if (!is_call(insn) || is_pseudo_call(insn)) break;
                // j: kfunc calls (only the modelled inlines; iterators have their own pass)
                if (is_kfunc_call(insn)) {
                    const auto k = kfunc_kind(prog, insn);
                    if (k == kfunc::Kind::CastToKernCtx || k == kfunc::Kind::RdonlyCast)
                        replace(i, {mov64_reg(BPF_REG_0, BPF_REG_1)});
                    break;
                }
                // k: the JIT inlines this helper itself
                if (arch.jit_inlines_helper(insn.imm)) break;
                // m: tail calls
                if (insn.imm == BPF_FUNC_tail_call) {
                    auto r = tail_call(prog, i, opts, batch);
                    if (!r.ok()) return r;
                    break;
                }
                auto r = helper_call(prog, i, arch, opts, batch);
                if (!r.ok()) return r;
            } while (false);
            next_insn(i);
        }
        PatchOutcome out = apply_batch(patcher, prog, batch);
        if (!out.ok()) return out;
        for (uint32_t s = 0; s < nsub; ++s) {
            prog.subprogs[s].stack_depth += extra[s];
            prog.subprogs[s].stack_extra = extra[s];
        }
        return may_goto_prologues(prog, patcher, arch.timed_may_goto);
    }

private:
    bool prefilter_;

    // Pre-loop (bpf-next, 6.12; exceptions postdate 6.1): a program that reached bpf_throw but
    // declares no exception callback gets a hidden one appended by add_hidden_subprog() (verifier.c):
    // the last insn is patched with [copy of it, r0 = r1, exit], and a subprog starting at the new
    // `r0 = r1` (len - 2) is inserted before the fake exit and marked the exception callback
    // (mark_subprog_exc_cb() also sets is_cb and is_async_cb). seen_exception is derived from a
    // seen kfunc call named "bpf_throw" in Program::kfuncs (the verifier sets it there).
    static PatchOutcome add_hidden_exception_cb(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) {
        if (opts.kernel == KernelProfile::K6_1 || prog.len() == 0 || prog.subprogs.empty()) return {};
        // Only a call of a declared bpf_throw sets it: without one (most programs) skip the walk.
        if (std::none_of(prog.kfuncs.begin(), prog.kfuncs.end(), [](const auto& d) { return d.name == "bpf_throw"; })) return {};
        bool seen_exception = false;
        for (uint32_t i = 0; i < prog.len() && !seen_exception; ++i) {
            const Insn& in = prog.insns[i];
            if (!is_kfunc_call(in) || !prog.aux[i].seen) continue;
            for (const auto& d : prog.kfuncs)
                if (d.btf_id == in.imm && d.offset == in.off && d.name == "bpf_throw") seen_exception = true;
        }
        if (!seen_exception) return {};
        // env->exception_callback_subprog != 0: the main program is never the callback
        for (uint32_t s = 1; s < prog.subprog_cnt(); ++s)
            if (prog.subprogs[s].is_exception_cb) return {};
        const uint32_t last = prog.len() - 1;
        patch::PatchBatch b;
        b.patches.push_back({.kind = patch::PatchKind::Replace,
                             .pos = last,
                             .insns = {prog.insns[last], mov64_reg(BPF_REG_0, BPF_REG_1), exit_insn()}});
        PatchOutcome out = apply_batch(patcher, prog, b);
        if (!out.ok()) return out;
        const SubprogInfo cb{.start = prog.len() - 2, .is_cb = true, .is_async_cb = true, .is_exception_cb = true, .is_hidden = true};
        prog.subprogs.insert(prog.subprogs.end() - 1, cb);
        return {};
    }

    // The helper-call rows after tail calls, in the kernel's order: n, o, p, q, r/s, t-w, x, y,
    // then z (patch_call_imm) for whatever none of them replaced or redirected.
    static PatchOutcome helper_call(Program& prog, uint32_t i, const ArchProfile& arch, const RewriteOptions& opts,
                                    patch::PatchBatch& batch) {
        Insn& insn = prog.insns[i];
        const InsnAux& ax = prog.aux[i];
        auto replace = [&](std::vector<Insn> insns) {
            add_patch(batch, {.kind = patch::PatchKind::Replace, .pos = i, .insns = std::move(insns)});
        };
        const bool next = is_7x_or_next(opts.kernel);
        const bool jit64 = arch.jit_requested && arch.bits64;
        // z on the copy a patch carries (rows n and o jump to patch_call_imm after patching)
        auto patched_copy = [&] {
            Insn c = insn;
            if (opts.patch_call_imm && c.imm >= 0 && c.imm < kInternalCallBase) c.imm = call_imm_of_helper(c.imm);
            return c;
        };
        // n: prog->aux as an extra argument: bpf-next keys it on aux.arg_prog (the register), the
        // 6.x kernels on bpf_timer_set_callback (always R3)
        if (next ? ax.arg_prog != 0 : insn.imm == BPF_FUNC_timer_set_callback) {
            const uint8_t reg = next ? ax.arg_prog : static_cast<uint8_t>(BPF_REG_3);
            if (reg > BPF_REG_5)
                return fail(-EFAULT, "verifier bug: insn " + std::to_string(i) + ": arg_prog names r" + std::to_string(reg));
            replace(emit_prog_aux_arg(reg, patched_copy()));
            return {};
        }
        // o: bpf_per_cpu_ptr / bpf_this_cpu_ptr on a per-CPU allocation (6.6+, so not 6.1)
        if (ax.call_with_percpu_alloc_ptr && opts.kernel != KernelProfile::K6_1) {
            replace(emit_percpu_alloc_ptr_arg(patched_copy()));
            return {};
        }
        // p: map helpers. A poisoned or unknown map keeps the generic helper (then row z); a known
        // one is inlined (lookups) or called directly at the map op (imm change not modelled).
        if (jit64 && is_map_helper(insn.imm)) {
            const bool known = !ax.map_ptr_poisoned && ax.map_index >= 0 && ax.map_index < static_cast<int32_t>(prog.maps.size());
            if (known) {
                if (insn.imm == BPF_FUNC_map_lookup_elem) {
                    auto p = emit_map_lookup_inline(prog.maps[static_cast<size_t>(ax.map_index)], arch);
                    if (!p.empty()) replace(std::move(p));
                }
                return {};
            }
        }
        // q: jiffies64
        if (jit64 && insn.imm == BPF_FUNC_jiffies64) {
            replace({ldimm64_lo(BPF_REG_0, 0, static_cast<int32_t>(kJiffiesAddr & 0xffffffffu)),
                     ldimm64_hi(static_cast<int32_t>(kJiffiesAddr >> 32)), ldx(BPF_DW, BPF_REG_0, BPF_REG_0, 0)});
            return {};
        }
        // r, s: x86-64 verifier-side helper inlines (SMP kernel)
        // 6.1 has neither row (no per-CPU insn there, profile_arch; 6.1 keeps the helper call, harness/kernel/README.md
        // "Model profiles"). Row r came with `w0 = &cpu_number` (BPF_MOV32_IMM, measured on
        // 6.12.117); a 2025 verifier.c change made it BPF_MOV64_IMM (bpf-next). Row s (current
        // task) is a 2025 addition: bpf-next only.
        if (arch.verifier_inlines_helpers && arch.jit_requested && arch.supports_percpu_insn && is_verifier_inlined_helper(insn.imm)) {
            if (insn.imm == BPF_FUNC_get_smp_processor_id) {
                const Insn set = opts.kernel == KernelProfile::K6_12 ? mov32_imm(BPF_REG_0, kPcpuCpuNumber)
                                                                      : mov64_imm(BPF_REG_0, kPcpuCpuNumber);
                replace({set, percpu(BPF_REG_0), ldx(BPF_W, BPF_REG_0, BPF_REG_0, 0)});
                return {};
            }
            if ((insn.imm == BPF_FUNC_get_current_task || insn.imm == BPF_FUNC_get_current_task_btf) && next) {
                replace({mov64_imm(BPF_REG_0, kPcpuCurrentTask), percpu(BPF_REG_0), ldx(BPF_DW, BPF_REG_0, BPF_REG_0, 0)});
                return {};
            }
        }
        // t-w: tracing programs read their arguments from the trampoline's ctx directly
        if (prog.prog_type == BPF_PROG_TYPE_TRACING) {
            switch (insn.imm) {
                case BPF_FUNC_get_func_arg:
                    replace(emit_get_func_arg(prog.attach, prog.attach_btf_vlen, opts.kernel, opts.func_arg_inline));
                    return {};
                case BPF_FUNC_get_func_ret:
                    replace(emit_get_func_ret(prog.attach, opts.kernel));
                    return {};
                case BPF_FUNC_get_func_arg_cnt:
                    replace(emit_get_func_arg_cnt(prog.attach, prog.attach_btf_vlen, opts.kernel));
                    return {};
                case BPF_FUNC_get_func_ip:
                    replace(emit_get_func_ip());
                    return {};
                default:
                    break;
            }
        }
        // x: get_branch_snapshot (CONFIG_PERF_EVENTS; 6.10+, so not 6.1)
        if (jit64 && opts.kernel != KernelProfile::K6_1 && insn.imm == BPF_FUNC_get_branch_snapshot) {
            replace(emit_get_branch_snapshot());
            return {};
        }
        // y: kptr_xchg as an atomic exchange (6.9+, so not 6.1)
        if (jit64 && opts.kernel != KernelProfile::K6_1 && arch.supports_ptr_xchg && insn.imm == BPF_FUNC_kptr_xchg) {
            replace(emit_kptr_xchg());
            return {};
        }
        // z: patch_call_imm, in place (no length change)
        insn = patched_copy();
        return {};
    }

    // Row m. Privileged JIT path with a known map and key: a poke descriptor, imm = slot + 1, no
    // patch. Unprivileged map: [if r3 >= max_entries goto end; w3 &= index_mask; tail call].
    static PatchOutcome tail_call(Program& prog, uint32_t i, const RewriteOptions& opts, patch::PatchBatch& batch) {
        Insn& insn = prog.insns[i];
        const InsnAux& ax = prog.aux[i];
        insn = make(BPF_JMP | kOpTailCall, 0, 0, 0, 0);
        const bool have_map = ax.map_index >= 0 && ax.map_index < static_cast<int32_t>(prog.maps.size());
        const bool unpriv = !opts.privileged || (have_map && prog.maps[static_cast<size_t>(ax.map_index)].unpriv_array);
        const bool poisoned = ax.map_ptr_poisoned || !have_map;
        if (opts.privileged && opts.arch.jit_requested && ax.map_key_known && !ax.map_key_poisoned && !poisoned && !unpriv) {
            insn.imm = static_cast<int32_t>(prog.pokes.size()) + 1;
            // recorded in the pass's input coordinates; the patcher moves it with this batch (§7.5)
            prog.pokes.push_back({.insn_idx = i, .map_index = ax.map_index, .key = ax.map_key});
            return {};
        }
        if (!unpriv) return {};
        if (poisoned) return fail(-EINVAL, "tail_call abusing map_ptr");
        const MapDef& m = prog.maps[static_cast<size_t>(ax.map_index)];
        uint64_t p2 = 1;
        while (p2 < m.max_entries) p2 <<= 1;
        add_patch(batch, {.kind = patch::PatchKind::Replace,
                          .pos = i,
                          .insns = {jmp_imm(BPF_JGE, BPF_REG_3, static_cast<int32_t>(m.max_entries), 2),
                                    alu32_imm(BPF_AND, BPF_REG_3, static_cast<int32_t>(p2 - 1)), insn}});
        return {};
    }

    // §5.3.1: for each subprog that got a may_goto counter, insert-before its first insn the counter
    // initialisation; the patcher then redirects plain jumps past it (adjust_jmp_off).
    static PatchOutcome may_goto_prologues(Program& prog, patch::Patcher& patcher, bool timed) {
        patch::PatchBatch b;
        for (uint32_t s = 0; s < prog.subprog_cnt(); ++s) {
            const SubprogInfo& sp = prog.subprogs[s];
            if (sp.stack_extra == 0) continue;
            const auto off = static_cast<int16_t>(-static_cast<int32_t>(sp.stack_depth));
            std::vector<Insn> pro;
            if (timed) {
                pro = {st(BPF_DW, BPF_REG_10, off, kMaxTimedLoops), st(BPF_DW, BPF_REG_10, static_cast<int16_t>(off + 8), 0)};
            } else {
                pro = {st(BPF_DW, BPF_REG_10, off, kMaxLoops)};
            }
            add_patch(b, {.kind = patch::PatchKind::InsertBefore, .pos = sp.start, .insns = std::move(pro)});
        }
        return apply_batch(patcher, prog, b);
    }
};

}  // namespace

bool misc_fixups_arch_sensitive(const Program& prog, const RewriteOptions& a, const RewriteOptions& b) {
    ArchProfile older_a, older_b;
    const ArchProfile &x = profile_arch(a, older_a), &y = profile_arch(b, older_b);
    // Capabilities read on many paths: any difference counts.
    if (x.bits64 != y.bits64 || x.jit_requested != y.jit_requested || x.needs_zext != y.needs_zext ||
        x.supports_percpu_insn != y.supports_percpu_insn || x.timed_may_goto != y.timed_may_goto ||
        x.supports_ptr_xchg != y.supports_ptr_xchg || x.far_kfunc_call != y.far_kfunc_call)
        return true;
    // The rest are read at one kind of insn each (rows e, k, r/s above).
    const bool guard_differs = x.uaddress_limit != y.uaddress_limit;
    const bool helpers_differ = x.verifier_inlines_helpers != y.verifier_inlines_helpers || !std::ranges::equal(x.jit_inlined_helpers, y.jit_inlined_helpers);
    if (!guard_differs && !helpers_differ) return false;
    for (const Insn& insn : prog.insns) {
        // Both kinds are rows' opcodes: most insns are passed on the opcode alone.
        if (!kMiscFixupsRowOpcodes[insn.code]) continue;
        if (guard_differs && cls(insn) == BPF_LDX && (mode(insn) == kModeProbeMem || mode(insn) == kModeProbeMemSx)) return true;
        if (helpers_differ && is_call(insn) && !is_pseudo_call(insn) && !is_kfunc_call(insn) &&
            (is_verifier_inlined_helper(insn.imm) || x.jit_inlines_helper(insn.imm) || y.jit_inlines_helper(insn.imm)))
            return true;
    }
    return false;
}

std::unique_ptr<Pass> make_misc_fixups_pass() { return std::make_unique<MiscFixupsPass>(true); }
std::unique_ptr<Pass> make_misc_fixups_pass_unfiltered() { return std::make_unique<MiscFixupsPass>(false); }

}  // namespace patchfuzz::passes
