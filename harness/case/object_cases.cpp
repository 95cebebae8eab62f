#include "harness/case/object_cases.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
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

Expected<std::vector<Case>> read_seeds(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) return Error{path, "no such file or directory"};
    if (!fs::is_directory(path, ec)) return read_corpus_file(path);
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec)) files.push_back(it->path());
    if (ec) return Error{path, "cannot read the directory: " + ec.message()};
    std::sort(files.begin(), files.end());  // the seeds' order is part of what a campaign seed replays
    std::vector<Case> out;
    for (const fs::path& f : files) {
        if (f.extension() != ".case" && !is_elf_file(f.string()))
            return Error{f.string(), "neither a .case file nor a BPF object (ELF)"};
        auto cases = read_corpus_file(f.string());
        if (!cases) return cases.error();
        for (Case& c : *cases) out.push_back(std::move(c));
    }
    if (out.empty()) return Error{path, "no .case file or BPF object in the directory"};
    return out;
}

}  // namespace patchfuzz::harness
