#include "oracles/exec/exec_diff.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <optional>
#include <sstream>

#include "bpf/asm/disassemble.hpp"
#include "bpf/asm/syntax.hpp"
#include "bpf/patch/agreement_patcher.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/util/check.hpp"
#include "bpf/util/hex.hpp"
#include "bpf/util/numbers_as_n.hpp"
#include "bpf/util/thread_lease.hpp"
#include "oracles/exec/divergence_place.hpp"
#include "oracles/exec/zext_facts.hpp"

namespace patchfuzz::oracles::exec {
namespace {

// The up to n bytes of b from `from` on.
std::string bytes_hex(const std::vector<uint8_t>& b, size_t from, size_t n) {
    if (from >= b.size()) return {};
    return hex_bytes(std::span<const uint8_t>(b).subspan(from, std::min(n, b.size() - from)));
}

// The bytes of `a` and `b` from `from` on are the same (and so are their sizes).
bool same_bytes(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, size_t from) {
    return a.size() == b.size() && (from >= a.size() || std::memcmp(a.data() + from, b.data() + from, a.size() - from) == 0);
}

// The divergence of `kind` that compare_runs reports, its detail made by `detail()`; with
// `describe` false an empty one, which says only that there is a divergence (exec_diff's checks
// that need no more than that make no text).
template <typename Detail>
Divergence divergence(bool describe, const char* kind, Detail&& detail) {
    if (!describe) return Divergence{};
    return Divergence{kind, detail()};
}

std::optional<Divergence> compare_bytes(const char* what, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, size_t from,
                                        int64_t base_label, bool describe) {
    if (a.size() != b.size()) return divergence(describe, "state-bytes-mismatch", [&] { return std::string(what) + " sizes differ"; });
    // Mostly equal: one memcmp says so, the byte loop only finds where they differ.
    if (same_bytes(a, b, from)) return std::nullopt;
    if (!describe) return Divergence{};
    for (size_t i = from; i < a.size(); ++i)
        if (a[i] != b[i]) {
            size_t s = i & ~size_t{7};
            return Divergence{"state-bytes-mismatch", std::string(what) + " byte " + std::to_string(base_label + static_cast<int64_t>(i)) +
                                                          ": reference " + bytes_hex(a, s, 8) + ", rewritten " + bytes_hex(b, s, 8) +
                                                          " (8 bytes from " + std::to_string(base_label + static_cast<int64_t>(s)) + ")"};
        }
    return std::nullopt;
}

std::string trace_text(const Program& p, const interp::ExecResult& r, uint32_t n) {
    std::ostringstream o;
    size_t from = r.trace.size() > n ? r.trace.size() - n : 0;
    for (size_t k = from; k < r.trace.size(); ++k) {
        const auto& t = r.trace[k];
        o << "    " << (t.frame ? "[" + std::to_string(t.frame) + "] " : "") << t.pc << ": "
          << (t.pc < p.insns.size() ? assembly::disasm_insn(p.insns, t.pc) : std::string("?")) << "    ; dst = " << hex(t.dst_after)
          << "\n";
    }
    return o.str();
}

std::string input_text(const interp::ExecInput& in) {
    std::ostringstream o;
    o << "ctx[0..16) = " << bytes_hex(in.ctx, 0, 16) << "; regs =";
    for (size_t r = 0; r < in.regs.size(); ++r) o << " r" << r << "=" << hex(in.regs[r]);
    o << "; cpu " << in.cpu;
    return o.str();
}

// A fault reason with its numbers (addresses, sizes, pcs) replaced by N, so that summaries count
// kinds of faults rather than individual ones.
std::string fault_class(const interp::ExecResult& r) {
    return std::string(interp::to_string(r.status)) + ": " + numbers_as_n(r.reason);
}

// What one profile judges: its reference and the rewrite of each patcher.
struct PerArch {
    ArchProfile arch;
    // The reference is the original program itself, run with these marks.
    interp::ZextMarks ref_marks = interp::ZextMarks::Ignore;
    // patchers[i]'s rewrite is cands[i]: the original itself (no pass changed it), the caller's
    // rewrite or one made here. In RunBuffers::rewritten; a profile alike to an earlier one
    // shares its span.
    std::span<const Program* const> cands;
    bool judged = false;  // something to compare (see the top of the file)
    size_t ref_slot = 0;  // the reference's runnable, when judged
    // Whether the reference runs the original with BPF's own semantics: then its run is the
    // program's meaning, which the rewrites of the other profiles are held to first.
    bool runs_meaning() const {
        return ref_marks == interp::ZextMarks::Ignore && !arch.movsx_as_mov && !arch.alu32_no_implicit_zext;
    }
};

// A program under one interpreter semantics, decoded once, on its first run (a reference that
// every input settles by the meaning is never decoded), and run on every input after that.
struct Runnable {
    const Program* prog;
    const ArchProfile* arch;  // in RunBuffers::setups, complete by then
    interp::ZextMarks marks;
    size_t like;  // an earlier runnable of the same program (SIZE_MAX: none), whose code it may share
    std::optional<interp::Executable> exe;
};

// What the runs of a case write into and start from, and the set-up they are made from, leased
// per thread from one exec_diff() to the next so that their storage is reused (a case's generated
// input holds tens of map entries, each result a few vectors, the set-up a vector per profile:
// allocations that every case would otherwise make again). Every call clears what it reads
// before it fills it. A call made while the thread's are in use (exec_diff judging a corrected
// program from inside a run of inputs) gets buffers of its own (ThreadLease).
struct RunBuffers {
    std::vector<PerArch> setups;
    std::vector<const Program*> rewritten;  // the PerArch::cands of every profile
    // Emptied when the call returns (ClearOnReturn): their decoded code refers to the call's
    // programs.
    std::vector<Runnable> runnables;
    std::vector<size_t> cand_slots;  // the runnable of setups[si].cands[ci] at si * patchers + ci
    InputBuffer generated;
    std::vector<interp::ExecResult> results;
    interp::PreparedInput prepared;
    std::vector<char> ran;
    std::vector<std::pair<size_t, size_t>> compared;
};

template <class T>
struct ClearOnReturn {
    T& what;
    ~ClearOnReturn() { what.clear(); }
};

// The profiles and patchers judged when the options name none.
std::span<const ArchProfile> default_archs() {
    static const ArchProfile archs[] = {arch_x86_64(), arch_arm64(), arch_jit32()};
    return archs;
}
std::span<const std::string> default_patchers() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (std::string_view name : patch::patcher_names()) n.emplace_back(name);
        return n;
    }();
    return names;
}

