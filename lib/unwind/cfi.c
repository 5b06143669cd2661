// SPDX-License-Identifier: Apache-2.0
/*
 * CFI table compiler. See cfi.h for the contract and why this is an own parser.
 *
 * One pass over .eh_frame (or .debug_frame): every FDE's CFA program runs from its CIE's
 * initial instructions; each row boundary emits (address, rule) where the rule is the
 * compact form (bpf/unwind/step.h) of the CFA, rbp and return-address rules in force. Only
 * what the x86_64 walk needs is kept: other registers' rules are parsed and dropped. Then
 * rows are sorted, the end of each FDE becomes a "not covered" row unless another FDE starts
 * there, and neighbours with the same rule merge.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwind/cfi.h"
#include "util/hash.h"
#include "util/cursor.h"
#include "binary/gopclntab.h"

/* DW_EH_PE_* pointer encodings */
#define PE_ABSPTR   0x00
#define PE_ULEB128  0x01
#define PE_UDATA2   0x02
#define PE_UDATA4   0x03
#define PE_UDATA8   0x04
#define PE_SLEB128  0x09
#define PE_SDATA2   0x0a
#define PE_SDATA4   0x0b
#define PE_SDATA8   0x0c
#define PE_PCREL    0x10
#define PE_DATAREL  0x30
#define PE_INDIRECT 0x80
#define PE_OMIT	    0xff

/* DWARF expression opcodes the recogniser understands. */
#define OP_DEREF       0x06
#define OP_AND	       0x1a
#define OP_PLUS	       0x22
#define OP_PLUS_UCONST 0x23
#define OP_SHL	       0x24
#define OP_GE	       0x2a
#define OP_LIT0	       0x30
#define OP_LIT31       0x4f
#define OP_BREG0       0x70
#define OP_BREG31      0x8f

#define MAX_REMEMBER 16

/* A section's bytes and the address they are loaded at (for pc-relative pointers). */
struct section {
	const uint8_t *data;
	size_t size;
	uint64_t addr;
};

/* Read a pointer in encoding @enc at the cursor, which lies inside @sec. */
static uint64_t rd_encoded(struct op_cursor *c, uint8_t enc, const struct section *sec,
			   uint64_t datarel_base)
{
	uint64_t field = sec->addr + (uint64_t)(c->p - sec->data);
	uint64_t v;

	if (enc == PE_OMIT)
		return 0;
	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		v = op_rd_fixed(c, 8);
		break;
	case PE_ULEB128:
		v = op_rd_uleb(c);
		break;
	case PE_UDATA2:
		v = op_rd_fixed(c, 2);
		break;
	case PE_SDATA2:
		v = (uint64_t)(int64_t)(int16_t)op_rd_fixed(c, 2);
		break;
	case PE_UDATA4:
		v = op_rd_fixed(c, 4);
		break;
	case PE_SDATA4:
		v = (uint64_t)(int64_t)(int32_t)op_rd_fixed(c, 4);
		break;
	case PE_SLEB128:
		v = (uint64_t)op_rd_sleb(c);
		break;
	default:
		c->bad = true;
		return 0;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case PE_PCREL:
		v += field;
		break;
	case PE_DATAREL:
		v += datarel_base;
		break;
	default: /* textrel/funcrel/aligned: not produced for x86_64 */
		c->bad = true;
		return 0;
	}
	return v; /* PE_INDIRECT only appears on personality pointers, which are skipped */
}

struct cie {
	uint64_t offset; /* in the section: the key FDEs refer to */
	uint64_t code_align;
	int64_t data_align;
	uint32_t ra_reg;
	uint8_t fde_enc;
	uint8_t addr_size;
	bool has_z;
	bool signal;
	const uint8_t *insns, *insns_end;
};

enum rule_kind {
	RK_UNSPEC = 0, /* no rule: same value for callee-saved registers */
	RK_UNDEF,
	RK_SAME,
	RK_OFFSET,
	RK_VAL_OFFSET,
	RK_REGISTER,
	RK_EXPR,
	RK_VAL_EXPR,
};

struct reg_rule {
	uint8_t kind;
	int64_t off;
	const uint8_t *expr;
	size_t expr_len;
};

struct cfa_rule {
	bool expr_form;
	uint32_t reg;
	int64_t off;
	const uint8_t *expr;
	size_t expr_len;
};

struct cfi_state {
	struct cfa_rule cfa;
	struct reg_rule rbp, ra;
};

/* One raw row before sorting: end markers sort after real rows at the same pc. */
struct raw_row {
	uint64_t pc;
	uint32_t rule;
	uint32_t end_marker;
};

/* The rows one FDE pushed: strictly increasing real rows, then its end marker. */
struct fde_run {
	uint64_t pc; /* of the first row */
	size_t start, n;
};

struct builder {
	struct raw_row *rows;
	size_t n_rows, cap_rows;
	struct fde_run *runs; /* in push order; NULL after an allocation failure */
	size_t n_runs, cap_runs;
	bool no_runs; /* the runs could not be recorded: sort rows one by one */
	struct op_unwind_rule *rules;
	size_t n_rules, cap_rules;
	uint32_t *hash; /* open addressing over rules, UINT32_MAX = empty */
	size_t hash_cap;
	size_t n_unsupported;
	uint32_t none_rule;
	bool oom;
};

