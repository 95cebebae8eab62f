#include "bpf/isa/helper_protos.hpp"

#include <linux/bpf.h>

#include <array>

namespace patchfuzz::isa {
namespace {

struct HelperProto {
    int32_t id;
    int args;
    uint8_t scalars;  // bit r: R<r> is a scalar argument
};

constexpr uint8_t r(int reg) { return static_cast<uint8_t>(1u << reg); }

// The helpers the generator and the passes care about. Scalar marks: an unmarked scalar argument
// only costs rejected_reads a rejection it could have reported, a wrong mark rejects valid
// programs, so only the arguments it has always checked are marked (map_lookup_percpu_elem's cpu,
// ARG_ANYTHING as well, is not).
constexpr std::array kProtos = {
    HelperProto{BPF_FUNC_ktime_get_ns, 0, 0},
    HelperProto{BPF_FUNC_get_prandom_u32, 0, 0},
    HelperProto{BPF_FUNC_get_smp_processor_id, 0, 0},
    HelperProto{BPF_FUNC_get_current_pid_tgid, 0, 0},
    HelperProto{BPF_FUNC_get_current_task, 0, 0},
    HelperProto{BPF_FUNC_get_current_task_btf, 0, 0},
    HelperProto{BPF_FUNC_jiffies64, 0, 0},
    HelperProto{BPF_FUNC_ktime_get_boot_ns, 0, 0},
    HelperProto{BPF_FUNC_map_lookup_elem, 2, 0},                // map, key
    HelperProto{BPF_FUNC_map_delete_elem, 2, 0},                // map, key
    HelperProto{BPF_FUNC_tail_call, 3, r(3)},                   // ctx, prog array, index
    HelperProto{BPF_FUNC_map_lookup_percpu_elem, 3, 0},         // map, key, cpu
    HelperProto{BPF_FUNC_map_update_elem, 4, r(4)},             // map, key, value, flags
    HelperProto{BPF_FUNC_loop, 4, static_cast<uint8_t>(r(1) | r(4))},  // nr_loops, callback, ctx, flags
};

const HelperProto* find(int32_t id) {
    for (const HelperProto& p : kProtos)
        if (p.id == id) return &p;
    return nullptr;
}

}  // namespace

std::optional<int> helper_arg_count(int32_t id) {
    const HelperProto* p = find(id);
    if (!p) return std::nullopt;
    return p->args;
}

uint8_t helper_scalar_args(int32_t id) {
    const HelperProto* p = find(id);
    return p ? p->scalars : 0;
}

}  // namespace patchfuzz::isa
