// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the ELF reader and symbolizer as a profiled process's binary reaches them: the input
 * is written to a file, opened through the file cache (ELF headers, notes, build ids,
 * htlhash, symbol tables, lazily DWARF lines and inline chains (lib/symbol/dwarf.c) and separate
 * debug files), and a few addresses are translated and symbolized. Invariants: no crash, no
 * sanitizer report, returned strings are terminated, a symbolized address yields
 * 1..OP_MAX_INLINE lines.
 */
#include "fuzz.h"
#include "symbol/symbolize.h"
#include "binary/file.h"

static void check_str(const char *s)
{
	if (s)
		FUZZ_ASSERT(strlen(s) < (1u << 20));
}

static void symbolize(struct op_file *f, uint64_t vaddr)
{
	struct op_sym_result r;
	int err;

	memset(&r, 0xa5, sizeof(r));
	err = op_file_symbolize(f, vaddr, &r);
	if (err) {
		FUZZ_ASSERT(err == -ENOENT || err < 0);
		return;
	}
	FUZZ_ASSERT(r.n >= 1 && r.n <= OP_MAX_INLINE);
	for (size_t i = 0; i < r.n; i++) {
		/*
		 * No check that a frame names something: corrupt DWARF can give an inlined
		 * frame with neither a name nor a call site, which the profile shows empty.
		 */
		check_str(r.lines[i].name);
		check_str(r.lines[i].system_name);
		check_str(r.lines[i].file);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in tail = { data + (size > 32 ? size - 32 : 0), size > 32 ? 32 : size };
	const char *path = fuzz_write_file(data, size);
	struct op_filecache *c;
	struct op_file *f;
	uint64_t vaddr;

	if (!path)
		return 0;
	c = op_filecache_new(64 << 20);
	FUZZ_ASSERT(c);
	f = op_filecache_get_path(c, path);
	if (f) {
		const char *h = op_file_htlhash(f);

		check_str(op_file_build_id_gnu(f));
		check_str(op_file_build_id_go(f));
		if (h)
			FUZZ_ASSERT(strlen(h) == 32);
		(void)op_file_is_go(f);

		/* addresses the input chooses (its last bytes), then its own segments, symbols */
		for (int i = 0; i < 4; i++) {
			uint64_t off = fuzz_take(&tail, 8);

			if (op_file_offset_to_vaddr(f, off, &vaddr) == 0)
				symbolize(f, vaddr);
			symbolize(f, off);
		}
		for (size_t i = 0; i < f->n_loads && i < 8; i++) {
			const struct op_load_seg *l = &f->loads[i];

			if (op_file_offset_to_vaddr(f, l->offset, &vaddr) == 0)
				symbolize(f, vaddr);
			symbolize(f, l->vaddr + l->memsz / 2);
			symbolize(f, l->vaddr + l->memsz - 1);
		}
		for (size_t i = 0; i < f->n_syms; i += 1 + f->n_syms / 16) {
			symbolize(f, f->syms[i].addr);
			symbolize(f, f->syms[i].end - 1);
		}
		op_file_put(f);
	}
	op_filecache_free(c);
	return 0;
}
