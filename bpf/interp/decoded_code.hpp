#pragma once
// The interpreter's pre-decoded form, private to bpf/interp: one op per (class, operation, operand
// kind, width) with K operands pre-extended and jump targets pre-resolved (DInsn), and a program's
// code decoded once for every run of it (DecodedCode). decode.cpp holds the decoder; interp.cpp
// the dispatch loop that runs this form.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::interp {
namespace detail {

using isa::Insn;

// ---- pre-decoded form -----------------------------------------------------------------------------
// One op per (class, operation, operand kind, width); K operands are pre-extended into `imm`,
// jump targets pre-resolved into absolute insn indices in `off`.
#define PF_ALU_OPS(X) X(ADD) X(SUB) X(MUL) X(DIV) X(SDIV) X(MOD) X(SMOD) X(OR) X(AND) X(XOR) X(LSH) X(RSH) X(ARSH) X(MOV)
#define PF_JMP_OPS(X) X(JEQ) X(JNE) X(JGT) X(JGE) X(JLT) X(JLE) X(JSGT) X(JSGE) X(JSLT) X(JSLE) X(JSET)
// The other ops, each one handler. LE*/BSWAP*: ALU|END TO_LE, ALU|END TO_BE and ALU64 END; LDABS,
// LDIND: classic packet loads (aux: size in bytes).
#define PF_OTHER_OPS(X)                                                                                              \
    X(MOVPERCPU) X(MOVSX8_64) X(MOVSX16_64) X(MOVSX32_64) X(MOVSX8_32) X(MOVSX16_32) X(NEG64) X(NEG32) X(ZEXT)       \
    X(LE16) X(LE32) X(LE64) X(BSWAP16) X(BSWAP32) X(BSWAP64)                                                         \
    X(LDXB) X(LDXH) X(LDXW) X(LDXDW) X(LDSXB) X(LDSXH) X(LDSXW) X(LDX_PROBE) X(LDX_CTX_PKT)                         \
    X(STB) X(STH) X(STW) X(STDW) X(STXB) X(STXH) X(STXW) X(STXDW) X(ATOMIC)                                          \
    X(LDABS) X(LDIND)                                                                                                \
    X(LDIMM64) X(LDIMM64_MAP) X(JA) X(CALL_HELPER) X(CALL_LOCAL) X(CALL_KFUNC) X(CALLX) X(EXIT) X(MAY_GOTO) X(GOTOX) \
    X(TAIL_CALL) X(NOP) X(LDIMM64_TAIL) X(INVALID)

enum Op : uint8_t {
#define PF_ENUM_ALU(N) N##64K, N##64X, N##32K, N##32X,
    PF_ALU_OPS(PF_ENUM_ALU)
#undef PF_ENUM_ALU
#define PF_ENUM_JMP(N) N##64K, N##64X, N##32K, N##32X,
    PF_JMP_OPS(PF_ENUM_JMP)
#undef PF_ENUM_JMP
#define PF_ENUM_OTHER(N) N,
    PF_OTHER_OPS(PF_ENUM_OTHER)
#undef PF_ENUM_OTHER
    kOpCount
};

struct DInsn {
    uint8_t op;
    uint8_t dst;
    uint8_t src;
    uint8_t aux;   // LDX_PROBE/ATOMIC/LDABS/LDIND: size in bytes; LDX_PROBE: 1 = sign-extend (bit 7)
    int32_t off;   // memory offset, or absolute jump target; LDIMM64: the value's upper half
    int32_t imm;   // immediate (k64/k32 extend it), masked for shifts; LDIMM64: the value's lower half;
                   // ATOMIC: op; INVALID: reason index in DecodedCode::invalid_
    // 1 + the register a zext_dst mark of the program (InsnAux) zero-extends after this insn
    // (insn_def_regno), 0 for none: what a run with ZextMarks::Apply does, found without a
    // look at the program's side tables per insn.
    uint8_t zext;
    uint8_t unused[3];
    bool operator==(const DInsn&) const = default;
};
static_assert(sizeof(DInsn) == 16 && offsetof(DInsn, imm) == 8 && offsetof(DInsn, zext) == 12);

// A K operand for a 64-bit operation (sign-extended) and for a 32-bit one.
inline uint64_t k64(const DInsn& d) { return static_cast<uint64_t>(static_cast<int64_t>(d.imm)); }
inline uint32_t k32(const DInsn& d) { return static_cast<uint32_t>(d.imm); }
// The 64-bit value of an ld_imm64 (LDIMM64), and how decode stores it.
inline uint64_t imm64(const DInsn& d) { return uint64_t{static_cast<uint32_t>(d.imm)} | (uint64_t{static_cast<uint32_t>(d.off)} << 32); }
inline void set_imm64(DInsn& d, uint64_t v) {
    d.imm = static_cast<int32_t>(static_cast<uint32_t>(v));
    d.off = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
}

constexpr const char* kSecondSlotReason = "execution reached the second slot of ld_imm64";

// The DInsn arrays of decoded code destroyed before, kept per thread for the next decodes: the
// execution oracle decodes a few programs for every case, each into an array of its own. An
// array is made with room for at least kMinRoom insns, so that most programs fit any spare one.
class SpareCode {
public:
    struct Array {
        std::unique_ptr<DInsn[]> insns;
        size_t room = 0;
    };
    // An array with room for n DInsns, its contents unspecified. Not inlined: in decode() it made
    // the loop keep `n` on the stack.
    [[gnu::noinline]] static Array take(size_t n) {
        Kept& kept = thread_kept();
        for (size_t k = kept.count; k-- > 0;)
            if (kept.arrays[k].room >= n) {
                Array a = std::move(kept.arrays[k]);
                kept.arrays[k] = std::move(kept.arrays[--kept.count]);
                return a;
            }
        const size_t room = std::max(n, kMinRoom);
        return Array{std::unique_ptr<DInsn[]>(new DInsn[room]), room};
    }
    // Kept for a later take() unless kMaxKept are already (then freed).
    static void give_back(Array a) {
        Kept& kept = thread_kept();
        if (a.insns && kept.count < kMaxKept) kept.arrays[kept.count++] = std::move(a);
    }

private:
    static constexpr size_t kMinRoom = 512;
    static constexpr size_t kMaxKept = 4;
    struct Kept {
        Array arrays[kMaxKept];
        size_t count = 0;
    };
    static Kept& thread_kept() {
        static thread_local Kept kept;
        return kept;
    }
};

}  // namespace detail

