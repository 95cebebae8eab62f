#pragma once
// A small, bounds-checked reader for 64-bit little-endian ELF relocatable objects (EM_BPF): the
// section table, the symbol table and SHT_REL relocations. libbpf reads the same things but does
// not expose relocations or per-function extents at open time, so the loader reads them itself.
// Every offset is checked against the file size; malformed input is an Error, never a crash.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/util/error.hpp"

namespace patchfuzz::loader {

struct ElfSection {
    uint32_t index = 0;
    std::string name;
    uint32_t type = 0;   // SHT_*
    uint64_t flags = 0;  // SHF_*
    uint64_t offset = 0;
    uint64_t size = 0;
    uint32_t link = 0;
    uint32_t info = 0;
    uint64_t entsize = 0;
};

struct ElfSymbol {
    std::string name;
    uint64_t value = 0;
    uint64_t size = 0;
    uint16_t shndx = 0;   // SHN_UNDEF (0) for externs
    uint8_t type = 0;     // STT_*
    uint8_t bind = 0;     // STB_*
};

struct ElfRel {
    uint64_t offset = 0;  // byte offset inside the target section
    uint32_t sym = 0;     // index into ElfFile::symbols
    uint32_t type = 0;    // R_BPF_*
};

struct ElfFile {
    std::vector<uint8_t> bytes;
    uint16_t machine = 0;
    std::vector<ElfSection> sections;
    std::vector<ElfSymbol> symbols;
    // per section index: the relocations that apply to it (from every SHT_REL whose sh_info names it)
    std::vector<std::vector<ElfRel>> rels;

    [[nodiscard]] const ElfSection* section_by_name(std::string_view name) const;
    // The section's bytes (empty for SHT_NOBITS); offsets were checked when the file was read.
    [[nodiscard]] std::span<const uint8_t> data(const ElfSection& s) const;
};

// Reads and checks the file (class, byte order, type, table bounds). `where` prefixes errors.
Expected<ElfFile> read_elf(std::vector<uint8_t> bytes, const std::string& where);

}  // namespace patchfuzz::loader
