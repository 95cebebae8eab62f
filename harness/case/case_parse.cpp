// The `.case` reader: parse_case() splits the text into sections and hands each to its Parser
// method; read_case() adds the file and the structural validation of the program. The tokenizer,
// the program, options, input and expect sections are here; the side-table sections and the
// explicit patches are in case_parse_tables.cpp.
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/asm/assemble.hpp"
#include "bpf/isa/validate.hpp"
#include "bpf/loader/bpf_names.hpp"
#include "bpf/util/read_file.hpp"
#include "harness/case/case_file.hpp"
#include "harness/case/case_parser.hpp"
#include "harness/case/case_vocab.hpp"

namespace patchfuzz::harness {
namespace case_format {

Expected<std::vector<Tok>> Parser::tokens(const Line& l, size_t from) const {
    std::vector<Tok> out;
    const std::string_view s = l.text;
    size_t i = from;
    while (i < s.size()) {
        if (s[i] == ' ' || s[i] == '\t') {
            ++i;
            continue;
        }
        if (s[i] == '#') break;  // trailing comment
        Tok t;
        t.col = i + 1;
        // A token is bare text up to a blank; a '"' at its start or right after its first '='
        // opens a quoted part (escapes \" \\ \xHH) that may hold blanks.
        while (i < s.size() && s[i] != ' ' && s[i] != '\t') {
            if (s[i] == '"' && (t.text.empty() || (t.eq != std::string::npos && t.eq + 1 == t.text.size())) && !t.quoted) {
                t.quoted = true;
                const size_t open = i++;
                bool closed = false;
                while (i < s.size()) {
                    const char ch = s[i];
                    if (ch == '"') {
                        closed = true;
                        ++i;
                        break;
                    }
                    if (ch == '\\') {
                        const char e = i + 1 < s.size() ? s[i + 1] : '\0';
                        if (e == '"' || e == '\\') {
                            t.text += e;
                            i += 2;
                        } else if (e == 'x' && i + 3 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 2])) &&
                                   std::isxdigit(static_cast<unsigned char>(s[i + 3]))) {
                            t.text += static_cast<char>(std::stoi(std::string(s.substr(i + 2, 2)), nullptr, 16));
                            i += 4;
                        } else {
                            return err(l.no, i + 1, "bad escape in quoted name");
                        }
                        continue;
                    }
                    t.text += ch;
                    ++i;
                }
                if (!closed) return err(l.no, open + 1, "unterminated quoted name");
                continue;
            }
            // A control character in bare text would not survive write_case(): a trailing '\r'
            // is read as a CRLF line end. Such bytes are written \xHH inside quotes instead.
            if (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(s[i]));
                return err(l.no, i + 1, std::string("control character ") + hex + " outside quotes");
            }
            if (s[i] == '=' && t.eq == std::string::npos && !t.quoted) t.eq = t.text.size();
            t.text += s[i++];
        }
        out.push_back(std::move(t));
    }
    return out;
}

Expected<std::vector<uint8_t>> Parser::hexbytes(const Line& l, const Tok& t, std::string_view s) const {
    const size_t col = t.col + (s.data() >= t.text.data() && s.data() <= t.text.data() + t.text.size()
                                    ? static_cast<size_t>(s.data() - t.text.data())
                                    : 0);
    if (s.size() % 2) return err(l.no, col, "odd number of hex digits");
    std::vector<uint8_t> out;
    out.reserve(s.size() / 2);
    for (size_t i = 0; i < s.size(); i += 2) {
        uint8_t b = 0;
        auto [p, ec] = std::from_chars(s.data() + i, s.data() + i + 2, b, 16);
        if (ec != std::errc() || p != s.data() + i + 2) return err(l.no, col + i, "bad hex byte '" + std::string(s.substr(i, 2)) + "'");
        out.push_back(b);
    }
    return out;
}

// Assembles lines with their file line numbers: blank lines pad the text so the assembler's
// "file:line:col" already points into the .case file.
Expected<std::vector<isa::Insn>> Parser::assemble_lines(const std::vector<Line>& lines) const {
    std::string text;
    size_t at = 1;
    for (const auto& l : lines) {
        while (at < l.no) {
            text += '\n';
            ++at;
        }
        text.append(l.text);
        text += '\n';
        ++at;
    }
    return assembly::assemble(text, path_);
}

