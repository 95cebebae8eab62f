#pragma once
// The .BTF.ext func-info and line-info records of an object, per ELF section (uapi
// include/uapi/linux/btf.h layout: struct btf_ext_header, then per section
// {sec_name_off, num_info, records}). Records keep the object's byte offsets; the loader rebases
// them to instruction indices of each program. Section names come from the .BTF string table.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "bpf/program/program.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::loader {

struct BtfExtSection {
    std::vector<FuncInfo> finfo;  // insn_off in bytes from the section start
    std::vector<LineInfo> linfo;  // insn_off in bytes from the section start
};

// The .BTF header (struct btf_header: magic 0xeB9F, version 1, hdr_len, type and string sections
// inside the blob), checked before libbpf sees the object so a corrupted .BTF gets a precise
// message (".BTF has a bad magic 0x0000 (expected 0xeb9f)") instead of libbpf's generic one.
Status check_btf_header(std::span<const uint8_t> btf, const std::string& where);

// key: ELF section name. `btf` is the .BTF section (for its string table), `ext` the .BTF.ext one.
Expected<std::map<std::string, BtfExtSection>> read_btf_ext(std::span<const uint8_t> btf, std::span<const uint8_t> ext,
                                                            const std::string& where);

}  // namespace patchfuzz::loader
