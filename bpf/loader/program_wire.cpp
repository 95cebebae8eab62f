#include "bpf/loader/program_wire.hpp"

#include <cstring>
#include <type_traits>

#include "bpf/program/aux_fields.hpp"
#include "bpf/program/record_fields.hpp"

namespace patchfuzz::loader {
namespace {

constexpr uint32_t kMagicProgram = 0x50465057;  // "WPFP"
constexpr uint32_t kMagicResult = 0x50465252;   // "RRFP"

class Writer {
public:
    template <class T>
        requires std::is_integral_v<T> || std::is_enum_v<T>
    void num(T v) {
        uint64_t u = static_cast<uint64_t>(v);
        for (size_t i = 0; i < sizeof(T); ++i) out_.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
    }
    void f64(double d) {
        uint64_t u = 0;
        std::memcpy(&u, &d, 8);
        num(u);
    }
    void str(std::string_view s) {
        num(static_cast<uint32_t>(s.size()));
        out_.append(s);
    }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
};

class Reader {
public:
    explicit Reader(std::string_view in) : in_(in) {}
    template <class T>
        requires std::is_integral_v<T> || std::is_enum_v<T>
    bool num(T& v) {
        if (in_.size() - pos_ < sizeof(T)) return fail();
        uint64_t u = 0;
        for (size_t i = 0; i < sizeof(T); ++i) u |= uint64_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
        pos_ += sizeof(T);
        v = static_cast<T>(u);
        return true;
    }
    bool f64(double& d) {
        uint64_t u = 0;
        if (!num(u)) return false;
        std::memcpy(&d, &u, 8);
        return true;
    }
    bool str(std::string& s) {
        uint32_t n = 0;
        if (!num(n) || in_.size() - pos_ < n) return fail();
        s.assign(in_.substr(pos_, n));
        pos_ += n;
        return true;
    }
    // A count of elements each at least `min_bytes` long: rejects counts the stream cannot hold.
    bool count(uint32_t& n, size_t min_bytes) {
        if (!num(n)) return false;
        if (min_bytes && n > (in_.size() - pos_) / min_bytes) return fail();
        return true;
    }
    [[nodiscard]] bool ok() const { return ok_; }
    [[nodiscard]] bool at_end() const { return pos_ == in_.size(); }
    [[nodiscard]] size_t pos() const { return pos_; }

private:
    bool fail() {
        ok_ = false;
        pos_ = in_.size();
        return false;
    }
    std::string_view in_;
    size_t pos_ = 0;
    bool ok_ = true;
};

template <class T>
constexpr bool is_flag = std::is_same_v<std::remove_cvref_t<T>, bool>;

// A side-table record (bpf/program/record_fields.hpp): its numbers in list order, each in its
// own width, then its flags as the bits of one byte (when it has any).
template <class R>
void put_record(Writer& w, const R& r) {
    uint8_t flags = 0;
    int bit = 0;
    RecordFields<R>::visit([&](const char*, auto member, FieldForm) {
        if constexpr (is_flag<decltype(r.*member)>) flags = static_cast<uint8_t>(flags | uint8_t{r.*member} << bit++);
        else w.num(r.*member);
    });
    if (bit != 0) w.num(flags);
}

template <class R>
bool get_record(Reader& rd, R& r) {
    bool ok = true, has_flags = false;
    RecordFields<R>::visit([&](const char*, auto member, FieldForm) {
        if constexpr (is_flag<decltype(r.*member)>) has_flags = true;
        else ok = ok && rd.num(r.*member);
    });
    uint8_t flags = 0;
    if (!ok || (has_flags && !rd.num(flags))) return false;
    int bit = 0;
    RecordFields<R>::visit([&](const char*, auto member, FieldForm) {
        if constexpr (is_flag<decltype(r.*member)>) r.*member = (flags >> bit++) & 1;
    });
    return true;
}

// The bytes put_record() writes for one R: the least a count of them can take.
template <class R>
constexpr size_t record_bytes() {
    size_t n = 0;
    bool has_flags = false;
    RecordFields<R>::visit([&](const char*, auto member, FieldForm) {
        using T = std::remove_cvref_t<decltype(R{}.*member)>;
        if constexpr (std::is_same_v<T, bool>) has_flags = true;
        else n += sizeof(T);
    });
    return n + (has_flags ? 1 : 0);
}

template <class R>
void put_records(Writer& w, const std::vector<R>& v) {
    w.num(static_cast<uint32_t>(v.size()));
    for (const R& r : v) put_record(w, r);
}

template <class R>
bool get_records(Reader& rd, std::vector<R>& v) {
    uint32_t n = 0;
    if (!rd.count(n, record_bytes<R>())) return false;
    v.resize(n);
    for (R& r : v)
        if (!get_record(rd, r)) return false;
    return true;
}

void put_program(Writer& w, const Program& p) {
    w.num(kMagicProgram);
    w.str(p.name);
    w.num(p.prog_type);
    w.num(static_cast<uint32_t>(p.insns.size()));
    for (const auto& i : p.insns) {
        w.num(i.code);
        w.num(static_cast<uint8_t>(i.dst_reg | (i.src_reg << 4)));
        w.num(i.off);
        w.num(i.imm);
    }
    w.num(static_cast<uint32_t>(p.aux.size()));
    // Per insn: every non-flag field of the list (bpf/program/aux_fields.hpp) in its own width, in
    // list order, then the flags as the bits of one word, in list order.
    for (const auto& a : p.aux) {
        uint32_t flags = 0;
        int bit = 0;
        for_each_aux_field([&](const char*, auto member) {
            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a.*member)>, bool>) flags |= uint32_t{a.*member} << bit++;
            else w.num(a.*member);
        });
        w.num(flags);
    }
    put_records(w, p.subprogs);
    put_records(w, p.linfo);
    put_records(w, p.finfo);
    w.num(static_cast<uint32_t>(p.insn_arrays.size()));
    for (const auto& a : p.insn_arrays) {
        w.num(a.map_index);
        w.num(static_cast<uint32_t>(a.entries.size()));
        for (const auto& e : a.entries) {
            w.num(e.orig_off);
            w.num(e.xlated_off);
        }
    }
    put_records(w, p.pokes);
    w.num(static_cast<uint32_t>(p.kfuncs.size()));
    for (const auto& k : p.kfuncs) {
        w.num(k.btf_id);
        w.num(k.offset);
        w.num(k.kind);
        w.str(k.name);
    }
    w.num(static_cast<uint32_t>(p.maps.size()));
    for (const auto& m : p.maps) {
        w.str(m.name);
        w.num(m.type);
        w.num(m.key_size);
        w.num(m.value_size);
        w.num(m.max_entries);
        w.num(m.map_flags);
        w.num(static_cast<uint8_t>(m.bypass_spec_v1 | (m.unpriv_array << 1)));
    }
}

