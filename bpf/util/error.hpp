#pragma once
// Error and Expected<T>: how bad input travels up to the CLI (exit code 2) without exceptions
// crossing module boundaries. Internal invariant failures use PATCHFUZZ_CHECK (check.hpp) instead.
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace patchfuzz {

struct Error {
    std::string where;    // "prog.s:7:9", "pc 4", "case.case:11", or empty
    std::string message;  // lower case, no final period: "unknown mnemonic 'ad64'"

    [[nodiscard]] std::string to_string() const { return where.empty() ? message : where + ": " + message; }
    // Prefix the location with an outer context ("x.case: " + "pc 4: ...").
    [[nodiscard]] Error with_context(const std::string& outer) const {
        return Error{where.empty() ? outer : outer + ": " + where, message};
    }
};

inline Error make_error(std::string where, std::string message) { return Error{std::move(where), std::move(message)}; }

template <class T>
class [[nodiscard]] Expected {
public:
    Expected(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
    Expected(Error e) : v_(std::move(e)) {}      // NOLINT(google-explicit-constructor)

    [[nodiscard]] bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    [[nodiscard]] const Error& error() const { return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Expected<void> {
public:
    Expected() = default;
    Expected(Error e) : err_(std::move(e)), ok_(false) {}  // NOLINT(google-explicit-constructor)
    [[nodiscard]] bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    [[nodiscard]] const Error& error() const { return err_; }

private:
    Error err_;
    bool ok_ = true;
};

using Status = Expected<void>;

}  // namespace patchfuzz
