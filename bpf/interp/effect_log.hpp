#pragma once
// The effects one execution records (ExecResult::effects): the helper and kfunc effects a rewrite
// must keep, as text ("clock() = 1000001000"). Generated programs make one or two per run on
// average, each a string too long for the small-string buffer, and the execution oracle makes
// tens of thousands of runs per second: the texts are appended in place rather than concatenated
// from temporaries, and their storage is recycled, per thread, from the effects of the results
// that runs overwrite (the oracle reuses one result per program across its inputs).
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace patchfuzz::interp {

// A number written as printf's "0x%llx" writes it.
struct Hex {
    uint64_t v;
};

class EffectLog {
public:
    // Starts the effects of a run in `effects` (a result about to be overwritten); the storage of
    // the strings it still holds goes to this thread's spares.
    explicit EffectLog(std::vector<std::string>& effects) : effects_(effects) {
        std::vector<std::string>& spare = spare_strings();
        for (std::string& e : effects_)
            if (spare.size() < kMaxSpare) spare.push_back(std::move(e));
        effects_.clear();
    }
    EffectLog(const EffectLog&) = delete;
    EffectLog& operator=(const EffectLog&) = delete;

    // Records the effect whose text is `parts` in order: text, decimal numbers and Hex.
    template <typename... Parts>
    void add(const Parts&... parts) {
        std::string& s = next();
        (put(s, parts), ...);
    }

private:
    std::string& next() {
        std::vector<std::string>& spare = spare_strings();
        if (spare.empty()) return effects_.emplace_back();
        std::string& s = effects_.emplace_back(std::move(spare.back()));
        spare.pop_back();
        s.clear();
        return s;
    }
    static void put(std::string& s, std::string_view text) { s += text; }
    static void put(std::string& s, uint64_t v) { put_number(s, v, 10); }
    static void put(std::string& s, int64_t v) { put_number(s, v, 10); }
    static void put(std::string& s, Hex h) {
        s += "0x";
        put_number(s, h.v, 16);
    }
    template <typename T>
    static void put_number(std::string& s, T v, int base) {
        char b[24];  // 64 bits in base 10 with a sign: 20 characters
        s.append(b, std::to_chars(b, b + sizeof b, v, base).ptr);
    }

    static std::vector<std::string>& spare_strings() {
        static thread_local std::vector<std::string> spare;
        return spare;
    }
    static constexpr size_t kMaxSpare = 256;

    std::vector<std::string>& effects_;
};

}  // namespace patchfuzz::interp