bool get_program(Reader& r, Program& p) {
    uint32_t magic = 0, n = 0;
    if (!r.num(magic) || magic != kMagicProgram) return false;
    if (!r.str(p.name) || !r.num(p.prog_type) || !r.count(n, 8)) return false;
    p.insns.resize(n);
    for (auto& i : p.insns) {
        uint8_t regs = 0;
        if (!r.num(i.code) || !r.num(regs) || !r.num(i.off) || !r.num(i.imm)) return false;
        i.dst_reg = regs & 0xf;
        i.src_reg = (regs >> 4) & 0xf;
    }
    if (!r.count(n, 20)) return false;
    p.aux.resize(n);
    for (auto& a : p.aux) {
        bool ok = true;
        for_each_aux_field([&](const char*, auto member) {
            if constexpr (!std::is_same_v<std::remove_cvref_t<decltype(a.*member)>, bool>) ok = ok && r.num(a.*member);
        });
        uint32_t flags = 0;
        if (!ok || !r.num(flags)) return false;
        int bit = 0;
        for_each_aux_field([&](const char*, auto member) {
            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a.*member)>, bool>) a.*member = (flags >> bit++) & 1;
        });
        if (static_cast<uint8_t>(a.ptr_type) > static_cast<uint8_t>(PtrType::Arena)) return false;
    }
    if (!get_records(r, p.subprogs) || !get_records(r, p.linfo) || !get_records(r, p.finfo)) return false;
    if (!r.count(n, 8)) return false;
    p.insn_arrays.resize(n);
    for (auto& a : p.insn_arrays) {
        uint32_t m = 0;
        if (!r.num(a.map_index) || !r.count(m, 8)) return false;
        a.entries.resize(m);
        for (auto& e : a.entries)
            if (!r.num(e.orig_off) || !r.num(e.xlated_off)) return false;
    }
    if (!get_records(r, p.pokes)) return false;
    if (!r.count(n, 14)) return false;
    p.kfuncs.resize(n);
    for (auto& k : p.kfuncs)
        if (!r.num(k.btf_id) || !r.num(k.offset) || !r.num(k.kind) || !r.str(k.name)) return false;
    if (!r.count(n, 25)) return false;
    p.maps.resize(n);
    for (auto& m : p.maps) {
        uint8_t flags = 0;
        if (!r.str(m.name) || !r.num(m.type) || !r.num(m.key_size) || !r.num(m.value_size) || !r.num(m.max_entries) ||
            !r.num(m.map_flags) || !r.num(flags))
            return false;
        m.bypass_spec_v1 = flags & 1;
        m.unpriv_array = (flags >> 1) & 1;
    }
    return r.ok();
}