// A program's code decoded for one value of movsx_as_mov, the only part of a profile the decode
// depends on (and nothing of an input): what Executables of one program share.
struct DecodedCode {
    DecodedCode(const Program& prog, bool movsx_as_mov) : prog_(prog), movsx_as_mov_(movsx_as_mov) { decode(); }
    ~DecodedCode() { detail::SpareCode::give_back(detail::SpareCode::Array{std::move(code_), room_}); }
    DecodedCode(const DecodedCode&) = delete;
    DecodedCode& operator=(const DecodedCode&) = delete;
    void decode();
    void mark_ctx_packet_loads();
    // Sets DInsn::zext from the program's marks, once (what runs with ZextMarks::Apply read; the
    // others, sharing this code, never look).
    void mark_zexts() const;
    [[gnu::noinline]] uint32_t decode_slow(uint32_t pc);
    [[gnu::noinline]] uint32_t decode_general(uint32_t pc);
    detail::DInsn decode_one(uint32_t pc, std::string& why);
    void decode_common_ldimm64(uint32_t pc, detail::DInsn& d) const;
    [[maybe_unused]] bool decodes_alike(uint32_t pc, const detail::DInsn& d);  // for assert()
    // Whether this decode is also the one for a profile with movsx_as_mov == `movsx_as_mov`.
    [[nodiscard]] bool decodes_for(bool movsx_as_mov) const { return !has_movsx_ || movsx_as_mov == movsx_as_mov_; }

    const Program& prog_;
    const bool movsx_as_mov_;
    bool has_movsx_ = false;  // some insn decoded differently under the other movsx_as_mov
    // One per insn and one after them, every one written by decode() (so not zeroed first, as a
    // vector's would be; the array may come with the insns of an earlier decode: SpareCode).
    std::unique_ptr<detail::DInsn[]> code_;
    size_t size_ = 0;
    size_t room_ = 0;  // the array's DInsns
    std::vector<std::string> invalid_;  // reasons for INVALID insns (index in DInsn::imm)
    static constexpr uint32_t kNoReason = ~0u;  // DInsn::imm of an INVALID insn without one in invalid_
    // DInsn::imm of the second slot of a decoded ld_imm64, whose reason (kSecondSlotReason) is not
    // in invalid_: most programs have ld_imm64s, and the string would be made for each decode.
    static constexpr uint32_t kSecondSlot = ~1u;
    static constexpr detail::DInsn second_slot() { return detail::DInsn{detail::INVALID, 0, 0, 0, 0, static_cast<int32_t>(kSecondSlot), 0, {}}; }
    mutable std::once_flag zext_marked_;
};

}  // namespace patchfuzz::interp