/* Called for every row: two multiplies over the rule's two words, not a byte loop. */
static uint64_t rule_hash(const struct op_unwind_rule *r)
{
	uint64_t w[2], h;

	_Static_assert(sizeof(*r) == sizeof(w), "op_unwind_rule is two 64-bit words");
	memcpy(w, r, sizeof(w));
	h = (w[0] ^ (w[1] * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 31); /* callers take the low bits: fold the well-mixed high ones in */
}

static int hash_grow(struct builder *b)
{
	size_t cap = b->hash_cap ? b->hash_cap * 2 : 256;
	uint32_t *h = malloc(cap * sizeof(*h));

	if (!h)
		return -ENOMEM;
	memset(h, 0xff, cap * sizeof(*h));
	for (size_t i = 0; i < b->n_rules; i++) {
		size_t j = rule_hash(&b->rules[i]) & (cap - 1);

		while (h[j] != UINT32_MAX)
			j = (j + 1) & (cap - 1);
		h[j] = (uint32_t)i;
	}
	free(b->hash);
	b->hash = h;
	b->hash_cap = cap;
	return 0;
}

/* Index of @r in the builder's rule set, adding it if new. UINT32_MAX on allocation failure. */
static uint32_t intern_rule(struct builder *b, const struct op_unwind_rule *r)
{
	size_t j;

	if (b->n_rules * 2 >= b->hash_cap && hash_grow(b)) {
		b->oom = true;
		return UINT32_MAX;
	}
	j = rule_hash(r) & (b->hash_cap - 1);
	while (b->hash[j] != UINT32_MAX) {
		if (!memcmp(&b->rules[b->hash[j]], r, sizeof(*r)))
			return b->hash[j];
		j = (j + 1) & (b->hash_cap - 1);
	}
	if (b->n_rules == b->cap_rules) {
		size_t cap = b->cap_rules ? b->cap_rules * 2 : 64;
		struct op_unwind_rule *n = realloc(b->rules, cap * sizeof(*n));

		if (!n) {
			b->oom = true;
			return UINT32_MAX;
		}
		b->rules = n;
		b->cap_rules = cap;
	}
	b->rules[b->n_rules] = *r;
	b->hash[j] = (uint32_t)b->n_rules;
	return (uint32_t)b->n_rules++;
}

/*
 * The row arrays (libLLVM: 16 MiB of raw rows, 15 MiB sorted, 8 MiB compiled) come from
 * mmap, not malloc: freed, they go back to the system at once. From malloc they stayed in
 * the reader thread's arena (glibc raises its mmap threshold after the first such free), and
 * made most of the agent's resident memory until the next malloc_trim.
 */
#if defined(__SANITIZE_ADDRESS__)
#define BIG_FROM_MALLOC 1 /* AddressSanitizer checks the bounds of malloc'd blocks only */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BIG_FROM_MALLOC 1
#endif
#endif

static void *big_resize(void *p, size_t old_bytes, size_t new_bytes)
{
#ifdef BIG_FROM_MALLOC
	(void)old_bytes;
	return realloc(p, new_bytes);
#else
	void *n = p ? mremap(p, old_bytes, new_bytes, MREMAP_MAYMOVE)
		    : mmap(NULL, new_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			   0);

	return n == MAP_FAILED ? NULL : n;
#endif
}

/* Give back what lies past @new_bytes; the block stays where it is. */
static void big_shrink(void *p, size_t old_bytes, size_t new_bytes)
{
#ifdef BIG_FROM_MALLOC
	(void)p, (void)old_bytes, (void)new_bytes;
#else
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t keep = (new_bytes + page - 1) & ~(page - 1);
	size_t all = (old_bytes + page - 1) & ~(page - 1);

	if (keep < all)
		munmap((char *)p + keep, all - keep);
#endif
}

static void big_free(void *p, size_t bytes)
{
#ifdef BIG_FROM_MALLOC
	(void)bytes;
	free(p);
#else
	if (p && bytes)
		munmap(p, bytes);
#endif
}

static void push_row(struct builder *b, uint64_t pc, uint32_t rule, bool end_marker)
{
	if (b->oom)
		return;
	if (b->n_rows == b->cap_rows) {
		size_t cap = b->cap_rows ? b->cap_rows * 2 : 1024;
		struct raw_row *n = big_resize(b->rows, b->cap_rows * sizeof(*n), cap * sizeof(*n));

		if (!n) {
			b->oom = true;
			return;
		}
		b->rows = n;
		b->cap_rows = cap;
	}
	b->rows[b->n_rows++] = (struct raw_row){ pc, rule, end_marker };
}

/* Remember the rows of one FDE (rows [start, b->n_rows)) for the run-wise sort in finish(). */
static void push_run(struct builder *b, size_t start)
{
	if (b->no_runs || b->oom || start == b->n_rows)
		return;
	if (b->n_runs == b->cap_runs) {
		size_t cap = b->cap_runs ? b->cap_runs * 2 : 256;
		struct fde_run *n = realloc(b->runs, cap * sizeof(*n));

		if (!n) {
			b->no_runs = true; /* finish() sorts row by row: slower, same result */
			return;
		}
		b->runs = n;
		b->cap_runs = cap;
	}
	b->runs[b->n_runs++] = (struct fde_run){ b->rows[start].pc, start, b->n_rows - start };
}

/* A decoded DWARF expression operation (only the forms the recogniser matches). */
struct expr_op {
	uint8_t op;
	int64_t arg;
};

/* Decode up to @max ops; returns how many, or -1 for an opcode outside the known set. */
static int decode_expr(const uint8_t *p, size_t len, struct expr_op *ops, int max)
{
	struct op_cursor c = { p, p + len };
	int n = 0;

	while (c.p < c.end) {
		uint8_t op = *c.p++;

		if (n == max)
			return -1;
		ops[n].op = op;
		ops[n].arg = 0;
		if (op >= OP_BREG0 && op <= OP_BREG31)
			ops[n].arg = op_rd_sleb(&c);
		else if (op == OP_PLUS_UCONST)
			ops[n].arg = (int64_t)op_rd_uleb(&c);
		else if (!(op >= OP_LIT0 && op <= OP_LIT31) && op != OP_DEREF && op != OP_AND &&
			 op != OP_PLUS && op != OP_SHL && op != OP_GE)
			return -1;
		if (c.bad)
			return -1;
		n++;
	}
	return n;
}

static bool fits_s32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* CFA expression → rule: PLT stubs and *(reg + off). False when not recognised. */
static bool cfa_expr_rule(const uint8_t *p, size_t len, struct op_unwind_rule *r)
{
	struct expr_op o[12];
	int n = decode_expr(p, len, o, 12);

	/* breg7 A; breg16 0; lit15; and; litN; ge; lit3; shl; plus (GCC/ld PLT entries) */
	if (n == 9 && o[0].op == OP_BREG0 + OP_DWARF_RSP && o[1].op == OP_BREG0 + OP_DWARF_RA &&
	    o[1].arg == 0 && o[2].op == OP_LIT0 + 15 && o[3].op == OP_AND && o[4].op >= OP_LIT0 &&
	    o[4].op <= OP_LIT0 + 15 && o[5].op == OP_GE && o[6].op == OP_LIT0 + 3 &&
	    o[7].op == OP_SHL && o[8].op == OP_PLUS && fits_s32(o[0].arg)) {
		r->cfa_type = OP_CFA_PLT;
		r->cfa_reg = o[4].op - OP_LIT0;
		r->cfa_off = (int32_t)o[0].arg;
		return true;
	}
	/* bregR off; deref (optionally plus_uconst after): DRAP realignment, signal frames */
	if (n == 2 && o[0].op >= OP_BREG0 && o[0].op < OP_BREG0 + OP_DWARF_NREGS &&
	    o[1].op == OP_DEREF && fits_s32(o[0].arg)) {
		r->cfa_type = OP_CFA_DEREF;
		r->cfa_reg = o[0].op - OP_BREG0;
		r->cfa_off = (int32_t)o[0].arg;
		return true;
	}
	return false;
}

/* Register rule → (type, off). Unknown forms yield OP_REG_UNSUPPORTED. */
static bool fits_s16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

static void reg_rule(const struct reg_rule *rr, bool is_ra, uint8_t *type, int16_t *off)
{
	struct expr_op o[2];
	int n;

	*off = 0;
	switch (rr->kind) {
	case RK_UNSPEC:
		*type = is_ra ? OP_REG_UNSUPPORTED : OP_REG_SAME;
		return;
	case RK_SAME:
		*type = OP_REG_SAME;
		return;
	case RK_UNDEF:
		*type = OP_REG_UNDEF;
		return;
	case RK_OFFSET:
		if (!fits_s16(rr->off))
			break;
		*type = OP_REG_AT_CFA;
		*off = (int16_t)rr->off;
		return;
	case RK_EXPR:
		n = decode_expr(rr->expr, rr->expr_len, o, 2);
		if (n != 1 || !fits_s16(o[0].arg))
			break;
		if (o[0].op == OP_BREG0 + OP_DWARF_RSP)
			*type = OP_REG_AT_RSP;
		else if (o[0].op == OP_BREG0 + OP_DWARF_RBP)
			*type = OP_REG_AT_RBP;
		else
			break;
		*off = (int16_t)o[0].arg;
		return;
	default:
		break;
	}
	*type = OP_REG_UNSUPPORTED;
}

static uint32_t state_rule(struct builder *b, const struct cfi_state *s, bool signal)
{
	struct op_unwind_rule r;

	memset(&r, 0, sizeof(r));
	if (s->cfa.expr_form) {
		if (!cfa_expr_rule(s->cfa.expr, s->cfa.expr_len, &r))
			r.cfa_type = OP_CFA_UNSUPPORTED;
	} else if (!fits_s32(s->cfa.off) || s->cfa.reg >= OP_DWARF_NREGS) {
		r.cfa_type = OP_CFA_UNSUPPORTED;
	} else {
		r.cfa_off = (int32_t)s->cfa.off;
		if (s->cfa.reg == OP_DWARF_RSP) {
			r.cfa_type = OP_CFA_RSP;
		} else if (s->cfa.reg == OP_DWARF_RBP) {
			r.cfa_type = OP_CFA_RBP;
		} else {
			r.cfa_type = OP_CFA_REG;
			r.cfa_reg = (uint8_t)s->cfa.reg;
		}
	}
	if (r.cfa_type == OP_CFA_UNSUPPORTED) {
		r.cfa_off = 0;
		b->n_unsupported++;
	}
	reg_rule(&s->rbp, false, &r.rbp_type, &r.rbp_off);
	if (r.rbp_type == OP_REG_UNSUPPORTED)
		r.rbp_type = OP_REG_UNDEF; /* the walk only loses rbp, not the frame */
	reg_rule(&s->ra, true, &r.ra_type, &r.ra_off);
	r.flags = signal ? OP_RULE_SIGNAL : 0;
	return intern_rule(b, &r);
}

/* Everything one CFA program run needs. */
struct cfi_exec {
	const struct cie *cie;
	const struct section *sec;
	struct cfi_state st, init;
	struct cfi_state stack[MAX_REMEMBER];
	int depth;
	uint64_t loc, end;
	bool emit; /* false while running the CIE's initial instructions */
	struct builder *b;
};

static struct reg_rule *track(struct cfi_exec *x, uint64_t reg)
{
	if (reg == OP_DWARF_RBP)
		return &x->st.rbp;
	if (reg == x->cie->ra_reg)
		return &x->st.ra;
	return NULL;
}

static void advance(struct cfi_exec *x, uint64_t to)
{
	if (to <= x->loc)
		return;
	if (x->emit && x->loc < x->end)
		push_row(x->b, x->loc, state_rule(x->b, &x->st, x->cie->signal), false);
	x->loc = to;
}

/* v * align; an overflow saturates (no row can represent it: the rule becomes unsupported) */
static int64_t scaled(int64_t v, int64_t align)
{
	int64_t r;

	return __builtin_mul_overflow(v, align, &r) ? INT64_MAX : r;
}

static int run_program(struct cfi_exec *x, const uint8_t *p, const uint8_t *end)
{
	struct op_cursor c = { p, end };
	const struct cie *cie = x->cie;

	while (c.p < c.end && !c.bad) {
		uint8_t op = *c.p++;
		uint8_t hi = op & 0xc0, lo = op & 0x3f;
		uint64_t reg, len;
		int64_t off;
		struct reg_rule *rr;

		if (hi == 0x40) { /* DW_CFA_advance_loc */
			advance(x, x->loc + lo * cie->code_align);
			continue;
		}
		if (hi == 0x80) { /* DW_CFA_offset */
			off = scaled((int64_t)op_rd_uleb(&c), cie->data_align);
			if ((rr = track(x, lo)))
				*rr = (struct reg_rule){ .kind = RK_OFFSET, .off = off };
			continue;
		}
		if (hi == 0xc0) { /* DW_CFA_restore */
			if (lo == OP_DWARF_RBP)
				x->st.rbp = x->init.rbp;
			else if (lo == cie->ra_reg)
				x->st.ra = x->init.ra;
			continue;
		}
		switch (op) {
		case 0x00: /* nop */
			break;
		case 0x01: /* set_loc */
			if (x->sec)
				advance(x, rd_encoded(&c, cie->fde_enc, x->sec, 0));
			else
				advance(x, op_rd_fixed(&c, cie->addr_size));
			break;
		case 0x02: /* advance_loc1 */
			advance(x, x->loc + op_rd_fixed(&c, 1) * cie->code_align);
			break;
		case 0x03: /* advance_loc2 */
			advance(x, x->loc + op_rd_fixed(&c, 2) * cie->code_align);
			break;
		case 0x04: /* advance_loc4 */
			advance(x, x->loc + op_rd_fixed(&c, 4) * cie->code_align);
			break;
		case 0x05: /* offset_extended */
			reg = op_rd_uleb(&c);
			off = scaled((int64_t)op_rd_uleb(&c), cie->data_align);
			if ((rr = track(x, reg)))
				*rr = (struct reg_rule){ .kind = RK_OFFSET, .off = off };
			break;
		case 0x06: /* restore_extended */
			reg = op_rd_uleb(&c);
			if (reg == OP_DWARF_RBP)
				x->st.rbp = x->init.rbp;
			else if (reg == cie->ra_reg)
				x->st.ra = x->init.ra;
			break;
		case 0x07: /* undefined */
		case 0x08: /* same_value */
			reg = op_rd_uleb(&c);
			if ((rr = track(x, reg)))
				*rr = (struct reg_rule){ .kind = op == 0x07 ? RK_UNDEF : RK_SAME };
			break;
		case 0x09: /* register */
			reg = op_rd_uleb(&c);
			off = (int64_t)op_rd_uleb(&c);
			if ((rr = track(x, reg)))
				*rr = (struct reg_rule){ .kind = RK_REGISTER, .off = off };
			break;
		case 0x0a: /* remember_state */
			if (x->depth == MAX_REMEMBER)
				return -EINVAL;
			x->stack[x->depth++] = x->st;
			break;
		case 0x0b: /* restore_state: the CFA rule is restored too (DWARF 5 6.4.2.4) */
			if (x->depth == 0)
				return -EINVAL;
			x->st = x->stack[--x->depth];
			break;
		case 0x0c: /* def_cfa */
			x->st.cfa.reg = (uint32_t)op_rd_uleb(&c);
			x->st.cfa.off = (int64_t)op_rd_uleb(&c);
			x->st.cfa.expr_form = false;
			break;
		case 0x0d: /* def_cfa_register */
			x->st.cfa.reg = (uint32_t)op_rd_uleb(&c);
			x->st.cfa.expr_form = false;
			break;
		case 0x0e: /* def_cfa_offset */
			x->st.cfa.off = (int64_t)op_rd_uleb(&c);
			break;
		case 0x0f: /* def_cfa_expression */
			len = op_rd_uleb(&c);
			if (len > (uint64_t)(c.end - c.p))
				return -EINVAL;
			x->st.cfa = (struct cfa_rule){ .expr_form = true,
						       .expr = c.p,
						       .expr_len = len };
			c.p += len;
			break;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = op_rd_uleb(&c);
			len = op_rd_uleb(&c);
			if (len > (uint64_t)(c.end - c.p))
				return -EINVAL;
			if ((rr = track(x, reg)))
				*rr = (struct reg_rule){ .kind = op == 0x10 ? RK_EXPR : RK_VAL_EXPR,
							 .expr = c.p,
							 .expr_len = len };
			c.p += len;
			break;
		case 0x11: /* offset_extended_sf */
			reg = op_rd_uleb(&c);
			off = scaled(op_rd_sleb(&c), cie->data_align);
			if ((rr = track(x, reg)))
				*rr = (struct reg_rule){ .kind = RK_OFFSET, .off = off };
			break;
		case 0x12: /* def_cfa_sf */
			x->st.cfa.reg = (uint32_t)op_rd_uleb(&c);
			x->st.cfa.off = scaled(op_rd_sleb(&c), cie->data_align);
			x->st.cfa.expr_form = false;
			break;
		case 0x13: /* def_cfa_offset_sf */
			x->st.cfa.off = scaled(op_rd_sleb(&c), cie->data_align);
			break;
		case 0x14: /* val_offset */
		case 0x15: /* val_offset_sf */
			reg = op_rd_uleb(&c);
			off = scaled(op == 0x14 ? (int64_t)op_rd_uleb(&c) : op_rd_sleb(&c),
				     cie->data_align);
			if ((rr = track(x, reg)))
				*rr = (struct reg_rule){ .kind = RK_VAL_OFFSET, .off = off };
			break;
		case 0x2e: /* GNU_args_size */
			op_rd_uleb(&c);
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = op_rd_uleb(&c);
			off = scaled(scaled((int64_t)op_rd_uleb(&c), cie->data_align), -1);
			if ((rr = track(x, reg)))
				*rr = (struct reg_rule){ .kind = RK_OFFSET, .off = off };
			break;
		default:
			return -EINVAL;
		}
	}
	return c.bad ? -EINVAL : 0;
}

/* Small open-addressing map from CIE offset to parsed CIE. */
struct cie_map {
	struct cie *v;
	bool *used;
	size_t cap, n;
};

static struct cie *cie_find(struct cie_map *m, uint64_t off)
{
	if (!m->cap)
		return NULL;
	for (size_t j = (off * 0x9e3779b97f4a7c15ull) >> 40 & (m->cap - 1); m->used[j];
	     j = (j + 1) & (m->cap - 1))
		if (m->v[j].offset == off)
			return &m->v[j];
	return NULL;
}

static int cie_add(struct cie_map *m, const struct cie *c)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap) {
		struct cie_map g = { 0 };

		g.cap = m->cap ? m->cap * 2 : 16;
		g.v = calloc(g.cap, sizeof(*g.v));
		g.used = calloc(g.cap, sizeof(*g.used));
		if (!g.v || !g.used) {
			free(g.v);
			free(g.used);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->used[i])
				cie_add(&g, &m->v[i]);
		free(m->v);
		free(m->used);
		*m = g;
	}
	j = (c->offset * 0x9e3779b97f4a7c15ull) >> 40 & (m->cap - 1);
	while (m->used[j])
		j = (j + 1) & (m->cap - 1);
	m->v[j] = *c;
	m->used[j] = true;
	m->n++;
	return 0;
}