passes::RewriteOptions ro_for(const ExecDiffOptions& opts, const ArchProfile& a) {
    passes::RewriteOptions ro = opts.rewrite;
    ro.arch = a;
    return ro;
}

// do_misc_fixups hosts many unrelated rewrites (docs/patching.md §5.3 rows a-z), so "misc_fixups"
// alone would make every new bug of that pass look like a known one of the same signature. Each
// patch of the pass is tried on its own (the others dropped, later batches recomputed by the pass
// from what it then sees); the first that alone gives the divergence names the row by the insn it
// replaced: ":call bpf_get_func_arg", ":op 0x3f". "" when no single patch does.
class OnePatchOf final : public patch::Patcher {
public:
    OnePatchOf(patch::Patcher& inner, size_t batch, size_t keep) : inner_(inner), batch_(batch), keep_(keep) {}
    std::string_view name() const override { return inner_.name(); }
    patch::PatchOutcome apply(Program& prog, const patch::PatchBatch& b) override {
        if (seen_++ != batch_) return inner_.apply(prog, b);
        patch::PatchBatch one;
        if (keep_ < b.patches.size()) one.patches.push_back(b.patches[keep_]);
        if (!one.patches.empty()) replaced = describe(prog, one.patches.front());
        return one.patches.empty() ? patch::PatchOutcome{} : inner_.apply(prog, one);
    }
    std::string replaced;  // what the kept patch replaced

    static std::string describe(const Program& prog, const patch::Patch& p) {
        if (p.pos >= prog.insns.size()) return "pos " + std::to_string(p.pos);
        const isa::Insn& i = prog.insns[p.pos];
        if (isa::is_helper_call(i)) {
            const std::string_view n = assembly::helper_name(i.imm);
            return "call " + (n.empty() ? "#" + std::to_string(i.imm) : std::string(n));
        }
        if (isa::is_kfunc_call(i)) return "call kfunc";
        char b[16];
        std::snprintf(b, sizeof b, "op 0x%02x", i.code);
        return b;
    }

private:
    patch::Patcher& inner_;
    size_t batch_, keep_;
    size_t seen_ = 0;
};

class BatchSizes final : public patch::Patcher {
public:
    explicit BatchSizes(patch::Patcher& inner) : inner_(inner) {}
    std::string_view name() const override { return inner_.name(); }
    patch::PatchOutcome apply(Program& prog, const patch::PatchBatch& b) override {
        sizes.push_back(b.patches.size());
        return inner_.apply(prog, b);
    }
    std::vector<size_t> sizes;

private:
    patch::Patcher& inner_;
};

