// The libbpf loader on our own BPF C objects (tests/bpf_c, built into build/bpf_objs) and on
// malformed objects derived from them at run time.
#include "bpf/loader/loader.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <csignal>
#include <cstring>
#include <map>
#include <set>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/loader/lookup_scan.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::loader {
namespace {

std::string obj(const std::string& stem) { return std::string(PATCHFUZZ_BINARY_DIR) + "/bpf_objs/" + stem + ".bpf.o"; }

const LoadedObject& loaded(const std::string& stem) {
    static std::map<std::string, LoadedObject> cache;
    auto it = cache.find(stem);
    if (it == cache.end()) {
        auto r = load_object(obj(stem));
        if (!r) ADD_FAILURE() << r.error().to_string();
        it = cache.emplace(stem, r ? std::move(*r) : LoadedObject{}).first;
    }
    return it->second;
}

const Program& only_program(const std::string& stem) {
    const auto& o = loaded(stem);
    EXPECT_EQ(o.programs.size(), 1u) << stem;
    static Program empty;
    return o.programs.empty() ? empty : o.programs[0];
}

// Every relative transfer of a loaded program lands inside it; every pseudo call and callback
// address lands on a subprog start; subprog starts are increasing and end with the fake exit.
void expect_consistent(const Program& p) {
    ASSERT_EQ(p.aux.size(), p.insns.size());
    ASSERT_FALSE(p.subprogs.empty());
    EXPECT_EQ(p.subprogs.back().start, p.len());
    std::set<uint32_t> starts;
    for (size_t i = 0; i + 1 < p.subprogs.size(); ++i) {
        EXPECT_LT(p.subprogs[i].start, p.subprogs[i + 1].start);
        starts.insert(p.subprogs[i].start);
    }
    for (size_t i = 0; i < p.insns.size(); ++i) {
        const auto& in = p.insns[i];
        EXPECT_EQ(p.aux[i].orig_idx, i);
        EXPECT_TRUE(p.aux[i].seen);
        if (isa::is_pseudo_call(in) || isa::is_pseudo_func(in)) {
            const int64_t t = static_cast<int64_t>(i) + 1 + in.imm;
            EXPECT_TRUE(starts.count(static_cast<uint32_t>(t))) << p.name << " insn " << i << " targets " << t;
        } else if (isa::relative_field(in) != isa::RelField::None) {
            const int64_t t = static_cast<int64_t>(i) + 1 + isa::displacement(in);
            EXPECT_GE(t, 0);
            EXPECT_LT(t, static_cast<int64_t>(p.len()));
        }
        if (isa::is_ldimm64(in)) {
            if (in.src_reg == BPF_PSEUDO_MAP_FD || in.src_reg == BPF_PSEUDO_MAP_VALUE) {
                EXPECT_GE(in.imm, 0);
                EXPECT_LT(static_cast<size_t>(in.imm), p.maps.size());
            }
            ++i;
        }
        if (isa::is_kfunc_call(in)) {
            bool found = false;
            for (const auto& k : p.kfuncs) found |= k.btf_id == in.imm;
            EXPECT_TRUE(found) << "kfunc call at " << i << " without a descriptor";
        }
    }
    // line info sorted, inside the program, and a func info per subprog at its start
    for (size_t i = 1; i < p.linfo.size(); ++i) EXPECT_LE(p.linfo[i - 1].insn_off, p.linfo[i].insn_off);
    for (const auto& l : p.linfo) EXPECT_LT(l.insn_off, p.len());
    ASSERT_EQ(p.finfo.size(), p.subprog_cnt());
    for (size_t i = 0; i < p.finfo.size(); ++i) EXPECT_EQ(p.finfo[i].insn_off, p.subprogs[i].start);
}

TEST(Loader, EveryTestObjectLoadsConsistently) {
    for (const char* stem : {"hash_lookup", "array_lookup", "divmod", "loop_callback", "subprog_call", "iter_num", "global_data", "large"}) {
        SCOPED_TRACE(stem);
        const auto& o = loaded(stem);
        ASSERT_FALSE(o.programs.empty());
        EXPECT_EQ(o.meta.size(), o.programs.size());
        EXPECT_GT(o.open_ms, 0.0);
        for (const auto& p : o.programs) {
            expect_consistent(p);
            EXPECT_GT(p.linfo.size(), 0u);
            EXPECT_FALSE(p.name.empty());
        }
    }
}

TEST(Loader, HashLookupResolvesTheMapAndCountsOneLookup) {
    const Program& p = only_program("hash_lookup");
    EXPECT_EQ(p.name, "hash_lookup");
    EXPECT_EQ(p.prog_type, static_cast<uint32_t>(BPF_PROG_TYPE_XDP));
    ASSERT_EQ(p.maps.size(), 1u);
    EXPECT_EQ(p.maps[0].name, "counts");
    EXPECT_EQ(p.maps[0].type, static_cast<uint32_t>(BPF_MAP_TYPE_HASH));
    EXPECT_EQ(p.maps[0].key_size, 4u);
    EXPECT_EQ(p.maps[0].value_size, 8u);
    EXPECT_EQ(p.maps[0].max_entries, 1024u);
    auto sites = find_map_lookups(p);
    ASSERT_EQ(sites.size(), 1u);
    EXPECT_EQ(sites[0].map_index, 0);
    EXPECT_EQ(p.subprog_cnt(), 1u);
}

TEST(Loader, ArrayAndPercpuArrayLookups) {
    const Program& p = only_program("array_lookup");
    ASSERT_EQ(p.maps.size(), 2u);
    std::set<uint32_t> types;
    for (const auto& s : find_map_lookups(p)) {
        ASSERT_GE(s.map_index, 0);
        types.insert(p.maps[static_cast<size_t>(s.map_index)].type);
    }
    EXPECT_EQ(types, (std::set<uint32_t>{BPF_MAP_TYPE_ARRAY, BPF_MAP_TYPE_PERCPU_ARRAY}));
}

TEST(Loader, DivModByRegister) {
    const Program& p = only_program("divmod");
    int div = 0, mod = 0;
    for (const auto& in : p.insns) {
        if (!isa::is_alu_class(in) || isa::src_bit(in) != BPF_X) continue;
        div += isa::op(in) == BPF_DIV;
        mod += isa::op(in) == BPF_MOD;
    }
    EXPECT_GE(div, 2);  // 64- and 32-bit
    EXPECT_GE(mod, 2);  // the raw-encoded 64- and 32-bit modulos
}

TEST(Loader, BpfLoopCallbackIsAppendedAndMarked) {
    const Program& p = only_program("loop_callback");
    ASSERT_EQ(p.subprog_cnt(), 2u);
    EXPECT_TRUE(p.subprogs[1].is_cb);
    EXPECT_EQ(loaded("loop_callback").meta[0].subprog_names, (std::vector<std::string>{"loop_callback", "step"}));
    int funcs = 0, loops = 0;
    for (size_t i = 0; i < p.insns.size(); ++i) {
        if (isa::is_pseudo_func(p.insns[i])) {
            ++funcs;
            EXPECT_EQ(i + 1 + p.insns[i].imm, p.subprogs[1].start);
        }
        loops += isa::is_helper_call(p.insns[i]) && p.insns[i].imm == BPF_FUNC_loop;
    }
    EXPECT_EQ(funcs, 1);
    EXPECT_EQ(loops, 1);
}

TEST(Loader, SubprogsAppendedOncePerProgramInCallOrder) {
    const auto& o = loaded("subprog_call");
    ASSERT_EQ(o.programs.size(), 2u);
    // subprog_call calls mix (twice) and lookup_or, which calls mix again: mix appended once.
    EXPECT_EQ(o.meta[0].subprog_names, (std::vector<std::string>{"subprog_call", "mix", "lookup_or"}));
    EXPECT_EQ(o.meta[1].subprog_names, (std::vector<std::string>{"second_entry", "mix"}));
    const Program& p = o.programs[0];
    int calls_to_mix = 0;
    for (size_t i = 0; i < p.insns.size(); ++i)
        if (isa::is_pseudo_call(p.insns[i])) calls_to_mix += (i + 1 + p.insns[i].imm) == p.subprogs[1].start;
    EXPECT_EQ(calls_to_mix, 3);
    EXPECT_EQ(p.maps.size(), 1u);
    EXPECT_TRUE(o.programs[1].maps.empty());  // second_entry references no map
    // func info of each appended subprog carries the same BTF type in both programs
    EXPECT_EQ(o.programs[0].finfo[1].type_id, o.programs[1].finfo[1].type_id);
}

TEST(Loader, IterNumKfuncsGetOurBtfIds) {
    const Program& p = only_program("iter_num");
    ASSERT_EQ(p.kfuncs.size(), 3u);
    std::set<std::string> names;
    for (const auto& k : p.kfuncs) {
        names.insert(k.name);
        auto info = kfunc::by_name(k.name);
        ASSERT_TRUE(info);
        EXPECT_EQ(k.btf_id, info->btf_id);
        EXPECT_EQ(k.kind, static_cast<uint32_t>(info->kind));
    }
    EXPECT_EQ(names, (std::set<std::string>{"bpf_iter_num_new", "bpf_iter_num_next", "bpf_iter_num_destroy"}));
    int calls = 0;
    for (const auto& in : p.insns) calls += isa::is_kfunc_call(in);
    EXPECT_EQ(calls, 4);  // new, next twice (rotated loop), destroy
}

TEST(Loader, GlobalDataBecomesMapValueReferences) {
    const Program& p = only_program("global_data");
    std::map<std::string, size_t> idx;
    for (size_t i = 0; i < p.maps.size(); ++i) idx[p.maps[i].name] = i;
    ASSERT_TRUE(idx.count(".data") && idx.count(".rodata") && idx.count(".bss"));
    EXPECT_EQ(p.maps[idx[".data"]].type, static_cast<uint32_t>(BPF_MAP_TYPE_ARRAY));
    EXPECT_EQ(p.maps[idx[".data"]].value_size, 8u + 8 * 4);  // hits + table[8]
    std::set<std::pair<size_t, int32_t>> refs;
    for (size_t i = 0; i + 1 < p.insns.size(); ++i)
        if (isa::is_ldimm64(p.insns[i])) {
            EXPECT_EQ(p.insns[i].src_reg, BPF_PSEUDO_MAP_VALUE);
            refs.insert({static_cast<size_t>(p.insns[i].imm), p.insns[i + 1].imm});
            ++i;
        }
    // hits at .data+0, table at .data+8, last_len at .bss+0, factor at .rodata+0
    EXPECT_TRUE(refs.count({idx[".data"], 0}));
    EXPECT_TRUE(refs.count({idx[".data"], 8}));
    EXPECT_TRUE(refs.count({idx[".bss"], 0}));
    EXPECT_TRUE(refs.count({idx[".rodata"], 0}));
}

TEST(Loader, LargeObjectHasOver50kInsnsSubprogsMapsAndLineInfo) {
    const Program& p = only_program("large");
    EXPECT_GE(p.len(), 50000u);
    EXPECT_EQ(p.subprog_cnt(), 4u);
    EXPECT_EQ(p.maps.size(), 4u);
    EXPECT_GT(p.linfo.size(), p.len() / 10);
    size_t traced = 0;
    auto sites = find_map_lookups(p);
    for (const auto& s : sites) traced += s.map_index >= 0;
    EXPECT_GE(sites.size(), 4u * 840);  // 4 unrolled loops x ROUNDS in large.bpf.c
    EXPECT_EQ(traced, sites.size());
    std::printf("large.bpf.o: %u insns, %zu lookups, opened in %.1f ms\n", p.len(), sites.size(), loaded("large").open_ms);
}

TEST(Loader, ChildAndInProcessAgree) {
    for (const char* stem : {"subprog_call", "global_data", "iter_num"}) {
        auto a = load_object_in_process(obj(stem));
        ASSERT_TRUE(a) << a.error().to_string();
        const auto& b = loaded(stem);
        ASSERT_EQ(a->programs.size(), b.programs.size());
        for (size_t i = 0; i < a->programs.size(); ++i) {
            EXPECT_TRUE(a->programs[i] == b.programs[i]) << stem;
            EXPECT_EQ(a->meta[i].subprog_names, b.meta[i].subprog_names);
            EXPECT_EQ(a->meta[i].section, b.meta[i].section);
        }
    }
}

// ---- malformed objects, made from a good one ------------------------------------------------------

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class BadObjects : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::string(PATCHFUZZ_BINARY_DIR) + "/loader_test_tmp." + std::to_string(getpid());
        mkdir(dir_.c_str(), 0755);
        good_ = read_bytes(obj("subprog_call"));
        ASSERT_GT(good_.size(), 64u);
    }
    void TearDown() override {
        for (const auto& f : files_) unlink(f.c_str());
        rmdir(dir_.c_str());
    }
    std::string write(const std::string& name, const std::vector<uint8_t>& bytes) {
        const std::string p = dir_ + "/" + name;
        std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        files_.push_back(p);
        return p;
    }
    // Loads `bytes`; it must fail with a message that names the file (never crash the test).
    void expect_error(const std::string& name, const std::vector<uint8_t>& bytes, const std::string& needle = "") {
        const std::string p = write(name, bytes);
        auto r = load_object(p);
        ASSERT_FALSE(r) << name << " loaded";
        EXPECT_NE(r.error().to_string().find(p), std::string::npos) << r.error().to_string();
        EXPECT_FALSE(r.error().message.empty());
        if (!needle.empty()) {
            EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().to_string();
        }
    }
    size_t section_offset(const std::string& name) const {
        // Walk the section headers of the good object to find a section's file offset.
        uint64_t shoff = 0;
        uint16_t shnum = 0, shstrndx = 0;
        std::memcpy(&shoff, good_.data() + 0x28, 8);
        std::memcpy(&shnum, good_.data() + 0x3c, 2);
        std::memcpy(&shstrndx, good_.data() + 0x3e, 2);
        auto sh = [&](uint32_t i, uint32_t field, uint32_t width) {
            uint64_t v = 0;
            std::memcpy(&v, good_.data() + shoff + uint64_t{i} * 64 + field, width);
            return v;
        };
        const uint64_t stroff = sh(shstrndx, 0x18, 8);
        for (uint32_t i = 0; i < shnum; ++i) {
            const char* n = reinterpret_cast<const char*>(good_.data() + stroff + sh(i, 0, 4));
            if (name == n) return sh(i, 0x18, 8);
        }
        return 0;
    }
    std::string dir_;
    std::vector<uint8_t> good_;
    std::vector<std::string> files_;
};