/* Parse the CIE at @off of @sec (body after the id field is [p, end)). */
static int parse_cie(const struct section *sec, bool eh, uint64_t off, const uint8_t *p,
		     const uint8_t *end, struct cie *out)
{
	struct op_cursor c = { p, end };
	const char *aug;
	uint8_t version;

	memset(out, 0, sizeof(*out));
	out->offset = off;
	out->fde_enc = PE_ABSPTR;
	out->addr_size = 8;
	version = (uint8_t)op_rd_fixed(&c, 1);
	if (version != 1 && version != 3 && version != 4)
		return -EINVAL;
	aug = (const char *)c.p;
	while (c.p < c.end && *c.p)
		c.p++;
	if (c.p == c.end)
		return -EINVAL;
	c.p++;
	if (aug[0] && aug[0] != 'z') {
		/* "eh" (ancient GCC) or unknown: cannot find the instructions reliably */
		return -ENOTSUP;
	}
	if (version == 4) {
		out->addr_size = (uint8_t)op_rd_fixed(&c, 1);
		op_rd_fixed(&c, 1); /* segment selector size */
		if (out->addr_size != 8 && out->addr_size != 4)
			return -EINVAL;
	}
	out->code_align = op_rd_uleb(&c);
	out->data_align = op_rd_sleb(&c);
	out->ra_reg = version == 1 ? (uint32_t)op_rd_fixed(&c, 1) : (uint32_t)op_rd_uleb(&c);
	if (aug[0] == 'z') {
		uint64_t len = op_rd_uleb(&c);
		const uint8_t *aug_end = c.p + len;

		if (len > (uint64_t)(c.end - c.p))
			return -EINVAL;
		out->has_z = true;
		for (const char *a = aug + 1; *a; a++) {
			uint8_t enc;

			switch (*a) {
			case 'R':
				out->fde_enc = (uint8_t)op_rd_fixed(&c, 1);
				break;
			case 'L':
				op_rd_fixed(&c, 1);
				break;
			case 'P':
				enc = (uint8_t)op_rd_fixed(&c, 1);
				rd_encoded(&c, enc & ~PE_INDIRECT, sec, 0);
				break;
			case 'S':
				out->signal = true;
				break;
			default: /* 'B' (aarch64), 'G' (MTE) etc.: data length known from 'z' */
				break;
			}
		}
		c.p = aug_end;
	}
	(void)eh;
	if (c.bad)
		return -EINVAL;
	out->insns = c.p;
	out->insns_end = end;
	return 0;
}

