#include "harness/kernel/guest_output.hpp"

#include <charconv>
#include <cstring>
#include <sstream>

#include "guest/pfk_batch.h"

namespace patchfuzz::kernel {
namespace {

std::vector<std::string_view> split(std::string_view s) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && s[i] == ' ') i++;
        size_t j = i;
        while (j < s.size() && s[j] != ' ') j++;
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

template <class T>
bool num(std::string_view s, T& v) {
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "key=value" -> value, when the token starts with key=
bool kv(std::string_view tok, std::string_view key, std::string_view& val) {
    if (tok.size() <= key.size() || tok.substr(0, key.size()) != key || tok[key.size()] != '=') return false;
    val = tok.substr(key.size() + 1);
    return true;
}

bool hex_bytes(std::string_view s, std::vector<uint8_t>& out) {
    if (s.size() % 2) return false;
    for (size_t i = 0; i < s.size(); i += 2) {
        uint8_t b = 0;
        auto r = std::from_chars(s.data() + i, s.data() + i + 2, b, 16);
        if (r.ec != std::errc() || r.ptr != s.data() + i + 2) return false;
        out.push_back(b);
    }
    return true;
}

}  // namespace

Expected<GuestReport> parse_guest_output(std::string_view console) {
    GuestReport rep;
    size_t lineno = 0, pos = 0;
    auto bad = [&](const std::string& what) { return make_error("console:" + std::to_string(lineno), what); };
    auto case_at = [&](uint32_t idx) -> GuestCaseResult* {
        if (idx >= rep.case_cnt || idx >= rep.cases.size()) return nullptr;
        return &rep.cases[idx];
    };
    while (pos < console.size()) {
        size_t nl = console.find('\n', pos);
        if (nl == std::string_view::npos) nl = console.size();
        std::string_view line = console.substr(pos, nl - pos);
        pos = nl + 1;
        lineno++;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
        // Kernel messages may precede a tag on the same line when they interleave; find the tag.
        size_t at = line.find("@@");
        if (at == std::string_view::npos) {
            for (const char* alert : {"WARNING:", "BUG:", "Kernel panic", "Oops", "general protection fault"})
                if (line.find(alert) != std::string_view::npos) rep.kernel_alerts.emplace_back(line);
            continue;
        }
        line = line.substr(at);
        auto t = split(line);
        std::string_view tag = t[0], v;
        uint32_t idx = 0;
        if (tag == PFK_OUT_BEGIN) {
            rep.begun = true;
            for (auto tok : t) {
                if (kv(tok, "release", v)) rep.release = v;
                if (kv(tok, "jit", v)) num(v, rep.jit);
                if (kv(tok, "uptime_ms", v)) num(v, rep.uptime_ms);
                if (kv(tok, "cases", v) && num(v, rep.case_cnt)) {
                    if (rep.case_cnt > 10000000) return bad("absurd case count");
                    rep.cases.resize(rep.case_cnt);
                    for (uint32_t i = 0; i < rep.case_cnt; i++) rep.cases[i].index = i;
                }
            }
        } else if (tag == PFK_OUT_FACT) {
            int64_t val = 0;
            if (t.size() != 3 || !num(t[2], val)) return bad("malformed @@FACT line");
            rep.facts[std::string(t[1])] = val;
        } else if (tag == PFK_OUT_CASE) {
            if (t.size() < 2 || !num(t[1], idx) || !case_at(idx)) return bad("@@CASE with a bad case index");
            auto& c = *case_at(idx);
            for (auto tok : t) {
                if (kv(tok, "rc", v)) num(v, c.rc);
                if (kv(tok, "insns", v)) num(v, c.insn_cnt);
                if (kv(tok, "verified", v)) num(v, c.verified);
                if (kv(tok, "load_us", v)) num(v, c.load_us);
                if (kv(tok, "jited", v)) num(v, c.jited);
                if (kv(tok, "maps", v) && v != "-") {
                    std::string s(v);
                    std::istringstream in(s);
                    std::string id;
                    while (std::getline(in, id, ',')) {
                        uint32_t x = 0;
                        if (!num(std::string_view(id), x)) return bad("bad map id list");
                        c.map_ids.push_back(x);
                    }
                }
            }
        } else if (tag == PFK_OUT_XLATED) {
            std::vector<uint8_t> b;
            if (t.size() != 3 || !num(t[1], idx) || !case_at(idx) || !hex_bytes(t[2], b) || b.size() % 8)
                return bad("malformed @@X line");
            auto& c = *case_at(idx);
            for (size_t i = 0; i < b.size(); i += 8) {
                isa::Insn in{};
                std::memcpy(&in, b.data() + i, 8);
                c.xlated.push_back(in);
            }
        } else if (tag == PFK_OUT_SYM) {
            uint32_t pc = 0;
            if (t.size() != 4 || !num(t[1], idx) || !case_at(idx) || !num(t[2], pc)) return bad("malformed @@SYM line");
            std::vector<std::string> names;
            if (t[3] != "?") {
                std::string s(t[3]);
                std::istringstream in(s);
                std::string name;
                while (std::getline(in, name, ','))
                    if (!name.empty()) names.push_back(name);
            }
            case_at(idx)->symbols[pc] = std::move(names);
        } else if (tag == PFK_OUT_LOG) {
            if (t.size() < 2 || !num(t[1], idx) || !case_at(idx)) return bad("malformed @@LOG line");
            size_t p = line.find(' ', line.find(' ') + 1);
            case_at(idx)->log.emplace_back(p == std::string_view::npos ? "" : line.substr(p + 1));
        } else if (tag == PFK_OUT_RUN) {
            uint32_t k = 0;
            if (t.size() != 5 || !num(t[1], idx) || !case_at(idx) || !num(t[2], k)) return bad("malformed @@RUN line");
            GuestRun r;
            if (!kv(t[3], "rc", v) || !num(v, r.rc) || !kv(t[4], "retval", v) || !num(v, r.retval))
                return bad("malformed @@RUN line");
            case_at(idx)->runs.push_back(r);
        } else if (tag == PFK_OUT_MAP) {
            GuestMapEntry e;
            uint32_t k = 0;
            if (t.size() != 6 || !num(t[1], idx) || !case_at(idx) || !num(t[2], k) || !num(t[3], e.map) ||
                !hex_bytes(t[4], e.key) || !hex_bytes(t[5], e.value) || case_at(idx)->runs.empty())
                return bad("malformed @@MAP line");
            case_at(idx)->runs.back().maps.push_back(std::move(e));
        } else if (tag == PFK_OUT_INSN_ARRAY) {
            uint32_t m = 0;
            if (t.size() != 4 || !num(t[1], idx) || !case_at(idx) || !num(t[2], m)) return bad("malformed @@IA line");
            std::vector<uint32_t> offs;
            std::string s(t[3]);
            std::istringstream in(s);
            std::string off;
            while (std::getline(in, off, ',')) {
                uint32_t x = 0;
                if (!num(std::string_view(off), x)) return bad("malformed @@IA line");
                offs.push_back(x);
            }
            case_at(idx)->insn_arrays[m] = std::move(offs);
        } else if (tag == PFK_OUT_CASE_END) {
            if (t.size() != 2 || !num(t[1], idx) || !case_at(idx)) return bad("malformed @@END line");
            case_at(idx)->complete = true;
        } else if (tag == PFK_OUT_DONE) {
            rep.done = true;
            for (auto tok : t) {
                if (kv(tok, "ok", v)) num(v, rep.ok);
                if (kv(tok, "failed", v)) num(v, rep.failed);
                if (kv(tok, "us", v)) num(v, rep.busy_us);
            }
        } else if (tag == PFK_OUT_ERROR) {
            rep.error = line.size() > tag.size() + 1 ? std::string(line.substr(tag.size() + 1)) : "unknown";
        }
        // other "@@" text (none today) is ignored for forward compatibility
    }
    return rep;
}

}  // namespace patchfuzz::kernel
