#pragma once
// The BPF interpreter: runs a Program (original with helper/kfunc calls executed by reference
// models, or rewritten with the verifier's inline code) on one ExecInput under one ArchProfile.
//
// Semantics: RFC 9669 and the kernel interpreter (kernel/bpf/core.c ___bpf_prog_run), cpu v1-v4,
// plus the kernel-internal encodings the rewrite passes emit (BPF_REG_AX, nospec, zext marker,
// PROBE_MEM, the internal tail call, MOV64_PERCPU). Results are computed from the ISA definitions,
// never by host division or host shifts, so every host gives the same bits (also tested on arm64
// under qemu). Any fault or exhausted budget is a result with pc and reason, never a crash.
//
// Memory: typed regions (one 512-byte stack per frame, ctx, packet, map values, ...). A pointer
// is kRegionBase + (region << 32) + offset in a 64-bit register, so code that truncates or
// garbles a pointer's upper half faults on its next access instead of silently working.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/interp/exec_input.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::interp {

class CostModel;  // bpf/interp/cost_model.hpp

inline constexpr uint64_t kRegionBase = 0xffff888000000000ULL;  // region r at kRegionBase + (r << 32)
inline constexpr uint64_t kCodeBase = 0xffffb00000000000ULL;  // code addresses (+ pc * 8)
inline constexpr uint64_t kKsymBase = 0xffffc00000000000ULL;  // ld_imm64 BTF_ID: opaque, never dereferenced
inline constexpr uint32_t kStackSize = 512;                   // MAX_BPF_STACK
inline constexpr uint32_t kMaxFrames = 8;                     // MAX_CALL_FRAMES
inline constexpr uint32_t kMaxTailCalls = 33;                 // MAX_TAIL_CALL_CNT
// Fixed regions; map values follow.
inline constexpr uint32_t kRegionCtx = kMaxFrames;
inline constexpr uint32_t kRegionPacket = kMaxFrames + 1;
inline constexpr uint32_t kRegionPcpu = kMaxFrames + 2;  // this CPU's pcpu_hot (cpu number, current task)
inline constexpr uint32_t kFirstMapRegion = kMaxFrames + 3;
// A tracing program's ctx region starts with the trampoline's two words (func ip, nr_args); r1
// points just after them. tracing_nr_args() is what the trampoline stores: the attach target's
// parameter count (for tp_btf, which has none, what bpf-next folds in: vlen - 1).
inline constexpr uint32_t kTracingCtxPrefix = 16;
inline constexpr uint64_t kTracedFuncIp = kKsymBase + 0x2000;
inline uint64_t tracing_nr_args(const Program& p) {
    return p.attach == TraceAttach::RawTp ? (p.attach_btf_vlen ? p.attach_btf_vlen - 1u : 0u) : p.attach_btf_vlen;
}
// What R1-R5 hold after a helper or kfunc call (the verifier marks them unreadable; poisoning
// makes code that still reads them diverge).
inline constexpr uint64_t kCallPoison = 0xdeadbeefdeadbeefULL;

struct TraceStep {
    uint32_t pc = 0;
    uint8_t frame = 0;
    uint64_t dst_after = 0;  // value of the insn's dst register after it executed
};

struct ExecResult {
    enum class Status { Ok, Fault, StepBudget, Unsupported } status = Status::Ok;
    uint64_t r0 = 0;
    uint32_t fault_pc = 0;
    std::string reason;
    uint64_t steps = 0;
    std::vector<uint8_t> stack;                  // main frame's final stack (fp-512 .. fp-1)
    std::vector<std::vector<MapEntry>> maps;     // final map contents, per Program::maps index, key order
                                                 // (when ExecOptions::collect_maps)
    std::vector<uint64_t> map_digests;           // MapModel::content_digest() per map, always
    std::vector<std::string> effects;            // helper/kfunc effects that a rewrite must keep
    double cycles = 0;                           // cost model (when ExecOptions::cost is set)
    std::vector<uint8_t> ctx;                    // final ctx bytes
    std::vector<uint8_t> packet;                 // final packet bytes
    std::vector<TraceStep> trace;                // last ExecOptions::trace_last steps, oldest first

    // Back to a fresh result, keeping the vectors' storage (for a result reused across runs).
    void clear() {
        clear_but_memory();
        stack.clear();
        ctx.clear();
        packet.clear();
    }
    // clear() but for the final memory (stack, ctx, packet), left for the caller to overwrite: a
    // run that reuses a result mostly writes as many bytes there as the run before did, and
    // keeping their sizes makes that one copy each. A field added above must be reset here too
    // (or in clear(), if it is memory).
    void clear_but_memory() {
        status = Status::Ok;
        r0 = 0;
        fault_pc = 0;
        reason.clear();
        steps = 0;
        maps.clear();
        map_digests.clear();
        effects.clear();
        cycles = 0;
        trace.clear();
    }
};

std::string_view to_string(ExecResult::Status s);

