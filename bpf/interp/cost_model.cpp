#include "bpf/interp/cost_model.hpp"

#include <algorithm>

namespace patchfuzz::interp {

// x86-64: L_sf 0 (memory renaming), W 6, kfunc call 2.3, subprog call 3.0 (docs/iterator-isa-arch.md §5.2, fitted).
const CostParams& cost_x86_64() {
    static const CostParams p{.arch = "x86_64", .width = 6, .l_sf = 0, .c_kfunc = 2.3, .c_subprog = 3.0, .c_helper = 2.3,
                              .ja0_insns = 0};
    return p;
}

// arm64: L_sf 5 (6-cycle chain with the add), kfunc call 2.5, subprog call 3.71 (§5.2).
const CostParams& cost_arm64() {
    static const CostParams p{.arch = "arm64", .width = 6, .l_sf = 5, .c_kfunc = 2.5, .c_subprog = 3.71, .c_helper = 2.5,
                              .ja0_insns = 1};
    return p;
}

void CostModel::op(int dst, int s1, int s2, double latency) {
    front_ += 1.0 / p_.width;
    double start = std::max({front_, ready(s1), ready(s2)});
    double done = start + latency;
    if (dst >= 0) reg_[static_cast<size_t>(dst)] = done;
    last_ = std::max(last_, done);
}

void CostModel::load(int dst, int addr_reg, uint64_t addr) {
    front_ += 1.0 / p_.width;
    double start = std::max(front_, ready(addr_reg));
    auto it = slot_store_.find(addr >> 3);
    double done = it == slot_store_.end() ? start + p_.l_load : std::max(start, it->second + p_.l_sf);
    if (dst >= 0) reg_[static_cast<size_t>(dst)] = done;
    last_ = std::max(last_, done);
}

void CostModel::store(int addr_reg, int val_reg, uint64_t addr) {
    front_ += 1.0 / p_.width;
    double data = std::max({front_, ready(addr_reg), ready(val_reg)});
    slot_store_[addr >> 3] = data;
    last_ = std::max(last_, data);
}

void CostModel::call(CallKind kind, double body_insns) {
    double c = kind == CallKind::Kfunc ? p_.c_kfunc : kind == CallKind::Subprog ? p_.c_subprog : p_.c_helper;
    front_ += c + body_insns / p_.width;
}

void CostModel::clobber(int first, int last) {
    for (int r = first; r <= last; ++r) reg_[static_cast<size_t>(r)] = front_;
}

double CostModel::cycles() const { return std::max(front_, last_); }

}  // namespace patchfuzz::interp
