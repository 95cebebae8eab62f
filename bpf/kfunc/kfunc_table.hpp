#pragma once
// The kfuncs patchfuzz models. We carry no real kernel BTF: each modelled kfunc gets a fixed BTF id
// of our own, and programs name kfuncs through Program::kfuncs (a KfuncDesc with this kind).
#include <cstdint>
#include <optional>
#include <string_view>

namespace patchfuzz::kfunc {

enum class Kind : uint32_t {
    Unknown = 0,
    IterNumNew,      // int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end)
    IterNumNext,     // int *bpf_iter_num_next(struct bpf_iter_num *it)
    IterNumDestroy,  // void bpf_iter_num_destroy(struct bpf_iter_num *it)
    CastToKernCtx,   // bpf_cast_to_kern_ctx: rewritten to r0 = r1
    RdonlyCast,      // bpf_rdonly_cast: rewritten to r0 = r1
};

struct Info {
    Kind kind;
    std::string_view name;
    int32_t btf_id;  // ours, stable across runs
};

inline constexpr Info kTable[] = {
    {Kind::IterNumNew, "bpf_iter_num_new", 70001},
    {Kind::IterNumNext, "bpf_iter_num_next", 70002},
    {Kind::IterNumDestroy, "bpf_iter_num_destroy", 70003},
    {Kind::CastToKernCtx, "bpf_cast_to_kern_ctx", 70004},
    {Kind::RdonlyCast, "bpf_rdonly_cast", 70005},
};

inline std::optional<Info> by_name(std::string_view name) {
    for (const auto& i : kTable)
        if (i.name == name) return i;
    return std::nullopt;
}
inline std::optional<Info> by_kind(Kind k) {
    for (const auto& i : kTable)
        if (i.kind == k) return i;
    return std::nullopt;
}
inline std::optional<Info> by_btf_id(int32_t id) {
    for (const auto& i : kTable)
        if (i.btf_id == id) return i;
    return std::nullopt;
}

}  // namespace patchfuzz::kfunc