Expected<Case> Parser::run() {
    Case c;
    c.path = path_;
    std::vector<Line> lines;
    size_t start = 0, no = 0;
    while (start < text_.size()) {
        size_t nl = text_.find('\n', start);
        if (nl == std::string_view::npos) nl = text_.size();
        std::string_view t = text_.substr(start, nl - start);
        if (!t.empty() && t.back() == '\r') t.remove_suffix(1);
        lines.push_back(Line{++no, t});
        start = nl + 1;
    }
    std::vector<Section> sections;
    std::map<std::string, size_t> first_at;
    for (const auto& l : lines) {
        if (l.text.rfind("--", 0) == 0) {
            auto toks = tokens(l, 2);
            if (!toks) return toks.error();
            if (toks->empty() || l.text.size() < 3 || l.text[2] != ' ')
                return err(l.no, "unknown section '" + std::string(l.text) + "'");
            const std::string name = (*toks)[0].text;
            bool known = false;
            for (auto k : kSections) known |= (k == name);
            if (!known) return err(l.no, "unknown section '" + std::string(l.text) + "'");
            if (name != "input") {
                if (auto it = first_at.find(name); it != first_at.end())
                    return err(l.no, "duplicate section '-- " + name + "' (first at line " + std::to_string(it->second) + ")");
                first_at[name] = l.no;
            }
            if (name != "program" && toks->size() > 1)
                return err(l.no, (*toks)[1].col, "section '-- " + name + "' takes no arguments");
            sections.push_back(Section{name, l, {}});
            continue;
        }
        if (sections.empty()) {
            if (l.text.empty()) continue;
            if (l.text[0] != '#') return err(l.no, 1, "expected a '# comment' or a section such as '-- program'");
            std::string_view cm = l.text.substr(1);
            if (!cm.empty() && cm[0] == ' ') cm.remove_prefix(1);
            // A lone '\r' inside a comment reads as a blank, as write_case() writes it: the
            // comment then survives a write/read round trip unchanged.
            std::string comment(cm);
            for (char& ch : comment)
                if (ch == '\r') ch = ' ';
            c.comments.push_back(std::move(comment));
            continue;
        }
        sections.back().body.push_back(l);
    }
    if (!first_at.count("program")) return err(lines.empty() ? 1 : lines.back().no, "missing section '-- program'");
    // The program first: every other section refers to its length.
    for (const auto& s : sections)
        if (s.name == "program")
            if (auto st = program(s, c); !st) return st.error();
    c.options.arch = arch_x86_64();
    for (const auto& s : sections) {
        Status st;
        if (s.name == "maps") st = maps(s, c);
        else if (s.name == "kfuncs") st = kfuncs(s, c);
        else if (s.name == "aux") st = aux(s, c);
        else if (s.name == "subprogs") st = subprogs(s, c);
        else if (s.name == "linfo") st = linfo(s, c);
        else if (s.name == "finfo") st = finfo(s, c);
        else if (s.name == "insn-arrays") st = insn_arrays(s, c);
        else if (s.name == "pokes") st = pokes(s, c);
        else if (s.name == "patches") st = patches(s, c);
        else if (s.name == "options") st = options(s, c);
        else if (s.name == "input") st = input(s, c);
        else if (s.name == "expect") st = expect(s, c);
        if (!st) return st.error();
    }
    return c;
}

Status Parser::program(const Section& s, Case& c) const {
    auto toks = tokens(s.header, 2);
    if (!toks) return toks.error();
    std::string name;
    uint32_t type = 0;
    TraceAttach attach = TraceAttach::Other;
    uint8_t attach_vlen = 0;
    for (size_t i = 1; i < toks->size(); ++i) {
        const Tok& t = (*toks)[i];
        auto [k, v] = kv(t);
        if (k == "name" && v) {
            name = std::string(*v);
        } else if (k == "type" && v) {
            auto pt = loader::prog_type_by_name(*v);
            if (!pt) return err(s.header.no, t.col + 5, "unknown program type '" + std::string(*v) + "'");
            type = *pt;
        } else if (k == "attach" && v) {
            auto at = value_in(kTraceAttach, *v);
            if (!at)
                return err(s.header.no, t.col + 7,
                           "unknown attach type '" + std::string(*v) +
                               "' (other, raw_tp, fentry, fexit, fmod_ret, fsession, fentry_multi, fexit_multi, fsession_multi)");
            attach = *at;
        } else if (k == "attach-vlen" && v) {
            auto n = num<uint8_t>(s.header, t, *v, "attach-vlen");
            if (!n) return n.error();
            attach_vlen = *n;
        } else {
            return err(s.header.no, t.col, "unknown program attribute '" + t.text + "' (name=, type=, attach=, attach-vlen=)");
        }
    }
    auto insns = assemble_lines(s.body);
    if (!insns) return insns.error();
    c.program = make_program(std::move(*insns));
    c.program.name = std::move(name);
    c.program.prog_type = type;
    c.program.attach = attach;
    c.program.attach_btf_vlen = attach_vlen;
    return {};
}

