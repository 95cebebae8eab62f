/* patchfuzz external patcher ABI, version 1.
 *
 * A kernel developer builds their batched patcher in user space as a shared library exporting the
 * three functions below, and runs `patchfuzz fuzz --patcher-lib X.so`: every batch the rewrite
 * passes emit is applied by the library and by patchfuzz's incremental model of
 * bpf_patch_insn_data(), and the results are compared field by field.
 *
 * Semantics (what "apply" means, coordinates, patch-local jump encoding, error reporting) are those
 * of patchfuzz's bpf/patch/patch.hpp and docs/patching.md §7: patches sorted by pos, in the
 * coordinates of `in`, at most one per position.
 *
 * Ownership: `in` and `patches` belong to the caller and are valid during the call only. The
 * library fills `*out` with arrays it allocates; the caller hands `out` back to
 * patchfuzz_patcher_free() exactly once (also after a failed apply). Every struct starts with its
 * size so that later versions can grow them; the caller sets `struct_size` of `out` and `result`.
 * The library must not keep pointers into `in` after returning. Calls may come from any thread,
 * one at a time per process.
 *
 * apply must be a function of its input (in, patches): patchfuzz may answer a call whose input it
 * has seen before with the earlier answer instead of calling again (`fuzz --plugin-stateful`
 * calls every time). It runs inside the patchfuzz process until it first crashes, hangs or writes
 * into `in` or `patches` (each a finding), then in an isolated host process.
 */
#ifndef PATCHFUZZ_PATCHER_H
#define PATCHFUZZ_PATCHER_H

#include <linux/bpf.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PATCHFUZZ_PATCHER_ABI_VERSION 1u

/* struct bpf_insn_aux_data, reduced to what patching moves (patchfuzz InsnAux). */
struct pf_insn_aux {
	uint32_t orig_idx;
	uint8_t seen, zext_dst, needs_zext, nospec, nospec_result, alu_state, ptr_type, ctx_field_size;
	uint32_t alu_limit;
	int32_t map_index;
	uint8_t map_ptr_poisoned, map_key_poisoned, map_key_known, loop_fit_for_inline;
	uint32_t map_key;
	uint32_t loop_callback_subprogno;
	uint8_t call_with_percpu_alloc_ptr, arg_prog, indirect_target, pad0;
};

struct pf_subprog { /* subprog_cnt + 1 entries: the last one is the fake exit */
	uint32_t start, stack_depth, stack_extra, linfo_idx;
	uint8_t has_tail_call, is_cb, is_async_cb, is_exception_cb, is_hidden, pad[3];
};

struct pf_line_info { uint32_t insn_off, file_name_off, line_off, line_col; };
struct pf_func_info { uint32_t insn_off, type_id; };
struct pf_insn_array_entry { uint32_t array; /* which insn array */ uint32_t orig_off, xlated_off; };
struct pf_poke { uint32_t insn_idx; int32_t map_index; uint32_t key; };

struct pf_program {
	uint32_t struct_size; /* sizeof(struct pf_program) */
	uint32_t len;
	struct bpf_insn *insns;
	struct pf_insn_aux *aux; /* len entries */
	uint32_t nr_subprogs;
	struct pf_subprog *subprogs;
	uint32_t nr_linfo;
	struct pf_line_info *linfo;
	uint32_t nr_finfo;
	struct pf_func_info *finfo;
	uint32_t nr_insn_arrays; /* number of arrays; entries are flattened below */
	uint32_t nr_insn_array_entries;
	struct pf_insn_array_entry *insn_array_entries;
	uint32_t nr_pokes;
	struct pf_poke *pokes;
};

enum pf_patch_kind { PF_PATCH_REPLACE = 0, PF_PATCH_REMOVE = 1, PF_PATCH_INSERT_BEFORE = 2 };

struct pf_patch {
	uint32_t kind; /* enum pf_patch_kind */
	uint32_t pos;
	uint32_t count; /* REMOVE */
	uint32_t nr_insns;
	const struct bpf_insn *insns; /* REPLACE: replacement; INSERT_BEFORE: the prologue */
};

struct pf_result {
	uint32_t struct_size; /* sizeof(struct pf_result) */
	int32_t err;          /* what the verifier would return to user space (0, -ENOMEM, -EINVAL) */
	int32_t raw_err;      /* e.g. -ERANGE from bpf_patch_insn_single() */
	char log[256];        /* verifier log line, NUL-terminated */
};

/* Exported by the library: */
uint32_t patchfuzz_patcher_abi_version(void); /* must return PATCHFUZZ_PATCHER_ABI_VERSION */
const char *patchfuzz_patcher_name(void);
/* Returns 0 when it ran (the patch outcome, success or not, is in *result), non-zero on an
 * internal failure of the library itself (reported as a finding about the library). */
int patchfuzz_patcher_apply(const struct pf_program *in, const struct pf_patch *patches, uint32_t nr_patches,
			    struct pf_program *out, struct pf_result *result);
void patchfuzz_patcher_free(struct pf_program *out);

/* Optional (looked up by name, so plugins without it stay loadable): the plugin's own version,
 * e.g. "1.2.0" or a git revision, as a NUL-terminated string that lives as long as the library.
 * patchfuzz shows it with patchfuzz_patcher_name() in `patchfuzz --version --patcher-lib X.so`,
 * campaign summaries, finding verdicts and reports. */
const char *patchfuzz_patcher_version(void);

#ifdef __cplusplus
}
#endif

#endif /* PATCHFUZZ_PATCHER_H */