TEST_F(BadObjects, ZeroLength) { expect_error("empty.bpf.o", {}, "empty file"); }

TEST_F(BadObjects, Missing) {
    auto r = load_object(dir_ + "/nope.bpf.o");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("cannot open"), std::string::npos);
}

TEST_F(BadObjects, Truncated) {
    for (size_t len : {size_t{3}, size_t{16}, size_t{63}, size_t{64}, good_.size() / 4, good_.size() / 2, good_.size() - 1})
        expect_error("trunc" + std::to_string(len) + ".bpf.o", std::vector<uint8_t>(good_.begin(), good_.begin() + static_cast<long>(len)));
}

TEST_F(BadObjects, WrongClassAndMachine) {
    auto b = good_;
    b[4] = 1;  // ELFCLASS32
    expect_error("class32.bpf.o", b);
    b = good_;
    b[18] = 62;  // EM_X86_64
    b[19] = 0;
    expect_error("x86.bpf.o", b);
    b = good_;
    b[5] = 2;  // big-endian
    expect_error("be.bpf.o", b);
    b = good_;
    b[0] = 'X';
    expect_error("magic.bpf.o", b);
}

TEST_F(BadObjects, CorruptedBtfHeader) {
    const size_t btf = section_offset(".BTF");
    ASSERT_GT(btf, 0u);
    auto b = good_;
    b[btf] ^= 0xff;  // BTF magic
    expect_error("btfmagic.bpf.o", b);
    b = good_;
    for (size_t i = 8; i < 24; ++i) b[btf + i] = 0xff;  // type/str offsets and lengths
    expect_error("btflen.bpf.o", b);
    const size_t ext = section_offset(".BTF.ext");
    ASSERT_GT(ext, 0u);
    b = good_;
    for (size_t i = 8; i < 24; ++i) b[ext + i] = 0xee;  // func/line info offsets out of bounds
    auto r = load_object(write("btfext.bpf.o", b));
    // libbpf may accept or reject this one; if it loads, our own .BTF.ext reader must reject it.
    ASSERT_FALSE(r);
}