std::string misc_fixups_row(const Program& prog, const ArchProfile& arch, const std::string& patcher, const passes::RewriteOptions& ro,
                            const interp::ExecInput& in, const interp::ExecResult& ref, uint32_t depth, bool r0_full,
                            const std::string& kind) {
    auto p = patch::make_patcher(patcher);
    if (!p) return {};
    passes::RewriteOptions misc = ro, zext = ro;
    misc.only = {"misc_fixups"};
    zext.only = {"zext"};
    std::vector<size_t> sizes;
    {
        Program q = prog;
        BatchSizes rec(*p);
        if (!passes::run_pipeline(q, rec, misc).outcome.ok()) return {};
        sizes = rec.sizes;
    }
    for (size_t b = 0; b < sizes.size(); ++b)
        for (size_t k = 0; k < sizes[b]; ++k) {
            Program q = prog;
            OnePatchOf one(*p, b, k);
            if (!passes::run_pipeline(q, one, misc).outcome.ok()) continue;
            if (arch.needs_zext && !passes::run_pipeline(q, *p, zext).outcome.ok()) continue;
            interp::ExecResult r = interp::execute(q, in, arch);
            if (r.status == interp::ExecResult::Status::Unsupported) continue;
            auto d = compare_runs(ref, r, depth, r0_full, &prog.maps);
            if (d && d->kind == kind) return ":" + one.replaced;
        }
    return {};
}

}  // namespace

std::string divergence_cause(const Program& prog, const ArchProfile& arch, const std::string& patcher,
                             const passes::RewriteOptions& ro, const interp::ExecInput& in, const interp::ExecResult& ref,
                             uint32_t depth, bool r0_full, const std::string& kind) {
    std::vector<std::string> candidates;
    for (auto name : passes::pass_names_view())
        if (ro.only.empty() || std::find(ro.only.begin(), ro.only.end(), name) != ro.only.end()) candidates.emplace_back(name);
    // Does the rewrite with exactly `passes` (plus zext on a zext JIT, whose reference applies the marks)
    // give a divergence of the same kind?
    auto diverges_with = [&](const std::vector<std::string>& passes) {
        passes::RewriteOptions some = ro;
        some.only = passes;
        if (arch.needs_zext && std::find(passes.begin(), passes.end(), "zext") == passes.end()) some.only.emplace_back("zext");
        auto p = patch::make_patcher(patcher);
        if (!p) return false;
        Program q = prog;
        if (!passes::run_pipeline(q, *p, some).outcome.ok()) return false;
        interp::ExecResult r = interp::execute(q, in, arch);
        if (r.status == interp::ExecResult::Status::Unsupported) return false;
        auto d = compare_runs(ref, r, depth, r0_full, &prog.maps);
        return d && d->kind == kind;
    };
    for (const std::string& name : candidates) {
        if (!diverges_with({name})) continue;
        if (name == "misc_fixups") return name + misc_fixups_row(prog, arch, patcher, ro, in, ref, depth, r0_full, kind);
        // The place in the pass's emitted template where the runs part: one pass, several bugs.
        passes::RewriteOptions one = ro;
        one.only = {name};
        return name + divergence_place(prog, arch, patcher, one, in, ref, depth, r0_full);
    }
    // No pass alone: an interaction. The cause is then the passes the divergence needs, those
    // without which it goes away ("bpf_loop+dead_code"), so that two known findings meeting in
    // one program are told apart from other interactions.
    std::string needed;
    for (size_t i = 0; i < candidates.size(); ++i) {
        std::vector<std::string> without = candidates;
        without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
        if (!without.empty() && !diverges_with(without)) needed += (needed.empty() ? "" : "+") + candidates[i];
    }
    return needed;
}

std::string exec_cause(const Verdict& v) {
    if (v.oracle != "exec" || v.outcome != Outcome::Fail) return {};
    const size_t at = v.reason.rfind(kCausePrefix);
    if (at == std::string::npos) return {};
    const size_t from = at + kCausePrefix.size();
    const size_t end = v.reason.find(']', from);
    return end == std::string::npos ? std::string() : v.reason.substr(from, end - from);
}

uint32_t main_stack_depth(const Program& prog) {
    if (!prog.subprogs.empty() && prog.subprogs[0].stack_depth) return prog.subprogs[0].stack_depth;
    const uint32_t end = prog.subprogs.size() > 1 ? prog.subprogs[1].start : prog.len();
    int64_t deepest = 0;
    bool fp_copy[11] = {};
    int64_t fp_off[11] = {};
    for (uint32_t pc = 0; pc < end && pc < prog.len(); ++pc) {
        const isa::Insn& i = prog.insns[pc];
        const uint8_t c = isa::cls(i);
        if (c == BPF_LDX && i.src_reg == BPF_REG_10) deepest = std::min<int64_t>(deepest, i.off);
        if ((c == BPF_ST || c == BPF_STX) && i.dst_reg == BPF_REG_10) deepest = std::min<int64_t>(deepest, i.off);
        if (i.dst_reg <= 10 && (c == BPF_ALU64 || c == BPF_ALU)) {
            if (i.code == (BPF_ALU64 | BPF_MOV | BPF_X) && i.src_reg == BPF_REG_10) {
                fp_copy[i.dst_reg] = true;
                fp_off[i.dst_reg] = 0;
            } else if (i.code == (BPF_ALU64 | BPF_ADD | BPF_K) && fp_copy[i.dst_reg]) {
                fp_off[i.dst_reg] += i.imm;
                deepest = std::min(deepest, fp_off[i.dst_reg]);
            } else {
                fp_copy[i.dst_reg] = false;
            }
        }
        if (c == BPF_LDX && i.dst_reg <= 10) fp_copy[i.dst_reg] = false;
    }
    int64_t d = -deepest;
    d = (d + 7) & ~int64_t{7};
    return static_cast<uint32_t>(std::min<int64_t>(d, interp::kStackSize));
}