std::vector<std::string> split_list(std::string_view v) {
    std::vector<std::string> out;
    if (v.empty()) return out;
    size_t start = 0;
    while (true) {
        auto comma = v.find(',', start);
        out.emplace_back(v.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

Status Parser::options(const Section& s, Case& c) const {
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        for (const Tok& t : *toks) {
            const auto kvp = kv(t);  // (not a structured binding: the lambda below captures it)
            const std::string_view k = kvp.first;
            const std::optional<std::string_view>& v = kvp.second;
            if (!v) return err(l.no, t.col, "expected key=value, got '" + t.text + "'");
            const size_t vcol = t.col + k.size() + 1;
            auto flag = [&](bool& dst) -> Status {
                if (*v == "0") dst = false;
                else if (*v == "1") dst = true;
                else return err(l.no, vcol, "expected 0 or 1 for " + std::string(k));
                return {};
            };
            Status st;
            if (k == "arch") {
                auto a = arch_by_name(*v);
                if (!a) return err(l.no, vcol, "unknown arch '" + std::string(*v) + "' (" + arch_name_list() + ")");
                c.arch = std::string(*v);
                c.options.arch = *a;
            } else if (k == "passes") {
                c.options.only = split_list(*v);
            } else if (k == "iter-inline") {
                auto ii = value_in(kIterInline, *v);
                if (!ii) return err(l.no, vcol, "unknown iter-inline '" + std::string(*v) + "' (v4, v1, v3, off)");
                c.options.iter_inline = *ii;
            } else if (k == "kernel") {
                auto kp = value_in(kKernels, *v);
                if (!kp) return err(l.no, vcol, "unknown kernel '" + std::string(*v) + "' (bpf-next, 6.1, 6.12, 7.2, 7.3)");
                c.options.kernel = *kp;
            } else if (k == "loop-inline" || k == "func-arg-inline" || k == "nop-removal") {
                auto f = value_in(kInlineFix, *v);
                if (!f) return err(l.no, vcol, "unknown " + std::string(k) + " '" + std::string(*v) + "' (buggy, fixed)");
                (k == "loop-inline"       ? c.options.loop_inline
                 : k == "func-arg-inline" ? c.options.func_arg_inline
                                          : c.options.nop_removal) = *f;
            } else if (k == "privileged") {
                st = flag(c.options.privileged);
                if (st && c.privilege == passes::Privilege::Bpf && !c.options.privileged)
                    return err(l.no, vcol, "privileged=0 contradicts privilege=bpf (CAP_BPF is bpf_capable)");
                if (st && c.privilege != passes::Privilege::Bpf)
                    c.privilege = c.options.privileged ? passes::Privilege::Root : passes::Privilege::Unpriv;
            } else if (k == "privilege") {
                auto pl = passes::privilege_named(*v);
                if (!pl) return err(l.no, vcol, "unknown privilege '" + std::string(*v) + "' (" + passes::kPrivilegeNames + ")");
                c.privilege = *pl;
                c.options.privileged = passes::bpf_capable(*pl);
            } else if (k == "rnd-hi32") {
                st = flag(c.options.test_rnd_hi32);
            } else if (k == "rnd-hi32-seed") {
                auto n = num<uint64_t>(l, t, *v, "rnd-hi32-seed");
                if (!n) return n.error();
                c.options.rnd_hi32_seed = *n;
            } else if (k == "patchers") {
                c.patchers.clear();
                for (const std::string& name : split_list(*v)) {
                    const auto id = patch::parse_patcher(name);
                    if (!id) return err(l.no, t.col + k.size() + 1, "unknown patcher '" + name + "' (incremental, batched)");
                    c.patchers.push_back(*id);
                }
            } else if (k == "seed") {
                auto n = num<uint64_t>(l, t, *v, "seed");
                if (!n) return n.error();
                c.seed = *n;
            } else {
                return err(l.no, t.col,
                           "unknown option '" + std::string(k) +
                               "' (arch, passes, iter-inline, kernel, loop-inline, func-arg-inline, nop-removal, privileged, privilege, rnd-hi32, rnd-hi32-seed, "
                               "patchers, seed)");
            }
            if (!st) return st;
        }
    }
    return {};
}

Status Parser::input(const Section& s, Case& c) const {
    interp::ExecInput in;
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        auto toks = tokens(l);
        if (!toks) return toks.error();
        const std::string& kw = (*toks)[0].text;
        auto arg = [&](size_t n) -> Status {
            if (toks->size() != n + 1) return err(l.no, 1, "'" + kw + "' takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s"));
            return {};
        };
        Status st;
        if (kw == "ctx" || kw == "packet") {
            if (toks->size() > 2) return err(l.no, (*toks)[2].col, "'" + kw + "' takes one hex string");
            std::vector<uint8_t> bytes;
            if (toks->size() == 2) {
                auto hb = hexbytes(l, (*toks)[1], (*toks)[1].text);
                if (!hb) return hb.error();
                bytes = std::move(*hb);
            }
            (kw == "ctx" ? in.ctx : in.packet) = std::move(bytes);
        } else if (kw.size() == 2 && kw[0] == 'r' && kw[1] >= '0' && kw[1] <= '9') {
            if (!(st = arg(1))) return st;
            auto n = num<uint64_t>(l, (*toks)[1], (*toks)[1].text, kw);
            if (!n) return n.error();
            in.regs[static_cast<size_t>(kw[1] - '0')] = *n;
        } else if (kw == "cpu") {
            if (!(st = arg(1))) return st;
            auto n = num<uint32_t>(l, (*toks)[1], (*toks)[1].text, "cpu");
            if (!n) return n.error();
            in.cpu = *n;
        } else if (kw == "prandom") {
            if (!(st = arg(1))) return st;
            auto n = num<uint64_t>(l, (*toks)[1], (*toks)[1].text, "prandom");
            if (!n) return n.error();
            in.prandom_seed = *n;
        } else if (kw == "budget") {
            if (!(st = arg(1))) return st;
            auto n = num<uint64_t>(l, (*toks)[1], (*toks)[1].text, "budget");
            if (!n) return n.error();
            in.step_budget = *n;
        } else if (kw == "maps") {
            if (!(st = arg(1))) return st;
            auto n = num<uint32_t>(l, (*toks)[1], (*toks)[1].text, "map count");
            if (!n) return n.error();
            if (*n > (1u << 16)) return err(l.no, (*toks)[1].col, "map count " + std::to_string(*n) + " is out of range");
            in.maps.resize(*n);
        } else if (kw == "map") {
            if (toks->size() != 4) return err(l.no, 1, "expected 'map INDEX key=HEX value=HEX'");
            auto n = num<uint32_t>(l, (*toks)[1], (*toks)[1].text, "map index");
            if (!n) return n.error();
            if (*n >= in.maps.size())
                return err(l.no, (*toks)[1].col, "map index " + std::to_string(*n) + " but 'maps' declared " + std::to_string(in.maps.size()));
            auto [kk, kv_] = kv((*toks)[2]);
            auto [vk, vv] = kv((*toks)[3]);
            if (kk != "key" || !kv_) return err(l.no, (*toks)[2].col, "expected key=HEX");
            if (vk != "value" || !vv) return err(l.no, (*toks)[3].col, "expected value=HEX");
            auto key = hexbytes(l, (*toks)[2], *kv_);
            if (!key) return key.error();
            auto val = hexbytes(l, (*toks)[3], *vv);
            if (!val) return val.error();
            in.maps[*n].push_back(interp::MapEntry{std::move(*key), std::move(*val)});
        } else {
            return err(l.no, 1, "unknown input field '" + kw + "' (ctx, packet, r0..r9, cpu, prandom, budget, maps, map)");
        }
    }
    c.inputs.push_back(std::move(in));
    return {};
}

