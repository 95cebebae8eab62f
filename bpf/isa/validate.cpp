#include "bpf/isa/validate.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "bpf/isa/opcode_table.hpp"

namespace patchfuzz::isa {
namespace {

std::string pc_str(size_t pc) { return "pc " + std::to_string(pc); }
Error at(size_t pc, std::string msg) { return Error{pc_str(pc), std::move(msg)}; }

std::string hex2(uint8_t v) {
    char b[8];
    std::snprintf(b, sizeof b, "0x%02x", v);
    return b;
}

int64_t field_value(const Insn& in, int f) {
    switch (f) {
        case 0: return in.dst_reg;
        case 1: return in.src_reg;
        case 2: return in.off;
        default: return in.imm;
    }
}
const FieldRule& field_rule(const OpcodeRow& r, int f) {
    switch (f) {
        case 0: return r.dst;
        case 1: return r.src;
        case 2: return r.off;
        default: return r.imm;
    }
}

bool field_ok(const FieldRule& fr, int64_t v, bool allow_internal) {
    if (!fr.allows(v)) return false;
    if ((fr.rule == Rule::Reg || fr.rule == Rule::RegWrite) && v == kRegAx && !allow_internal) return false;
    return true;
}

// The message for field `f` of `in` failing every candidate row at that field.
std::string field_message(const std::vector<const OpcodeRow*>& rows, const Insn& in, int f, bool allow_internal) {
    const int64_t v = field_value(in, f);
    const FieldRule& first = field_rule(*rows.front(), f);
    const char* name = field_name(f);
    if (first.rule == Rule::Reg || first.rule == Rule::RegWrite) {
        if (v == kRegFp && first.rule == Rule::RegWrite) return "r10 is read-only";
        if (v == kRegAx && !allow_internal)
            return std::string(name) + " r11 (BPF_REG_AX) only allowed in kernel-internal code";
        return std::string(name) + " r" + std::to_string(v) + " out of range (r0..r10)";
    }
    // Union of the allowed values over every candidate row (OneOf / Zero rules).
    std::set<int64_t> allowed;
    for (const OpcodeRow* r : rows) {
        const FieldRule& fr = field_rule(*r, f);
        if (fr.rule == Rule::Zero) allowed.insert(0);
        if (fr.rule == Rule::OneOf)
            for (uint8_t i = 0; i < fr.count; ++i) allowed.insert(fr.values[i]);
    }
    if (allowed.size() == 1 && *allowed.begin() == 0)
        return "reserved field " + std::string(name) + " is " + std::to_string(v) + ", must be 0";
    std::string s = std::string(name) + " is " + std::to_string(v) + ", must be ";
    if (allowed.size() == 1) return s + std::to_string(*allowed.begin());
    s += "one of ";
    bool firstv = true;
    for (int64_t a : allowed) {
        s += (firstv ? "" : ", ") + std::to_string(a);
        firstv = false;
    }
    return s;
}

}  // namespace

// Like the kernel, decide what the insn is before judging its operands: first the fields that
// select among the rows of one code byte (any field some row constrains to fixed values: the
// call's src_reg, the atomic op in imm, movsx/sdiv's off, ...), in the order src, off, imm; then
// every field in the order dst, src, off, imm; then the zext marker's dst == src. Each step keeps
// the rows that allow the value; the first step that keeps none names the error, listing what the
// remaining rows would have allowed.
Status validate_encoding(const Insn& in, size_t pc, bool allow_internal) {
    auto rows = rows_for_code(in.code);
    if (rows.empty()) return at(pc, "unknown opcode " + hex2(in.code));
    if (match_row(in, allow_internal)) return {};
    if (!allow_internal) {
        if (const OpcodeRow* r = match_row(in, true); r && r->internal)
            return at(pc, std::string("kernel-internal insn '") + r->mnemonic + "' not allowed");
    }
    std::vector<const OpcodeRow*> cand;
    for (const OpcodeRow* r : rows)
        if (allow_internal || !r->internal) cand.push_back(r);
    if (cand.empty()) return at(pc, std::string("kernel-internal insn '") + rows.front()->mnemonic + "' not allowed");
    std::vector<int> order;
    for (int f : {1, 2, 3}) {
        bool selector = false;
        for (const OpcodeRow* r : rows) selector |= field_rule(*r, f).rule == Rule::OneOf;
        if (selector) order.push_back(f);
    }
    for (int f : {0, 1, 2, 3}) order.push_back(f);
    for (int f : order) {
        std::vector<const OpcodeRow*> keep;
        for (const OpcodeRow* r : cand)
            if (field_ok(field_rule(*r, f), field_value(in, f), allow_internal)) keep.push_back(r);
        if (keep.empty()) return at(pc, field_message(cand, in, f, allow_internal));
        cand = std::move(keep);
    }
    return at(pc, "zext marker needs dst_reg == src_reg, got r" + std::to_string(in.dst_reg) + " and r" +
                      std::to_string(in.src_reg));
}

namespace {

// Insns that never continue with the next one.
bool is_terminal(const Insn& in) { return is_exit(in) || is_ja(in) || is_gotol(in) || is_gotox(in); }

// What a relative transfer is called in messages.
const char* transfer_word(const Insn& in) {
    if (is_pseudo_call(in)) return "call to";
    if (is_pseudo_func(in)) return "function reference to";
    return "jump to";
}

}  // namespace

Status validate_insns(std::span<const Insn> insns, const ValidateOptions& opts) {
    const size_t n = insns.size();
    if (n == 0) return Error{"", "empty program"};
    // Pass 1: encodings and ldimm64 pairs; remember second slots.
    std::vector<bool> second(n, false);
    for (size_t pc = 0; pc < n; ++pc) {
        const Insn& in = insns[pc];
        if (auto s = validate_encoding(in, pc, opts.allow_internal); !s) return s;
        if (is_ldimm64(in)) {
            if (pc + 1 >= n) return at(pc, "ldimm64 truncated");
            const Insn& hi = insns[pc + 1];
            const std::string ctx = " (second slot of ldimm64 at pc " + std::to_string(pc) + ")";
            if (hi.code != 0) return at(pc + 1, "reserved field code is " + hex2(hi.code) + ", must be 0" + ctx);
            if (hi.dst_reg != 0)
                return at(pc + 1, "reserved field dst_reg is " + std::to_string(hi.dst_reg) + ", must be 0" + ctx);
            if (hi.src_reg != 0)
                return at(pc + 1, "reserved field src_reg is " + std::to_string(hi.src_reg) + ", must be 0" + ctx);
            if (hi.off != 0)
                return at(pc + 1, "reserved field off is " + std::to_string(hi.off) + ", must be 0" + ctx);
            const OpcodeRow* r = match_row(in, true);
            if (r && r->imm2.rule == Rule::Zero && hi.imm != 0)
                return at(pc + 1, "reserved field imm is " + std::to_string(hi.imm) + ", must be 0" + ctx);
            second[pc + 1] = true;
            ++pc;
        }
    }
    // Pass 2: relative targets.
    for (size_t pc = 0; pc < n; ++pc) {
        if (second[pc]) continue;
        const Insn& in = insns[pc];
        if (relative_field(in) == RelField::None) continue;
        if (is_tail_call(in) || is_gotox(in)) continue;  // off 0: targets are not encoded in the insn
        const int64_t t = static_cast<int64_t>(pc) + 1 + displacement(in);
        if (t < 0 || t >= static_cast<int64_t>(n))
            return at(pc, std::string(transfer_word(in)) + " pc " + std::to_string(t) + " out of range (" +
                              std::to_string(n) + " insns)");
        if (second[static_cast<size_t>(t)])
            return at(pc, std::string(transfer_word(in)) + " pc " + std::to_string(t) +
                              " lands in the second half of ldimm64 at pc " + std::to_string(t - 1));
    }
    if (opts.require_exit_at_end) {
        size_t last = n - 1;
        if (second[last]) --last;
        if (!is_terminal(insns[last])) return at(last, "last insn falls through off the end");
    }
    return {};
}

Status validate_program(const Program& prog, const ValidateOptions& opts) {
    const auto& insns = prog.insns;
    const size_t n = insns.size();
    if (auto s = validate_insns(insns, opts); !s) return s;
    if (prog.aux.size() != n)
        return Error{"aux", "has " + std::to_string(prog.aux.size()) + " entries, program has " +
                                std::to_string(n) + " insns"};
    // Second slots again (validate_insns succeeded, so pairs are well formed).
    std::vector<bool> second(n, false);
    for (size_t pc = 0; pc + 1 < n; ++pc)
        if (is_ldimm64(insns[pc])) second[++pc] = true;

    // Subprog table (check_subprogs / add_subprog; fake exit entry last).
    const auto& sp = prog.subprogs;
    if (sp.size() < 2) return Error{"subprogs", "need at least 2 entries (subprog 0 and the fake exit), got " +
                                                    std::to_string(sp.size())};
    if (sp.front().start != 0)
        return Error{"subprog 0", "starts at pc " + std::to_string(sp.front().start) + ", must start at pc 0"};
    if (sp.back().start != n)
        return Error{"subprog " + std::to_string(sp.size() - 1),
                     "fake exit entry starts at pc " + std::to_string(sp.back().start) + ", must be " +
                         std::to_string(n) + " (program length)"};
    std::set<uint32_t> starts;
    for (size_t i = 0; i + 1 < sp.size(); ++i) {
        if (sp[i + 1].start <= sp[i].start)
            return Error{"subprog " + std::to_string(i + 1),
                         "start pc " + std::to_string(sp[i + 1].start) + " not after subprog " + std::to_string(i) +
                             " start pc " + std::to_string(sp[i].start)};
        if (sp[i].start < n && second[sp[i].start])
            return Error{"subprog " + std::to_string(i),
                         "starts in the second half of ldimm64 at pc " + std::to_string(sp[i].start - 1)};
        starts.insert(sp[i].start);
    }
    // Which subprog each insn belongs to; calls target starts; jumps stay inside; no fall-through.
    std::vector<uint32_t> owner(n, 0);
    for (size_t i = 0; i + 1 < sp.size(); ++i)
        for (uint32_t pc = sp[i].start; pc < sp[i + 1].start; ++pc) owner[pc] = static_cast<uint32_t>(i);
    for (size_t pc = 0; pc < n; ++pc) {
        if (second[pc]) continue;
        const Insn& in = insns[pc];
        if (relative_field(in) == RelField::None || is_tail_call(in) || is_gotox(in)) continue;
        const auto t = static_cast<uint32_t>(static_cast<int64_t>(pc) + 1 + displacement(in));
        if (is_pseudo_call(in) || is_pseudo_func(in)) {
            if (!starts.count(t))
                return at(pc, std::string(transfer_word(in)) + " pc " + std::to_string(t) + " which is not a subprog start");
        } else if (owner[t] != owner[pc]) {
            return at(pc, "jump to pc " + std::to_string(t) + " leaves subprog " + std::to_string(owner[pc]) +
                              " (into subprog " + std::to_string(owner[t]) + ")");
        }
    }
    if (opts.require_exit_at_end) {
        for (size_t i = 0; i + 2 < sp.size(); ++i) {
            uint32_t last = sp[i + 1].start - 1;
            if (second[last]) --last;
            if (!is_terminal(insns[last]))
                return at(last, "last insn of subprog " + std::to_string(i) + " falls through into subprog " +
                                    std::to_string(i + 1));
        }
    }
    // Line info (check_btf_line / bpf_adj_linfo invariants).
    for (size_t i = 0; i < prog.linfo.size(); ++i) {
        const uint32_t off = prog.linfo[i].insn_off;
        const std::string where = "linfo " + std::to_string(i);
        if (i == 0 && off != 0) return Error{where, "insn_off " + std::to_string(off) + ", first must be 0"};
        if (i > 0 && off <= prog.linfo[i - 1].insn_off)
            return Error{where, "insn_off " + std::to_string(off) + " not after previous " +
                                    std::to_string(prog.linfo[i - 1].insn_off)};
        if (off >= n) return Error{where, "insn_off " + std::to_string(off) + " out of range (" + std::to_string(n) + " insns)"};
        if (second[off])
            return Error{where, "insn_off " + std::to_string(off) + " is the second half of ldimm64 at pc " +
                                    std::to_string(off - 1)};
    }
    // Instruction arrays (bpf_insn_array.c: offsets in range or INSN_DELETED).
    for (size_t a = 0; a < prog.insn_arrays.size(); ++a) {
        const auto& arr = prog.insn_arrays[a];
        for (size_t e = 0; e < arr.entries.size(); ++e) {
            const uint32_t x = arr.entries[e].xlated_off;
            if (x == kInsnDeleted) continue;
            const std::string where = "insn_array " + std::to_string(a) + " entry " + std::to_string(e);
            if (x >= n) return Error{where, "xlated_off " + std::to_string(x) + " out of range (" + std::to_string(n) + " insns)"};
            if (second[x])
                return Error{where, "xlated_off " + std::to_string(x) + " is the second half of ldimm64 at pc " +
                                        std::to_string(x - 1)};
        }
    }
    for (size_t i = 0; i < prog.pokes.size(); ++i) {
        const uint32_t x = prog.pokes[i].insn_idx;
        if (x >= n)
            return Error{"poke " + std::to_string(i),
                         "insn_idx " + std::to_string(x) + " out of range (" + std::to_string(n) + " insns)"};
    }
    return {};
}

}  // namespace patchfuzz::isa