namespace {

// Whether compare_runs finds no divergence, decided without making one: what almost every
// comparison of a campaign finds. It may say false where the runs do agree (map entries, the
// digests of an insn array), never true where they do not: then first_divergence says.
bool runs_agree(const interp::ExecResult& ref, const interp::ExecResult& cand, size_t stack_from, uint64_t r0_mask) {
    return ref.status == cand.status && (ref.r0 & r0_mask) == (cand.r0 & r0_mask) && same_bytes(ref.stack, cand.stack, stack_from) &&
           same_bytes(ref.ctx, cand.ctx, 0) && same_bytes(ref.packet, cand.packet, 0) &&
           (ref.map_digests.empty() ? cand.map_digests.empty() && ref.maps.empty() && cand.maps.empty()
                                    : ref.map_digests == cand.map_digests) &&
           ref.effects == cand.effects;
}

// compare_runs' divergence; with `describe` false an empty one (divergence()).
std::optional<Divergence> first_divergence(const interp::ExecResult& ref, const interp::ExecResult& cand, uint32_t stack_depth,
                                           bool r0_full, const std::vector<MapDef>* maps, bool describe) {
    using S = interp::ExecResult::Status;
    if (ref.status != cand.status)
        return divergence(describe, "status-mismatch", [&] {
            return "reference " + std::string(interp::to_string(ref.status)) + (ref.status == S::Ok ? "" : " (" + ref.reason + ")") +
                   ", rewritten " + std::string(interp::to_string(cand.status)) +
                   (cand.status == S::Ok ? "" : " at pc " + std::to_string(cand.fault_pc) + " (" + cand.reason + ")");
        });
    const uint64_t m = r0_full ? ~0ULL : 0xffffffffULL;
    if ((ref.r0 & m) != (cand.r0 & m))
        return divergence(describe, "r0-mismatch", [&] {
            return "r0: reference " + hex(ref.r0) + ", rewritten " + hex(cand.r0) + (r0_full ? "" : " (low 32 bits compared)");
        });
    const size_t from = interp::kStackSize - std::min<size_t>(stack_depth, interp::kStackSize);
    // Stack offsets are reported fp-relative (negative).
    if (auto d = compare_bytes("stack", ref.stack, cand.stack, from, -static_cast<int64_t>(interp::kStackSize), describe)) return d;
    if (auto d = compare_bytes("ctx", ref.ctx, cand.ctx, 0, 0, describe)) return d;
    if (auto d = compare_bytes("packet", ref.packet, cand.packet, 0, 0, describe)) return d;
    // Real runs always carry digests of every map (the entries only when collected); results
    // built by hand may carry entries alone.
    const bool by_digest = !ref.map_digests.empty() && !cand.map_digests.empty();
    const size_t nmaps = by_digest ? ref.map_digests.size() : ref.maps.size();
    if (nmaps != (by_digest ? cand.map_digests.size() : cand.maps.size()))
        return divergence(describe, "map-mismatch", [] { return std::string("different number of maps"); });
    for (size_t i = 0; i < nmaps; ++i) {
        if (maps && i < maps->size() && (*maps)[i].type == isa::kMapTypeInsnArray) continue;
        if (by_digest ? ref.map_digests[i] == cand.map_digests[i] : ref.maps[i] == cand.maps[i]) continue;
        return divergence(describe, "map-mismatch", [&] {
            std::string detail = "map " + std::to_string(i) + ": contents differ";
            if (i < ref.maps.size() && i < cand.maps.size())
                detail += " (" + std::to_string(ref.maps[i].size()) + " vs " + std::to_string(cand.maps[i].size()) + " entries)";
            return detail;
        });
    }
    if (ref.effects != cand.effects)
        return divergence(describe, "effects-mismatch", [&] {
            size_t k = 0;
            while (k < ref.effects.size() && k < cand.effects.size() && ref.effects[k] == cand.effects[k]) ++k;
            return "effect #" + std::to_string(k) + ": reference '" + (k < ref.effects.size() ? ref.effects[k] : std::string("<none>")) +
                   "', rewritten '" + (k < cand.effects.size() ? cand.effects[k] : std::string("<none>")) + "'";
        });
    return std::nullopt;
}

// Whether compare_runs finds a divergence, without making its text.
bool runs_diverge(const interp::ExecResult& ref, const interp::ExecResult& cand, uint32_t stack_depth, bool r0_full,
                  const std::vector<MapDef>* maps) {
    const size_t stack_from = interp::kStackSize - std::min<size_t>(stack_depth, interp::kStackSize);
    return !runs_agree(ref, cand, stack_from, r0_full ? ~0ULL : 0xffffffffULL) &&
           first_divergence(ref, cand, stack_depth, r0_full, maps, false).has_value();
}

}  // namespace

