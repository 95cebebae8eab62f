#include "bpf/isa/opcode_table.hpp"

#include <deque>

namespace patchfuzz::isa {

bool FieldRule::allows(int64_t v) const {
    switch (rule) {
        case Rule::Zero: return v == 0;
        case Rule::Any:
        case Rule::Target: return true;
        case Rule::Reg: return v >= 0 && v <= kRegAx;
        case Rule::RegWrite: return v >= 0 && v <= kRegAx && v != kRegFp;
        case Rule::OneOf:
            for (uint8_t i = 0; i < count; ++i)
                if (values[i] == v) return true;
            return false;
    }
    return false;
}

const char* field_name(int field) {
    switch (field) {
        case 0: return "dst_reg";
        case 1: return "src_reg";
        case 2: return "off";
        default: return "imm";
    }
}

std::string describe_allowed(const FieldRule& r) {
    switch (r.rule) {
        case Rule::Zero: return "0";
        case Rule::Any:
        case Rule::Target: return "any value";
        case Rule::Reg: return "r0..r10";
        case Rule::RegWrite: return "r0..r9";
        case Rule::OneOf: {
            if (r.count == 1) return std::to_string(r.values[0]);
            std::string s = "one of ";
            for (uint8_t i = 0; i < r.count; ++i) s += (i ? ", " : "") + std::to_string(r.values[i]);
            return s;
        }
    }
    return "";
}

namespace {

constexpr FieldRule Z{Rule::Zero};
constexpr FieldRule A{Rule::Any};
constexpr FieldRule R{Rule::Reg};
constexpr FieldRule W{Rule::RegWrite};
constexpr FieldRule T{Rule::Target};
constexpr FieldRule eq(int32_t v) { return FieldRule{Rule::OneOf, {v, 0, 0}, 1}; }
constexpr FieldRule one_of(int32_t a, int32_t b) { return FieldRule{Rule::OneOf, {a, b, 0}, 2}; }
constexpr FieldRule one_of(int32_t a, int32_t b, int32_t c) { return FieldRule{Rule::OneOf, {a, b, c}, 3}; }

struct Builder {
    std::vector<OpcodeRow> rows;
    // Storage for generated mnemonics: a deque never moves its elements, so c_str() stays valid.
    static std::deque<std::string>& names() {
        static std::deque<std::string> n;
        return n;
    }
    const char* name(std::string s) {
        names().push_back(std::move(s));
        return names().back().c_str();
    }
    void add(uint8_t code, FieldRule dst, FieldRule src, FieldRule off, FieldRule imm, uint8_t cpu, Group g,
             const char* mn, bool internal = false) {
        OpcodeRow r;
        r.code = code;
        r.dst = dst;
        r.src = src;
        r.off = off;
        r.imm = imm;
        r.cpu = cpu;
        r.group = g;
        r.mnemonic = mn;
        r.internal = internal;
        rows.push_back(r);
    }
};

struct AluOpInfo {
    uint8_t op;
    const char* name;
};
constexpr AluOpInfo kAluOps[] = {
    {BPF_ADD, "add"}, {BPF_SUB, "sub"}, {BPF_MUL, "mul"}, {BPF_DIV, "div"}, {BPF_OR, "or"},
    {BPF_AND, "and"}, {BPF_LSH, "lsh"}, {BPF_RSH, "rsh"}, {BPF_MOD, "mod"}, {BPF_XOR, "xor"},
    {BPF_MOV, "mov"}, {BPF_ARSH, "arsh"},
};
constexpr AluOpInfo kJmpOps[] = {
    {BPF_JEQ, "jeq"},   {BPF_JGT, "jgt"},   {BPF_JGE, "jge"},   {BPF_JSET, "jset"}, {BPF_JNE, "jne"},
    {BPF_JSGT, "jsgt"}, {BPF_JSGE, "jsge"}, {BPF_JLT, "jlt"},   {BPF_JLE, "jle"},   {BPF_JSLT, "jslt"},
    {BPF_JSLE, "jsle"},
};
struct SizeInfo {
    uint8_t sz;
    const char* name;
};
constexpr SizeInfo kSizes[] = {{BPF_B, "b"}, {BPF_H, "h"}, {BPF_W, "w"}, {BPF_DW, "dw"}};

constexpr int32_t kAtomicRmw[] = {BPF_ADD, BPF_OR, BPF_AND, BPF_XOR};
const char* atomic_op_name(int32_t op) {
    switch (op) {
        case BPF_ADD: return "add";
        case BPF_OR: return "or";
        case BPF_AND: return "and";
        default: return "xor";
    }
}

void add_atomics(Builder& b, uint8_t mode, uint8_t sz, const char* szname, bool internal, bool with_acq_rel) {
    const std::string pre = std::string(internal ? "probe_" : "") + "atomic" + szname + "_";
    const auto code = static_cast<uint8_t>(BPF_STX | mode | sz);
    if (sz == BPF_W || sz == BPF_DW) {
        for (int32_t op : kAtomicRmw) {
            // lock *(sz *)(dst + off) op= src           (check_atomic_rmw: src read)
            b.add(code, R, R, A, eq(op), op == BPF_ADD ? 1 : 3, Group::Atomic, b.name(pre + atomic_op_name(op)), internal);
            // src = atomic_fetch_op(dst + off, src)      (src written)
            b.add(code, R, W, A, eq(op | BPF_FETCH), 3, Group::Atomic, b.name(pre + "fetch_" + atomic_op_name(op)),
                  internal);
        }
        b.add(code, R, W, A, eq(BPF_XCHG), 3, Group::Atomic, b.name(pre + "xchg"), internal);
        b.add(code, R, R, A, eq(BPF_CMPXCHG), 3, Group::Atomic, b.name(pre + "cmpxchg"), internal);
    }
    if (with_acq_rel) {
        // dst = load_acquire((sz *)(src + off)); store_release((sz *)(dst + off), src)
        b.add(code, W, R, A, eq(BPF_LOAD_ACQ), 4, Group::Atomic, b.name(pre + "load_acquire"), internal);
        b.add(code, R, R, A, eq(BPF_STORE_REL), 4, Group::Atomic, b.name(pre + "store_release"), internal);
    }
}

Builder build() {
    Builder b;
    // ---- ALU / ALU64 ---------------------------------------------------------------------------
    for (uint8_t cls : {uint8_t(BPF_ALU64), uint8_t(BPF_ALU)}) {
        const bool is64 = cls == BPF_ALU64;
        const std::string sfx = is64 ? "64" : "32";
        for (const auto& o : kAluOps) {
            const auto k = static_cast<uint8_t>(cls | o.op | BPF_K);
            const auto x = static_cast<uint8_t>(cls | o.op | BPF_X);
            if (o.op == BPF_DIV || o.op == BPF_MOD) {
                // off = 1: signed variant (cpu v4)
                const char* sname = o.op == BPF_DIV ? "sdiv" : "smod";
                b.add(k, W, Z, eq(0), A, 1, Group::Alu, b.name(o.name + sfx + "_imm"));
                b.add(k, W, Z, eq(1), A, 4, Group::Alu, b.name(sname + sfx + "_imm"));
                b.add(x, W, R, eq(0), Z, 1, Group::Alu, b.name(o.name + sfx + "_reg"));
                b.add(x, W, R, eq(1), Z, 4, Group::Alu, b.name(sname + sfx + "_reg"));
            } else if (o.op == BPF_MOV) {
                b.add(k, W, Z, Z, A, 1, Group::Alu, b.name("mov" + sfx + "_imm"));
                b.add(x, W, R, eq(0), eq(0), 1, Group::Alu, b.name("mov" + sfx + "_reg"));
                if (is64) {
                    b.add(x, W, R, one_of(8, 16, 32), eq(0), 4, Group::Alu, "movsx64");
                    // arena: r = addr_space_cast(src, dst_as, src_as), imm = dst_as << 16 | src_as,
                    // only between address spaces 0 and 1 (check_alu_op)
                    b.add(x, W, R, eq(1), one_of(1, 1 << 16), 4, Group::Alu, "addr_space_cast");
                    // BPF_MOV64_PERCPU_REG (filter.h): off = BPF_ADDR_PERCPU (-1), internal
                    b.add(x, W, R, eq(-1), eq(0), 1, Group::Alu, "mov64_percpu", true);
                } else {
                    b.add(x, W, R, one_of(8, 16), eq(0), 4, Group::Alu, "movsx32");
                    // BPF_ZEXT_REG (filter.h): w_dst = w_dst with imm 1, inserted by the zext pass
                    b.add(x, W, R, eq(0), eq(1), 1, Group::Alu, "zext", true);
                    b.rows.back().dst_eq_src = true;
                }
            } else {
                b.add(k, W, Z, Z, A, 1, Group::Alu, b.name(o.name + sfx + "_imm"));
                b.add(x, W, R, Z, Z, 1, Group::Alu, b.name(o.name + sfx + "_reg"));
            }
        }
        // NEG: K form only, every other field reserved ("BPF_NEG uses reserved fields")
        b.add(static_cast<uint8_t>(cls | BPF_NEG | BPF_K), W, Z, Z, Z, 1, Group::Alu, b.name("neg" + sfx));
    }
    b.add(BPF_ALU | BPF_END | BPF_TO_LE, W, Z, Z, one_of(16, 32, 64), 1, Group::Alu, "le");
    b.add(BPF_ALU | BPF_END | BPF_TO_BE, W, Z, Z, one_of(16, 32, 64), 1, Group::Alu, "be");
    b.add(BPF_ALU64 | BPF_END | BPF_K, W, Z, Z, one_of(16, 32, 64), 4, Group::Alu, "bswap");

    // ---- JMP / JMP32 ---------------------------------------------------------------------------
    for (uint8_t cls : {uint8_t(BPF_JMP), uint8_t(BPF_JMP32)}) {
        const std::string sfx = cls == BPF_JMP ? "" : "32";
        const uint8_t cpu = cls == BPF_JMP ? 1 : 3;
        for (const auto& o : kJmpOps) {
            const uint8_t ocpu = (o.op == BPF_JLT || o.op == BPF_JLE || o.op == BPF_JSLT || o.op == BPF_JSLE) ? 2 : 1;
            const uint8_t c = cpu > ocpu ? cpu : ocpu;
            b.add(static_cast<uint8_t>(cls | o.op | BPF_K), R, Z, T, A, c, Group::Jump, b.name(o.name + sfx + "_imm"));
            b.add(static_cast<uint8_t>(cls | o.op | BPF_X), R, R, T, Z, c, Group::Jump, b.name(o.name + sfx + "_reg"));
        }
    }
    b.add(BPF_JMP | BPF_JA, Z, Z, T, Z, 1, Group::Jump, "ja");
    b.add(BPF_JMP32 | BPF_JA, Z, Z, Z, T, 4, Group::Jump, "gotol");
    b.add(BPF_JMP | BPF_JA | BPF_X, R, Z, Z, Z, 4, Group::Jump, "gotox");
    b.add(BPF_JMP | BPF_JCOND, Z, eq(BPF_MAY_GOTO), T, Z, 1, Group::Jump, "may_goto");
    b.add(BPF_JMP | BPF_CALL, Z, eq(0), Z, A, 1, Group::Call, "call_helper");
    b.add(BPF_JMP | BPF_CALL, Z, eq(BPF_PSEUDO_CALL), Z, T, 1, Group::Call, "call_local");
    // kfunc: imm = BTF id, off = index of the BTF fd in fd_array (0 = vmlinux)
    b.add(BPF_JMP | BPF_CALL, Z, eq(BPF_PSEUDO_KFUNC_CALL), A, A, 1, Group::Call, "call_kfunc");
    b.add(BPF_JMP | BPF_EXIT, Z, Z, Z, Z, 1, Group::Exit, "exit");
    // internal tail call (do_misc_fixups): imm = 0 or poke descriptor index + 1
    b.add(BPF_JMP | kOpTailCall, Z, Z, Z, A, 1, Group::TailCall, "tail_call", true);

    // ---- loads and stores ----------------------------------------------------------------------
    for (const auto& s : kSizes) {
        const std::string n = s.name;
        b.add(static_cast<uint8_t>(BPF_LDX | BPF_MEM | s.sz), W, R, A, Z, 1, Group::Load, b.name("ldx" + n));
        b.add(static_cast<uint8_t>(BPF_ST | BPF_MEM | s.sz), R, Z, A, A, 1, Group::Store, b.name("st" + n));
        b.add(static_cast<uint8_t>(BPF_STX | BPF_MEM | s.sz), R, R, A, Z, 1, Group::Store, b.name("stx" + n));
        if (s.sz != BPF_DW) {
            b.add(static_cast<uint8_t>(BPF_LDX | BPF_MEMSX | s.sz), W, R, A, Z, 4, Group::Load, b.name("ldxs" + n));
            b.add(static_cast<uint8_t>(BPF_LDX | kModeProbeMemSx | s.sz), W, R, A, Z, 1, Group::Load,
                  b.name("probe_mem_ldxs" + n), true);
            b.add(static_cast<uint8_t>(BPF_LD | BPF_ABS | s.sz), Z, Z, Z, A, 1, Group::LdPacket, b.name("ldabs" + n));
            b.add(static_cast<uint8_t>(BPF_LD | BPF_IND | s.sz), Z, R, Z, A, 1, Group::LdPacket, b.name("ldind" + n));
        }
        // PROBE_MEM (convert_ctx_accesses for PTR_TO_BTF_ID loads), PROBE_MEM32 (arena)
        b.add(static_cast<uint8_t>(BPF_LDX | kModeProbeMem | s.sz), W, R, A, Z, 1, Group::Load,
              b.name("probe_mem_ldx" + n), true);
        b.add(static_cast<uint8_t>(BPF_LDX | kModeProbeMem32 | s.sz), W, R, A, Z, 1, Group::Load,
              b.name("probe_mem32_ldx" + n), true);
        b.add(static_cast<uint8_t>(BPF_ST | kModeProbeMem32 | s.sz), R, Z, A, A, 1, Group::Store,
              b.name("probe_mem32_st" + n), true);
        b.add(static_cast<uint8_t>(BPF_STX | kModeProbeMem32 | s.sz), R, R, A, Z, 1, Group::Store,
              b.name("probe_mem32_stx" + n), true);
        add_atomics(b, BPF_ATOMIC, s.sz, s.name, false, true);
        if (s.sz == BPF_W || s.sz == BPF_DW) add_atomics(b, kModeProbeAtomic, s.sz, s.name, true, false);
    }
    b.add(BPF_ST | kModeNospec, Z, Z, Z, Z, 1, Group::Nospec, "nospec", true);

    // ---- ldimm64, by pseudo source (resolve_pseudo_ldimm64) --------------------------------------
    struct Pseudo {
        int32_t src;
        const char* name;
        bool imm2_any;
    };
    constexpr Pseudo kPseudo[] = {
        {0, "lddw", true},                               // 64-bit constant
        {BPF_PSEUDO_MAP_FD, "lddw_map_fd", false},       // second imm must be 0
        {BPF_PSEUDO_MAP_VALUE, "lddw_map_value", true},  // second imm = value offset
        {BPF_PSEUDO_BTF_ID, "lddw_btf_id", true},        // second imm = BTF fd (0 = vmlinux)
        {BPF_PSEUDO_FUNC, "lddw_func", false},           // imm = relative subprog start
        {BPF_PSEUDO_MAP_IDX, "lddw_map_idx", false},
        {BPF_PSEUDO_MAP_IDX_VALUE, "lddw_map_idx_value", true},
    };
    for (const auto& p : kPseudo) {
        b.add(BPF_LD | BPF_IMM | BPF_DW, W, eq(p.src), Z, p.src == BPF_PSEUDO_FUNC ? T : A, 1, Group::LdImm64, p.name);
        b.rows.back().imm2 = p.imm2_any ? A : Z;
    }
    return b;
}

struct Index {
    Builder b;
    std::vector<const OpcodeRow*> by_code[256];
    Index() : b(build()) {
        for (const auto& r : b.rows) by_code[r.code].push_back(&r);
    }
};

const Index& index() {
    static const Index idx;
    return idx;
}

bool reg_ok(const FieldRule& r, int64_t v, bool allow_internal) {
    if (!r.allows(v)) return false;
    if ((r.rule == Rule::Reg || r.rule == Rule::RegWrite) && v == kRegAx && !allow_internal) return false;
    return true;
}

}  // namespace

std::span<const OpcodeRow> opcode_table() { return index().b.rows; }

std::span<const OpcodeRow* const> rows_for_code(uint8_t code) { return index().by_code[code]; }

const OpcodeRow* match_row(const Insn& in, bool allow_internal) {
    for (const OpcodeRow* r : rows_for_code(in.code)) {
        if (r->internal && !allow_internal) continue;
        if (!reg_ok(r->dst, in.dst_reg, allow_internal) || !reg_ok(r->src, in.src_reg, allow_internal)) continue;
        if (!r->off.allows(in.off) || !r->imm.allows(in.imm)) continue;
        if (r->dst_eq_src && in.dst_reg != in.src_reg) continue;
        return r;
    }
    return nullptr;
}

namespace {
int64_t random_field(const FieldRule& r, Rng& rng, int64_t lo, int64_t hi, bool allow_ax) {
    switch (r.rule) {
        case Rule::Zero: return 0;
        case Rule::Any:
        case Rule::Target:
            // Boundary values are where encodings break: pick them often.
            switch (rng.range(0, 5)) {
                case 0: return lo;
                case 1: return hi;
                case 2: return 0;
                case 3: return static_cast<int64_t>(rng.range(0, 16)) - 8;
                default: return lo + static_cast<int64_t>(rng.range(0, static_cast<uint64_t>(hi - lo)));
            }
        case Rule::Reg:
        case Rule::RegWrite: {
            int64_t v = static_cast<int64_t>(rng.range(0, allow_ax ? 11 : 10));
            if (r.rule == Rule::RegWrite && v == kRegFp) v = 0;
            return v;
        }
        case Rule::OneOf: return r.values[rng.range(0, r.count - 1)];
    }
    return 0;
}
}  // namespace

std::vector<Insn> random_encoding(const OpcodeRow& row, Rng& rng, bool allow_ax) {
    Insn in{};
    in.code = row.code;
    in.dst_reg = static_cast<uint8_t>(random_field(row.dst, rng, 0, 15, allow_ax));
    in.src_reg = static_cast<uint8_t>(random_field(row.src, rng, 0, 15, allow_ax));
    in.off = static_cast<int16_t>(random_field(row.off, rng, INT16_MIN, INT16_MAX, allow_ax));
    in.imm = static_cast<int32_t>(random_field(row.imm, rng, INT32_MIN, INT32_MAX, allow_ax));
    if (row.dst_eq_src) in.src_reg = in.dst_reg;
    if (row.group != Group::LdImm64) return {in};
    Insn hi{};
    hi.imm = static_cast<int32_t>(random_field(row.imm2, rng, INT32_MIN, INT32_MAX, allow_ax));
    return {in, hi};
}

}  // namespace patchfuzz::isa
