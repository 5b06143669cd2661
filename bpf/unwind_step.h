/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compact CFI unwind rows and the one-frame unwind step, shared by the BPF unwinder
 * (bpf/unwind.bpf.h), the table compiler (lib/cfi.c) and the unit tests, which run the very
 * same step as ordinary C against recorded stacks. Plain C with fixed-width types only.
 *
 * A binary's table is a sorted array of rows; a row covers [row.pc, next row.pc) relative to
 * the table's base address and names a rule. Rules are deduplicated: a few hundred distinct
 * rules cover all of libc, so a row is 8 bytes and the rule table is shared.
 *
 * The step functions are compiled where the includer defines OP_READ_USER(dst_ptr, addr),
 * returning 0 on success (bpf_probe_read_user in BPF, a snapshot reader in tests); without
 * it only the types are declared.
 */
#ifndef OTELPROF_UNWIND_STEP_H
#define OTELPROF_UNWIND_STEP_H

#if !defined(__VMLINUX_H__)
#include <linux/types.h>
#endif

#ifndef OP_UNWIND_INLINE
#define OP_UNWIND_INLINE static inline __attribute__((always_inline))
#endif

/* DWARF register numbers on x86_64. */
#define OP_DWARF_RBP   6
#define OP_DWARF_RSP   7
#define OP_DWARF_RA    16
#define OP_DWARF_NREGS 17

/* How to compute the canonical frame address (CFA). */
enum op_cfa_type {
	OP_CFA_NONE = 0,  /* no FDE covers the PC */
	OP_CFA_RSP = 1,	  /* rsp + cfa_off */
	OP_CFA_RBP = 2,	  /* rbp + cfa_off */
	OP_CFA_REG = 3,	  /* reg[cfa_reg] + cfa_off; only known in the interrupted frame */
	OP_CFA_PLT = 4,	  /* rsp + cfa_off + ((rip & 15) >= cfa_reg ? 8 : 0): PLT stubs */
	OP_CFA_DEREF = 5, /* *(reg[cfa_reg] + cfa_off): stack realignment (DRAP), signal frames */
	OP_CFA_UNSUPPORTED = 6, /* an expression the compiler does not recognise */
};

/* Where the return address or the caller's rbp is. */
enum op_reg_type {
	OP_REG_SAME = 0,   /* unchanged (callee-saved and not saved yet) */
	OP_REG_UNDEF = 1,  /* undefined: for the return address, the outermost frame */
	OP_REG_AT_CFA = 2, /* saved at cfa + off */
	OP_REG_AT_RSP = 3, /* saved at rsp + off (DW_OP_breg7 expression) */
	OP_REG_AT_RBP = 4, /* saved at rbp + off (DW_OP_breg6 expression) */
	OP_REG_UNSUPPORTED = 5,
};

/* op_unwind_rule.flags */
#define OP_RULE_SIGNAL 1 /* signal trampoline: the caller's PC is exact, not a return address */

struct op_unwind_rule {
	__u8 cfa_type; /* enum op_cfa_type */
	__u8 cfa_reg;  /* DWARF register for OP_CFA_REG/DEREF; threshold for OP_CFA_PLT */
	__u8 rbp_type; /* enum op_reg_type */
	__u8 ra_type;  /* enum op_reg_type */
	__s32 cfa_off;
	__s16 rbp_off;
	__s16 ra_off;
	__u8 flags; /* OP_RULE_* */
	__u8 pad[3];
};

struct op_unwind_row {
	__u32 pc;   /* offset from the table base */
	__u32 rule; /* index into the rule table */
};

/* Registers the walk tracks. regs[] is valid only for the interrupted frame (leaf). */
struct op_unwind_regs {
	__u64 pc;
	__u64 sp;
	__u64 bp;
	__u8 leaf;     /* pc is the interrupted instruction; regs[] valid */
	__u8 exact_pc; /* look pc up as is (leaf, or after a signal frame), else pc - 1 */
	__u8 bp_valid;
	__u8 pad[5];
	__u64 regs[OP_DWARF_NREGS];
};

/* Result of one step (besides the otelprof_unwind_error codes it returns as negatives). */
#define OP_STEP_NEXT 0 /* regs now describe the caller */
#define OP_STEP_END  1 /* outermost frame reached: the stack is complete */