/*
 * Walk every entry of an .eh_frame (@eh) or .debug_frame section and push rows for each
 * FDE. Malformed single FDEs are skipped; a malformed entry length ends the walk.
 */
static int compile_section(struct builder *b, const struct section *sec, bool eh, size_t *n_fdes)
{
	struct cie_map cies = { 0 };
	struct op_cursor c = { sec->data, sec->data + sec->size };
	int err = 0;

	while ((size_t)(c.end - c.p) >= 4 && !b->oom) {
		const uint8_t *entry = c.p, *body, *end;
		uint64_t len = op_rd_fixed(&c, 4), id, id_field;
		bool dw64 = false;

		if (len == 0) {
			if (eh)
				break; /* terminator */
			continue;
		}
		if (len == 0xffffffff) {
			len = op_rd_fixed(&c, 8);
			dw64 = true;
		}
		if (c.bad || len > (uint64_t)(c.end - c.p))
			break;
		end = c.p + len;
		id_field = sec->addr + (uint64_t)(c.p - sec->data);
		(void)id_field;
		body = c.p;
		id = op_rd_fixed(&c, (dw64 && !eh) ? 8 : 4);
		if (c.bad)
			break;
		if (c.p > end) { /* an entry shorter than its own id field */
			c.p = end;
			continue;
		}

		bool is_cie = eh ? id == 0 : id == (dw64 ? UINT64_MAX : 0xffffffffu);

		if (is_cie) {
			struct cie cie;

			if (!cie_find(&cies, (uint64_t)(entry - sec->data)) &&
			    parse_cie(sec, eh, (uint64_t)(entry - sec->data), c.p, end, &cie) ==
				    0 &&
			    cie_add(&cies, &cie)) {
				err = -ENOMEM;
				break;
			}
			c.p = end;
			continue;
		}

		/* FDE: the CIE pointer is relative to this field (eh) or a section offset. */
		uint64_t cie_off = eh ? (uint64_t)(body - sec->data) - id : id;
		struct cie *cie = cie_find(&cies, cie_off);

		if (!cie && cie_off < sec->size) {
			/* .debug_frame may place a CIE after its FDEs: parse it on demand */
			struct op_cursor cc = { sec->data + cie_off, c.end };
			uint64_t clen = op_rd_fixed(&cc, 4), cid;
			bool c64 = false;
			struct cie parsed;

			if (clen == 0xffffffff) {
				clen = op_rd_fixed(&cc, 8);
				c64 = true;
			}
			if (!cc.bad && clen && clen <= (uint64_t)(cc.end - cc.p)) {
				const uint8_t *cend = cc.p + clen;

				cid = op_rd_fixed(&cc, (c64 && !eh) ? 8 : 4);
				if (!cc.bad &&
				    (eh ? cid == 0 : cid == (c64 ? UINT64_MAX : 0xffffffffu)) &&
				    parse_cie(sec, eh, cie_off, cc.p, cend, &parsed) == 0) {
					if (cie_add(&cies, &parsed)) {
						err = -ENOMEM;
						break;
					}
					cie = cie_find(&cies, cie_off);
				}
			}
		}
		if (!cie) {
			c.p = end;
			continue;
		}

		uint64_t pc_begin, pc_range;

		if (eh) {
			pc_begin = rd_encoded(&c, cie->fde_enc, sec, 0);
			pc_range = rd_encoded(&c, cie->fde_enc & 0x0f, sec, 0);
		} else {
			pc_begin = op_rd_fixed(&c, cie->addr_size);
			pc_range = op_rd_fixed(&c, cie->addr_size);
		}
		if (c.p > end) /* the addresses ran past the entry */
			c.bad = true;
		if (cie->has_z && !c.bad) {
			uint64_t alen = op_rd_uleb(&c);

			if (c.p > end || alen > (uint64_t)(end - c.p))
				c.bad = true;
			else
				c.p += alen;
		}
		if (c.bad || pc_begin == 0 || pc_range == 0 || pc_begin + pc_range < pc_begin) {
			c.bad = false;
			c.p = end;
			continue;
		}

		struct cfi_exec x;

		memset(&x, 0, sizeof(x));
		x.cie = cie;
		x.sec = eh ? sec : NULL;
		x.b = b;
		x.loc = pc_begin;
		x.end = pc_begin + pc_range;
		x.st.cfa.reg = OP_DWARF_RSP;
		size_t mark = b->n_rows;

		if (run_program(&x, cie->insns, cie->insns_end) == 0) {
			x.init = x.st;
			x.depth = 0;
			x.emit = true;
			x.loc = pc_begin;
			if (run_program(&x, c.p, end) == 0) {
				if (x.loc < x.end)
					push_row(b, x.loc, state_rule(b, &x.st, cie->signal),
						 false);
				push_row(b, x.end, b->none_rule, true);
				push_run(b, mark);
				(*n_fdes)++;
			} else {
				b->n_rows = mark; /* drop the partial FDE */
			}
		}
		c.p = end;
	}
	free(cies.v);
	free(cies.used);
	if (b->oom)
		return -ENOMEM;
	return err;
}

