#include "bpf/conformance/data_file.hpp"

#include <cctype>
#include <cstring>
#include <map>

#include "bpf/conformance/ubpf_asm.hpp"
#include "bpf/util/read_file.hpp"

namespace patchfuzz::conformance {
namespace {

struct Section {
    std::string name;
    size_t header_line = 0;  // 1-based line of "-- name"
    std::vector<std::pair<size_t, std::string>> lines;  // (line number, text)
};

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool is_hex(std::string_view t) {
    if (t.empty()) return false;
    for (char c : t)
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    return true;
}

uint64_t hex_value(std::string_view t) {
    uint64_t v = 0;
    for (char c : t) {
        const int d = std::tolower(static_cast<unsigned char>(c));
        v = v * 16 + static_cast<uint64_t>(d <= '9' ? d - '0' : d - 'a' + 10);
    }
    return v;
}

// Blank-separated words of a line with their 1-based columns.
std::vector<std::pair<size_t, std::string_view>> words(std::string_view l) {
    std::vector<std::pair<size_t, std::string_view>> out;
    size_t i = 0;
    while (i < l.size()) {
        while (i < l.size() && std::isspace(static_cast<unsigned char>(l[i]))) ++i;
        size_t e = i;
        while (e < l.size() && !std::isspace(static_cast<unsigned char>(l[e]))) ++e;
        if (e > i) out.emplace_back(i + 1, l.substr(i, e - i));
        i = e;
    }
    return out;
}

bool is_comment_or_blank(std::string_view l) {
    l = trim(l);
    return l.empty() || l.front() == '#';
}

isa::Insn insn_from_u64(uint64_t v) {
    isa::Insn in{};
    in.code = static_cast<uint8_t>(v & 0xff);
    in.dst_reg = static_cast<uint8_t>((v >> 8) & 0xf);
    in.src_reg = static_cast<uint8_t>((v >> 12) & 0xf);
    in.off = static_cast<int16_t>(static_cast<uint16_t>((v >> 16) & 0xffff));
    in.imm = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
    return in;
}

Expected<std::vector<isa::Insn>> parse_raw(const Section& s, const std::string& path) {
    std::vector<isa::Insn> out;
    for (const auto& [ln, text] : s.lines) {
        if (is_comment_or_blank(text)) continue;
        auto ws = words(text);
        const std::string where = path + ":" + std::to_string(ln);
        if (ws.size() == 1) {  // one 64-bit value: 0x<16 hex>, low byte = opcode
            std::string_view t = ws[0].second;
            if (t.size() < 3 || t[0] != '0' || (t[1] != 'x' && t[1] != 'X') || !is_hex(t.substr(2)) || t.size() > 18)
                return Error{where + ":" + std::to_string(ws[0].first),
                             "expected 8 hex bytes or one 0x<64-bit> value per insn, found '" + std::string(t) + "'"};
            out.push_back(insn_from_u64(hex_value(t.substr(2))));
            continue;
        }
        if (ws.size() != 8)
            return Error{where, "expected 8 hex bytes per insn, found " + std::to_string(ws.size()) + " words"};
        uint8_t b[8];
        for (size_t i = 0; i < 8; ++i) {
            std::string_view t = ws[i].second;
            if (t.size() != 2 || !is_hex(t))
                return Error{where + ":" + std::to_string(ws[i].first), "expected a hex byte, found '" + std::string(t) + "'"};
            b[i] = static_cast<uint8_t>(hex_value(t));
        }
        uint64_t v = 0;
        for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];  // little-endian struct bpf_insn
        out.push_back(insn_from_u64(v));
    }
    return out;
}

Expected<std::vector<uint8_t>> parse_mem(const Section& s, const std::string& path) {
    std::vector<uint8_t> out;
    for (const auto& [ln, text] : s.lines) {
        if (is_comment_or_blank(text)) continue;
        for (const auto& [col, t] : words(text)) {
            if (t.size() != 2 || !is_hex(t))
                return Error{path + ":" + std::to_string(ln) + ":" + std::to_string(col),
                             "expected a hex byte, found '" + std::string(t) + "'"};
            out.push_back(static_cast<uint8_t>(hex_value(t)));
        }
    }
    return out;
}

Expected<uint64_t> parse_result(const Section& s, const std::string& path) {
    std::optional<uint64_t> v;
    for (const auto& [ln, text] : s.lines) {
        if (is_comment_or_blank(text)) continue;
        const std::string where = path + ":" + std::to_string(ln);
        if (v) return Error{where, "more than one value in '-- result'"};
        auto ws = words(text);
        if (ws.size() != 1) return Error{where, "expected one value in '-- result'"};
        std::string_view t = ws[0].second;
        if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
            if (!is_hex(t.substr(2)) || t.size() > 18)
                return Error{where + ":" + std::to_string(ws[0].first), "malformed 64-bit hex result '" + std::string(t) + "'"};
            v = hex_value(t.substr(2));
        } else {
            uint64_t d = 0;
            for (char c : t) {
                if (!std::isdigit(static_cast<unsigned char>(c)) || d > (UINT64_MAX - 9) / 10)
                    return Error{where + ":" + std::to_string(ws[0].first), "malformed result '" + std::string(t) + "'"};
                d = d * 10 + static_cast<uint64_t>(c - '0');
            }
            v = d;
        }
    }
    if (!v) return Error{path + ":" + std::to_string(s.header_line), "empty '-- result' section"};
    return *v;
}

}  // namespace

