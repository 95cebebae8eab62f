// Pass "ctx_access": convert_ctx_accesses() (kernel/bpf/verifier.c; fixups.c in 7.x), which runs
// after dead-code handling and before do_misc_fixups. Per insn, in this order:
//  * aux.nospec (7.x: a speculative path failed at this insn, so the verifier stops every
//    speculative path there instead of rejecting): [nospec, insn], and the same insn is then
//    examined again at its new place (it may be a ctx access to convert too).
//  * aux.nospec_result on a store (6.12 calls it sanitize_stack_spill: a stack store that could be
//    bypassed speculatively, leaving a stale slot, or that spills a pointer): [insn, nospec], and
//    nothing else is done to that store.
//  * A load or store the verifier typed as a ctx access (aux.ptr_type == Ctx) of a socket filter,
//    tc classifier or XDP program: replaced by the prog type's convert_ctx_access sequence for the
//    field, which reads the kernel's own structs (struct sk_buff, ...) at the offsets of the
//    profile's kernel build (bpf/passes/ctx_fields.hpp, measured). Around it, the generic part:
//     - a narrow read (fewer bytes than aux.ctx_field_size, which the verifier records) is made
//       as a read of the whole field at its start; when the value it gives is wider than the
//       read, `w >>= 8 * (byte offset in the field)` (when not 0) and `w &= <read's mask>` follow;
//     - a sign-extending read (BPF_MEMSX) ends with `r = (sN)r` of the read's width;
//     - cb[] keeps its access (size, registers) at cb's kernel offset, as a plain load or store.
//    The program's ctx_layout then names the build, so the interpreter runs it on those structs.
// An insn with several of these gets them in one patch ([nospec, conversion], [nospec, store,
// nospec]), which is what the kernel's successive patches of the same insn leave (a later one
// patches the last insn of the one before, where the insn's aux moved).
// A ctx access the model does not know (a field or size outside ctx_fields.hpp) fails the pass with
// -EINVAL, where the kernel would have rewritten it: never a silent pass-through at uapi offsets.
#include "bpf/isa/insn_facts.hpp"
#include "bpf/passes/ctx_fields.hpp"
#include "bpf/passes/pass_util.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;
namespace cf = ctx_fields;

uint32_t bytes_of(const Insn& in) { return insn_facts(in.code).bytes; }

const char* kind_name(cf::CtxKind k) {
    switch (k) {
        case cf::CtxKind::SkbFilter: return "socket filter __sk_buff";
        case cf::CtxKind::SkbTc: return "tc __sk_buff";
        case cf::CtxKind::Xdp: return "xdp_md";
        case cf::CtxKind::None: break;
    }
    return "?";
}

// A conversion's insns with the access's registers put in (and, for an ST store, its immediate in
// place of the stored register; the arch's MIN_NAPI_ID in its placeholder). False when the
// template reads the stored register otherwise.
bool instantiate(const cf::Conversion& c, const Insn& access, uint8_t ctx_reg, uint8_t val_reg, const ArchProfile& arch,
                 std::vector<Insn>& out) {
    const bool st_imm = cls(access) == BPF_ST;
    for (uint8_t k = 0; k < c.len; ++k) {
        Insn t = c.insns[k];
        if (is_jmp_class(t) && src_bit(t) == BPF_K && t.imm == cf::kMinNapiIdImm) t.imm = static_cast<int32_t>(cf::min_napi_id(arch.name));
        if (st_imm && cls(t) == BPF_STX && t.src_reg == cf::kValReg && t.dst_reg == cf::kCtxReg) {
            t = st(size(t), ctx_reg, t.off, access.imm);
            out.push_back(t);
            continue;
        }
        if (st_imm && (t.dst_reg == cf::kValReg || t.src_reg == cf::kValReg)) return false;
        if (t.dst_reg == cf::kCtxReg) t.dst_reg = ctx_reg & 0xf;
        else if (t.dst_reg == cf::kValReg) t.dst_reg = val_reg & 0xf;
        if (t.src_reg == cf::kCtxReg) t.src_reg = ctx_reg & 0xf;
        else if (t.src_reg == cf::kValReg) t.src_reg = val_reg & 0xf;
        out.push_back(t);
    }
    return true;
}