static int raw_row_cmp(const void *a, const void *b)
{
	const struct raw_row *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	if (x->end_marker != y->end_marker)
		return x->end_marker < y->end_marker ? -1 : 1;
	return 0;
}

static int run_cmp(const void *a, const void *b)
{
	const struct fde_run *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The runs in address order. Most come pushed in order already, in a few sorted stretches (a
 * cgo binary: its C code's FDEs, then Go's functions): those are merged, stretch after
 * stretch, where glibc's merge sort took 14% of a 37 MB Go binary's compile. Many stretches,
 * or no memory for the merge: qsort.
 */
static void sort_runs(struct fde_run *runs, size_t n)
{
	size_t edge[10], n_edges = 1;
	struct fde_run *tmp;

	edge[0] = 0;
	for (size_t i = 1; i < n; i++) {
		if (run_cmp(&runs[i - 1], &runs[i]) <= 0)
			continue;
		if (n_edges == 9) {
			qsort(runs, n, sizeof(*runs), run_cmp);
			return;
		}
		edge[n_edges++] = i;
	}
	if (n_edges == 1)
		return;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp) {
		qsort(runs, n, sizeof(*runs), run_cmp);
		return;
	}
	edge[n_edges] = n;
	/* the first stretch merged with each next one in turn */
	for (size_t e = 1; e < n_edges; e++) {
		size_t i = 0, j = edge[e], k = 0, mid = edge[e], end = edge[e + 1];

		while (i < mid && j < end)
			tmp[k++] = run_cmp(&runs[i], &runs[j]) <= 0 ? runs[i++] : runs[j++];
		while (i < mid)
			tmp[k++] = runs[i++];
		while (j < end)
			tmp[k++] = runs[j++];
		memcpy(runs, tmp, k * sizeof(*runs));
	}
	free(tmp);
}

