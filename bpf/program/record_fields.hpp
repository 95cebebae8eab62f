#pragma once
// The fields of the Program's side-table records (subprogs, line info, func info, pokes) as one
// list per record, as aux_fields.hpp is for InsnAux. The .case reader and writer
// (harness/case), the wire format (bpf/loader/program_wire.cpp) and the structural diff's listing
// visit them through RecordFields<R>::visit, so adding a field to one of these records is adding
// its line here (and the count below, which a test holds to the record's size).
//
// `f(name, member, form)`: the field's .case name, a pointer to the member (an integer or a bool),
// and how a .case line writes it.
#include <cstddef>
#include <cstdint>

#include "bpf/program/program.hpp"

namespace patchfuzz {

enum class FieldForm : uint8_t {
    Lead,     // the line's first token, a bare number (a subprog's start, an insn offset)
    Number,   // key=N
    Flag,     // a bool: the bare key when set, nothing when not
    LineCol,  // key=LINE:COL, of a `line << 10 | col` word (bpf_line_info.line_col)
};

template <class Record>
struct RecordFields;

template <>
struct RecordFields<SubprogInfo> {
    static constexpr const char* noun = "subprog";
    static constexpr const char* lead = "subprog start";  // the Lead field, in error messages
    static constexpr bool write_zeros = false;             // key=0 is left out of a .case line
    static constexpr size_t count = 9;
    template <class F>
    static constexpr void visit(F&& f) {
        f("start", &SubprogInfo::start, FieldForm::Lead);
        f("stack", &SubprogInfo::stack_depth, FieldForm::Number);
        f("extra", &SubprogInfo::stack_extra, FieldForm::Number);
        f("linfo", &SubprogInfo::linfo_idx, FieldForm::Number);
        f("tail_call", &SubprogInfo::has_tail_call, FieldForm::Flag);
        f("cb", &SubprogInfo::is_cb, FieldForm::Flag);
        f("async_cb", &SubprogInfo::is_async_cb, FieldForm::Flag);
        f("exception_cb", &SubprogInfo::is_exception_cb, FieldForm::Flag);
        f("hidden", &SubprogInfo::is_hidden, FieldForm::Flag);
    }
};

template <>
struct RecordFields<LineInfo> {
    static constexpr const char* noun = "line-info";
    static constexpr const char* lead = "insn offset";
    static constexpr bool write_zeros = true;
    static constexpr size_t count = 4;
    template <class F>
    static constexpr void visit(F&& f) {
        f("insn_off", &LineInfo::insn_off, FieldForm::Lead);
        f("file", &LineInfo::file_name_off, FieldForm::Number);
        f("line_off", &LineInfo::line_off, FieldForm::Number);
        f("line", &LineInfo::line_col, FieldForm::LineCol);
    }
};

template <>
struct RecordFields<FuncInfo> {
    static constexpr const char* noun = "func-info";
    static constexpr const char* lead = "insn offset";
    static constexpr bool write_zeros = true;
    static constexpr size_t count = 2;
    template <class F>
    static constexpr void visit(F&& f) {
        f("insn_off", &FuncInfo::insn_off, FieldForm::Lead);
        f("type", &FuncInfo::type_id, FieldForm::Number);
    }
};

template <>
struct RecordFields<PokeDesc> {
    static constexpr const char* noun = "poke";
    static constexpr const char* lead = nullptr;  // no Lead field: every field is key=N
    static constexpr bool write_zeros = true;
    static constexpr size_t count = 3;
    template <class F>
    static constexpr void visit(F&& f) {
        f("insn", &PokeDesc::insn_idx, FieldForm::Number);
        f("map", &PokeDesc::map_index, FieldForm::Number);
        f("key", &PokeDesc::key, FieldForm::Number);
    }
};

// The limits of a LineCol word: line < 2^22, col < 2^10.
inline constexpr uint32_t kLineColColumnBits = 10, kLineColMaxLine = 1u << 22;

}  // namespace patchfuzz