/* enum otelprof_unwind_error values, repeated so this header stands alone in tests. */
#define OP_STEP_ERR_PC_NOT_COVERED 2
#define OP_STEP_ERR_BAD_MEMORY	   3
#define OP_STEP_ERR_BAD_RULE	   7

#ifdef OP_READ_USER
OP_UNWIND_INLINE int op_unwind_reg_value(const struct op_unwind_regs *r, __u32 reg, __u64 *v)
{
	if (reg == OP_DWARF_RSP) {
		*v = r->sp;
		return 0;
	}
	if (reg == OP_DWARF_RBP) {
		if (!r->bp_valid)
			return -1;
		*v = r->bp;
		return 0;
	}
	if (r->leaf && reg < OP_DWARF_NREGS) {
		*v = r->regs[reg];
		return 0;
	}
	return -1;
}

/* Value of a saved register under rule @type/@off, given the frame's CFA. */
OP_UNWIND_INLINE int op_unwind_saved(const struct op_unwind_regs *r, __u8 type, __s16 off,
				     __u64 cfa, __u64 *v)
{
	__u64 addr;

	switch (type) {
	case OP_REG_AT_CFA:
		addr = cfa + (__s64)off;
		break;
	case OP_REG_AT_RSP:
		addr = r->sp + (__s64)off;
		break;
	case OP_REG_AT_RBP:
		if (!r->bp_valid)
			return -OP_STEP_ERR_BAD_RULE;
		addr = r->bp + (__s64)off;
		break;
	default:
		return -OP_STEP_ERR_BAD_RULE;
	}
	if (OP_READ_USER(v, addr))
		return -OP_STEP_ERR_BAD_MEMORY;
	return 0;
}

/*
 * Unwind one frame with @rule (the row covering the frame's PC). On OP_STEP_NEXT, @r holds
 * the caller's pc/sp/bp. Returns OP_STEP_NEXT, OP_STEP_END, or -OP_STEP_ERR_*.
 */
OP_UNWIND_INLINE int op_unwind_step(struct op_unwind_regs *r, const struct op_unwind_rule *rule)
{
	__u64 cfa = 0, base = 0, ra = 0, bp = r->bp;
	__u8 bp_valid = r->bp_valid;
	int err;

	switch (rule->cfa_type) {
	case OP_CFA_RSP:
		cfa = r->sp + (__s64)rule->cfa_off;
		break;
	case OP_CFA_RBP:
		if (!r->bp_valid)
			return -OP_STEP_ERR_BAD_RULE;
		cfa = r->bp + (__s64)rule->cfa_off;
		break;
	case OP_CFA_REG:
		if (op_unwind_reg_value(r, rule->cfa_reg, &base))
			return -OP_STEP_ERR_BAD_RULE;
		cfa = base + (__s64)rule->cfa_off;
		break;
	case OP_CFA_PLT:
		cfa = r->sp + (__s64)rule->cfa_off + ((r->pc & 15) >= rule->cfa_reg ? 8 : 0);
		break;
	case OP_CFA_DEREF:
		if (op_unwind_reg_value(r, rule->cfa_reg, &base))
			return -OP_STEP_ERR_BAD_RULE;
		if (OP_READ_USER(&cfa, base + (__s64)rule->cfa_off))
			return -OP_STEP_ERR_BAD_MEMORY;
		break;
	case OP_CFA_NONE:
		return -OP_STEP_ERR_PC_NOT_COVERED;
	default:
		return -OP_STEP_ERR_BAD_RULE;
	}

	if (rule->ra_type == OP_REG_UNDEF)
		return OP_STEP_END;
	err = op_unwind_saved(r, rule->ra_type, rule->ra_off, cfa, &ra);
	if (err)
		return err;

	switch (rule->rbp_type) {
	case OP_REG_SAME:
		break;
	case OP_REG_AT_CFA:
	case OP_REG_AT_RSP:
	case OP_REG_AT_RBP:
		if (op_unwind_saved(r, rule->rbp_type, rule->rbp_off, cfa, &bp))
			bp_valid = 0;
		else
			bp_valid = 1;
		break;
	default:
		bp_valid = 0;
		break;
	}

	r->exact_pc = (rule->flags & OP_RULE_SIGNAL) ? 1 : 0;
	r->pc = ra;
	r->sp = cfa;
	r->bp = bp;
	r->bp_valid = bp_valid;
	r->leaf = 0;
	if (!ra)
		return OP_STEP_END;
	return OP_STEP_NEXT;
}

