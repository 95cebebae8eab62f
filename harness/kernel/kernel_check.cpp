#include "harness/kernel/kernel_check.hpp"

#include "bpf/util/hex.hpp"
#include "bpf/util/json.hpp"
#include "bpf/util/numbers_as_n.hpp"

#include <cstdlib>
#include <ostream>
#include <sstream>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/passes/zext_marks.hpp"
#include "bpf/patch/patch.hpp"
#include "harness/kernel/kernel_image.hpp"
#include "harness/kernel/undefined_shift.hpp"
#include "harness/kernel/xlated_compare.hpp"
#include "harness/kernel/xlated_program.hpp"

namespace patchfuzz::kernel {
namespace {

// Kernel test run vs interpreter: retval (u32, what BPF_PROG_TEST_RUN returns) and the contents of
// array/hash maps (the guest prints at most 16 entries per map; we compare those keys).
RunCompare compare_run(uint32_t k, const GuestRun& real, const Program& model, const interp::ExecInput& in,
                       const ArchProfile& arch, interp::ZextMarks marks = interp::ZextMarks::Ignore) {
    RunCompare rc{k, true, ""};
    if (real.rc != 0) {
        rc.agree = false;
        rc.detail = "kernel test run failed rc=" + std::to_string(real.rc);
        return rc;
    }
    if (arch.wide_shift_undefined)
        if (auto where = wide_register_shift(model, in, arch)) {
            rc.compared = false;
            rc.detail = "not compared: " + *where + " (undefined on " + std::string(arch.name) + ")";
            return rc;
        }
    auto res = interp::execute(model, in, arch, {}, marks);
    if (res.status != interp::ExecResult::Status::Ok) {
        rc.agree = false;
        rc.detail = "interpreter: " + std::string(interp::to_string(res.status)) + " at pc " + std::to_string(res.fault_pc) +
                    ": " + res.reason + "; kernel retval " + std::to_string(real.retval);
        return rc;
    }
    if (static_cast<uint32_t>(res.r0) != real.retval) {
        rc.agree = false;
        rc.detail = "retval: kernel " + std::to_string(real.retval) + ", interpreter " + std::to_string(static_cast<uint32_t>(res.r0));
    }
    for (const auto& e : real.maps) {
        if (e.map >= res.maps.size()) continue;
        const interp::MapEntry* found = nullptr;
        for (const auto& me : res.maps[e.map])
            if (me.key == e.key) found = &me;
        std::vector<uint8_t> zero(e.value.size(), 0);
        const auto& mine = found ? found->value : zero;  // an untouched array slot is zero in both
        if (mine != e.value) {
            rc.agree = false;
            rc.detail += (rc.detail.empty() ? "" : "; ") + std::string("map ") + std::to_string(e.map) + " key " + hex_bytes(e.key) +
                         ": kernel " + hex_bytes(e.value) + ", interpreter " + (found ? hex_bytes(found->value) : "absent/zero");
        }
    }
    return rc;
}

// CaseOutcome::key of an xlated difference: the opcodes at the first insn whose opcode differs
// (a helper call on the model's side with its id), else where the lengths part, else at the first
// difference in any field. Offsets and immediates that differ before it are usually its
// consequence (a jump over an insn the kernel inlined into several), so they do not name it.
std::string difference_key(const CompareResult& c) {
    const std::vector<isa::Insn>& k = c.kernel_normalised;
    const std::vector<isa::Insn>& m = c.model_normalised;
    size_t at = 0;
    while (at < k.size() && at < m.size() && k[at].code == m[at].code) ++at;
    if (at == k.size() && at == m.size()) at = c.first_diff;
    auto shown = [at](const std::vector<isa::Insn>& v, bool with_helper) {
        if (at >= v.size()) return std::string("end");
        std::string s = hex(static_cast<uint64_t>(v[at].code));
        if (with_helper && isa::is_helper_call(v[at])) s += " call " + std::to_string(v[at].imm);
        return s;
    };
    // The kernel's helper imm is an address (mask M1): only the model's names the helper.
    return "kernel " + shown(k, false) + " / model " + shown(m, true);
}


// The kernel's xlated program converted and run against the original (and against the VM's
// test runs, which checks the conversion itself); counted in `rep`.
void execute_xlated(CaseOutcome& o, const GuestCaseResult& g, const KernelCase& kc, const MaskFacts& facts,
                    const ArchProfile& arch, CheckReport& rep) {
    XlatedProgram x = program_of_xlated(g, kc.program, facts);
    if (!x.ok) {
        o.xlated_exec = "conversion-failed";
        o.xlated_failure = x.failure;
        o.xlated_detail = x.detail;
        rep.xlated_conversion_failed++;
        rep.xlated_failures[x.failure]++;
        return;
    }
    rep.xlated_executed++;
    o.xlated = run_xlated_vs_original(x.program, kc.program, kc.inputs, arch);
    o.xlated_exec = o.xlated.agree ? "agree" : "differ";
    (o.xlated.agree ? rep.xlated_agree : rep.xlated_differ)++;
    for (size_t k = 0; k < g.runs.size() && k < kc.inputs.size(); k++) {
        o.xlated_vm_runs.push_back(compare_run(static_cast<uint32_t>(k), g.runs[k], x.program, kc.inputs[k], arch));
        rep.xlated_vm_runs++;
        if (!o.xlated_vm_runs.back().agree) rep.xlated_vm_disagree++;
    }
}

}  // namespace

std::string insn_array_difference(const GuestCaseResult& g, const Program& model) {
    auto shown = [](uint32_t off) { return off == isa::kInsnDeleted ? std::string("deleted") : std::to_string(off); };
    for (const InsnArray& ia : model.insn_arrays) {
        auto it = g.insn_arrays.find(static_cast<uint32_t>(ia.map_index));
        if (it == g.insn_arrays.end()) return "instruction array map " + std::to_string(ia.map_index) + ": not reported by the guest\n";
        if (it->second.size() != ia.entries.size())
            return "instruction array map " + std::to_string(ia.map_index) + ": kernel " + std::to_string(it->second.size()) +
                   " entries, model " + std::to_string(ia.entries.size()) + "\n";
        for (size_t e = 0; e < ia.entries.size(); e++)
            if (it->second[e] != ia.entries[e].xlated_off)
                return "instruction array map " + std::to_string(ia.map_index) + " entry " + std::to_string(e) + " (orig_off " +
                       std::to_string(ia.entries[e].orig_off) + "): kernel xlated_off " + shown(it->second[e]) + ", model " +
                       shown(ia.entries[e].xlated_off) + "\n";
    }
    return "";
}

void with_rnd_hi32(KernelCase& kc) {
    kc.test_rnd_hi32 = true;
    passes::add_zext_marks(kc.program);
}

const char* divergence_of(const CaseOutcome& o) {
    switch (o.agreement) {
        case Agreement::Differ: return "xlated-differ";
        case Agreement::ModelFailed: return "model-failed";
        case Agreement::Crashed: return "vm-crashed";
        case Agreement::Agree:
            if (!o.runs_agree()) return "run-mismatch";
            return o.original_runs_agree() && o.xlated_exec != "differ" ? nullptr : "kernel-changes-meaning";
        case Agreement::Rejected: break;
    }
    return nullptr;
}

std::string_view to_string(Agreement a) {
    switch (a) {
        case Agreement::Agree: return "agree";
        case Agreement::Differ: return "differ";
        case Agreement::ModelFailed: return "model-failed";
        case Agreement::Rejected: return "rejected";
        case Agreement::Crashed: return "crashed";
    }
    return "?";
}

ModelResult run_model(const Program& original, passes::KernelProfile profile, bool test_rnd_hi32, const ArchProfile& arch, bool privileged) {
    ModelResult r;
    r.program = original;
    // A JIT that asks for zero-extension (bpf_jit_needs_zext: armhf's) gets the verifier's
    // zext_dst marks turned into explicit zexts, as BPF_F_TEST_RND_HI32 turns the unmarked defs
    // into poison: either way the marks show in the xlated code, so the model needs them too.
    if (arch.needs_zext && !test_rnd_hi32) passes::add_zext_marks(r.program);
    auto patcher = patch::make_patcher("incremental");
    if (!patcher) {
        r.error = "no incremental patcher";
        return r;
    }
    passes::RewriteOptions o{.arch = arch};
    o.kernel = profile;
    o.test_rnd_hi32 = test_rnd_hi32;
    o.privileged = privileged;
    auto res = passes::run_pipeline(r.program, *patcher, o);
    r.ok = res.outcome.ok();
    if (!r.ok) r.error = res.failed_pass + ": err " + std::to_string(res.outcome.err) + " " + res.outcome.log;
    return r;
}

Expected<CheckOptions> default_check_options(std::string_view tag, const std::string& cache_dir,
                                             const std::string& source_root, std::string_view debian_arch) {
    auto boot = arch_boot(debian_arch);
    if (!boot) return make_error("", "unknown architecture '" + std::string(debian_arch) + "' (" + arch_boot_list() + ")");
    auto img = find_cached_kernel(tag, cache_dir, debian_arch);
    if (!img) return img.error();
    auto guest = locate_guest_loader(source_root, cache_dir, std::string(debian_arch));
    if (!guest) return guest.error();
    CheckOptions co;
    co.vm.qemu = boot->qemu;
    co.vm.arch = boot->debian_arch;
    co.vm.kernel_image = img->vmlinux;
    co.vm.guest_loader = *guest;
    // Keeps the initramfs and the console of the last boot (how guest recordings for tests are made).
    if (const char* keep = std::getenv("PATCHFUZZ_VM_WORK_DIR"); keep && *keep) co.vm.work_dir = keep;
    auto model_arch = arch_by_name(boot->model_arch);
    if (!model_arch) return make_error("", "no model profile for architecture " + std::string(boot->model_arch));
    co.arch = *model_arch;
    // Each kernel tag names its own model profile (the build it is pinned to).
    auto profile = passes::kernel_profile_named(tag);
    if (!profile) return make_error("", "kernel '" + std::string(tag) + "' has no model profile");
    co.profile = *profile;
    return co;
}

Expected<CheckReport> check_cases(const std::vector<KernelCase>& cases, const CheckOptions& opts) {
    auto batch = run_batch(opts.vm, cases, BatchFlags{.test_run = opts.run}, opts.per_boot);
    if (!batch) return batch.error();
    CheckReport rep;
    rep.release = batch->report.release;
    rep.jit = batch->report.jit;
    rep.alerts = batch->alerts;
    rep.boots = batch->boots;
    rep.wall_s = batch->wall_s;
    rep.boot_s = batch->first_boot_s;
    rep.guest_busy_us = batch->report.busy_us;
    rep.facts = batch->report.facts;
    MaskFacts facts = mask_facts(batch->report.facts, batch->report.release);
    for (size_t i = 0; i < cases.size(); i++) {
        const auto& g = batch->report.cases[i];
        CaseOutcome o;
        o.name = cases[i].name;
        o.rc = g.rc;
        o.log = g.log;
        o.kernel_len = static_cast<uint32_t>(g.xlated.size());
        o.load_us = g.load_us;
        if (!g.complete) {
            o.agreement = Agreement::Crashed;
            rep.crashed++;
        } else if (g.rc != 0) {
            o.agreement = Agreement::Rejected;
        } else {
            rep.accepted++;
            if (g.jited == 0) rep.interpreted++;
            o.agreement = Agreement::Agree;
            ModelResult m;
            if (opts.compare || opts.run) m = run_model(cases[i].program, opts.profile, cases[i].test_rnd_hi32, opts.arch,
                                                          passes::bpf_capable(cases[i].privilege));
            if (opts.compare) {
                if (!m.ok) {
                    o.agreement = Agreement::ModelFailed;
                    o.diff = m.error;
                    o.key = numbers_as_n(m.error);
                } else {
                    auto c = compare_xlated(g.xlated, m.program, g.map_ids, facts);
                    o.model_len = m.program.len();
                    o.masked = c.masked;
                    if (!c.equal) {
                        o.agreement = Agreement::Differ;
                        o.diff = c.diff;
                        o.key = difference_key(c);
                    } else if (std::string ia = insn_array_difference(g, m.program); !ia.empty()) {
                        o.agreement = Agreement::Differ;
                        o.diff = ia;
                        o.key = "instruction array xlated_off";
                    }
                }
            }
            if (opts.run) {
                const Program& exec_prog = m.ok ? m.program : cases[i].program;
                for (size_t k = 0; k < g.runs.size() && k < cases[i].inputs.size(); k++) {
                    o.runs.push_back(compare_run(static_cast<uint32_t>(k), g.runs[k], exec_prog, cases[i].inputs[k], opts.arch));
                }
                for (const auto& run : o.runs) rep.runs_not_compared += run.compared ? 0 : 1;
                if (!o.runs_agree()) {
                    rep.run_disagree++;
                    if (o.agreement == Agreement::Agree)
                        for (const auto& run : o.runs)
                            if (!run.agree) {
                                o.key = numbers_as_n(run.detail);
                                break;
                            }
                }
            }
            if (opts.run) {
                const OriginalReference ref(cases[i].program, opts.arch);
                for (size_t k = 0; k < g.runs.size() && k < cases[i].inputs.size(); k++)
                    o.original_runs.push_back(
                        compare_run(static_cast<uint32_t>(k), g.runs[k], ref.program, cases[i].inputs[k], opts.arch, ref.marks));
                if (!o.original_runs_agree()) rep.kernel_vs_original++;
            }
            if (opts.exec_xlated) execute_xlated(o, g, cases[i], facts, opts.arch, rep);
            const bool xlated_changes = o.xlated_exec == "differ";
            const bool kernel_changes = !o.original_runs_agree() || xlated_changes;
            const bool judged = !o.original_runs.empty() || o.xlated_exec == "agree" || xlated_changes;
            const bool model_disagrees = o.agreement != Agreement::Agree || !o.runs_agree();
            if (model_disagrees && judged) {
                o.rewrite_class = kernel_changes ? "kernel-finding" : "model-gap";
                (kernel_changes ? rep.kernel_finding : rep.model_gap)++;
            } else if (!model_disagrees && kernel_changes) {
                // the model rewrites as the kernel does, and both change the meaning: a
                // kernel finding the model shares (0007's bpf_loop inline, for one)
                o.rewrite_class = "kernel-finding";
                rep.kernel_finding++;
                for (const auto& run : o.original_runs)
                    if (!run.agree) {
                        o.key = numbers_as_n(run.detail);
                        break;
                    }
                if (o.key.empty()) o.key = numbers_as_n("xlated: " + o.xlated.detail + " at " + o.xlated.diverging_insn);
            }
            if (o.agreement == Agreement::Agree) rep.agree++;
            if (o.agreement == Agreement::Differ) rep.differ++;
            if (o.agreement == Agreement::ModelFailed) rep.model_failed++;
        }
        rep.cases.push_back(std::move(o));
    }
    return rep;
}

void print_case_outcome(std::ostream& out, const CaseOutcome& c) {
    out << c.name << ": " << to_string(c.agreement);
    if (c.agreement == Agreement::Rejected) out << " (rc " << c.rc << ")";
    if (c.agreement == Agreement::Agree) out << " (" << c.kernel_len << " insns, " << c.masked << " masked)";
    if (!c.rewrite_class.empty()) out << " [" << c.rewrite_class << "]";
    out << "\n";
    if (c.agreement == Agreement::Rejected || c.agreement == Agreement::Crashed)
        for (const auto& l : c.log) out << "    | " << l << "\n";
    if (!c.diff.empty()) out << c.diff;
    for (const auto& run : c.runs)
        if (!run.agree || !run.compared) out << "    run " << run.input << ": " << run.detail << "\n";
    for (const auto& run : c.original_runs)
        if (!run.agree) out << "    kernel vs original, run " << run.input << ": " << run.detail << "\n";
    if (c.xlated_exec == "differ") {
        out << "    xlated vs original (interpreter), input " << c.xlated.input << ": " << c.xlated.detail << "\n";
        if (c.xlated.diverging_pc >= 0)
            out << "    xlated diverges at pc " << c.xlated.diverging_pc << ": " << c.xlated.diverging_insn << " (" << c.xlated.located << ")\n";
        else
            out << "    xlated divergence " << c.xlated.located << "\n";
    }
    if (c.xlated_exec == "conversion-failed") out << "    xlated not executed: " << c.xlated_failure << ": " << c.xlated_detail << "\n";
    for (const auto& run : c.xlated_vm_runs)
        if (!run.agree) out << "    xlated (interpreter) vs VM, run " << run.input << ": " << run.detail << "\n";
    if (!c.rewrite_class.empty()) out << "    class: " << c.rewrite_class << "\n";
}

void print_text_report(std::ostream& out, const CheckReport& r, bool verbose) {
    for (const auto& c : r.cases) {
        bool xlated_off = c.xlated_exec == "differ" || c.xlated_exec == "conversion-failed";
        for (const auto& run : c.xlated_vm_runs) xlated_off = xlated_off || !run.agree;
        bool interesting = c.agreement != Agreement::Agree || !c.runs_agree() || !c.original_runs_agree() || xlated_off;
        if (interesting || verbose) print_case_outcome(out, c);
    }
    for (const auto& a : r.alerts) out << "kernel: " << a << "\n";
    size_t n = r.cases.size();
    char buf[768];
    std::snprintf(buf, sizeof(buf),
                  "kernel %s (jit %d): %zu cases, %u boots, boot %.2f s, wall %.2f s; accepted %u (%.1f%%), agree %u, "
                  "differ %u, model-failed %u, crashed %u, run-disagree %u; %.0f loads/s in the guest\n"
                  "kernel rewrite executed: the VM's test runs of %u accepted differ from the original's; model gaps %u, "
                  "kernel findings %u (test runs and xlated execution)\n",
                  r.release.c_str(), r.jit, n, r.boots, r.boot_s, r.wall_s, r.accepted, n ? 100.0 * r.accepted / n : 0.0,
                  r.agree, r.differ, r.model_failed, r.crashed, r.run_disagree,
                  r.guest_busy_us ? 1e6 * static_cast<double>(n) / static_cast<double>(r.guest_busy_us) : 0.0,
                  r.kernel_vs_original, r.model_gap, r.kernel_finding);
    out << buf;
    out << "kernel xlated program in the interpreter: executed " << r.xlated_executed << " of " << r.accepted << " accepted; agree with the original "
        << r.xlated_agree << ", differ " << r.xlated_differ << "; vs VM runs " << (r.xlated_vm_runs - r.xlated_vm_disagree) << "/"
        << r.xlated_vm_runs << " agree; conversion failed " << r.xlated_conversion_failed;
    for (const auto& [why, n] : r.xlated_failures) out << (why == r.xlated_failures.begin()->first ? " (" : ", ") << why << " " << n;
    out << (r.xlated_failures.empty() ? "\n" : ")\n");
    if (r.runs_not_compared)
        out << r.runs_not_compared << " test runs not compared: they execute what the architecture leaves undefined\n";
    if (r.interpreted)
        out << r.interpreted << " accepted programs were not JITed (jited_prog_len 0): the kernel ran them in its interpreter\n";
}

void print_json_report(std::ostream& out, const CheckReport& r) {
    out << "{\"release\":" << json_str(r.release) << ",\"jit\":" << r.jit << ",\"boots\":" << r.boots
        << ",\"wall_s\":" << r.wall_s << ",\"boot_s\":" << r.boot_s << ",\"guest_busy_us\":" << r.guest_busy_us
        << ",\"accepted\":" << r.accepted << ",\"agree\":" << r.agree << ",\"differ\":" << r.differ
        << ",\"model_failed\":" << r.model_failed << ",\"crashed\":" << r.crashed << ",\"run_disagree\":" << r.run_disagree
        << ",\"kernel_vs_original\":" << r.kernel_vs_original << ",\"model_gap\":" << r.model_gap
        << ",\"kernel_finding\":" << r.kernel_finding
        << ",\"xlated_executed\":" << r.xlated_executed << ",\"xlated_agree\":" << r.xlated_agree
        << ",\"xlated_differ\":" << r.xlated_differ << ",\"xlated_conversion_failed\":" << r.xlated_conversion_failed
        << ",\"xlated_vm_runs\":" << r.xlated_vm_runs << ",\"xlated_vm_disagree\":" << r.xlated_vm_disagree
        << ",\"xlated_failures\":{";
    bool first_failure = true;
    for (const auto& [why, n] : r.xlated_failures) {
        out << (first_failure ? "" : ",") << json_str(why) << ":" << n;
        first_failure = false;
    }
    out << "}"
        << ",\"interpreted\":" << r.interpreted << ",\"runs_not_compared\":" << r.runs_not_compared
        << ",\"facts\":{";
    bool first_fact = true;
    for (const auto& [k, v] : r.facts) {
        out << (first_fact ? "" : ",") << json_str(k) << ":" << v;
        first_fact = false;
    }
    out << "},\"alerts\":[";
    for (size_t i = 0; i < r.alerts.size(); i++) out << (i ? "," : "") << json_str(r.alerts[i]);
    out << "],\"cases\":[";
    for (size_t i = 0; i < r.cases.size(); i++) {
        const auto& c = r.cases[i];
        out << (i ? ",\n" : "\n") << "{\"name\":" << json_str(c.name) << ",\"result\":" << json_str(to_string(c.agreement))
            << ",\"rc\":" << c.rc << ",\"kernel_len\":" << c.kernel_len << ",\"model_len\":" << c.model_len
            << ",\"masked\":" << c.masked << ",\"load_us\":" << c.load_us << ",\"log\":[";
        for (size_t k = 0; k < c.log.size(); k++) out << (k ? "," : "") << json_str(c.log[k]);
        out << "],\"diff\":" << json_str(c.diff) << ",\"runs\":[";
        for (size_t k = 0; k < c.runs.size(); k++)
            out << (k ? "," : "") << "{\"input\":" << c.runs[k].input << ",\"agree\":" << (c.runs[k].agree ? "true" : "false")
                << ",\"compared\":" << (c.runs[k].compared ? "true" : "false")
                << ",\"detail\":" << json_str(c.runs[k].detail) << "}";
        out << "],\"class\":" << json_str(c.rewrite_class) << ",\"xlated_exec\":" << json_str(c.xlated_exec);
        if (c.xlated_exec == "conversion-failed")
            out << ",\"xlated_failure\":" << json_str(c.xlated_failure) << ",\"xlated_detail\":" << json_str(c.xlated_detail);
        if (c.xlated_exec == "differ")
            out << ",\"xlated_input\":" << c.xlated.input << ",\"xlated_detail\":" << json_str(c.xlated.detail)
                << ",\"xlated_diverging_pc\":" << c.xlated.diverging_pc << ",\"xlated_diverging_insn\":"
                << json_str(c.xlated.diverging_insn) << ",\"xlated_located\":" << json_str(c.xlated.located);
        out << ",\"xlated_vm_runs\":[";
        for (size_t k = 0; k < c.xlated_vm_runs.size(); k++)
            out << (k ? "," : "") << "{\"input\":" << c.xlated_vm_runs[k].input << ",\"agree\":"
                << (c.xlated_vm_runs[k].agree ? "true" : "false") << ",\"detail\":" << json_str(c.xlated_vm_runs[k].detail) << "}";
        out << "]}";
    }
    out << "]}\n";
}

}  // namespace patchfuzz::kernel
