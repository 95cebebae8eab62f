#include "bpf/loader/loader.hpp"

#include <bpf/libbpf.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/loader/btf_ext.hpp"
#include "bpf/loader/elf_reader.hpp"
#include "bpf/loader/program_wire.hpp"
#include "bpf/util/read_file.hpp"

namespace patchfuzz::loader {
namespace {

constexpr uint32_t kFirstUnknownKfuncId = 80000;
constexpr unsigned kChildTimeoutSeconds = 120;

// libbpf's warnings, captured instead of printed: the last one becomes the error message.
std::string g_libbpf_last;
// libbpf states some reasons for refusing an object only at debug level (e.g. "sec '.maps':
// failed to find ELF symbol for VAR 'x'"): the last debug line is kept too, for an open that fails
// without a warning.
std::string g_libbpf_last_debug;

int capture_print(enum libbpf_print_level level, const char* fmt, va_list ap) {
    char buf[1024];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    std::string s(buf);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    if (s.rfind("libbpf: ", 0) == 0) s.erase(0, 8);
    if (s.empty()) return 0;
    if (level == LIBBPF_WARN)
        g_libbpf_last = s;
    else if (level == LIBBPF_DEBUG)
        g_libbpf_last_debug = s;
    return 0;
}

bool is_data_section(const ElfSection& s) {
    if (s.flags & SHF_EXECINSTR) return false;
    if (s.type != SHT_PROGBITS && s.type != SHT_NOBITS) return false;
    auto starts = [&](std::string_view p) {
        return s.name == p || (s.name.size() > p.size() && s.name.compare(0, p.size(), p) == 0 && s.name[p.size()] == '.');
    };
    return starts(".data") || starts(".rodata") || starts(".bss");
}

// The object-wide map list in libbpf order, and how ELF symbols/sections name them.
struct ObjectMaps {
    std::vector<MapDef> defs;
    std::map<std::string, int32_t> by_symbol;   // `.maps` variable name -> index
    std::map<uint32_t, int32_t> by_section;     // data section index -> index
};

ObjectMaps collect_maps(bpf_object* obj, const ElfFile& elf) {
    ObjectMaps m;
    std::map<const bpf_map*, int32_t> index;
    bpf_map* map = nullptr;
    bpf_object__for_each_map(map, obj) {
        index[map] = static_cast<int32_t>(m.defs.size());
        m.defs.push_back(MapDef{.name = bpf_map__name(map),
                                .type = static_cast<uint32_t>(bpf_map__type(map)),
                                .key_size = bpf_map__key_size(map),
                                .value_size = bpf_map__value_size(map),
                                .max_entries = bpf_map__max_entries(map),
                                .map_flags = bpf_map__map_flags(map)});
        if (!bpf_map__is_internal(map)) m.by_symbol[bpf_map__name(map)] = index[map];
    }
    // libbpf 1.x finds internal maps by their section name (map->real_name); we name them so too,
    // because ".rodata" reads better in a .case than the truncated "objname.rodata".
    for (const auto& s : elf.sections) {
        if (!is_data_section(s)) continue;
        const bpf_map* im = bpf_object__find_map_by_name(obj, s.name.c_str());
        if (!im || !index.count(im)) continue;
        const int32_t i = index[im];
        m.by_section[s.index] = i;
        m.defs[static_cast<size_t>(i)].name = s.name;
    }
    return m;
}

// One function of the object: a contiguous run of insns in an executable section.
struct Func {
    uint32_t shndx = 0;
    uint32_t start = 0;  // insn index in its section
    uint32_t count = 0;
    std::string name;
};

// A function copied into the program being built (libbpf: prog->sub_insn_off).
struct Piece {
    const Func* func = nullptr;
    uint32_t pos = 0;
};

struct Builder {
    const ElfFile& elf;
    const ObjectMaps& maps;
    const std::map<std::pair<uint32_t, uint32_t>, Func>& funcs;  // (shndx, start) -> func
    const std::vector<std::map<uint64_t, const ElfRel*>>& rel_at;  // per section: byte offset -> rel
    std::map<std::string, int32_t>& unknown_kfuncs;              // object-wide fresh ids
    std::string where;