struct ExecOptions {
    uint64_t step_budget = 0;       // 0: ExecInput::step_budget
    uint32_t trace_last = 0;        // keep the last N executed steps in ExecResult::trace
    CostModel* cost = nullptr;      // count cycles (bpf/interp/cost_model.hpp)
    // bpf_conformance harness: helper 5 is the suite's own test helper (returns r1 + 0, ignored by
    // the tests), and `callx` calls helpers by register.
    bool conformance_helpers = false;
    bool collect_maps = true;       // fill ExecResult::maps (map_digests are always filled)
};

// How a run treats the verifier's zext_dst marks (InsnAux::zext_dst).
enum class ZextMarks : uint8_t {
    Ignore,  // the program as it is (a rewritten program carries its zexts as insns)
    // After each marked insn, zero-extend the register it defines (insn_def_regno): what the zext
    // the verifier inserts there for a JIT that needs one (bpf_jit_needs_zext; the zext pass)
    // does. The original program run this way is what such a JIT must compute, with no pass
    // involved — so the execution oracle's reference for jit32 does not trust the zext pass.
    Apply,
};

// Runs `prog` from insn 0. Never throws, never aborts on program behaviour.
ExecResult execute(const Program& prog, const ExecInput& in, const ArchProfile& arch, const ExecOptions& opts = {},
                   ZextMarks marks = ZextMarks::Ignore);

// A program decoded once for one profile's semantics, to run on many inputs (the execution
// oracle runs each program on several): execute(Executable(p, a), in) == execute(p, in, a).
// `prog` must outlive it; the profile is copied.
struct DecodedCode;
class PreparedInput;
class Executable {
public:
    Executable(const Program& prog, const ArchProfile& arch, ZextMarks marks = ZextMarks::Ignore);
    // decoded_like's program under another profile and zext marks, sharing its decoded code when
    // that decodes alike: the decode depends on the profile only through movsx_as_mov, and not
    // even on that when the program has no MOVSX. Otherwise the program is decoded anew. Either
    // way it runs exactly as Executable(decoded_like.program(), arch, marks) does; decoded_like
    // may be destroyed first (the shared code is reference counted, the program must live on).
    Executable(const Executable& decoded_like, const ArchProfile& arch, ZextMarks marks);
    // Whether this and `other` run one shared decoded code (for tests and statistics).
    [[nodiscard]] bool shares_code_with(const Executable& other) const;
    ~Executable();
    Executable(Executable&&) noexcept;
    Executable& operator=(Executable&&) noexcept;
    [[nodiscard]] const Program& program() const { return *prog_; }
    [[nodiscard]] const ArchProfile& arch() const { return arch_; }
    [[nodiscard]] ZextMarks zext_marks() const { return marks_; }

private:
    // Held here, not behind a pointer of their own: an oracle makes Executables for every case.
    const Program* prog_;
    ArchProfile arch_;
    ZextMarks marks_;
    std::shared_ptr<const DecodedCode> code_;  // shared by Executables of one program that decode alike
    friend void execute(const Executable& exe, const ExecInput& in, const ExecOptions& opts, ExecResult& out);
    friend void execute(const Executable& exe, PreparedInput& in, const ExecOptions& opts, ExecResult& out);
};
ExecResult execute(const Executable& exe, const ExecInput& in, const ExecOptions& opts = {});
// The same into `out`, whose vectors keep their storage: what a caller running many executions
// uses to spare the allocations of a fresh result each time.
void execute(const Executable& exe, const ExecInput& in, const ExecOptions& opts, ExecResult& out);

// One input prepared for the runs of several programs on it (the execution oracle runs each input
// on the original program and its rewrites). The first run builds what a run starts from, the
// memory regions (stacks, ctx, packet, pcpu area) and the maps filled from the input, and saves
// it; a later run of a program with the same map definitions, type and attach target restores it
// instead of building it again. Every run gives exactly what execute(exe, input(), ...) gives:
// a run changes its own copy only.
struct SetupImage;
class PreparedInput {
public:
    PreparedInput();
    explicit PreparedInput(const ExecInput& in);  // `in` must outlive it, unchanged
    ~PreparedInput();
    PreparedInput(PreparedInput&&) noexcept;
    PreparedInput& operator=(PreparedInput&&) noexcept;
    // Another input (or the same one changed): the saved set-up is dropped, its storage kept.
    void reset(const ExecInput& in);
    [[nodiscard]] const ExecInput& input() const { return *in_; }
    // Whether a run saved its set-up (for tests).
    [[nodiscard]] bool has_setup() const;

private:
    const ExecInput* in_ = nullptr;
    std::unique_ptr<SetupImage> image_;
    friend void execute(const Executable& exe, PreparedInput& in, const ExecOptions& opts, ExecResult& out);
};
void execute(const Executable& exe, PreparedInput& in, const ExecOptions& opts, ExecResult& out);

}  // namespace patchfuzz::interp
