#include "bpf/loader/elf_reader.hpp"

#include <elf.h>

#include <cstdio>
#include <cstring>

namespace patchfuzz::loader {
namespace {

template <class T>
bool read_at(const std::vector<uint8_t>& b, uint64_t off, T& out) {
    if (off > b.size() || b.size() - off < sizeof(T)) return false;
    std::memcpy(&out, b.data() + off, sizeof(T));
    return true;
}

bool in_bounds(uint64_t size, uint64_t off, uint64_t len) { return off <= size && len <= size - off; }

std::string str_at(std::span<const uint8_t> strtab, uint64_t off) {
    if (off >= strtab.size()) return {};
    const auto* p = reinterpret_cast<const char*>(strtab.data() + off);
    return std::string(p, strnlen(p, strtab.size() - off));
}

}  // namespace

const ElfSection* ElfFile::section_by_name(std::string_view name) const {
    for (const auto& s : sections)
        if (s.name == name) return &s;
    return nullptr;
}

std::span<const uint8_t> ElfFile::data(const ElfSection& s) const {
    if (s.type == SHT_NOBITS) return {};
    return std::span<const uint8_t>(bytes.data() + s.offset, s.size);
}

Expected<ElfFile> read_elf(std::vector<uint8_t> bytes, const std::string& where) {
    ElfFile f;
    f.bytes = std::move(bytes);
    const auto& b = f.bytes;
    Elf64_Ehdr eh{};
    if (!read_at(b, 0, eh)) return Error{where, "not an ELF file (" + std::to_string(b.size()) + " bytes)"};
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return Error{where, "not an ELF file (bad magic)"};
    if (eh.e_ident[EI_CLASS] != ELFCLASS64) return Error{where, "not a 64-bit ELF file (class " + std::to_string(eh.e_ident[EI_CLASS]) + ")"};
    if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return Error{where, "not a little-endian ELF file"};
    if (eh.e_machine != EM_BPF) return Error{where, "ELF machine " + std::to_string(eh.e_machine) + " is not BPF (247)"};
    if (eh.e_type != ET_REL) return Error{where, "not a relocatable ELF object (type " + std::to_string(eh.e_type) + ")"};
    f.machine = eh.e_machine;
    if (eh.e_shentsize != sizeof(Elf64_Shdr)) return Error{where, "bad section header size " + std::to_string(eh.e_shentsize)};
    if (!in_bounds(b.size(), eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr)))
        return Error{where, "section header table out of bounds"};
    std::vector<Elf64_Shdr> sh(eh.e_shnum);
    for (uint32_t i = 0; i < eh.e_shnum; ++i) read_at(b, eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), sh[i]);
    for (uint32_t i = 0; i < eh.e_shnum; ++i) {
        if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_type != SHT_NULL && !in_bounds(b.size(), sh[i].sh_offset, sh[i].sh_size))
            return Error{where, "section " + std::to_string(i) + " out of bounds"};
    }
    if (eh.e_shstrndx >= eh.e_shnum) return Error{where, "bad section name table index"};
    const auto& shstr = sh[eh.e_shstrndx];
    std::span<const uint8_t> shstrtab(b.data() + shstr.sh_offset, shstr.sh_type == SHT_NOBITS ? 0 : shstr.sh_size);
    f.sections.resize(eh.e_shnum);
    for (uint32_t i = 0; i < eh.e_shnum; ++i) {
        auto& s = f.sections[i];
        s.index = i;
        s.name = str_at(shstrtab, sh[i].sh_name);
        s.type = sh[i].sh_type;
        s.flags = sh[i].sh_flags;
        s.offset = sh[i].sh_offset;
        s.size = sh[i].sh_size;
        s.link = sh[i].sh_link;
        s.info = sh[i].sh_info;
        s.entsize = sh[i].sh_entsize;
    }
    // Symbol table (there is exactly one in a relocatable object).
    for (const auto& s : f.sections) {
        if (s.type != SHT_SYMTAB) continue;
        if (s.entsize != sizeof(Elf64_Sym)) return Error{where, "bad symbol table entry size"};
        if (s.link >= f.sections.size()) return Error{where, "bad symbol string table index"};
        auto strtab = f.data(f.sections[s.link]);
        const uint64_t n = s.size / sizeof(Elf64_Sym);
        f.symbols.reserve(n);
        for (uint64_t i = 0; i < n; ++i) {
            Elf64_Sym sym{};
            read_at(b, s.offset + i * sizeof(Elf64_Sym), sym);
            f.symbols.push_back(ElfSymbol{.name = str_at(strtab, sym.st_name),
                                          .value = sym.st_value,
                                          .size = sym.st_size,
                                          .shndx = sym.st_shndx,
                                          .type = static_cast<uint8_t>(ELF64_ST_TYPE(sym.st_info)),
                                          .bind = static_cast<uint8_t>(ELF64_ST_BIND(sym.st_info))});
        }
        break;
    }
    f.rels.resize(f.sections.size());
    for (const auto& s : f.sections) {
        if (s.type != SHT_REL) continue;
        if (s.entsize != sizeof(Elf64_Rel)) return Error{where, "relocation section '" + s.name + "': bad entry size"};
        if (s.info >= f.sections.size()) return Error{where, "relocation section '" + s.name + "': bad target section"};
        const uint64_t n = s.size / sizeof(Elf64_Rel);
        auto& out = f.rels[s.info];
        for (uint64_t i = 0; i < n; ++i) {
            Elf64_Rel r{};
            read_at(b, s.offset + i * sizeof(Elf64_Rel), r);
            const auto sym = static_cast<uint32_t>(ELF64_R_SYM(r.r_info));
            if (sym >= f.symbols.size())
                return Error{where, "relocation section '" + s.name + "': symbol index " + std::to_string(sym) + " out of range"};
            const ElfSection& target = f.sections[s.info];
            if (target.type != SHT_NOBITS && r.r_offset >= target.size) {
                char off[32];
                std::snprintf(off, sizeof off, "0x%llx", static_cast<unsigned long long>(r.r_offset));
                return Error{where, "relocation section '" + s.name + "': entry " + std::to_string(i) + " at offset " + off +
                                        " lies outside section '" + target.name + "' (" + std::to_string(target.size) + " bytes)"};
            }
            out.push_back(ElfRel{.offset = r.r_offset, .sym = sym, .type = static_cast<uint32_t>(ELF64_R_TYPE(r.r_info))});
        }
    }
    return f;
}

}  // namespace patchfuzz::loader