// Checks that run before libbpf opens the object (issue 8): each used to surface as libbpf's
// generic "BTF is required, but is missing or corrupted." or, for the zero-size .maps, as
// "libbpf could not open the object: No such file or directory" (a stale errno).
// hash_lookup.bpf.o (readelf): .relxdp holds R_BPF_INSN_64 at 0x20 and 0x90 against 'counts', a
// 32-byte OBJECT in .maps.
TEST_F(BadObjects, PreciseMessagesBeforeLibbpf) {
    const std::vector<uint8_t> hl = read_bytes(obj("hash_lookup"));
    ASSERT_GT(hl.size(), 64u);
    auto shdr = [&](const std::string& name) -> size_t {  // file offset of the section's header
        uint64_t shoff = 0;
        uint16_t shnum = 0, shstrndx = 0;
        std::memcpy(&shoff, hl.data() + 0x28, 8);
        std::memcpy(&shnum, hl.data() + 0x3c, 2);
        std::memcpy(&shstrndx, hl.data() + 0x3e, 2);
        uint64_t stroff = 0;
        std::memcpy(&stroff, hl.data() + shoff + uint64_t{shstrndx} * 64 + 0x18, 8);
        for (uint32_t i = 0; i < shnum; ++i) {
            uint32_t n = 0;
            std::memcpy(&n, hl.data() + shoff + uint64_t{i} * 64, 4);
            if (name == reinterpret_cast<const char*>(hl.data() + stroff + n)) return shoff + uint64_t{i} * 64;
        }
        return 0;
    };
    auto data_of = [&](const std::string& name) {
        uint64_t off = 0;
        std::memcpy(&off, hl.data() + shdr(name) + 0x18, 8);
        return off;
    };
    auto message = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
        auto r = load_object(write(name, bytes));
        return r ? std::string("loaded") : r.error().message;
    };
    ASSERT_GT(shdr(".BTF"), 0u);
    auto b = hl;
    b[data_of(".BTF")] = 0;
    b[data_of(".BTF") + 1] = 0;
    EXPECT_EQ(message("btf0.bpf.o", b), ".BTF has a bad magic 0x0000 (expected 0xeb9f)");
    b = hl;
    b[data_of(".BTF") + 2] = 2;
    EXPECT_EQ(message("btfv2.bpf.o", b), ".BTF version 2 is not 1");
    b = hl;
    std::memset(b.data() + shdr(".maps") + 0x20, 0, 8);  // sh_size of .maps = 0
    EXPECT_EQ(message("maps0.bpf.o", b), "symbol 'counts' lies outside its section '.maps' (0 bytes)");
    b = hl;
    std::memset(b.data() + shdr("xdp") + 0x20, 0, 8);  // sh_size of the program section = 0
    EXPECT_EQ(message("xdp0.bpf.o", b),
              "relocation section '.relxdp': entry 0 at offset 0x20 lies outside section 'xdp' (0 bytes)");
}

