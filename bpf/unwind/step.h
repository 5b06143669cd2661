/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one-frame unwind step of the native unwinder: a CFI rule (bpf/unwind/tables.h) or the
 * frame-pointer convention applied to a frame's registers gives its caller's. Compiled into
 * the BPF walk (bpf/unwind/native.bpf.h) and, as ordinary C, into the unit tests, which run the
 * very same step against recorded stacks; user memory is read through op_read_user8()
 * (bpf/unwind/read_user.h), the one thing that differs between the two.
 */
#ifndef OTELPROF_UNWIND_STEP_H
#define OTELPROF_UNWIND_STEP_H

#include "tables.h"
#include "read_user.h"

#ifndef OP_UNWIND_INLINE
#define OP_UNWIND_INLINE static inline __attribute__((always_inline))
#endif

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
	if (op_read_user8(v, addr))
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
		if (op_read_user8(&cfa, base + (__s64)rule->cfa_off))
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
	if (op_read_user8(&next[0], r->bp) || op_read_user8(&next[1], r->bp + 8))
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

#endif