    std::vector<isa::Insn> insns;
    std::vector<Piece> pieces;
    std::map<const Func*, uint32_t> appended;
    std::set<uint32_t> callback_starts;
    std::vector<KfuncDesc> kfuncs;

    isa::Insn insn_in_section(const Func& f, uint32_t i) const {
        isa::Insn in{};
        std::memcpy(&in, elf.bytes.data() + elf.sections[f.shndx].offset + uint64_t{f.start + i} * 8, 8);
        return in;
    }

    Expected<uint32_t> append(const Func& f) {
        if (auto it = appended.find(&f); it != appended.end()) return it->second;
        const auto pos = static_cast<uint32_t>(insns.size());
        appended[&f] = pos;
        for (uint32_t i = 0; i < f.count; ++i) insns.push_back(insn_in_section(f, i));
        pieces.push_back(Piece{&f, pos});
        auto st = relocate(pieces.size() - 1);
        if (!st) return st.error();
        return pos;
    }

    Expected<const Func*> func_at(uint32_t shndx, int64_t start, uint32_t from_pos) const {
        auto it = start < 0 ? funcs.end() : funcs.find({shndx, static_cast<uint32_t>(start)});
        if (it == funcs.end())
            return Error{where, "insn " + std::to_string(from_pos) + ": call target " + std::to_string(start) + " in section '" +
                                    elf.sections[shndx].name + "' is not the start of a function"};
        return &it->second;
    }

    int32_t kfunc_id(const std::string& name) {
        for (const auto& k : kfuncs)
            if (k.name == name) return k.btf_id;
        KfuncDesc d{.name = name};
        if (auto info = kfunc::by_name(name)) {
            d.btf_id = info->btf_id;
            d.kind = static_cast<uint32_t>(info->kind);
        } else {
            auto [it, fresh] = unknown_kfuncs.emplace(name, 0);
            if (fresh) it->second = static_cast<int32_t>(kFirstUnknownKfuncId + unknown_kfuncs.size() - 1);
            d.btf_id = it->second;
            d.kind = static_cast<uint32_t>(kfunc::Kind::Unknown);
        }
        kfuncs.push_back(d);
        return d.btf_id;
    }