/* Frame-pointer step for binaries without CFI: [rbp] = caller's rbp, [rbp+8] = return. */
OP_UNWIND_INLINE int op_unwind_step_fp(struct op_unwind_regs *r)
{
	__u64 next[2];

	if (!r->bp_valid || !r->bp || (r->bp & 7))
		return OP_STEP_END;
	if (OP_READ_USER(&next[0], r->bp) || OP_READ_USER(&next[1], r->bp + 8))
		return -OP_STEP_ERR_BAD_MEMORY;
	r->sp = r->bp + 16;
	r->pc = next[1];
	r->bp_valid = next[0] > r->bp; /* callers' frames are at higher addresses */
	r->bp = next[0];
	r->leaf = 0;
	r->exact_pc = 0;
	if (!r->pc)
		return OP_STEP_END;
	return OP_STEP_NEXT;
}

#endif /* OP_READ_USER */

/*
 * BPF map layouts (bpf/unwind.bpf.h, filled by lib/unwind.c).
 *
 * unwind_tables[slot]: one compiled binary's rows, unwind_rows[first_row, first_row+n_rows);
 * n_rows == 0 marks a free or evicted slot. Rows name rules in the shared unwind_rules.
 * unwind_procs[pid]: that process's executable mappings, sorted by start; a PC maps to
 * row-relative pc - bias.
 *
 * A table's bucket index (lib/cfi.c, op_cfi_index_entries()) narrows each lookup to the rows
 * of one 2^bucket_shift-byte bucket of row-relative pc, a few instead of a search over the
 * whole table (~15 halvings for libc, each a likely cache miss in a 16 MiB array). Entry b
 * is the index (from first_row) of the last row with pc <= b << bucket_shift, 0 if none;
 * entry n_buckets is n_rows - 1. The row covering pc, in bucket b, is then among rows
 * [entry b, entry b+1]. The entries are stored in unwind_rows too, right after the rows,
 * two to a row (entry 2k in slot k's pc, 2k+1 in its rule), so the index needs no map of
 * its own and is allocated, written and evicted with its rows.
 */
#define OP_UNWIND_MAX_MAPPINGS 256
#define OP_UNWIND_TABLE_FP     0xffffffffu /* binary without CFI: frame-pointer step */
#define OP_UNWIND_TABLE_ANON   0xfffffffeu /* anonymous/JIT executable memory: stop here */

struct op_unwind_table {
	__u32 first_row;
	__u32 n_rows;
	__u32 index_row;    /* unwind_rows slot of bucket index entries 0 and 1 */
	__u32 n_buckets;    /* 0: no index, search all rows */
	__u32 bucket_shift; /* a bucket covers 2^bucket_shift bytes of row-relative pc */
};

/* Bucket sizes the index may use, and the share of a table's rows its entries may add. */
#define OP_UNWIND_MIN_BUCKET_SHIFT    4
#define OP_UNWIND_MAX_BUCKET_SHIFT    31
#define OP_UNWIND_ROWS_PER_INDEX_SLOT 16 /* at most one index slot (2 entries) per 16 rows */

struct op_unwind_mapping {
	__u64 start, end; /* run-time addresses [start, end) */
	__u64 bias;	  /* row-relative pc = pc - bias */
	__u32 table;	  /* slot in unwind_tables, or OP_UNWIND_TABLE_FP/ANON */
	__u32 pad;
};

struct op_unwind_proc {
	__u32 n;
	__u32 pad;
	struct op_unwind_mapping m[OP_UNWIND_MAX_MAPPINGS];
};

/* Row lookups are bounded by this many halvings: enough for 2^OP_UNWIND_SEARCH_STEPS rows. */
#define OP_UNWIND_SEARCH_STEPS	     22
#define OP_UNWIND_MAX_ROWS_PER_TABLE (1u << OP_UNWIND_SEARCH_STEPS)

#endif