static bool rows_sorted(const struct raw_row *r, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (raw_row_cmp(&r[i - 1], &r[i]) > 0)
			return false;
	}
	return true;
}

/*
 * Sort the rows by sorting the FDEs instead (a tenth as many entries; libLLVM's million rows
 * went through qsort in 60% of its compile time). Each FDE's rows are already in order. Taken
 * in address order, the runs whose rows also come in push order (a Go binary's functions, most
 * linkers' FDEs) are moved down where they are; the others (an FDE emitted out of order: one in
 * a 37 MB Go binary) are copied aside and merged in from the end. No second array as large as
 * the rows (5.8 MB for that binary). The one tie expected is an FDE starting where the
 * previous one ends: its first row goes before that end marker, as raw_row_cmp orders them.
 * Returns false when the result is not sorted (overlapping FDEs) or on allocation failure:
 * the caller sorts row by row (every row is there, in some order).
 */
static bool sort_by_runs(struct builder *b)
{
	struct raw_row *aside = NULL, *rows = b->rows;
	size_t total = 0, n_aside = 0, kept, src_end;

	if (b->no_runs || !b->n_runs)
		return false;
	for (size_t i = 0; i < b->n_runs; i++)
		total += b->runs[i].n;
	if (total != b->n_rows)
		return false;
	sort_runs(b->runs, b->n_runs);
	/* a run stays when it starts past the last run kept; the same test in every loop below */
	src_end = 0;
	for (size_t i = 0; i < b->n_runs; i++) {
		if (b->runs[i].start >= src_end)
			src_end = b->runs[i].start + b->runs[i].n;
		else
			n_aside += b->runs[i].n;
	}
	if (n_aside && !(aside = big_resize(NULL, 0, n_aside * sizeof(*aside))))
		return false;
	src_end = 0;
	for (size_t i = 0, a = 0; i < b->n_runs; i++) {
		const struct fde_run *r = &b->runs[i];

		if (r->start >= src_end) {
			src_end = r->start + r->n;
			continue;
		}
		memcpy(aside + a, rows + r->start, r->n * sizeof(*rows));
		a += r->n;
	}
	/* the kept runs down, in order: each lands at or below where it was; runs that follow
	 * each other where they are move together */
	src_end = 0;
	kept = 0;
	for (size_t i = 0, from = 0, len = 0; i <= b->n_runs; i++) {
		const struct fde_run *r = i < b->n_runs ? &b->runs[i] : NULL;

		if (r && r->start < src_end)
			continue;
		if (r && len && r->start == from + len) {
			len += r->n;
		} else {
			if (len && kept != from)
				memmove(rows + kept, rows + from, len * sizeof(*rows));
			kept += len;
			from = r ? r->start : 0;
			len = r ? r->n : 0;
		}
		if (r)
			src_end = r->start + r->n;
	}
	/* the runs set aside merged in from the end: the slot written is never one unread */
	for (size_t k = b->n_rows, j = n_aside; j;) {
		if (kept && raw_row_cmp(&rows[kept - 1], &aside[j - 1]) > 0)
			rows[--k] = rows[--kept];
		else
			rows[--k] = aside[--j];
	}
	big_free(aside, n_aside * sizeof(*aside));
	for (size_t i = 1; i < b->n_rows; i++) {
		if (rows[i - 1].end_marker && !rows[i].end_marker && rows[i].pc == rows[i - 1].pc) {
			struct raw_row end = rows[i - 1];

			rows[i - 1] = rows[i];
			rows[i] = end;
		}
	}
	return rows_sorted(rows, b->n_rows); /* false: overlapping FDEs */
}

static int finish(struct builder *b, enum op_cfi_source src, size_t n_fdes,
		  struct op_cfi_table **out)
{
	struct op_cfi_table *t;
	uint64_t prev_pc = 0;
	size_t n = 0;

	if (!b->n_rows)
		return -ENOENT;
	/* Stable enough: rows of one FDE are pushed in address order and FDEs rarely overlap. */
	if (!sort_by_runs(b))
		qsort(b->rows, b->n_rows, sizeof(*b->rows), raw_row_cmp);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->base = b->rows[0].pc;
	t->end = b->rows[b->n_rows - 1].pc;
	if (t->end - t->base > UINT32_MAX) {
		free(t);
		return -E2BIG;
	}
	/*
	 * Compacted in place: a row written (8 bytes at 8n) never reaches a raw row not read yet
	 * (16 bytes at 16i, n <= i): no second array as large as the table (2.9 MB for a 37 MB
	 * Go binary) next to the raw rows.
	 */
	_Static_assert(sizeof(*t->rows) <= sizeof(*b->rows), "rows compact in place");
	t->rows = (struct op_unwind_row *)(void *)b->rows;
	for (size_t i = 0; i < b->n_rows; i++) {
		const struct raw_row r = b->rows[i];

		/* one row per address: the first (a real row beats an end marker) wins */
		if (i && r.pc == prev_pc)
			continue;
		prev_pc = r.pc;
		if (n && t->rows[n - 1].rule == r.rule)
			continue;
		t->rows[n].pc = (uint32_t)(r.pc - t->base);
		t->rows[n].rule = r.rule;
		n++;
	}
	if (n > OP_UNWIND_MAX_ROWS_PER_TABLE) {
		free(t); /* the rows are still the builder's */
		return -E2BIG;
	}
	/* op_cfi_table_free() releases n rows */
	big_shrink(b->rows, b->cap_rows * sizeof(*b->rows), n * sizeof(*t->rows));
	b->rows = NULL;
	b->cap_rows = 0;
	t->n_rows = n;
	t->n_raw_rows = b->n_rows;
	t->rules = b->rules;
	t->n_rules = b->n_rules;
	b->rules = NULL;
	t->source = src;
	t->n_fdes = n_fdes;
	t->n_unsupported = b->n_unsupported;
	*out = t;
	return 0;
}