// The rewrite of ctx access `in` (insn `idx`), appended to `out`; an error outcome when the model
// has no conversion for it.
PatchOutcome convert(const Insn& in, const InsnAux& ax, uint32_t idx, cf::CtxKind kind, const cf::KernelLayout& layout,
                     const ArchProfile& arch, std::vector<Insn>& out) {
    const bool write = cls(in) != BPF_LDX;
    const uint32_t bytes = bytes_of(in);
    const auto unknown = [&](const std::string& why) {
        return fail(-EINVAL, "ctx_access: insn " + std::to_string(idx) + ": a " + std::to_string(bytes) + "-byte " +
                                 (write ? "store to" : "load from") + " the " + kind_name(kind) + " ctx at off " +
                                 std::to_string(in.off) + " " + why + " (bpf/passes/ctx_fields.hpp)");
    };
    const cf::UapiField* f = cf::allowed_access(kind, in.off, bytes, write);
    if (f == nullptr) return unknown("is not an access the model knows");
    const uint8_t ctx_reg = write ? in.dst_reg : in.src_reg;
    const uint8_t val_reg = write ? in.src_reg : in.dst_reg;
    // What the verifier recorded (0 for fields without narrow reads): the whole field's width.
    const uint32_t field_size = ax.ctx_field_size;
    const bool narrow = bytes < field_size;
    if (narrow && (write || field_size > 4)) return unknown("is narrower than its ctx_field_size " + std::to_string(field_size));
    const size_t start = out.size();
    uint32_t target_size = 0;
    if (f->field == cf::Field::Cb) {
        // Rebased, as a plain access of its own size (cb records no ctx_field_size: no narrowing).
        if (narrow) return unknown("is narrower than its ctx_field_size " + std::to_string(field_size));
        const auto koff = static_cast<int16_t>(in.off - f->off + layout.skb_cb);
        if (!write) out.push_back(ldx(size(in), val_reg, ctx_reg, koff));
        else if (cls(in) == BPF_ST) out.push_back(st(size(in), ctx_reg, koff, in.imm));
        else out.push_back(stx(size(in), ctx_reg, val_reg, koff));
        target_size = bytes;
    } else {
        const cf::Conversion* c = cf::conversion(layout, f->field, kind, write);
        if (c == nullptr) return unknown("(field " + std::string(f->name) + ") has no measured conversion");
        if (!instantiate(*c, in, ctx_reg, val_reg, arch, out)) {
            out.resize(start);
            return unknown("(field " + std::string(f->name) + ") has no measured BPF_ST form");
        }
        target_size = c->target_size;
    }
    if (narrow && bytes < target_size) {
        // bpf_ctx_narrow_access_offset() on a little-endian machine: the read's byte in the field.
        const auto shift = static_cast<int32_t>(8 * (static_cast<uint32_t>(in.off) & (field_size - 1)));
        if (shift) out.push_back(alu32_imm(BPF_RSH, val_reg, shift));
        out.push_back(alu32_imm(BPF_AND, val_reg, static_cast<int32_t>((uint64_t{1} << (8 * bytes)) - 1)));
    }
    if (!write && mode(in) == BPF_MEMSX)
        out.push_back(make(BPF_ALU64 | BPF_MOV | BPF_X, val_reg, val_reg, static_cast<int16_t>(8 * bytes), 0));
    return {};
}

class CtxAccessPass final : public Pass {
public:
    std::string_view name() const override { return "ctx_access"; }

    PatchOutcome run(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) const override {
        const cf::CtxKind kind = cf::ctx_kind(prog.prog_type);
        const cf::KernelLayout* layout = kind == cf::CtxKind::None ? nullptr : cf::kernel_layout(ctx_layout_of(opts.kernel));
        patch::PatchBatch batch;
        bool converted = false;
        for (uint32_t i = 0; i < prog.len(); ++i) {
            const InsnAux& ax = prog.aux[i];
            const Insn& in = prog.insns[i];
            const bool after = ax.nospec_result && is_plain_store(in);
            const bool ctx = layout != nullptr && !after && ax.ptr_type == PtrType::Ctx && (is_plain_load(in) || is_plain_store(in));
            if (!ax.nospec && !after && !ctx) {
                if (is_ldimm64(in)) ++i;
                continue;
            }
            std::vector<Insn> p;
            if (ax.nospec) p.push_back(nospec());
            if (ctx) {
                if (PatchOutcome bad = convert(in, ax, i, kind, *layout, opts.arch, p); !bad.ok()) return bad;
                converted = true;
            } else {
                p.push_back(in);
            }
            if (after) p.push_back(nospec());
            add_patch(batch, {.kind = patch::PatchKind::Replace, .pos = i, .insns = std::move(p)});
            if (is_ldimm64(in)) ++i;
        }
        PatchOutcome res = apply_batch(patcher, prog, batch);
        if (res.ok() && converted) prog.ctx_layout = layout->id;
        return res;
    }
};

}  // namespace

std::unique_ptr<Pass> make_ctx_access_pass() { return std::make_unique<CtxAccessPass>(); }

bool ctx_access_arch_sensitive(const Program& prog, const RewriteOptions& a, const RewriteOptions& b) {
    if (cf::min_napi_id(a.arch.name) == cf::min_napi_id(b.arch.name)) return false;
    const cf::CtxKind kind = cf::ctx_kind(prog.prog_type);
    if (kind == cf::CtxKind::None) return false;
    for (size_t i = 0; i < prog.insns.size() && i < prog.aux.size(); ++i) {
        const Insn& in = prog.insns[i];
        if (prog.aux[i].ptr_type != PtrType::Ctx || !is_plain_load(in)) continue;
        const cf::UapiField* f = cf::allowed_access(kind, in.off, bytes_of(in), false);
        if (f != nullptr && f->field == cf::Field::NapiId) return true;
    }
    return false;
}

}  // namespace patchfuzz::passes
