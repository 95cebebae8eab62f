#include "harness/cli/input_format.hpp"

#include <cstring>

#include "bpf/asm/assemble.hpp"
#include "bpf/isa/validate.hpp"
#include "bpf/passes/infer_facts.hpp"
#include "harness/case/object_cases.hpp"
#include "harness/cli/input_file.hpp"

namespace patchfuzz::cli {

const char* to_string(InputFormat f) {
    switch (f) {
        case InputFormat::elf: return "ELF object";
        case InputFormat::case_text: return "case file";
        case InputFormat::asm_text: return "assembly";
        case InputFormat::raw: return "raw instruction bytes";
    }
    return "?";
}

namespace {

bool looks_like_text(const std::string& s) {
    for (unsigned char c : s)
        if (c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != '\v')) return false;
    return true;
}

bool has_case_section(const std::string& s) {
    size_t at = 0;
    while (at < s.size()) {
        if (s.compare(at, 3, "-- ") == 0) return true;
        const size_t nl = s.find('\n', at);
        if (nl == std::string::npos) break;
        at = nl + 1;
    }
    return false;
}

// Raw bytes have no magic and may happen to be printable: a ".bin" name settles that one
// ambiguity (raw or assembly); the name never overrides an ELF magic or a case file's sections.
InputFormat format_of(const std::string& bytes, const std::string& path) {
    if (bytes.size() >= 4 && std::memcmp(bytes.data(), "\x7f" "ELF", 4) == 0) return InputFormat::elf;
    const bool text = looks_like_text(bytes);
    if (text && has_case_section(bytes)) return InputFormat::case_text;
    if (!text || ends_with(path, ".bin")) return InputFormat::raw;
    return InputFormat::asm_text;
}

}  // namespace

Expected<InputFormat> detect_input_format(const std::string& path) {
    auto bytes = read_file(path);
    if (!bytes) return bytes.error();
    if (bytes->empty()) return Error{path, "empty file (0 bytes)"};
    return format_of(*bytes, path);
}

Expected<std::vector<harness::Case>> read_input_cases(const std::string& path, bool privileged) {
    auto fmt = detect_input_format(path);
    if (!fmt) return fmt.error();
    std::vector<harness::Case> out;
    switch (*fmt) {
        case InputFormat::case_text: {
            auto c = harness::read_case(path);
            if (!c) return c.error();
            out.push_back(std::move(*c));
            return out;
        }
        case InputFormat::elf: return harness::cases_from_object(path, privileged);
        case InputFormat::asm_text:
        case InputFormat::raw: {
            std::vector<isa::Insn> insns;
            if (*fmt == InputFormat::asm_text) {
                auto text = read_file(path);
                if (!text) return text.error();
                auto r = assembly::assemble(*text, path);
                if (!r) return r.error();
                insns = std::move(*r);
            } else {
                auto r = read_raw_insns(path);
                if (!r) return r.error();
                insns = std::move(*r);
            }
            if (insns.empty()) return Error{path, "empty program"};
            // An input program holds no kernel-internal insn and no r11 (BPF_REG_AX), as the
            // verifier requires: only rewritten code does.
            if (auto v = isa::validate_insns(insns, isa::ValidateOptions{.allow_internal = false}); !v)
                return v.error().with_context(path);
            harness::Case c;
            c.path = path;
            c.program.insns = std::move(insns);
            passes::infer_facts(c.program);
            c.comments.push_back(std::string(to_string(*fmt)) + " " + path);
            out.push_back(std::move(c));
            return out;
        }
    }
    return Error{path, "unknown input format"};
}

}  // namespace patchfuzz::cli