// Random byte flips inside .BTF: each either loads or fails with a message; the child process
// keeps any libbpf crash away from us (and says so).
TEST_F(BadObjects, RandomBtfCorruptionNeverCrashes) {
    const uint64_t seed = 20261130;
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    Rng rng(seed);
    const size_t btf = section_offset(".BTF");
    int errors = 0;
    for (int k = 0; k < 40; ++k) {
        auto b = good_;
        for (int f = 0; f < 4; ++f) b[btf + rng.range(0, 399)] = static_cast<uint8_t>(rng.next());
        auto r = load_object(write("rnd" + std::to_string(k) + ".bpf.o", b));
        if (!r) {
            ++errors;
            EXPECT_FALSE(r.error().message.empty());
        }
    }
    std::printf("%d of 40 corrupted objects rejected\n", errors);
}

TEST_F(BadObjects, RandomBytes) {
    Rng rng(7);
    for (size_t len : {size_t{8}, size_t{100}, size_t{4096}}) {
        std::vector<uint8_t> b(len);
        for (auto& x : b) x = static_cast<uint8_t>(rng.next());
        expect_error("random" + std::to_string(len) + ".bpf.o", b);
    }
    // random bytes behind a valid ELF identification
    std::vector<uint8_t> b(good_.begin(), good_.begin() + 64);
    for (size_t i = 0; i < 2000; ++i) b.push_back(static_cast<uint8_t>(rng.next()));
    expect_error("randombody.bpf.o", b);
}

