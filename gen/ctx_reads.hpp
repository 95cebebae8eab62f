#pragma once
// The ctx accesses the generators make for socket filter, tc and XDP programs: every read the
// verifier allows of a field the ctx_access pass models (bpf/passes/ctx_fields.hpp), at every width
// and offset it allows, but for the narrow reads whose converted form does not give the uapi bytes
// there. A narrow read at byte k > 0 of a field the kernel keeps in fewer bytes than the read
// (pkt_type, 6.1's vlan_present: one byte; the u16 fields for a 2-byte read at byte 2) is made as
// a read of the whole kernel field with no shift, so it gives the field's value where the uapi
// struct has 0 (measured on 6.1, 6.12 and 7.3; docs/patching.md §5.6). Such a read would make the
// exec oracle report the kernel's rewrite as changing the meaning, which is known and not what
// the generators are after.
#include <cstdint>
#include <vector>

#include "bpf/passes/ctx_fields.hpp"

namespace patchfuzz::gen {

struct CtxRead {
    ctx_fields::Field field;
    int16_t off;             // uapi offset of the read
    uint8_t size;            // bytes: 1, 2, 4 or 8 (8: cb[] only)
    uint8_t ctx_field_size;  // what the verifier records in the insn's aux (4 for narrow-capable fields, else 0)
};

// The reads a program of `kind` may make of scalar fields (no packet pointers), in a fixed order.
const std::vector<CtxRead>& ctx_scalar_reads(ctx_fields::CtxKind kind);
// The u32 fields a program of `kind` may store to (cb[] and, for tc, mark, priority, tc_index), as
// full-width reads of them (the store's offset and its ctx_field_size, which stores do not record: 0).
const std::vector<CtxRead>& ctx_u32_stores(ctx_fields::CtxKind kind);

// How a program uses its ctx, as the verifier typed its insns (aux.ptr_type): for the generators'
// figures (`kernel gen` prints the share of programs with each).
struct CtxUse {
    uint32_t reads = 0;    // loads from the ctx
    uint32_t stores = 0;   // stores to it
    uint32_t packet = 0;   // loads through a packet pointer read from it
};
CtxUse ctx_use(const Program& prog);

}  // namespace patchfuzz::gen
