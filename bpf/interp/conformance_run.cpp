#include "bpf/interp/conformance_run.hpp"

#include <linux/bpf.h>

#include <fstream>
#include <vector>

#include "bpf/interp/interp.hpp"
#include "bpf/isa/validate.hpp"
#include "bpf/util/hex.hpp"

namespace patchfuzz::interp {

Status validate_for_conformance(std::span<const isa::Insn> insns) {
    // User-space encodings only. `callx` (JMP|CALL|X, RFC 9669) is not accepted by the kernel's
    // verifier, so our kernel-faithful validator refuses it; the suite's runner accepts it, so
    // it is validated here as the helper call it performs.
    std::vector<isa::Insn> checked(insns.begin(), insns.end());
    for (isa::Insn& i : checked)
        if (i.code == (BPF_JMP | BPF_CALL | BPF_X) && i.src_reg == 0 && i.off == 0 && i.imm == 0 && i.dst_reg <= 10)
            i = isa::call_helper(1);
    return isa::validate_insns(checked, isa::ValidateOptions{.allow_internal = false, .require_exit_at_end = true});
}

ConformanceOutcome run_conformance_data(const conformance::DataFile& f) {
    ConformanceOutcome o;
    // A rejection is a failed test even when the file carries `-- error`: the suite's negative
    // files use `-- error` for programs a correct runner must refuse, and "refused" is how a
    // negative test fails (`--expect-fail`). The note says so in the detail.
    const std::string note = f.error ? " (the file expects a rejection)" : "";
    Status v = validate_for_conformance(f.insns);
    if (!v.ok()) {
        o.stage = ConformanceOutcome::Stage::Validate;
        o.detail = f.path + ": " + v.error().to_string() + note;
        return o;
    }
    ExecInput in;
    in.ctx = f.mem;
    in.regs[2] = f.mem.size();
    ExecOptions opts;
    opts.conformance_helpers = true;
    opts.collect_maps = false;
    ExecResult r = execute(make_program(f.insns), in, arch_x86_64(), opts);
    if (r.status != ExecResult::Status::Ok) {
        o.stage = ConformanceOutcome::Stage::Execute;
        o.detail = f.path + ": pc " + std::to_string(r.fault_pc) + ": " + std::string(to_string(r.status)) + ": " + r.reason + note;
        return o;
    }
    o.r0 = r.r0;
    if (f.error) {
        o.stage = ConformanceOutcome::Stage::Compare;
        o.detail = f.path + ": expected a rejection, but it ran and returned r0 = " + hex(r.r0);
        return o;
    }
    if (!f.result) {
        o.stage = ConformanceOutcome::Stage::Compare;
        o.detail = f.path + ": no '-- result' section to compare r0 = " + hex(r.r0) + " with";
        return o;
    }
    if (*f.result != r.r0) {
        o.stage = ConformanceOutcome::Stage::Compare;
        o.detail = f.path + ": r0 = " + hex(r.r0) + ", expected " + hex(*f.result);
        return o;
    }
    o.passed = true;
    return o;
}

ConformanceOutcome run_conformance_file(const std::string& path) {
    std::ifstream probe(path);
    if (!probe) {
        ConformanceOutcome o;
        o.stage = ConformanceOutcome::Stage::Read;
        o.unreadable = true;
        o.detail = path + ": cannot open file";
        return o;
    }
    Expected<conformance::DataFile> f = conformance::read_data_file(path);
    if (!f.ok()) {
        ConformanceOutcome o;
        o.stage = ConformanceOutcome::Stage::Read;
        o.detail = f.error().where.empty() ? path + ": " + f.error().message : f.error().to_string();
        return o;
    }
    return run_conformance_data(*f);
}

}  // namespace patchfuzz::interp
