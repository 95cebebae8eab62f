// The interpreter's models of the helpers and kfuncs a program calls (call_helper_any(),
// call_kfunc(), the tracing helpers) and of the map and tail-call arguments they take. The clock
// helpers, most of the calls, are modelled inline in the dispatch loop (Machine::call_helper).
#include <linux/bpf.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>

#include "bpf/interp/interp.hpp"
#include "bpf/interp/machine.hpp"
#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "bpf/util/check.hpp"

namespace patchfuzz::interp::detail {

MapModel* Machine::map_arg(uint32_t pc, uint64_t handle, const char* what) {
    for (MapModel& m : maps_)
        if (m.handle() == handle) return &m;
    if (const uint32_t n = inner_map_number(handle))
        fault(pc, std::string(what) + ": " + hex(handle) + " is inner map " + std::to_string(n) +
                      " of a map-in-map; inner maps are not modelled",
              ExecResult::Status::Unsupported);
    else
        fault(pc, std::string(what) + ": " + hex(handle) + " is not a map pointer");
    return nullptr;
}

// A tail call through the helper or the internal insn, as the kernel interpreter's JMP_TAIL_CALL
// (kernel/bpf/core.c ___bpf_prog_run) and the JITs do it: an index >= max_entries (u32 compare)
// or an exhausted MAX_TAIL_CALL_CNT falls through before anything happens; otherwise the counter
// is taken and the slot is read. Our prog arrays are empty, so every call then falls through too,
// but the counted attempt is the observable effect (a rewrite that drops an in-range call, or
// makes an out-of-range one count, diverges).
bool Machine::tail_call_attempt(uint32_t pc, uint64_t map, uint64_t index) {
    MapModel* m = map_arg(pc, map, "tail call");
    if (!m) return false;
    const uint32_t idx = static_cast<uint32_t>(index);
    if (idx >= m->def().max_entries || tail_calls_ >= kMaxTailCalls) return true;
    ++tail_calls_;
    effects_.add("tail_call(map ", uint64_t{map_index(map)}, ", index ", uint64_t{idx}, ")");
    return true;
}

uint32_t Machine::map_index(uint64_t handle) const {
    for (size_t i = 0; i < maps_.size(); ++i)
        if (maps_[i].handle() == handle) return static_cast<uint32_t>(i);
    return 0xffffffffu;
}

// bpf_get_func_arg / _ret / _arg_cnt / _ip of a tracing program (kernel/trace/bpf_trace.c), on
// the trampoline words below ctx (setup). The argument index is the helper's `u32 n`.
bool Machine::tracing_helper(uint32_t pc, int32_t id, uint64_t& ret) {
    const uint64_t ctx = r_[1];
    const uint8_t* words = mem_.translate(ctx - kTracingCtxPrefix, kTracingCtxPrefix, false);
    if (!words) {
        fault(pc, "helper " + std::to_string(id) + ": r1 " + hex(ctx) + " is not the tracing ctx");
        return false;
    }
    const uint64_t ip = load_le(words, 8), nr_args = load_le(words + 8, 8);
    auto arg_word = [&](uint64_t index, uint64_t& out) {
        const uint8_t* p = mem_.translate(ctx + index * 8, 8, false);
        if (!p) {
            fault(pc, "helper " + std::to_string(id) + ": ctx word " + std::to_string(index) + " is outside the ctx");
            return false;
        }
        out = load_le(p, 8);
        return true;
    };
    auto store_result = [&](uint64_t where, uint64_t v) {
        uint8_t* p = mem_.translate(where, 8, true);
        if (!p) {
            fault(pc, "helper " + std::to_string(id) + ": value pointer " + hex(where) + " is not 8 writable bytes");
            return false;
        }
        store_le(p, 8, v);
        return true;
    };
    switch (id) {
        case BPF_FUNC_get_func_arg: {
            const uint32_t n = static_cast<uint32_t>(r_[2]);
            if (uint64_t{n} >= nr_args) {
                ret = static_cast<uint64_t>(-int64_t{EINVAL});
                return true;
            }
            uint64_t v = 0;
            if (!arg_word(n, v) || !store_result(r_[3], v)) return false;
            ret = 0;
            return true;
        }
        case BPF_FUNC_get_func_ret: {
            const TraceAttach a = prog_.attach;
            const bool has_ret = a == TraceAttach::Fexit || a == TraceAttach::ModifyReturn || a == TraceAttach::Fsession ||
                                 a == TraceAttach::FexitMulti || a == TraceAttach::FsessionMulti;
            if (!has_ret) {
                ret = static_cast<uint64_t>(-int64_t{EOPNOTSUPP});
                return true;
            }
            uint64_t v = 0;
            if (!arg_word(nr_args, v) || !store_result(r_[2], v)) return false;
            ret = 0;
            return true;
        }
        case BPF_FUNC_get_func_arg_cnt: ret = nr_args; return true;
        default: ret = ip; return true;  // get_func_ip: bpf_get_func_ip_tracing
    }
}

bool Machine::call_kfunc(uint32_t pc, int32_t btf_id) {
    kfunc::Kind kind = kfunc::Kind::Unknown;
    for (const KfuncDesc& k : prog_.kfuncs)
        if (k.btf_id == btf_id) kind = static_cast<kfunc::Kind>(k.kind);
    if (kind == kfunc::Kind::Unknown)
        if (auto i = kfunc::by_btf_id(btf_id)) kind = i->kind;
    switch (kind) {
        case kfunc::Kind::IterNumNew: {
            // bpf_iter_num_new (kernel/bpf/bpf_iter.c, v4 text; docs/iterator-isa-arch.md §1.2): int start/end in w2/w3.
            uint8_t* p = mem_.translate(r_[1], 8, true);
            if (!p) {
                fault(pc, "bpf_iter_num_new: iterator pointer " + hex(r_[1]) + " is not 8 writable bytes");
                return false;
            }
            int32_t s = static_cast<int32_t>(r_[2]), e = static_cast<int32_t>(r_[3]);
            int32_t rc = 0;
            uint32_t cur = 0, end = 0;
            if (s > e) rc = -22;
            else if (static_cast<uint32_t>(e) - static_cast<uint32_t>(s) > static_cast<uint32_t>(isa::kMaxLoops)) rc = -7;
            else {
                cur = static_cast<uint32_t>(s) - 1;
                end = static_cast<uint32_t>(e);
            }
            store_le(p, 4, cur);
            store_le(p + 4, 4, end);
            r_[0] = static_cast<uint32_t>(rc);  // int return: the callee writes eax / w0
            if (cost_) {
                cost_->call(CostModel::CallKind::Kfunc, 7);
                cost_->store(1, 2, r_[1]);
                cost_->op(0, 2, 3, 1);
            }
            break;
        }
        case kfunc::Kind::IterNumNext: {
            // bpf_iter_num_next (§1.3): 32-bit wrapping cur + 1, signed compare, (0,0) when drained.
            uint8_t* p = mem_.translate(r_[1], 8, true);
            if (!p) {
                fault(pc, "bpf_iter_num_next: iterator pointer " + hex(r_[1]) + " is not 8 writable bytes");
                return false;
            }
            uint32_t cur = static_cast<uint32_t>(load_le(p, 4)) + 1;
            int32_t end = static_cast<int32_t>(load_le(p + 4, 4));
            uint64_t it = r_[1];
            if (static_cast<int32_t>(cur) >= end) {
                store_le(p, 8, 0);
                r_[0] = 0;
            } else {
                store_le(p, 4, cur);
                r_[0] = it;
            }
            if (cost_) {
                // body ≈ 9 insns (5 + the 4 modelled below): the slot round trip is the loop-carried chain.
                cost_->call(CostModel::CallKind::Kfunc, 5);
                cost_->load(CostModel::kScratch0, 1, it);
                cost_->alu(CostModel::kScratch0, CostModel::kScratch0, CostModel::kNone);
                cost_->store(1, CostModel::kScratch0, it);
                cost_->alu(0, 1, CostModel::kNone);
            }
            break;
        }
        case kfunc::Kind::IterNumDestroy:
            // v4: a no-op (§1.4), which is what the inline does too.
            if (cost_) cost_->call(CostModel::CallKind::Kfunc, 1);
            break;
        case kfunc::Kind::CastToKernCtx:
        case kfunc::Kind::RdonlyCast:
            r_[0] = r_[1];
            if (cost_) cost_->call(CostModel::CallKind::Kfunc, 1);
            break;
        default:
            fault(pc, "kfunc with BTF id " + std::to_string(btf_id) + " has no model", ExecResult::Status::Unsupported);
            return false;
    }
    for (int k = 1; k <= 5; ++k) r_[k] = kCallPoison;
    if (cost_) cost_->clobber(1, 5);
    return true;
}

bool Machine::call_helper_any(uint32_t pc, int32_t id) {
    const uint64_t a1 = r_[1], a2 = r_[2], a3 = r_[3], a4 = r_[4];
    uint64_t ret = 0;
    double body = 4;
    if (opts_.conformance_helpers && id == 5) {
        // The bpf_conformance harness helper: the tests only require that it returns.
        ret = a1;
    } else {
        switch (id) {
            case BPF_FUNC_map_lookup_elem:
            case BPF_FUNC_map_update_elem:
            case BPF_FUNC_map_delete_elem: {
                MapModel* m = map_arg(pc, a1, id == BPF_FUNC_map_lookup_elem   ? "bpf_map_lookup_elem"
                                               : id == BPF_FUNC_map_update_elem ? "bpf_map_update_elem"
                                                                                : "bpf_map_delete_elem");
                if (!m) return false;
                const uint8_t* key = mem_.translate(a2, m->def().key_size, false);
                if (!key) {
                    fault(pc, "map helper: key pointer " + hex(a2) + " is not " + std::to_string(m->def().key_size) + " readable bytes");
                    return false;
                }
                const uint32_t mi = map_index(a1);
                if (id != BPF_FUNC_map_lookup_elem && m->map_in_map()) {
                    // check_map_func_compatibility: only lookups on ARRAY/HASH_OF_MAPS.
                    fault(pc, std::string(id == BPF_FUNC_map_update_elem ? "bpf_map_update_elem" : "bpf_map_delete_elem") +
                                  " on map " + std::to_string(mi) + ", a map-in-map (type " + std::to_string(m->def().type) +
                                  "): BPF programs cannot change its elements");
                    return false;
                }
                if (id == BPF_FUNC_map_lookup_elem) {
                    ret = m->lookup(key);
                    body = 12;
                } else if (id == BPF_FUNC_map_update_elem) {
                    const uint8_t* val = mem_.translate(a3, m->def().value_size, false);
                    if (!val) {
                        fault(pc, "bpf_map_update_elem: value pointer " + hex(a3) + " is not readable");
                        return false;
                    }
                    maps_updated_ = true;
                    ret = static_cast<uint64_t>(m->update(key, val, a4));
                    effects_.add("map_update(map ", uint64_t{mi}, ", flags ", Hex{a4}, ") = ", static_cast<int64_t>(ret));
                } else {
                    maps_updated_ = true;
                    ret = static_cast<uint64_t>(m->remove(key));
                    effects_.add("map_delete(map ", uint64_t{mi}, ") = ", static_cast<int64_t>(ret));
                }
                break;
            }
            case isa::kInternalHtabLookup: {
                // __htab_map_lookup_elem: the element (header + key + value), or NULL.
                MapModel* m = map_arg(pc, a1, "__htab_map_lookup_elem");
                if (!m) return false;
                const uint8_t* key = mem_.translate(a2, m->def().key_size, false);
                if (!key) {
                    fault(pc, "__htab_map_lookup_elem: key pointer " + hex(a2) + " is not readable");
                    return false;
                }
                ret = m->lookup_elem(key);
                body = 10;
                break;
            }
            case isa::kInternalTimedMayGoto: {
                // arch_bpf_timed_may_goto: refreshes the budget (BPF_MAX_TIMED_LOOPS) until the
                // "time slice" ends; time is counted in refreshes so that the total number of
                // iterations matches the plain countdown's BPF_MAX_LOOPS (deterministic). Preserves R0-R5.
                ++timed_refreshes_;
                r_[isa::kRegAx] = timed_refreshes_ * static_cast<uint64_t>(isa::kMaxTimedLoops) < static_cast<uint64_t>(isa::kMaxLoops)
                                      ? static_cast<uint64_t>(isa::kMaxTimedLoops)
                                      : 0;
                if (cost_) cost_->call(CostModel::CallKind::Helper, 6);
                return true;
            }
            case isa::kInternalSkbLoad8:
            case isa::kInternalSkbLoad16:
            case isa::kInternalSkbLoad32: {
                // bpf_skb_load_helper_{8,16,32}_no_cache(skb, int offset), what bpf_gen_ld_abs
                // calls (net/core/filter.c): the value, or -EFAULT outside the packet. The offset
                // is the helper's `int`: the low 32 bits of R2.
                const uint32_t size = id == isa::kInternalSkbLoad8 ? 1 : id == isa::kInternalSkbLoad16 ? 2 : 4;
                uint64_t v = 0;
                const SkbLoad st = skb_load(a1, static_cast<int32_t>(static_cast<uint32_t>(a2)), size, v);
                if (st == SkbLoad::NotSkb) {
                    fault(pc, "bpf_skb_load_helper_" + std::to_string(8 * size) + "_no_cache: r1 " + hex(a1) + " is not the skb (ctx)");
                    return false;
                }
                ret = st == SkbLoad::Ok ? v : static_cast<uint64_t>(-int64_t{EFAULT});
                body = 8;
                break;
            }
            case isa::kInternalPerfSnapshotBranchStack:
                // perf_snapshot_branch_stack(entries, cnt): no LBR in our model, so it writes no
                // entry and returns 0 (as on a CPU without branch snapshot support).
                ret = 0;
                break;
            case BPF_FUNC_get_branch_snapshot:
                // bpf_get_branch_snapshot(buf, u32 size, u64 flags) (kernel/trace/bpf_trace.c): the
                // snapshot (none here, as above), then -EINVAL for any flags, else -ENOENT for no
                // entries; the buffer is never written.
                ret = static_cast<uint64_t>(a3 != 0 ? -int64_t{EINVAL} : -int64_t{ENOENT});
                break;
            case BPF_FUNC_map_lookup_percpu_elem: {
                MapModel* m = map_arg(pc, a1, "bpf_map_lookup_percpu_elem");
                if (!m) return false;
                if (m->map_in_map()) {
                    fault(pc, "bpf_map_lookup_percpu_elem on a map-in-map (only bpf_map_lookup_elem is allowed on it)");
                    return false;
                }
                const uint8_t* key = mem_.translate(a2, m->def().key_size, false);
                if (!key) {
                    fault(pc, "bpf_map_lookup_percpu_elem: bad key pointer " + hex(a2));
                    return false;
                }
                ret = static_cast<uint32_t>(a3) == in_.cpu ? m->lookup(key) : 0;
                break;
            }
            case BPF_FUNC_ktime_get_ns:
            case BPF_FUNC_ktime_get_boot_ns:
            case BPF_FUNC_jiffies64:
                // Deterministic clock: advances per call, so a rewrite that keeps the calls keeps
                // the values. (Mostly modelled by call_helper; here for the conformance harness.)
                ret = clock_read();
                break;
            case BPF_FUNC_get_prandom_u32:
                ret = static_cast<uint32_t>(prandom_.next());
                effects_.add("prandom() = ", ret);
                break;
            case BPF_FUNC_get_smp_processor_id:
                ret = in_.cpu;
                break;
            case BPF_FUNC_get_func_arg:
            case BPF_FUNC_get_func_ret:
            case BPF_FUNC_get_func_arg_cnt:
            case BPF_FUNC_get_func_ip:
                if (prog_.prog_type != BPF_PROG_TYPE_TRACING) {
                    fault(pc, "helper " + std::to_string(id) + " has no model outside tracing programs", ExecResult::Status::Unsupported);
                    return false;
                }
                if (!tracing_helper(pc, id, ret)) return false;
                break;
            case BPF_FUNC_get_current_pid_tgid:
                ret = (4242ULL << 32) | 4243;
                break;
            case BPF_FUNC_get_current_task:
            case BPF_FUNC_get_current_task_btf:
                ret = kKsymBase + 0x100000;
                break;
            case BPF_FUNC_tail_call: {
                // No program is ever installed in our prog arrays: the call falls through, as the
                // kernel does for an empty slot (r0 keeps its value, like the internal insn).
                if (!tail_call_attempt(pc, a2, a3)) return false;
                ret = r_[0];
                break;
            }
            case BPF_FUNC_loop: {
                // bpf_loop (kernel/bpf/bpf_iter.c): u32 nr_loops, callback(i, ctx) until it returns 1.
                uint32_t nr = static_cast<uint32_t>(a1);
                if (a4 != 0) {
                    ret = static_cast<uint64_t>(-22);
                    break;
                }
                if (nr > static_cast<uint32_t>(isa::kMaxLoops)) {
                    ret = static_cast<uint64_t>(-7);
                    break;
                }
                if (nr == 0) {
                    ret = 0;
                    break;
                }
                uint64_t cb = a2 - kCodeBase;
                if ((cb & 7) != 0 || (cb >> 3) >= code_size_) {
                    fault(pc, "bpf_loop: callback " + hex(a2) + " is not a code address");
                    return false;
                }
                if (cost_) cost_->call(CostModel::CallKind::Helper, 4);
                if (!push_frame(pc, static_cast<uint32_t>(cb >> 3), true)) return false;
                Frame& f = frames_[depth_];
                f.loop_n = nr;
                f.loop_ctx = a3;
                r_[1] = 0;
                r_[2] = a3;
                for (int k = 3; k <= 5; ++k) r_[k] = kCallPoison;
                jump_to_ = static_cast<uint32_t>(cb >> 3);
                return true;  // the loop continues at the callback; EXIT of this frame iterates
            }
            default:
                fault(pc, "helper " + std::to_string(id) + " has no model", ExecResult::Status::Unsupported);
                return false;
        }
    }
    helper_returns(ret, body);
    return true;
}

}  // namespace patchfuzz::interp::detail
