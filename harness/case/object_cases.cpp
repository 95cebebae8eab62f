#include "harness/case/object_cases.hpp"

#include <cstring>
#include <fstream>

#include "bpf/loader/loader.hpp"
#include "bpf/passes/infer_facts.hpp"

namespace patchfuzz::harness {

bool is_elf_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, sizeof magic) && std::memcmp(magic, "\x7f" "ELF", 4) == 0;
}

Expected<std::vector<Case>> cases_from_object(const std::string& path, bool privileged) {
    auto obj = loader::load_object(path, loader::LoadOptions{.privileged = privileged});
    if (!obj) return obj.error();
    if (obj->programs.empty()) return Error{path, "no programs in the object"};
    std::vector<Case> out;
    for (size_t i = 0; i < obj->programs.size(); ++i) {
        Case c;
        c.path = path;
        c.program = std::move(obj->programs[i]);
        passes::infer_facts(c.program);
        c.options.privileged = privileged;
        c.comments.push_back("program " + c.program.name + " (section " + obj->meta[i].section + ") of " + path);
        out.push_back(std::move(c));
    }
    return out;
}

Expected<std::vector<Case>> read_corpus_file(const std::string& path) {
    if (is_elf_file(path)) return cases_from_object(path);
    auto c = read_case(path);
    if (!c) return c.error();
    return std::vector<Case>{std::move(*c)};
}

}  // namespace patchfuzz::harness