TEST_F(BadObjects, ChildCrashBecomesAnError) {
    // The parent side of the isolation: a child killed by a signal is reported, not propagated.
    LoadOptions o;
    o.test_raise_signal = SIGSEGV;
    auto r = load_object(obj("hash_lookup"), o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "libbpf crashed (signal 11) while opening the object");
}

}  // namespace
}  // namespace patchfuzz::loader

namespace patchfuzz::loader {

// SEC("?tc"): the ELF section is "?tc", libbpf names it "tc"; both programs load, and the array
// map's bypass_spec_v1 follows the load's privilege (privileged by default: no index mask).
TEST(Loader, OptionalSectionsLoadAndMapsFollowPrivilege) {
    const std::string path = std::string(PATCHFUZZ_BINARY_DIR) + "/bpf_objs/optional_sec.bpf.o";
    auto priv = load_object(path);
    ASSERT_TRUE(priv) << priv.error().to_string();
    ASSERT_EQ(priv->programs.size(), 2u);
    std::set<std::string> names;
    for (const auto& p : priv->programs) names.insert(p.name);
    EXPECT_EQ(names, (std::set<std::string>{"opt_lookup", "opt_subprog"}));
    for (const auto& p : priv->programs) {
        if (p.name == "opt_subprog") {
            EXPECT_EQ(p.subprog_cnt(), 2u);
        }
        for (const auto& m : p.maps) EXPECT_TRUE(m.bypass_spec_v1) << m.name;
    }
    auto unpriv = load_object(path, LoadOptions{.privileged = false});
    ASSERT_TRUE(unpriv) << unpriv.error().to_string();
    size_t maps = 0;
    for (const auto& p : unpriv->programs)
        for (const auto& m : p.maps) {
            EXPECT_FALSE(m.bypass_spec_v1) << m.name;
            ++maps;
        }
    EXPECT_EQ(maps, 1u);
}

}  // namespace patchfuzz::loader
