#pragma once
// A bounded, thread-safe cache of solver answers, keyed by the whole question. The hash only picks
// a bucket: two questions whose hashes collide keep their own answers (a cache keyed by a hash
// alone would hand one question the other's answer, and an oracle could pass a case it never
// asked about). Full, it starts over: the questions of a campaign recur within a few thousand
// cases, and a clear costs less than tracking recency.
//
// Hash and Eq may be transparent (is_transparent) so that a caller can look up with a view of its
// question instead of building a key: find() takes any type they accept.
#include <cstddef>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

namespace patchfuzz::oracles::smt {

template <class Key, class Value, class Hash, class Eq = std::equal_to<>>
class AnswerCache {
public:
    explicit AnswerCache(size_t max_entries) : max_(max_entries) {}

    template <class Question>
    std::optional<Value> find(const Question& q) const {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = map_.find(q);
        if (it == map_.end()) return std::nullopt;
        return it->second;
    }

    void put(Key key, Value value) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (map_.size() >= max_) map_.clear();
        map_.emplace(std::move(key), std::move(value));
    }

    size_t size() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return map_.size();
    }

private:
    mutable std::mutex mutex_;
    std::unordered_map<Key, Value, Hash, Eq> map_;
    size_t max_;
};

}  // namespace patchfuzz::oracles::smt
