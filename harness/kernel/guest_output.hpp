#pragma once
// Parses the guest loader's console output ("@@" lines, see guest/pfk_loader.c) back into
// per-case results. Kernel messages between them are kept (WARN/BUG/panic lines are findings).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::kernel {

struct GuestMapEntry {
    uint32_t map = 0;
    std::vector<uint8_t> key, value;
    bool operator==(const GuestMapEntry&) const = default;
};

struct GuestRun {
    int rc = 0;           // 0 or -errno of BPF_PROG_TEST_RUN
    uint32_t retval = 0;
    std::vector<GuestMapEntry> maps;  // array/hash contents after the run (first 16 entries)
};

struct GuestCaseResult {
    uint32_t index = 0;
    int rc = 0;                 // 0 = accepted, else -errno of BPF_PROG_LOAD (or of map setup)
    uint32_t insn_cnt = 0, verified = 0;
    uint64_t load_us = 0;
    // Bytes of machine code the JIT made; 0 when the kernel runs the program in its interpreter (a
    // JIT that gives up on it, as the 32-bit ARM JIT does on bpf-to-bpf calls). -1: not reported.
    int64_t jited = -1;
    std::vector<uint32_t> map_ids;     // kernel map id per Program::maps index
    std::vector<isa::Insn> xlated;
    // What the guest's kallsyms name at xlated pcs (@@SYM): for a helper/kfunc call the symbol at
    // __bpf_call_base + imm, for an ld_imm64 of a kernel address the symbol there; aliases at one
    // address all listed, an empty list when no symbol starts there. Absent pcs were not looked up.
    std::map<uint32_t, std::vector<std::string>> symbols;
    // Per instruction-array map (Program::maps index): each entry's xlated_off after the load, in
    // key order (isa::kInsnDeleted for an entry whose insn the verifier removed).
    std::map<uint32_t, std::vector<uint32_t>> insn_arrays;
    std::vector<std::string> log;      // verifier log tail
    std::vector<GuestRun> runs;
    bool complete = false;             // its @@END line was seen
};

struct GuestReport {
    std::string release;
    int jit = -1;
    uint32_t case_cnt = 0;
    int64_t uptime_ms = -1;              // guest clock when the loader started (boot time)
    std::map<std::string, int64_t> facts;  // "array_value_off", "htab_elem_key_off", ...
    std::vector<GuestCaseResult> cases;    // by index (missing ones stay !complete)
    bool begun = false, done = false;
    uint32_t ok = 0, failed = 0;
    uint64_t busy_us = 0;
    std::string error;                     // @@PFK-ERROR text
    std::vector<std::string> kernel_alerts;  // console lines with WARNING:/BUG:/Kernel panic/Oops
};

// Never fails on noise; an Error only for a malformed "@@" line (located "console:LINE").
Expected<GuestReport> parse_guest_output(std::string_view console);

}  // namespace patchfuzz::kernel