static int get_section(Elf *elf, const char *want, struct section *out, Elf_Scn **scn_out)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, want))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return -EINVAL;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || !d->d_size)
			return -ENOENT;
		out->data = d->d_buf;
		out->size = d->d_size;
		out->addr = sh.sh_addr;
		if (scn_out)
			*scn_out = scn;
		return 0;
	}
	return -ENOENT;
}

/* Bytes of the file image at ELF address @vaddr up to the end of its PT_LOAD segment. */
static const uint8_t *vaddr_bytes(Elf *elf, const uint8_t *img, size_t img_size, uint64_t vaddr,
				  size_t *avail)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr < ph.p_vaddr || vaddr >= ph.p_vaddr + ph.p_filesz)
			continue;
		uint64_t off = ph.p_offset + (vaddr - ph.p_vaddr);

		if (off >= img_size)
			return NULL;
		*avail = (size_t)(ph.p_offset + ph.p_filesz - off);
		if (*avail > img_size - off)
			*avail = img_size - off;
		return img + off;
	}
	return NULL;
}

/*
 * Without section headers (stripped with sstrip, some loaders' images), PT_GNU_EH_FRAME
 * points at .eh_frame_hdr, whose eh_frame_ptr locates .eh_frame; its extent is bounded by
 * the segment and the section's zero terminator.
 */
static int eh_frame_from_hdr(Elf *elf, struct section *out)
{
	size_t n, img_size;
	const uint8_t *img = (const uint8_t *)elf_rawfile(elf, &img_size);

	if (!img || elf_getphdrnum(elf, &n))
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		struct section hdr;
		struct op_cursor c;
		uint64_t eh;
		size_t avail;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
			continue;
		if (ph.p_offset > img_size || img_size - ph.p_offset < 4)
			return -EINVAL;
		hdr.data = img + ph.p_offset;
		/* a p_filesz past the end of the file is cut to the file */
		hdr.size =
			ph.p_filesz < img_size - ph.p_offset ? ph.p_filesz : img_size - ph.p_offset;
		hdr.addr = ph.p_vaddr;
		c = (struct op_cursor){ hdr.data, hdr.data + hdr.size };
		if (op_rd_fixed(&c, 1) != 1) /* version */
			return -EINVAL;
		uint8_t ptr_enc = (uint8_t)op_rd_fixed(&c, 1);

		op_rd_fixed(&c, 2); /* fde_count_enc, table_enc */
		eh = rd_encoded(&c, ptr_enc, &hdr, hdr.addr);
		if (c.bad)
			return -EINVAL;
		out->data = vaddr_bytes(elf, img, img_size, eh, &avail);
		if (!out->data)
			return -ENOENT;
		out->size = avail;
		out->addr = eh;
		return 0;
	}
	return -ENOENT;
}

/*
 * Go SP deltas taken as real: reflectcall's runtime.call1073741824 has a 1 GiB frame, and
 * syscall.rawVforkSyscall pops its own return address (-8: CFA = rsp, as Go's .debug_frame
 * says too). Anything else is a corrupt table.
 */
#define MIN_GO_SPDELTA (-8)
#define MAX_GO_SPDELTA (INT32_MAX - 8)

#define GO_RULE_CACHE 512 /* spdeltas -8 .. 4080 by 8: the rule of each, once interned */

struct go_ctx {
	struct builder *b;
	uint32_t rule_of[GO_RULE_CACHE]; /* UINT32_MAX: not interned yet */
	size_t n_funcs;
	size_t run_start; /* the function's first row: its rows are one run for finish()'s sort */
	uint64_t end;	  /* where the last range ended, its end marker not pushed yet */
	bool pending;
};

/* Close the function being read: its last end marker, and its rows as one sorted run. */
static void go_end_function(struct go_ctx *g)
{
	if (g->pending)
		push_row(g->b, g->end, g->b->none_rule, true);
	g->pending = false;
	push_run(g->b, g->run_start);
}

/*
 * One range of a Go function's SP-delta table: the return address is at rsp + spdelta, so
 * CFA = rsp + spdelta + 8 and RA at CFA - 8; rbp is not described (Go's own .debug_frame
 * does the same: the walk needs only rsp through Go frames).
 */
static int go_range(void *ctx, uint64_t lo, uint64_t hi, int32_t spdelta, bool entry)
{
	struct go_ctx *g = ctx;
	struct op_unwind_rule r;
	uint32_t rule;

	memset(&r, 0, sizeof(r));
	if (spdelta < MIN_GO_SPDELTA || spdelta > MAX_GO_SPDELTA) {
		g->b->n_unsupported++;
		rule = g->b->none_rule;
	} else {
		uint32_t slot = (uint32_t)(spdelta + 8) / 8;
		bool cached = spdelta % 8 == 0 && slot < GO_RULE_CACHE;

		rule = cached ? g->rule_of[slot] : UINT32_MAX;
		if (rule == UINT32_MAX) {
			r.cfa_type = OP_CFA_RSP;
			r.cfa_off = spdelta + 8;
			r.rbp_type = OP_REG_SAME;
			r.ra_type = OP_REG_AT_CFA;
			r.ra_off = -8;
			rule = intern_rule(g->b, &r);
			if (cached)
				g->rule_of[slot] = rule;
		}
	}
	if (entry) {
		/* where the next function starts, its first row is the row: no end marker (the
		 * rows stay sorted as pushed, finish() sorts them in place) */
		if (g->pending && lo == g->end)
			g->pending = false;
		go_end_function(g);
		g->run_start = g->b->n_rows;
	} else if (g->pending && lo != g->end) {
		push_row(g->b, g->end, g->b->none_rule, true);
	}
	/* a range that starts where the last one ended needs no end marker between them */
	g->n_funcs += entry;
	push_row(g->b, lo, rule, false);
	g->end = hi;
	g->pending = true;
	return g->b->oom ? -ENOMEM : 0;
}