    // bpf_object__reloc_code + bpf_object__relocate_data for one piece: resolve its relocations and
    // append (depth first, as libbpf does) every subprogram it calls or takes the address of.
    Status relocate(size_t piece_idx) {
        const Func& f = *pieces[piece_idx].func;
        const uint32_t base = pieces[piece_idx].pos;
        const auto& rels = rel_at[f.shndx];
        for (uint32_t j = 0; j < f.count; ++j) {
            const uint32_t abs = base + j;
            const uint64_t byte_off = uint64_t{f.start + j} * 8;
            const ElfRel* rel = nullptr;
            if (auto it = rels.find(byte_off); it != rels.end()) rel = it->second;
            const isa::Insn in = insns[abs];
            const std::string at = "prog '" + pieces[0].func->name + "' insn " + std::to_string(abs);
            if (isa::is_ldimm64(in)) {
                if (j + 1 >= f.count) return Error{where, at + ": ld_imm64 truncated at the end of function '" + f.name + "'"};
                if (rel) {
                    const ElfSymbol& sym = elf.symbols[rel->sym];
                    if (sym.shndx == SHN_UNDEF || sym.shndx >= elf.sections.size())
                        return Error{where, at + ": ld_imm64 of extern '" + sym.name + "' is not supported"};
                    const ElfSection& ts = elf.sections[sym.shndx];
                    if (ts.name == ".maps" || ts.name == "maps") {
                        auto m = maps.by_symbol.find(sym.name);
                        if (m == maps.by_symbol.end()) return Error{where, at + ": reference to unknown map '" + sym.name + "'"};
                        insns[abs].src_reg = BPF_PSEUDO_MAP_FD;
                        insns[abs].imm = m->second;
                        insns[abs + 1].imm = 0;
                    } else if (auto d = maps.by_section.find(sym.shndx); d != maps.by_section.end()) {
                        insns[abs + 1].imm = static_cast<int32_t>(static_cast<int64_t>(in.imm) + static_cast<int64_t>(sym.value));
                        insns[abs].src_reg = BPF_PSEUDO_MAP_VALUE;
                        insns[abs].imm = d->second;
                    } else if (ts.flags & SHF_EXECINSTR) {
                        // RELO_SUBPROG_ADDR: symbol offset + imm is a byte offset in the section.
                        const int64_t byte = static_cast<int64_t>(sym.value) + in.imm;
                        if (byte % 8) return Error{where, at + ": callback address is not insn-aligned"};
                        auto callee = func_at(sym.shndx, byte / 8, abs);
                        if (!callee) return callee.error();
                        auto pos = append(**callee);
                        if (!pos) return pos.error();
                        insns[abs].src_reg = BPF_PSEUDO_FUNC;
                        insns[abs].imm = static_cast<int32_t>(static_cast<int64_t>(*pos) - abs - 1);
                        callback_starts.insert(*pos);
                    } else {
                        return Error{where, at + ": relocation against '" + sym.name + "' in section '" + ts.name + "' is not supported"};
                    }
                }
                ++j;
                continue;
            }
            if (!isa::is_call(in) || in.src_reg != BPF_PSEUDO_CALL) continue;
            int64_t target = 0;
            uint32_t shndx = f.shndx;
            if (rel) {
                const ElfSymbol& sym = elf.symbols[rel->sym];
                if (sym.shndx == SHN_UNDEF) {  // RELO_EXTERN_FUNC: a kfunc
                    insns[abs] = isa::call_kfunc(kfunc_id(sym.name));
                    continue;
                }
                if (sym.shndx >= elf.sections.size() || !(elf.sections[sym.shndx].flags & SHF_EXECINSTR))
                    return Error{where, at + ": call relocation against non-code symbol '" + sym.name + "'"};
                shndx = sym.shndx;
                target = static_cast<int64_t>(sym.value / 8) + in.imm + 1;
            } else {
                target = int64_t{f.start} + j + in.imm + 1;  // static callee in the same section
            }
            auto callee = func_at(shndx, target, abs);
            if (!callee) return callee.error();
            auto pos = append(**callee);
            if (!pos) return pos.error();
            insns[abs].imm = static_cast<int32_t>(static_cast<int64_t>(*pos) - abs - 1);
        }
        return {};
    }
};

}  // namespace

namespace {

// The conversion in the calling process, before the load's privilege is applied.
Expected<LoadedObject> open_and_convert(const std::string& path) {
    const auto t0 = std::chrono::steady_clock::now();
    auto text = read_file(path);
    if (!text) return text.error();
    if (text->empty()) return Error{path, "empty file (0 bytes)"};
    // Our bounds-checked ELF reader runs before libbpf: a broken header, section table, symbol
    // table or relocation gets its precise message here instead of libbpf's last warning.
    auto elf = read_elf(std::vector<uint8_t>(text->begin(), text->end()), path);
    if (!elf) return elf.error();
    std::map<std::pair<uint32_t, uint32_t>, Func> funcs;
    for (const auto& s : elf->symbols) {
        if (s.shndx == SHN_UNDEF || s.shndx >= elf->sections.size()) continue;
        const auto& sec = elf->sections[s.shndx];
        // Data symbols (maps in .maps, globals) must lie inside their section too: libbpf would
        // otherwise fail later with a message that names neither (e.g. a zero-size .maps).
        if (s.type == STT_OBJECT && sec.type != SHT_NOBITS && (s.value + s.size > sec.size || s.value + s.size < s.value))
            return Error{path, "symbol '" + s.name + "' lies outside its section '" + sec.name + "' (" +
                                   std::to_string(sec.size) + " bytes)"};
        if (s.type != STT_FUNC) continue;
        if (!(sec.flags & SHF_EXECINSTR) || s.value % 8 || s.size % 8 || s.value + s.size > sec.size || s.value + s.size < s.value)
            return Error{path, "function '" + s.name + "' lies outside its section '" + sec.name + "'"};
        funcs[{s.shndx, static_cast<uint32_t>(s.value / 8)}] =
            Func{.shndx = s.shndx, .start = static_cast<uint32_t>(s.value / 8), .count = static_cast<uint32_t>(s.size / 8), .name = s.name};
    }
    const auto* btf_sec = elf->section_by_name(".BTF");
    if (btf_sec)
        if (auto st = check_btf_header(elf->data(*btf_sec), path); !st) return st.error();
    std::map<std::string, BtfExtSection> ext;
    if (const auto* e = elf->section_by_name(".BTF.ext")) {
        auto parsed = read_btf_ext(btf_sec ? elf->data(*btf_sec) : std::span<const uint8_t>{}, elf->data(*e), path);
        if (!parsed) return parsed.error();
        ext = std::move(*parsed);
    }

    libbpf_set_print(capture_print);
    g_libbpf_last.clear();
    g_libbpf_last_debug.clear();
    bpf_object* obj = bpf_object__open_file(path.c_str(), nullptr);
    const int open_err = obj ? 0 : errno;
    if (!obj) {
        const std::string& why = g_libbpf_last.empty() ? g_libbpf_last_debug : g_libbpf_last;
        std::string msg = why.empty() ? std::string("libbpf could not open the object: ") + std::strerror(open_err)
                                      : "libbpf: " + why;
        return Error{path, msg};
    }
    struct Closer {
        bpf_object* o;
        ~Closer() { bpf_object__close(o); }
    } closer{obj};

    const ObjectMaps maps = collect_maps(obj, *elf);

    std::vector<std::map<uint64_t, const ElfRel*>> rel_at(elf->sections.size());
    for (size_t i = 0; i < elf->rels.size(); ++i)
        for (const auto& r : elf->rels[i]) rel_at[i][r.offset] = &r;


    LoadedObject out;
    out.path = path;
    std::map<std::string, int32_t> unknown_kfuncs;
    bpf_program* prog = nullptr;
    bpf_object__for_each_program(prog, obj) {
        const std::string name = bpf_program__name(prog);
        const std::string sec_name = bpf_program__section_name(prog);
        const Func* main = nullptr;
        // A "?" section (SEC("?tc"): not auto-loaded) keeps the "?" in its ELF name; libbpf's
        // section name drops it.
        auto same_section = [&](const std::string& elf_name) { return elf_name == sec_name || elf_name == "?" + sec_name; };
        for (const auto& [key, fn] : funcs)
            if (fn.name == name && same_section(elf->sections[fn.shndx].name)) main = &fn;
        if (!main) return Error{path, "program '" + name + "': no function symbol in section '" + sec_name + "'"};
        const size_t cnt = bpf_program__insn_cnt(prog);
        const bpf_insn* raw = bpf_program__insns(prog);
        if (cnt != main->count || !raw)
            return Error{path, "program '" + name + "': libbpf reports " + std::to_string(cnt) + " insns, the symbol " +
                                   std::to_string(main->count)};

        Builder b{.elf = *elf, .maps = maps, .funcs = funcs, .rel_at = rel_at, .unknown_kfuncs = unknown_kfuncs, .where = path};
        b.insns.assign(raw, raw + cnt);
        b.appended[main] = 0;
        b.pieces.push_back(Piece{main, 0});
        if (auto st = b.relocate(0); !st) return st.error();

        // Maps: only those this program references, in object order; imm becomes their index.
        std::set<int32_t> used;
        for (size_t i = 0; i < b.insns.size(); ++i)
            if (isa::is_ldimm64(b.insns[i]) && (b.insns[i].src_reg == BPF_PSEUDO_MAP_FD || b.insns[i].src_reg == BPF_PSEUDO_MAP_VALUE))
                used.insert(b.insns[i].imm), ++i;
        std::map<int32_t, int32_t> remap;
        std::vector<MapDef> prog_maps;
        for (int32_t u : used) {
            remap[u] = static_cast<int32_t>(prog_maps.size());
            prog_maps.push_back(maps.defs[static_cast<size_t>(u)]);
        }
        for (size_t i = 0; i < b.insns.size(); ++i)
            if (isa::is_ldimm64(b.insns[i])) {
                if (b.insns[i].src_reg == BPF_PSEUDO_MAP_FD || b.insns[i].src_reg == BPF_PSEUDO_MAP_VALUE) b.insns[i].imm = remap[b.insns[i].imm];
                ++i;
            }

        Program p = make_program(std::move(b.insns));
        p.name = name;
        p.prog_type = static_cast<uint32_t>(bpf_program__type(prog));
        p.maps = std::move(prog_maps);
        p.kfuncs = std::move(b.kfuncs);
        // Subprogs: exactly the appended pieces (every one is a call or callback target).
        p.subprogs.clear();
        ProgramMeta meta{.section = sec_name, .main_insns = main->count};
        for (const auto& pc : b.pieces) {
            p.subprogs.push_back(SubprogInfo{.start = pc.pos, .is_cb = b.callback_starts.count(pc.pos) > 0});
            meta.subprog_names.push_back(pc.func->name);
        }
        p.subprogs.push_back(SubprogInfo{.start = p.len()});
        // .BTF.ext records of each piece, rebased to where the piece landed (libbpf: adjust_prog_btf_ext_info).
        for (const auto& pc : b.pieces) {
            auto it = ext.find(elf->sections[pc.func->shndx].name);
            if (it == ext.end()) continue;
            const uint64_t lo = uint64_t{pc.func->start} * 8, hi = lo + uint64_t{pc.func->count} * 8;
            for (auto fi : it->second.finfo)
                if (fi.insn_off >= lo && fi.insn_off < hi && fi.insn_off % 8 == 0) {
                    fi.insn_off = static_cast<uint32_t>((fi.insn_off - lo) / 8 + pc.pos);
                    p.finfo.push_back(fi);
                }
            for (auto li : it->second.linfo)
                if (li.insn_off >= lo && li.insn_off < hi && li.insn_off % 8 == 0) {
                    li.insn_off = static_cast<uint32_t>((li.insn_off - lo) / 8 + pc.pos);
                    p.linfo.push_back(li);
                }
        }
        // linfo_idx: first line-info record of each subprog (check_btf_line).
        size_t li = 0;
        for (auto& s : p.subprogs) {
            while (li < p.linfo.size() && p.linfo[li].insn_off < s.start) ++li;
            s.linfo_idx = static_cast<uint32_t>(li);
        }
        out.programs.push_back(std::move(p));
        out.meta.push_back(std::move(meta));
    }
    out.open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

}  // namespace

// The loading process's privilege decides each map's bypass_spec_v1 (the kernel sets it at map
// creation from bpf_bypass_spec_v1(): a CAP_PERFMON creator's maps skip the Spectre v1 index mask).
void apply_privilege(LoadedObject& o, const LoadOptions& opts) {
    for (auto& p : o.programs)
        for (auto& m : p.maps) m.bypass_spec_v1 = opts.privileged;
}

Expected<LoadedObject> load_object_in_process(const std::string& path, const LoadOptions& opts) {
    auto res = open_and_convert(path);
    if (res) apply_privilege(*res, opts);
    return res;
}

Expected<LoadedObject> load_object(const std::string& path, const LoadOptions& opts) {
    if (!opts.isolate) return load_object_in_process(path, opts);
    const auto t0 = std::chrono::steady_clock::now();
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return Error{path, std::string("pipe: ") + std::strerror(errno)};
    const pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return Error{path, std::string("fork: ") + std::strerror(errno)};
    }
    if (pid == 0) {
        // Child: libbpf may crash or hang on a malformed object; only this process dies.
        close(fds[0]);
        alarm(kChildTimeoutSeconds);
        const rlimit no_core{0, 0};
        setrlimit(RLIMIT_CORE, &no_core);  // a libbpf crash is expected here, not worth a core file
        if (opts.test_raise_signal) {
            signal(opts.test_raise_signal, SIG_DFL);
            raise(opts.test_raise_signal);
        }
        const std::string bytes = encode_result(load_object_in_process(path, opts));
        size_t off = 0;
        while (off < bytes.size()) {
            const ssize_t w = write(fds[1], bytes.data() + off, bytes.size() - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) _exit(3);
            off += static_cast<size_t>(w);
        }
        _exit(0);
    }
    close(fds[1]);
    std::string bytes;
    char buf[65536];
    for (;;) {
        const ssize_t r = read(fds[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        bytes.append(buf, static_cast<size_t>(r));
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        if (sig == SIGALRM)
            return Error{path, "libbpf did not finish opening the object within " + std::to_string(kChildTimeoutSeconds) + " s"};
        return Error{path, "libbpf crashed (signal " + std::to_string(sig) + ") while opening the object"};
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return Error{path, "loader child process failed (exit status " + std::to_string(WEXITSTATUS(status)) + ")"};
    auto res = decode_result(bytes);
    if (res) res->open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return res;
}

}  // namespace patchfuzz::loader