Status Parser::expect(const Section& s, Case& c) const {
    std::optional<Line> got;
    for (const auto& l : s.body) {
        if (blank_or_comment(l.text)) continue;
        if (got) return err(l.no, 1, "'-- expect' holds one line");
        got = l;
    }
    if (!got) return err(s.header.no, "'-- expect' is empty (pass, or fail <signature>)");
    std::string_view t = got->text;
    // Trailing blanks (a stray '\r' too) are not part of the verdict: write_case() drops them.
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
    for (size_t i = 0; i < t.size(); ++i)
        if (static_cast<unsigned char>(t[i]) < 0x20 || t[i] == 0x7f)
            return err(got->no, i + 1, "control character in '-- expect'");
    if (t == "pass" || t == "unknown" || t == "skip" || (t.rfind("fail ", 0) == 0 && t.size() > 5)) {
        c.expect = std::string(t);
        return {};
    }
    return err(got->no, 1, "expected 'pass', 'fail <signature>', 'unknown' or 'skip', got '" + std::string(t) + "'");
}

}  // namespace case_format

Expected<Case> parse_case(std::string_view text, const std::string& path) { return case_format::Parser(text, path).run(); }

Expected<Case> read_case(const std::string& path) {
    auto text = read_file(path);
    if (!text) return text.error();
    auto c = parse_case(*text, path);
    if (!c) return c;
    if (auto v = isa::validate_program(c->program); !v) return v.error().with_context(path);
    return c;
}

}  // namespace patchfuzz::harness
