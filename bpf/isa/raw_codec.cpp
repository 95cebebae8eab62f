#include "bpf/isa/raw_codec.hpp"

#include <string>

namespace patchfuzz::isa {

std::vector<uint8_t> encode(std::span<const Insn> insns) {
    std::vector<uint8_t> out;
    out.reserve(insns.size() * 8);
    for (const Insn& i : insns) {
        const auto off = static_cast<uint16_t>(i.off);
        const auto imm = static_cast<uint32_t>(i.imm);
        out.push_back(i.code);
        out.push_back(static_cast<uint8_t>((i.src_reg << 4) | i.dst_reg));
        out.push_back(static_cast<uint8_t>(off & 0xff));
        out.push_back(static_cast<uint8_t>(off >> 8));
        for (int s = 0; s < 32; s += 8) out.push_back(static_cast<uint8_t>((imm >> s) & 0xff));
    }
    return out;
}

Expected<std::vector<Insn>> decode(std::span<const uint8_t> bytes) {
    if (bytes.size() % 8 != 0) {
        const size_t whole = bytes.size() - bytes.size() % 8;
        return Error{"byte " + std::to_string(whole),
                     std::to_string(bytes.size() % 8) + " trailing bytes, not a whole insn"};
    }
    std::vector<Insn> out(bytes.size() / 8);
    for (size_t k = 0; k < out.size(); ++k) {
        const uint8_t* b = bytes.data() + 8 * k;
        Insn& i = out[k];
        i.code = b[0];
        i.dst_reg = b[1] & 0xf;
        i.src_reg = b[1] >> 4;
        i.off = static_cast<int16_t>(static_cast<uint16_t>(b[2] | (b[3] << 8)));
        i.imm = static_cast<int32_t>(static_cast<uint32_t>(b[4]) | (static_cast<uint32_t>(b[5]) << 8) |
                                     (static_cast<uint32_t>(b[6]) << 16) | (static_cast<uint32_t>(b[7]) << 24));
    }
    return out;
}

}  // namespace patchfuzz::isa