static int compile_elf(Elf *elf, int fd, struct op_cfi_table **out)
{
	struct builder b;
	struct section sec;
	struct op_unwind_rule none;
	struct op_gopcln *go;
	enum op_cfi_source src = OP_CFI_EH_FRAME;
	size_t n_fdes = 0;
	bool eh;
	int err = 0;

	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	memset(&none, 0, sizeof(none));
	none.cfa_type = OP_CFA_NONE;
	b.none_rule = intern_rule(&b, &none);
	if (b.oom)
		return -ENOMEM;

	/*
	 * Go code is described by .gopclntab, which every Go binary keeps (also with -s -w,
	 * which drops .debug_frame, Go's only CFI); .eh_frame then covers the C parts of a cgo
	 * binary (external linking puts Go's CFI in .debug_frame next to it, never read).
	 */
	go = fd >= 0 ? op_gopcln_open_fd(elf, fd) : op_gopcln_open_mem(elf);
	eh = get_section(elf, ".eh_frame", &sec, NULL) == 0 || eh_frame_from_hdr(elf, &sec) == 0;
	if (eh) {
		err = compile_section(&b, &sec, true, &n_fdes);
	} else if (!go && get_section(elf, ".debug_frame", &sec, NULL) == 0) {
		src = OP_CFI_DEBUG_FRAME;
		err = compile_section(&b, &sec, false, &n_fdes);
	} else if (!go) {
		err = -ENOENT;
	}
	if (go && !err) {
		struct go_ctx g = { .b = &b, .run_start = b.n_rows };

		memset(g.rule_of, 0xff, sizeof(g.rule_of));

		err = op_gopcln_spdeltas(go, go_range, &g);
		go_end_function(&g);
		n_fdes += g.n_funcs;
		src = OP_CFI_GOPCLNTAB;
	}
	op_gopcln_free(go);
	if (!err)
		err = finish(&b, src, n_fdes, out);
	big_free(b.rows, b.cap_rows * sizeof(*b.rows));
	free(b.runs);
	free(b.rules);
	free(b.hash);
	return err;
}

int op_cfi_compile_fd(int fd, struct op_cfi_table **out)
{
	Elf *elf;
	int err;

	*out = NULL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	err = compile_elf(elf, fd, out);
	elf_end(elf);
	return err;
}

int op_cfi_compile_path(const char *path, struct op_cfi_table **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	*out = NULL;
	if (fd < 0)
		return -errno;
	err = op_cfi_compile_fd(fd, out);
	close(fd);
	return err;
}

int op_cfi_compile_mem(const void *image, size_t size, struct op_cfi_table **out)
{
	Elf *elf;
	int err;

	*out = NULL;
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, size);
	if (!elf)
		return -EINVAL;
	err = compile_elf(elf, -1, out);
	elf_end(elf);
	return err;
}

void op_cfi_table_free(struct op_cfi_table *t)
{
	if (!t)
		return;
	big_free(t->rows, t->n_rows * sizeof(*t->rows));
	free(t->rules);
	free(t);
}

size_t op_cfi_table_bytes(const struct op_cfi_table *t)
{
	return t ? t->n_rows * sizeof(*t->rows) + t->n_rules * sizeof(*t->rules) : 0;
}

size_t op_cfi_index_entries(const struct op_cfi_table *t, unsigned int *shift)
{
	size_t budget, last;

	*shift = 0;
	if (!t || !t->n_rows)
		return 0;
	budget = t->n_rows / OP_UNWIND_ROWS_PER_INDEX_SLOT * 2;
	last = t->rows[t->n_rows - 1].pc;
	for (unsigned int s = OP_UNWIND_MIN_BUCKET_SHIFT; s <= OP_UNWIND_MAX_BUCKET_SHIFT; s++) {
		size_t n = (last >> s) + 2; /* buckets 0 .. last >> s, and the end entry */

		if (n <= budget) {
			*shift = s;
			return n;
		}
	}
	return 0; /* fewer rows than a one-bucket index is worth */
}

void op_cfi_index_fill(const struct op_cfi_table *t, unsigned int shift, uint32_t *idx, size_t n)
{
	size_t r = 0;

	if (!n)
		return;
	for (size_t b = 0; b + 1 < n; b++) {
		uint64_t start = (uint64_t)b << shift;

		while (r + 1 < t->n_rows && t->rows[r + 1].pc <= start)
			r++;
		idx[b] = (uint32_t)r;
	}
	idx[n - 1] = (uint32_t)(t->n_rows - 1);
}

const struct op_unwind_rule *op_cfi_lookup(const struct op_cfi_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi;
	uint64_t rel;

	if (!t || !t->n_rows || vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return NULL;
	rel = vaddr - t->base;
	hi = t->n_rows;
	while (hi - lo > 1) { /* invariant: rows[lo].pc <= rel, rows[hi].pc > rel (or hi = n) */
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= rel)
			lo = mid;
		else
			hi = mid;
	}
	if (t->rows[lo].pc > rel)
		return NULL;
	return &t->rules[t->rows[lo].rule];
}

static void hex(char *buf, size_t len, const uint8_t *p, size_t n, char prefix)
{
	size_t o = 0;

	if (len < 2)
		return;
	buf[o++] = prefix;
	for (size_t i = 0; i < n && o + 2 < len; i++, o += 2)
		snprintf(buf + o, 3, "%02x", p[i]);
	buf[o] = 0;
}

int op_cfi_file_id(int fd, char *buf, size_t len)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	struct section s;
	struct stat st;
	uint64_t h = 1469598103934665603ull;
	int err = -ENOENT;

	if (len < 18)
		return -EINVAL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn)) && err) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + noff, "GNU", 4) && nh.n_descsz) {
				hex(buf, len, (const uint8_t *)d->d_buf + doff, nh.n_descsz, 'b');
				err = 0;
				break;
			}
		}
	}
	if (err) {
		const char *names[] = { ".eh_frame", ".debug_frame", ".text" };

		for (size_t i = 0; i < 3; i++) {
			if (get_section(elf, names[i], &s, NULL))
				continue;
			/* eight bytes a step (byte by byte: 19 ms for a Go collector) */
			h = op_mix64((h ^ op_hash_bytes(s.data, s.size)) * 1099511628211ull);
		}
		if (fstat(fd, &st) == 0)
			h ^= (uint64_t)st.st_size * 0x9e3779b97f4a7c15ull;
		snprintf(buf, len, "h%016llx", (unsigned long long)h);
		err = 0;
	}
	elf_end(elf);
	return err;
}
