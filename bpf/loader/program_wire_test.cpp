// The loader's child->parent wire format: exact round trips on random Programs (RapidCheck) and
// an Error, never a crash, on every truncation or corruption of a stream.
#include "bpf/loader/program_wire.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace patchfuzz::loader {
namespace {

rc::Gen<Program> arbitrary_program() {
    return rc::gen::exec([] {
        Program p;
        p.name = *rc::gen::container<std::string>(rc::gen::inRange<char>(' ', '~'));
        p.prog_type = *rc::gen::arbitrary<uint32_t>();
        const auto n = *rc::gen::inRange<size_t>(0, 40);
        for (size_t i = 0; i < n; ++i) {
            isa::Insn in{};
            in.code = *rc::gen::arbitrary<uint8_t>();
            in.dst_reg = *rc::gen::inRange<uint8_t>(0, 16);
            in.src_reg = *rc::gen::inRange<uint8_t>(0, 16);
            in.off = *rc::gen::arbitrary<int16_t>();
            in.imm = *rc::gen::arbitrary<int32_t>();
            p.insns.push_back(in);
            InsnAux a;
            a.orig_idx = *rc::gen::arbitrary<uint32_t>();
            a.seen = *rc::gen::arbitrary<bool>();
            a.zext_dst = *rc::gen::arbitrary<bool>();
            a.needs_zext = *rc::gen::arbitrary<bool>();
            a.nospec = *rc::gen::arbitrary<bool>();
            a.nospec_result = *rc::gen::arbitrary<bool>();
            a.alu_state = *rc::gen::arbitrary<uint8_t>();
            a.alu_limit = *rc::gen::arbitrary<uint32_t>();
            a.ptr_type = static_cast<PtrType>(*rc::gen::inRange<uint8_t>(0, 7));
            a.ctx_field_size = *rc::gen::arbitrary<uint8_t>();
            a.map_index = *rc::gen::arbitrary<int32_t>();
            a.map_ptr_poisoned = *rc::gen::arbitrary<bool>();
            a.map_key_poisoned = *rc::gen::arbitrary<bool>();
            a.map_key = *rc::gen::arbitrary<uint32_t>();
            a.map_key_known = *rc::gen::arbitrary<bool>();
            a.loop_fit_for_inline = *rc::gen::arbitrary<bool>();
            a.loop_callback_subprogno = *rc::gen::arbitrary<uint32_t>();
            a.call_with_percpu_alloc_ptr = *rc::gen::arbitrary<bool>();
            a.arg_prog = *rc::gen::arbitrary<uint8_t>();
            a.indirect_target = *rc::gen::arbitrary<bool>();
            p.aux.push_back(a);
        }
        const auto ns = *rc::gen::inRange<size_t>(0, 5);
        for (size_t i = 0; i < ns; ++i)
            p.subprogs.push_back(SubprogInfo{.start = *rc::gen::arbitrary<uint32_t>(),
                                             .stack_depth = *rc::gen::arbitrary<uint32_t>(),
                                             .stack_extra = *rc::gen::arbitrary<uint32_t>(),
                                             .linfo_idx = *rc::gen::arbitrary<uint32_t>(),
                                             .has_tail_call = *rc::gen::arbitrary<bool>(),
                                             .is_cb = *rc::gen::arbitrary<bool>(),
                                             .is_async_cb = *rc::gen::arbitrary<bool>(),
                                             .is_exception_cb = *rc::gen::arbitrary<bool>(),
                                             .is_hidden = *rc::gen::arbitrary<bool>()});
        const auto nl = *rc::gen::inRange<size_t>(0, 5);
        for (size_t i = 0; i < nl; ++i)
            p.linfo.push_back(LineInfo{*rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(),
                                       *rc::gen::arbitrary<uint32_t>()});
        const auto nf = *rc::gen::inRange<size_t>(0, 3);
        for (size_t i = 0; i < nf; ++i) p.finfo.push_back(FuncInfo{*rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>()});
        const auto na = *rc::gen::inRange<size_t>(0, 3);
        for (size_t i = 0; i < na; ++i) {
            InsnArray a{.map_index = *rc::gen::arbitrary<int32_t>()};
            const auto ne = *rc::gen::inRange<size_t>(0, 4);
            for (size_t j = 0; j < ne; ++j) a.entries.push_back(InsnArrayEntry{*rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>()});
            p.insn_arrays.push_back(a);
        }
        const auto np = *rc::gen::inRange<size_t>(0, 3);
        for (size_t i = 0; i < np; ++i)
            p.pokes.push_back(PokeDesc{*rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<int32_t>(), *rc::gen::arbitrary<uint32_t>()});
        const auto nk = *rc::gen::inRange<size_t>(0, 3);
        for (size_t i = 0; i < nk; ++i)
            p.kfuncs.push_back(KfuncDesc{*rc::gen::arbitrary<int32_t>(), *rc::gen::arbitrary<int16_t>(), *rc::gen::arbitrary<uint32_t>(),
                                         *rc::gen::arbitrary<std::string>()});
        const auto nm = *rc::gen::inRange<size_t>(0, 3);
        for (size_t i = 0; i < nm; ++i)
            p.maps.push_back(MapDef{*rc::gen::arbitrary<std::string>(), *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(),
                                    *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(),
                                    *rc::gen::arbitrary<bool>(), *rc::gen::arbitrary<bool>()});
        return p;
    });
}

RC_GTEST_PROP(ProgramWire, RoundTripIsExact, ()) {
    const Program p = *arbitrary_program();
    auto d = decode_program(encode_program(p));
    RC_ASSERT(d.ok());
    RC_ASSERT(*d == p);
}

RC_GTEST_PROP(ProgramWire, EveryTruncationIsAnError, ()) {
    const Program p = *arbitrary_program();
    const std::string bytes = encode_program(p);
    const auto cut = *rc::gen::inRange<size_t>(0, bytes.size());
    RC_ASSERT(!decode_program(std::string_view(bytes).substr(0, cut)).ok());
}

RC_GTEST_PROP(ProgramWire, CorruptionNeverCrashes, ()) {
    const Program p = *arbitrary_program();
    std::string bytes = encode_program(p);
    const auto flips = *rc::gen::inRange<int>(1, 8);
    for (int i = 0; i < flips; ++i) bytes[*rc::gen::inRange<size_t>(0, bytes.size())] = *rc::gen::arbitrary<char>();
    auto d = decode_program(bytes);  // ok or an Error; under ASan, never a bad read
    const bool sound = d.ok() || !d.error().message.empty();  // (RC_ASSERT does not short-circuit)
    RC_ASSERT(sound);
}

RC_GTEST_PROP(ProgramWire, ResultRoundTrip, ()) {
    LoadedObject o;
    o.path = *rc::gen::arbitrary<std::string>();
    o.open_ms = *rc::gen::inRange(0, 100000) / 7.0;
    const auto n = *rc::gen::inRange<size_t>(0, 3);
    for (size_t i = 0; i < n; ++i) {
        o.programs.push_back(*arbitrary_program());
        o.meta.push_back(ProgramMeta{*rc::gen::arbitrary<std::string>(), *rc::gen::arbitrary<uint32_t>(),
                                     *rc::gen::arbitrary<std::vector<std::string>>()});
    }
    auto d = decode_result(encode_result(o));
    RC_ASSERT(d.ok());
    RC_ASSERT(d->path == o.path);
    RC_ASSERT(d->open_ms == o.open_ms);
    RC_ASSERT(d->programs.size() == o.programs.size());
    for (size_t i = 0; i < n; ++i) {
        RC_ASSERT(d->programs[i] == o.programs[i]);
        RC_ASSERT(d->meta[i].section == o.meta[i].section);
        RC_ASSERT(d->meta[i].main_insns == o.meta[i].main_insns);
        RC_ASSERT(d->meta[i].subprog_names == o.meta[i].subprog_names);
    }
}

TEST(ProgramWire, ErrorResultRoundTrip) {
    Expected<LoadedObject> e = Error{"x.bpf.o", "libbpf: elf: bad things"};
    auto d = decode_result(encode_result(e));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().where, "x.bpf.o");
    EXPECT_EQ(d.error().message, "libbpf: elf: bad things");
}

TEST(ProgramWire, GarbageIsAnError) {
    EXPECT_FALSE(decode_result("").ok());
    EXPECT_FALSE(decode_result("hello world").ok());
    EXPECT_FALSE(decode_program(std::string(100, '\xff')).ok());
}

}  // namespace
}  // namespace patchfuzz::loader