Expected<DataFile> parse_data_file(std::string_view text, const std::string& path) {
    static const char* const kKnown[] = {"asm", "raw", "mem", "result", "error", "c", "no register offset"};
    std::vector<Section> sections;
    std::map<std::string, size_t> seen;
    size_t ln = 0, start = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        if (nl == std::string_view::npos) nl = text.size();
        std::string line(text.substr(start, nl - start));
        if (!line.empty() && line.back() == '\r') line.pop_back();
        ++ln;
        start = nl + 1;
        if (line.rfind("--", 0) == 0 && (line.size() == 2 || line[2] == ' ')) {
            const std::string name(trim(std::string_view(line).substr(2)));
            bool known = false;
            for (const char* k : kKnown) known |= name == k;
            if (!known) return Error{path + ":" + std::to_string(ln), "unknown section '" + line + "'"};
            if (seen.count(name))
                return Error{path + ":" + std::to_string(ln),
                             "duplicate section '-- " + name + "' (first at line " + std::to_string(seen[name]) + ")"};
            seen[name] = ln;
            sections.push_back(Section{name, ln, {}});
            continue;
        }
        if (sections.empty()) {
            if (!is_comment_or_blank(line))
                return Error{path + ":" + std::to_string(ln), "text before the first section: '" + std::string(trim(line)) + "'"};
            continue;
        }
        sections.back().lines.emplace_back(ln, std::move(line));
    }
    DataFile df;
    df.path = path;
    std::optional<std::vector<isa::Insn>> raw;
    for (const Section& s : sections) {
        if (s.name == "asm") {
            std::string body;
            for (const auto& l : s.lines) body += l.second + "\n";
            auto r = ubpf_assemble(body, path, static_cast<int>(s.header_line + 1));
            if (!r) return r.error();
            df.insns = std::move(*r);
            df.has_asm = true;
        } else if (s.name == "raw") {
            auto r = parse_raw(s, path);
            if (!r) return r.error();
            raw = std::move(*r);
            df.has_raw = true;
        } else if (s.name == "mem") {
            auto r = parse_mem(s, path);
            if (!r) return r.error();
            df.mem = std::move(*r);
        } else if (s.name == "result") {
            auto r = parse_result(s, path);
            if (!r) return r.error();
            df.result = *r;
        } else if (s.name == "error") {
            std::string msg;
            for (const auto& l : s.lines) {
                if (is_comment_or_blank(l.second)) continue;
                if (!msg.empty()) msg += "\n";
                msg += std::string(trim(l.second));
            }
            df.error = msg;
        }
        // "c" (source of the asm) and "no register offset" (a note of the suite's harness): kept out.
    }
    if (!df.has_asm && !df.has_raw) return Error{path, "no '-- asm' or '-- raw' section"};
    if (df.has_raw) {
        if (df.has_asm) {
            // Both given: they must agree (the suite uses this to cross-check its assembler).
            if (raw->size() != df.insns.size())
                return Error{path + ":" + std::to_string(seen["raw"]), "'-- raw' has " + std::to_string(raw->size()) +
                                                                           " insns, '-- asm' has " + std::to_string(df.insns.size())};
            for (size_t i = 0; i < raw->size(); ++i)
                if (!isa::same((*raw)[i], df.insns[i]))
                    return Error{path + ":" + std::to_string(seen["raw"]),
                                 "'-- raw' differs from '-- asm' at insn " + std::to_string(i)};
        } else {
            df.insns = std::move(*raw);
        }
    }
    if (df.insns.empty()) return Error{path, "program has no instructions"};
    return df;
}

Expected<DataFile> read_data_file(const std::string& path) {
    auto text = read_file(path);
    if (!text) return text.error();
    return parse_data_file(*text, path);
}

}  // namespace patchfuzz::conformance
