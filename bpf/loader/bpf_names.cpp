#include "bpf/loader/bpf_names.hpp"

#include <charconv>

#include "bpf/isa/insn.hpp"

namespace patchfuzz::loader {
namespace {

// Index = enum value (uapi enum bpf_map_type order).
constexpr std::string_view kMapTypes[] = {
    "unspec", "hash", "array", "prog_array", "perf_event_array", "percpu_hash", "percpu_array",
    "stack_trace", "cgroup_array", "lru_hash", "lru_percpu_hash", "lpm_trie", "array_of_maps",
    "hash_of_maps", "devmap", "sockmap", "cpumap", "xskmap", "sockhash", "cgroup_storage",
    "reuseport_sockarray", "percpu_cgroup_storage", "queue", "stack", "sk_storage", "devmap_hash",
    "struct_ops", "ringbuf", "inode_storage", "task_storage", "bloom_filter", "user_ringbuf",
    "cgrp_storage", "arena", "insn_array"};
static_assert(std::size(kMapTypes) == isa::kMapTypeInsnArray + 1);

// uapi enum bpf_prog_type order.
constexpr std::string_view kProgTypes[] = {
    "unspec", "socket_filter", "kprobe", "sched_cls", "sched_act", "tracepoint", "xdp", "perf_event",
    "cgroup_skb", "cgroup_sock", "lwt_in", "lwt_out", "lwt_xmit", "sock_ops", "sk_skb", "cgroup_device",
    "sk_msg", "raw_tracepoint", "cgroup_sock_addr", "lwt_seg6local", "lirc_mode2", "sk_reuseport",
    "flow_dissector", "cgroup_sysctl", "raw_tracepoint_writable", "cgroup_sockopt", "tracing",
    "struct_ops", "ext", "lsm", "sk_lookup", "syscall", "netfilter"};

template <size_t N>
std::optional<uint32_t> by_name(const std::string_view (&table)[N], std::string_view name) {
    for (size_t i = 0; i < N; ++i)
        if (table[i] == name) return static_cast<uint32_t>(i);
    if (name.rfind("type", 0) == 0) name.remove_prefix(4);
    uint32_t v = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
    if (ec == std::errc() && p == name.data() + name.size() && !name.empty()) return v;
    return std::nullopt;
}

template <size_t N>
std::string name_of(const std::string_view (&table)[N], uint32_t v) {
    if (v < N) return std::string(table[v]);
    return "type" + std::to_string(v);
}

}  // namespace

std::string map_type_name(uint32_t type) { return name_of(kMapTypes, type); }
std::optional<uint32_t> map_type_by_name(std::string_view name) { return by_name(kMapTypes, name); }
std::string prog_type_name(uint32_t type) { return name_of(kProgTypes, type); }
std::optional<uint32_t> prog_type_by_name(std::string_view name) { return by_name(kProgTypes, name); }

}  // namespace patchfuzz::loader
