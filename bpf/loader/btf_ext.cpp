#include "bpf/loader/btf_ext.hpp"

#include <cstdio>
#include <cstring>

namespace patchfuzz::loader {
namespace {

uint32_t u32_at(std::span<const uint8_t> b, uint64_t off) {
    uint32_t v = 0;
    std::memcpy(&v, b.data() + off, 4);
    return v;
}

constexpr uint16_t kBtfMagic = 0xeB9F;

// Walks one info block (func or line): rec_size, then {sec_name_off, num_info, num_info records}.
template <class Fn>
Status walk_block(std::span<const uint8_t> blk, uint32_t min_rec, const std::string& where, const char* what, Fn&& on_sec) {
    if (blk.empty()) return {};
    if (blk.size() < 4) return Error{where, std::string(".BTF.ext ") + what + " block too short"};
    const uint32_t rec = u32_at(blk, 0);
    if (rec < min_rec || rec % 4 != 0) return Error{where, std::string(".BTF.ext ") + what + " record size " + std::to_string(rec) + " is invalid"};
    uint64_t off = 4;
    while (off < blk.size()) {
        if (blk.size() - off < 8) return Error{where, std::string(".BTF.ext ") + what + " section header truncated"};
        const uint32_t name_off = u32_at(blk, off);
        const uint32_t n = u32_at(blk, off + 4);
        off += 8;
        if (uint64_t{n} * rec > blk.size() - off) return Error{where, std::string(".BTF.ext ") + what + " records truncated"};
        on_sec(name_off, blk.subspan(off, uint64_t{n} * rec), rec);
        off += uint64_t{n} * rec;
    }
    return {};
}

}  // namespace

Status check_btf_header(std::span<const uint8_t> btf, const std::string& where) {
    if (btf.size() < 24)
        return Error{where, ".BTF is " + std::to_string(btf.size()) + " bytes, shorter than its 24-byte header"};
    uint16_t magic = 0;
    std::memcpy(&magic, btf.data(), 2);
    if (magic != kBtfMagic) {
        char b[64];
        std::snprintf(b, sizeof b, ".BTF has a bad magic 0x%04x (expected 0x%04x)", magic, kBtfMagic);
        return Error{where, b};
    }
    if (btf[2] != 1) return Error{where, ".BTF version " + std::to_string(btf[2]) + " is not 1"};
    const uint32_t hdr = u32_at(btf, 4);
    if (hdr < 24 || hdr > btf.size()) return Error{where, ".BTF header length " + std::to_string(hdr) + " is invalid"};
    const uint64_t body = btf.size() - hdr;
    if (uint64_t{u32_at(btf, 8)} + u32_at(btf, 12) > body) return Error{where, ".BTF type section out of bounds"};
    if (uint64_t{u32_at(btf, 16)} + u32_at(btf, 20) > body) return Error{where, ".BTF string table out of bounds"};
    return {};
}

Expected<std::map<std::string, BtfExtSection>> read_btf_ext(std::span<const uint8_t> btf, std::span<const uint8_t> ext,
                                                            const std::string& where) {
    std::map<std::string, BtfExtSection> out;
    if (ext.empty()) return out;
    // .BTF header: magic u16, version u8, flags u8, hdr_len u32, type_off, type_len, str_off, str_len.
    if (btf.size() < 24) return Error{where, ".BTF.ext without a usable .BTF section"};
    uint16_t magic = 0;
    std::memcpy(&magic, btf.data(), 2);
    if (magic != kBtfMagic) return Error{where, ".BTF has a bad magic"};
    const uint32_t bhdr = u32_at(btf, 4), str_off = u32_at(btf, 16), str_len = u32_at(btf, 20);
    if (uint64_t{bhdr} + str_off + str_len > btf.size()) return Error{where, ".BTF string table out of bounds"};
    auto strs = btf.subspan(uint64_t{bhdr} + str_off, str_len);
    auto name_at = [&](uint32_t off) -> std::string {
        if (off >= strs.size()) return {};
        const auto* p = reinterpret_cast<const char*>(strs.data() + off);
        return std::string(p, strnlen(p, strs.size() - off));
    };
    // .BTF.ext header: magic u16, version u8, flags u8, hdr_len u32, func_info_off/len, line_info_off/len.
    if (ext.size() < 24) return Error{where, ".BTF.ext header truncated"};
    std::memcpy(&magic, ext.data(), 2);
    if (magic != kBtfMagic) return Error{where, ".BTF.ext has a bad magic"};
    const uint32_t hdr = u32_at(ext, 4);
    if (hdr < 24 || hdr > ext.size()) return Error{where, ".BTF.ext header length " + std::to_string(hdr) + " is invalid"};
    auto body = ext.subspan(hdr);
    auto block = [&](uint32_t off, uint32_t len, const char* what) -> Expected<std::span<const uint8_t>> {
        if (uint64_t{off} + len > body.size()) return Error{where, std::string(".BTF.ext ") + what + " block out of bounds"};
        return body.subspan(off, len);
    };
    auto fblk = block(u32_at(ext, 8), u32_at(ext, 12), "func info");
    if (!fblk) return fblk.error();
    auto lblk = block(u32_at(ext, 16), u32_at(ext, 20), "line info");
    if (!lblk) return lblk.error();
    auto st = walk_block(*fblk, 8, where, "func info", [&](uint32_t name_off, std::span<const uint8_t> recs, uint32_t rec) {
        auto& sec = out[name_at(name_off)];
        for (uint64_t o = 0; o + rec <= recs.size(); o += rec)
            sec.finfo.push_back(FuncInfo{.insn_off = u32_at(recs, o), .type_id = u32_at(recs, o + 4)});
    });
    if (!st) return st.error();
    st = walk_block(*lblk, 16, where, "line info", [&](uint32_t name_off, std::span<const uint8_t> recs, uint32_t rec) {
        auto& sec = out[name_at(name_off)];
        for (uint64_t o = 0; o + rec <= recs.size(); o += rec)
            sec.linfo.push_back(LineInfo{.insn_off = u32_at(recs, o),
                                         .file_name_off = u32_at(recs, o + 4),
                                         .line_off = u32_at(recs, o + 8),
                                         .line_col = u32_at(recs, o + 12)});
    });
    if (!st) return st.error();
    return out;
}

}  // namespace patchfuzz::loader