Error truncated(const Reader& r) { return Error{"wire", "malformed program stream at byte " + std::to_string(r.pos())}; }

}  // namespace

std::string encode_program(const Program& p) {
    Writer w;
    put_program(w, p);
    return w.take();
}

Expected<Program> decode_program(std::string_view bytes) {
    Reader r(bytes);
    Program p;
    if (!get_program(r, p) || !r.at_end()) return truncated(r);
    return p;
}

std::string encode_result(const Expected<LoadedObject>& res) {
    Writer w;
    w.num(kMagicResult);
    w.num(static_cast<uint8_t>(res.ok()));
    if (!res.ok()) {
        w.str(res.error().where);
        w.str(res.error().message);
        return w.take();
    }
    const auto& o = *res;
    w.str(o.path);
    w.f64(o.open_ms);
    w.num(static_cast<uint32_t>(o.programs.size()));
    for (size_t i = 0; i < o.programs.size(); ++i) {
        put_program(w, o.programs[i]);
        const ProgramMeta& m = i < o.meta.size() ? o.meta[i] : ProgramMeta{};
        w.str(m.section);
        w.num(m.main_insns);
        w.num(static_cast<uint32_t>(m.subprog_names.size()));
        for (const auto& s : m.subprog_names) w.str(s);
    }
    return w.take();
}

Expected<LoadedObject> decode_result(std::string_view bytes) {
    Reader r(bytes);
    uint32_t magic = 0;
    uint8_t ok = 0;
    if (!r.num(magic) || magic != kMagicResult || !r.num(ok)) return truncated(r);
    if (!ok) {
        Error e;
        if (!r.str(e.where) || !r.str(e.message) || !r.at_end()) return truncated(r);
        return e;
    }
    LoadedObject o;
    uint32_t n = 0;
    if (!r.str(o.path) || !r.f64(o.open_ms) || !r.count(n, 4)) return truncated(r);
    o.programs.resize(n);
    o.meta.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
        uint32_t m = 0;
        if (!get_program(r, o.programs[i]) || !r.str(o.meta[i].section) || !r.num(o.meta[i].main_insns) || !r.count(m, 4))
            return truncated(r);
        o.meta[i].subprog_names.resize(m);
        for (auto& s : o.meta[i].subprog_names)
            if (!r.str(s)) return truncated(r);
    }
    if (!r.at_end()) return truncated(r);
    return o;
}

}  // namespace patchfuzz::loader