std::optional<Divergence> compare_runs(const interp::ExecResult& ref, const interp::ExecResult& cand, uint32_t stack_depth,
                                       bool r0_full, const std::vector<MapDef>* maps) {
    const size_t stack_from = interp::kStackSize - std::min<size_t>(stack_depth, interp::kStackSize);
    if (runs_agree(ref, cand, stack_from, r0_full ? ~0ULL : 0xffffffffULL)) [[likely]]
        return std::nullopt;
    return first_divergence(ref, cand, stack_depth, r0_full, maps, true);
}

Verdict exec_diff(const Program& prog, const ExecDiffOptions& opts, ExecDiffStats* stats) {
    ExecDiffStats local;
    ExecDiffStats& st = stats ? *stats : local;
    const std::span<const ArchProfile> archs = opts.archs.empty() ? default_archs() : opts.archs;
    const std::span<const std::string> patchers = opts.patchers.empty() ? default_patchers() : opts.patchers;
    const uint32_t depth = main_stack_depth(prog);
    ThreadLease<RunBuffers> buffers;

    // Programs are held by pointer: the original, the caller's rewrites, and the ones made here
    // (kept in `made`, whose elements never move; most cases make none, and an empty list
    // allocates nothing).
    std::list<Program> made;
    auto given_rewrite = [&](const ArchProfile& a, const std::string& patcher) -> const Program* {
        for (const GivenRewrite& g : opts.rewrites)
            if (g.prog && g.arch == a.name && g.patcher == patcher) return g.prog;
        return nullptr;
    };
    std::vector<PerArch>& setups = buffers->setups;
    setups.clear();
    setups.reserve(archs.size());  // (Runnable::arch points into it)
    std::vector<const Program*>& rewritten = buffers->rewritten;
    rewritten.clear();
    rewritten.reserve(archs.size() * patchers.size());  // never reallocated: PerArch::cands point into it
    // After the passes that read no arch fact (passes::arch_independent_prefix), as the first
    // profile whose rewrites were all made here left it: a later one with options alike but for
    // the arch starts from there (with the patchers' agreement so far) instead of redoing them.
    struct Prefix {
        Program prog;
        std::vector<bool> agreed;
        passes::RewriteOptions ro;
    };
    std::optional<Prefix> prefix;
    const size_t prefix_passes = passes::arch_independent_prefix();
    for (const ArchProfile& a : archs) {
        PerArch pa{a, interp::ZextMarks::Ignore, {}};
        passes::RewriteOptions ro = opts.rewrite;
        ro.arch = a;
        // A profile whose rewrites are an earlier one's (passes::rewrites_alike) takes them. The
        // caller may have said so already, by giving the very same rewrites for both (the runner
        // does for x86_64 and arm64): then the scan of the program is not made again.
        auto given_alike = [&](const PerArch& done) {
            if (done.arch.needs_zext != a.needs_zext) return false;  // (the reference's marks)
            for (const std::string& name : patchers) {
                const Program* mine = given_rewrite(a, name);
                if (mine == nullptr || mine != given_rewrite(done.arch, name)) return false;
            }
            return true;
        };
        const PerArch* alike = nullptr;
        for (const PerArch& done : setups)
            if (given_alike(done) || passes::rewrites_alike(prog, ro_for(opts, done.arch), ro)) {
                alike = &done;
                break;
            }
        if (alike != nullptr) {
            pa.ref_marks = alike->ref_marks;
            pa.cands = alike->cands;
            setups.push_back(pa);
            continue;
        }
        // The reference as a JIT that needs explicit zexts runs it: nothing inlined, the
        // verifier's zext_dst marks applied by the interpreter (not by the zext pass, which is
        // one of the rewrites under test).
        if (a.needs_zext && std::any_of(prog.aux.begin(), prog.aux.end(), [](const InsnAux& x) { return x.zext_dst; }))
            pa.ref_marks = interp::ZextMarks::Apply;
        // The rewrites not given are made here: the passes run once, with the first such patcher
        // as reference and the others checked against it batch by batch (AgreementPatcher); one
        // that disagreed somewhere makes its whole rewrite apart.
        rewritten.resize(rewritten.size() + patchers.size(), nullptr);
        const std::span<const Program*> rewrite_of(rewritten.data() + rewritten.size() - patchers.size(), patchers.size());
        std::vector<size_t> todo;
        for (size_t i = 0; i < patchers.size(); ++i) {
            rewrite_of[i] = given_rewrite(a, patchers[i]);
            if (rewrite_of[i] == nullptr) todo.push_back(i);
        }
        std::vector<std::unique_ptr<patch::Patcher>> makers(todo.empty() ? 0 : patchers.size());
        for (size_t i : todo) {
            makers[i] = patch::make_patcher(patchers[i]);
            if (!makers[i]) return Verdict::skip("exec", "unknown patcher '" + patchers[i] + "'");
        }
        // Runs the passes of `part` (0: those that read no arch fact, 1: the rest) on `out`.
        auto run_part = [&](size_t i, int part, Program& out, patch::Patcher& driver) -> std::optional<Verdict> {
            passes::RewriteOptions po = ro;
            po.only.clear();
            const std::span<const std::string_view> names = passes::pass_names_view();
            for (size_t k = part == 0 ? 0 : prefix_passes; k < (part == 0 ? prefix_passes : names.size()); ++k)
                if (ro.only.empty() || std::find(ro.only.begin(), ro.only.end(), names[k]) != ro.only.end())
                    po.only.emplace_back(names[k]);
            if (po.only.empty()) return std::nullopt;  // (an empty list would mean every pass)
            passes::PipelineResult pr = passes::run_pipeline(out, driver, po);
            if (!pr.outcome.ok())
                return Verdict::skip("exec", "rewrite failed with " + patchers[i] + " on " + std::string(a.name) + " (pass " +
                                                 pr.failed_pass + "): " + pr.outcome.log);
            return std::nullopt;
        };
        auto rewrite = [&](size_t i, patch::Patcher& driver) -> std::optional<Verdict> {
            Program& out = made.emplace_back(prog);
            for (int part = 0; part < 2; ++part)
                if (auto skipped = run_part(i, part, out, driver)) return skipped;
            rewrite_of[i] = &out;
            return std::nullopt;
        };
        if (!todo.empty()) {
            std::vector<patch::Patcher*> others;
            for (size_t k = 1; k < todo.size(); ++k) others.push_back(makers[todo[k]].get());
            // Every rewrite made here: the arch-free passes may be an earlier profile's.
            const bool whole = todo.size() == patchers.size();
            const bool from_prefix = whole && prefix && passes::options_alike_but_arch(prefix->ro, ro);
            patch::AgreementPatcher agreement(*makers[todo[0]], others, from_prefix ? prefix->agreed : std::vector<bool>{});
            Program& out = made.emplace_back(from_prefix ? prefix->prog : prog);
            if (!from_prefix) {
                if (auto skipped = run_part(todo[0], 0, out, agreement)) return *skipped;
                if (whole && !prefix) prefix = Prefix{out, agreement.agreement(), ro};
            }
            if (auto skipped = run_part(todo[0], 1, out, agreement)) return *skipped;
            rewrite_of[todo[0]] = &out;
            for (size_t k = 1; k < todo.size(); ++k) {
                if (agreement.agreed(k - 1)) {
                    rewrite_of[todo[k]] = rewrite_of[todo[0]];
                } else if (auto skipped = rewrite(todo[k], *makers[todo[k]])) {
                    return *skipped;
                }
            }
        }
        pa.cands = rewrite_of;
        setups.push_back(pa);
    }

    // Runs are shared: a program runs once per input under each distinct interpreter semantics.
    // x86_64 and arm64 execute alike (arch_profile.hpp), the reference is the unchanged original on
    // both, and the two patchers' rewrites are usually identical; so a profile or patcher that
    // brings nothing new costs no execution and no comparison.
    std::vector<Runnable>& runnables = buffers->runnables;
    const ClearOnReturn<std::vector<Runnable>> runnables_cleared{runnables};  // before `made` goes
    // The same program under other semantics (the original on x86_64 and, marks applied, on
    // jit32) shares the decoded code when it decodes alike (interp::Executable).
    auto slot_of = [&](const Program& p, const ArchProfile& a, interp::ZextMarks marks) -> size_t {
        size_t like = SIZE_MAX;
        for (size_t i = 0; i < runnables.size(); ++i) {
            const Runnable& r = runnables[i];
            if (r.prog != &p && !(*r.prog == p)) continue;
            if (r.arch->movsx_as_mov == a.movsx_as_mov && r.arch->alu32_no_implicit_zext == a.alu32_no_implicit_zext &&
                r.marks == marks)
                return i;
            if (like == SIZE_MAX) like = i;
        }
        runnables.push_back({&p, &a, marks, like, std::nullopt});
        return runnables.size() - 1;
    };
    // `like` is always the first runnable of its program, which has no `like` itself.
    auto executable = [&](size_t slot) -> const interp::Executable& {
        Runnable& r = runnables[slot];
        if (r.exe) return *r.exe;
        if (r.like == SIZE_MAX) return r.exe.emplace(*r.prog, *r.arch, r.marks);
        Runnable& first = runnables[r.like];
        PATCHFUZZ_CHECK(first.like == SIZE_MAX, "a runnable shares the code of its program's first one");
        if (!first.exe) first.exe.emplace(*first.prog, *first.arch, first.marks);
        return r.exe.emplace(*first.exe, *r.arch, r.marks);
    };
    // A profile whose every candidate is its reference (the original program, run without marks:
    // no pass changed it) has nothing to compare, so its reference is not run either. Without
    // any other profile the oracle judges nothing: a skip, not a pass of runs that compared nothing.
    size_t judged_count = 0;
    for (PerArch& pa : setups) {
        pa.judged = pa.ref_marks != interp::ZextMarks::Ignore ||
                    std::any_of(pa.cands.begin(), pa.cands.end(), [&](const Program* c) { return c != &prog && !(*c == prog); });
        judged_count += pa.judged;
    }
    if (judged_count == 0) return Verdict::skip("exec", "nothing to compare: no pass changed the program under any profile");
    runnables.reserve(setups.size() * (1 + patchers.size()));  // the most slot_of() can add
    std::vector<size_t>& cand_slots = buffers->cand_slots;
    cand_slots.assign(setups.size() * patchers.size(), 0);
    auto cand_slot = [&](size_t si, size_t ci) -> size_t& { return cand_slots[si * patchers.size() + ci]; };
    for (size_t si = 0; si < setups.size(); ++si) {
        PerArch& pa = setups[si];
        if (!pa.judged) continue;
        pa.ref_slot = slot_of(prog, pa.arch, pa.ref_marks);
        for (size_t ci = 0; ci < pa.cands.size(); ++ci)
            cand_slot(si, ci) = slot_of(*pa.cands[ci], pa.arch, interp::ZextMarks::Ignore);
    }

    Rng rng(opts.seed);
    std::string first_ref_fault;
    interp::ExecOptions eo;
    eo.collect_maps = false;  // compared by digest; a divergence is re-run with entries for its report
    const uint32_t total = static_cast<uint32_t>(opts.given.size()) + opts.inputs;
    // One result per runnable, rewritten by every input's run (their buffers are reused, also
    // from the cases before: a run clears its result first).
    std::vector<interp::ExecResult>& results = buffers->results;
    if (results.size() < runnables.size()) results.resize(runnables.size());
    std::vector<char>& ran = buffers->ran;
    InputBuffer& generated = buffers->generated;  // generate_input() rewrites all of its input
    // The runs of one input start from one set-up, built by the first and restored by the others.
    interp::PreparedInput& prepared = buffers->prepared;
    std::vector<std::pair<size_t, size_t>>& compared = buffers->compared;  // (ref slot, candidate slot) pairs judged for this input
    for (uint32_t k = 0; k < total; ++k) {
        if (k >= opts.given.size()) generate_input(prog, rng, opts.input_gen, generated);
        const interp::ExecInput& in = k < opts.given.size() ? opts.given[k] : generated.input;
        prepared.reset(in);
        ++st.inputs_run;
        ran.assign(runnables.size(), 0);
        compared.clear();
        // The program's meaning on this input: the first run of a runs_meaning() reference that
        // ended Ok (null until then).
        const interp::ExecResult* meaning = nullptr;
        auto run = [&](size_t slot) -> const interp::ExecResult& {
            if (!ran[slot]) {
                ran[slot] = 1;
                interp::execute(executable(slot), prepared, eo, results[slot]);
                ++st.executions;
            }
            return results[slot];
        };
        // Whether every rewrite of setups[si] behaves on this input as the meaning run did.
        auto keeps_meaning = [&](size_t si) {
            for (size_t ci = 0; ci < setups[si].cands.size(); ++ci) {
                const interp::ExecResult& cand = run(cand_slot(si, ci));
                if (cand.status == interp::ExecResult::Status::Unsupported ||
                    runs_diverge(*meaning, cand, depth, opts.r0_full, &prog.maps))
                    return false;
            }
            return true;
        };
        for (size_t si = 0; si < setups.size(); ++si) {
            const PerArch& pa = setups[si];
            if (!pa.judged) continue;
            if (meaning != nullptr && !pa.runs_meaning() && keeps_meaning(si)) {
                ++st.settled_by_meaning;
                continue;
            }
            const interp::ExecResult& ref = run(pa.ref_slot);
            // Something the reference models do not cover (a helper, kfunc, map type, LD_ABS):
            // the case cannot be judged at all, whatever the input.
            if (ref.status == interp::ExecResult::Status::Unsupported)
                return Verdict::skip("exec", "not modelled: " + ref.reason + " (pc " + std::to_string(ref.fault_pc) + ", " +
                                                 std::string(pa.arch.name) + ")");
            if (ref.status != interp::ExecResult::Status::Ok) {
                if (first_ref_fault.empty()) first_ref_fault = fault_class(ref);
                ++st.skipped_inputs;
                continue;
            }
            if (meaning == nullptr && pa.runs_meaning()) meaning = &ref;
            for (size_t ci = 0; ci < pa.cands.size(); ++ci) {
                const std::string& patcher = patchers[ci];
                const Program& rewrite = *pa.cands[ci];
                const std::pair<size_t, size_t> pair{pa.ref_slot, cand_slot(si, ci)};
                if (pair.first == pair.second || std::find(compared.begin(), compared.end(), pair) != compared.end()) continue;
                compared.push_back(pair);
                const interp::ExecResult& cand = run(pair.second);
                // A rewrite may take more steps than its original (a may_goto becomes a load,
                // decrement and store of its counter): a rewritten run that ran out of the budget
                // the reference finished in runs again with one in proportion to the reference's
                // steps, and only running out of that is a divergence (a loop the rewrite made).
                if (cand.status == interp::ExecResult::Status::StepBudget && ref.steps * 8 + 1024 > cand.steps) {
                    interp::ExecOptions longer = eo;
                    longer.step_budget = ref.steps * 8 + 1024;
                    interp::execute(executable(pair.second), prepared, longer, results[pair.second]);
                    ++st.executions;
                }
                if (cand.status == interp::ExecResult::Status::Unsupported)
                    return Verdict::skip("exec", "rewritten program not modelled: " + cand.reason + " (pc " +
                                                     std::to_string(cand.fault_pc) + ", " + std::string(pa.arch.name) + ")");
                auto d = compare_runs(ref, cand, depth, opts.r0_full, &prog.maps);
                if (!d) continue;
                // Asked only now: the analysis costs a liveness pass, and most cases never diverge.
                const std::optional<std::string> facts_gap =
                    pa.arch.needs_zext ? zext_jit_fact_issue(prog) : std::optional<std::string>();
                if (facts_gap) {
                    // Facts a zext JIT never sees (zext_facts.hpp): judge the program with them
                    // corrected; only a divergence that survives is a finding.
                    ExecDiffOptions again = opts;
                    again.archs = {pa.arch};
                    again.rewrites.clear();  // they are rewrites of `prog`, not of the corrected program
                    Verdict completed = exec_diff(zext_jit_facts(prog), again);
                    if (completed.outcome != Outcome::Fail)
                        return Verdict::skip("exec", std::string(pa.arch.name) + ": " + *facts_gap + "; with facts a zext JIT can see the runs " +
                                                         (completed.outcome == Outcome::Pass ? "agree" : "are not judged either"));
                    // The divergence that survives is the finding, not this one: this one may be
                    // the missing fact's alone (and the two can differ in kind and cause).
                    completed.counterexample = "(judged with the zext facts a zext JIT can see: " + *facts_gap + ")\n" +
                                               completed.counterexample;
                    return completed;
                }
                const std::string cause = divergence_cause(prog, pa.arch, patcher, ro_for(opts, pa.arch), in, ref, depth, opts.r0_full, d->kind);
                const std::string reason = d->kind + " on " + std::string(pa.arch.name) + " with " + patcher + " " +
                                           std::string(kCausePrefix) + cause + "]";
                const std::string where = "seed " + std::to_string(opts.seed) + ", input #" + std::to_string(k) +
                                          (k < opts.given.size() ? " (given)" : " (generated)") + ", arch " +
                                          std::string(pa.arch.name) + ", patcher " + patcher;
                if (!opts.failure_details) {
                    Verdict vd = Verdict::fail("exec", d->kind, reason, where + ": " + d->detail + " (traces not made)");
                    vd.arch = std::string(pa.arch.name);
                    return vd;
                }
                // Re-run both with traces for the report.
                interp::ExecOptions to;
                to.trace_last = opts.trace_context;
                interp::ExecResult rt = interp::execute(prog, in, pa.arch, to, pa.ref_marks);
                interp::ExecResult ct = interp::execute(rewrite, in, pa.arch, to);
                if (auto full = compare_runs(rt, ct, depth, opts.r0_full, &prog.maps); full && full->kind == d->kind) d = full;
                std::ostringstream cex;
                cex << where << "\n  input: " << input_text(in) << "\n  " << d->detail
                    << "\n  reference trace (last " << rt.trace.size() << " steps):\n"
                    << trace_text(prog, rt, opts.trace_context) << "  rewritten trace (last " << ct.trace.size() << " steps):\n"
                    << trace_text(rewrite, ct, opts.trace_context);
                Verdict vd = Verdict::fail("exec", d->kind, reason, cex.str());
                vd.arch = std::string(pa.arch.name);
                return vd;
            }
        }
    }
    if (st.skipped_inputs == st.inputs_run * judged_count && st.inputs_run > 0)
        return Verdict::unknown("exec", "the reference faulted or ran out of steps on every input (first: " + first_ref_fault + ")");
    // Made in storage reserved at once: a chain of + grew the string two or three times, for
    // most cases.
    std::string agree;
    agree.reserve(64);
    agree += std::to_string(st.inputs_run);
    agree += " inputs x ";
    agree += std::to_string(judged_count);
    agree += " profiles x ";
    agree += std::to_string(patchers.size());
    agree += " patchers agree";
    return Verdict::pass_("exec", std::move(agree));
}

}  // namespace patchfuzz::oracles::exec
