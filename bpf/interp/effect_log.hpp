#pragma once
// The effects one execution records (ExecResult::effects): the helper and kfunc effects a rewrite
// must keep, as text ("clock() = 1000001000"). Generated programs make a few per run, each a
// string too long for the small-string buffer, and the execution oracle makes tens of thousands
// of runs per second, reusing one result per program across its inputs: a run writes its texts
// in place over the strings of the result it overwrites (keeping their storage), appends them
// rather than concatenating temporaries, and passes the strings it did not need to a per-thread
// spare list that the next run that needs more takes from.
#include <charconv>
#include <cstring>
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
    // Collects the effects of a run that will be stored into `effects` (the vector of a result
    // about to be overwritten, whose strings are reused) when the log is destroyed; `effects`
    // stays empty until then.
    explicit EffectLog(std::vector<std::string>& effects) : out_(effects) { log_.swap(effects); }
    ~EffectLog() {
        // Mostly a run makes as many effects as the run before it into the same result did.
        if (used_ != log_.size()) [[unlikely]]
            give_back_unused();
        out_.swap(log_);
    }
    EffectLog(const EffectLog&) = delete;
    EffectLog& operator=(const EffectLog&) = delete;

    // Records the effect whose text is `parts` in order: text, decimal numbers and Hex.
    template <typename... Parts>
    void add(const Parts&... parts) {
        std::string& s = next();
        s.clear();
        (put(s, parts), ...);
    }
    // Records an effect whose whole text is ready (copied into reused storage). A string that
    // already has the text's length is overwritten in place: the common case, as the runs of a
    // program on several inputs into one result mostly make the same kinds of effects.
    void add_text(std::string_view text) {
        std::string& s = next();
        if (s.size() == text.size()) std::memcpy(s.data(), text.data(), text.size());
        else s.assign(text.data(), text.size());
    }

private:
    // The strings of the log beyond this run's effects go to the spare list.
    [[gnu::noinline]] void give_back_unused() {
        std::vector<std::string>& spare = spare_strings();
        for (size_t k = used_; k < log_.size() && spare.size() < kMaxSpare; ++k) spare.push_back(std::move(log_[k]));
        log_.resize(used_);
    }
    // The string of the next effect, with stale text.
    std::string& next() {
        if (used_ < log_.size()) [[likely]]
            return log_[used_++];
        return next_new();
    }
    // next() when every string of the log is taken. Out of line: inlined, its growth of the log
    // makes every caller save and restore more registers (a clock read costs a few moves).
    [[gnu::noinline]] std::string& next_new() {
        ++used_;
        // A fresh result's first effect: room for a run's usual few at once, not one by one.
        if (log_.capacity() == 0) log_.reserve(kFirstRoom);
        std::vector<std::string>& spare = spare_strings();
        if (spare.empty()) return log_.emplace_back();
        std::string& s = log_.emplace_back(std::move(spare.back()));
        spare.pop_back();
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
    static constexpr size_t kFirstRoom = 16;

    std::vector<std::string>& out_;
    std::vector<std::string> log_;  // effects [0, used_) of this run, then strings left to reuse
    size_t used_ = 0;
};

}  // namespace patchfuzz::interp
