#pragma once
// The `.case` format's vocabularies, shared by its reader (case_parse.cpp) and writer
// (case_write.cpp): the section names, the enum <-> name tables of the option and side-table
// values, and the defaults a writer omits. One table per value, so a name the writer emits is the
// name the reader accepts.
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "bpf/interp/exec_input.hpp"
#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::harness::case_format {

inline constexpr std::string_view kSections[] = {"program", "maps",  "kfuncs",  "aux",   "subprogs", "linfo",  "finfo",
                                                 "insn-arrays", "pokes", "patches", "options", "input", "expect"};

inline constexpr std::pair<kfunc::Kind, std::string_view> kKfuncKinds[] = {
    {kfunc::Kind::Unknown, "unknown"},
    {kfunc::Kind::IterNumNew, "iter_num_new"},
    {kfunc::Kind::IterNumNext, "iter_num_next"},
    {kfunc::Kind::IterNumDestroy, "iter_num_destroy"},
    {kfunc::Kind::CastToKernCtx, "cast_to_kern_ctx"},
    {kfunc::Kind::RdonlyCast, "rdonly_cast"},
};

inline constexpr std::pair<PtrType, std::string_view> kPtrTypes[] = {
    {PtrType::None, "none"},     {PtrType::Ctx, "ctx"}, {PtrType::Stack, "stack"}, {PtrType::MapValue, "map_value"},
    {PtrType::Packet, "packet"}, {PtrType::Btf, "btf"}, {PtrType::Arena, "arena"},
};

inline constexpr std::pair<passes::IterInline, std::string_view> kIterInline[] = {
    {passes::IterInline::V4, "v4"}, {passes::IterInline::V1, "v1"}, {passes::IterInline::V3, "v3"}, {passes::IterInline::Off, "off"}};

inline constexpr std::pair<passes::KernelProfile, std::string_view> kKernels[] = {
    {passes::KernelProfile::BpfNext, "bpf-next"}, {passes::KernelProfile::K6_1, "6.1"}, {passes::KernelProfile::K6_12, "6.12"},
    {passes::KernelProfile::K7_2, "7.2"},         {passes::KernelProfile::K7_3, "7.3"}};

inline constexpr std::pair<passes::InlineFix, std::string_view> kInlineFix[] = {{passes::InlineFix::Kernel, "buggy"},
                                                                                 {passes::InlineFix::Fixed, "fixed"}};

inline constexpr std::pair<TraceAttach, std::string_view> kTraceAttach[] = {
    {TraceAttach::Other, "other"},         {TraceAttach::RawTp, "raw_tp"},
    {TraceAttach::Fentry, "fentry"},       {TraceAttach::Fexit, "fexit"},
    {TraceAttach::ModifyReturn, "fmod_ret"}, {TraceAttach::Fsession, "fsession"},
    {TraceAttach::FentryMulti, "fentry_multi"}, {TraceAttach::FexitMulti, "fexit_multi"},
    {TraceAttach::FsessionMulti, "fsession_multi"}};

inline constexpr uint64_t kDefaultStepBudget = interp::ExecInput{}.step_budget;
// The most filler slots one patch may ask for (the kernel's instruction limit, 1M, rounded up).
inline constexpr uint32_t kMaxFill = 1u << 20;

template <class E, size_t N>
std::string_view name_in(const std::pair<E, std::string_view> (&t)[N], E v) {
    for (const auto& [e, n] : t)
        if (e == v) return n;
    return {};
}
template <class E, size_t N>
std::optional<E> value_in(const std::pair<E, std::string_view> (&t)[N], std::string_view n) {
    for (const auto& [e, name] : t)
        if (name == n) return e;
    return std::nullopt;
}

}  // namespace patchfuzz::harness::case_format
