#pragma once
// Short names of uapi enums for people and text formats: BPF_MAP_TYPE_HASH -> "hash",
// BPF_PROG_TYPE_XDP -> "xdp". Our own table (stable across libbpf versions, and it knows
// BPF_MAP_TYPE_INSN_ARRAY, which the 6.1 uapi does not); unknown numbers print as "type<N>".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace patchfuzz::loader {

std::string map_type_name(uint32_t type);
std::optional<uint32_t> map_type_by_name(std::string_view name);  // also accepts "type<N>" and plain numbers
std::string prog_type_name(uint32_t type);
std::optional<uint32_t> prog_type_by_name(std::string_view name);

}  // namespace patchfuzz::loader
