/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compact CFI unwind rows, rules and the BPF map layouts of the native unwinder, shared by the
 * BPF walk (bpf/unwind/native.bpf.h), the one-frame step (bpf/unwind/step.h), the table
 * compiler and loader (lib/unwind/) and the unit tests. Plain C with fixed-width types only.
 *
 * A binary's table is a sorted array of rows; a row covers [row.pc, next row.pc) relative to
 * the table's base address and names a rule. Rules are deduplicated: a few hundred distinct
 * rules cover all of libc, so a row is 8 bytes and the rule table is shared.
 */
#ifndef OTELPROF_UNWIND_TABLES_H
#define OTELPROF_UNWIND_TABLES_H

#if !defined(__VMLINUX_H__)
#include <linux/types.h>
/*
 * Slots of a walk chain's tail-call array (<chain>_progs, bpf/unwind/native.bpf.h): the native
 * continuation, runtime k (enum op_runtime_kind, 1 .. OP_RUNTIME_MAX - 1), and the native walk
 * that hands out queued interpreter frames. Filled by lib/sample/sampler.c and
 * lib/unwind/unwind.c.
 */
#define OP_CHAIN_NATIVE 0
#define OP_CHAIN_INTERP OP_RUNTIME_MAX

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

/*
 * BPF map layouts (bpf/unwind/native.bpf.h, filled by lib/unwind/unwind.c).
 *
 * unwind_tables[slot]: one compiled binary's rows, unwind_rows[first_row, first_row+n_rows);
 * n_rows == 0 marks a free or evicted slot. Rows name rules in the shared unwind_rules.
 * unwind_procs[pid]: that process's executable mappings, sorted by start; a PC maps to
 * row-relative pc - bias.
 *
 * A table's bucket index (lib/unwind/cfi.c, op_cfi_index_entries()) narrows each lookup to the rows
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
#define OP_UNWIND_TABLE_ANON   0xfffffffeu /* anonymous/JIT memory: frame pointers */

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
	__u8 runtime;	  /* enum op_runtime_kind (bpf/types.h) whose unwinder takes its frames */
	__u8 pad[3];
};

struct op_unwind_proc {
	__u32 n;
	__u32 pad;
	struct op_unwind_mapping m[OP_UNWIND_MAX_MAPPINGS];
};

/* Row lookups are bounded by this many halvings: enough for 2^OP_UNWIND_SEARCH_STEPS rows. */
#define OP_UNWIND_SEARCH_STEPS	     22
#define OP_UNWIND_MAX_ROWS_PER_TABLE (1u << OP_UNWIND_SEARCH_STEPS)

/*
 * Slots of a walk chain's tail-call array (<chain>_progs, bpf/unwind/native.bpf.h): the native
 * continuation, runtime k (enum op_runtime_kind, 1 .. OP_RUNTIME_MAX - 1), and the native walk
 * that hands out queued interpreter frames. Filled by lib/sample/sampler.c and
 * lib/unwind/unwind.c.
 */
#define OP_CHAIN_NATIVE 0
#define OP_CHAIN_INTERP OP_RUNTIME_MAX

#endif
