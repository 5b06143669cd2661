// SPDX-License-Identifier: Apache-2.0
/*
 * The diff tables (diff.h). Per node of the shared call tree: self (samples ending there) and
 * total (the subtree) of each profile. A function's total counts a sample once however often
 * the function recurs on its stack; a stack is a path from the root to a node with self
 * samples, shown leaf side last.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/diff.h"

struct row {
	uint32_t key; /* function: name string; stack: node */
	double base_self, new_self, base_total, new_total;
};

static double dabs(double x)
{
	return x < 0 ? -x : x;
}

static double delta_total(const struct row *r)
{
	return r->new_total - r->base_total;
}

static double delta_self(const struct row *r)
{
	return r->new_self - r->base_self;
}

static int by_change(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double dx = dabs(delta_total(x)) > dabs(delta_self(x)) ? dabs(delta_total(x))
							       : dabs(delta_self(x));
	double dy = dabs(delta_total(y)) > dabs(delta_self(y)) ? dabs(delta_total(y))
							       : dabs(delta_self(y));

	return dx < dy ? 1 : dx > dy ? -1 : (x->key > y->key) - (x->key < y->key);
}

static void fmt_value(char *buf, size_t len, double v, const char *unit, bool absolute, bool delta)
{
	const char *sign = !delta ? "" : v > 0 ? "+" : v < 0 ? "-" : "";
	double a = dabs(v);

	if (!absolute)
		snprintf(buf, len, "%s%.2f%s", sign, a * 100, delta ? " pp" : "%");
	else if (unit && !strcmp(unit, "nanoseconds"))
		snprintf(buf, len, "%s%.3f s", sign, a / 1e9);
	else if (unit && !strcmp(unit, "bytes"))
		snprintf(buf, len, "%s%.1f MiB", sign, a / 1048576.0);
	else
		snprintf(buf, len, "%s%.0f", sign, a);
}

static void cells(struct op_buf *out, const struct op_diff_opts *o, double b, double n)
{
	char x[32], y[32], z[32];

	fmt_value(x, sizeof(x), b, o->unit, o->absolute, false);
	fmt_value(y, sizeof(y), n, o->unit, o->absolute, false);
	fmt_value(z, sizeof(z), n - b, o->unit, o->absolute, true);
	op_buf_printf(out, "%11s %11s %12s  ", x, y, z);
}

int op_diff_text(const struct op_view *v, const struct op_diff_opts *o, struct op_buf *out)
{
	uint32_t n = v->n_nodes, i, ns = v->strs.n;
	double *self[2], *total[2], grand[2], scale[2];
	uint32_t *open = NULL, *stack = NULL, top = 0, nrows = 0, nstacks = 0;
	struct row *rows = NULL, *srows = NULL;
	int32_t *row_of = NULL;
	int rc = -ENOMEM;

	self[0] = calloc(n, sizeof(double));
	self[1] = calloc(n, sizeof(double));
	total[0] = calloc(n, sizeof(double));
	total[1] = calloc(n, sizeof(double));
	open = calloc(ns + 1, sizeof(*open));
	stack = malloc((n + 1) * sizeof(*stack));
	rows = calloc(ns + 1, sizeof(*rows));
	srows = calloc(n + 1, sizeof(*srows));
	row_of = malloc((ns + 1) * sizeof(*row_of));
	if (!self[0] || !self[1] || !total[0] || !total[1] || !open || !stack || !rows || !srows ||
	    !row_of)
		goto out;
	for (i = 0; i < v->n_recs; i++)
		self[v->recs[i].profile & 1][v->recs[i].node] +=
			(double)v->values[(size_t)i * v->n_types];
	for (int p = 0; p < 2; p++) {
		memcpy(total[p], self[p], n * sizeof(double));
		for (i = n; i-- > 1;)
			total[p][v->parent[i]] += total[p][i];
		grand[p] = total[p][0];
		scale[p] = o->absolute ? 1 : grand[p] > 0 ? 1 / grand[p] : 0;
	}
	/* functions, by name: self always, total once per stack */
	memset(row_of, 0xff, (ns + 1) * sizeof(*row_of));
	for (i = 1; i < n; i++) {
		const struct op_vframe *f = op_view_frame(v, v->frame[i]);
		uint32_t key = f->name;
		struct row *r;

		while (top && v->depth[stack[top - 1]] >= v->depth[i])
			open[op_view_frame(v, v->frame[stack[--top]])->name]--;
		stack[top++] = i;
		if (f->kind == OP_KIND_PROCESS) {
			open[key]++;
			continue;
		}
		if (row_of[key] < 0) {
			row_of[key] = (int32_t)nrows;
			rows[nrows++].key = key;
		}
		r = &rows[row_of[key]];
		r->base_self += self[0][i] * scale[0];
		r->new_self += self[1][i] * scale[1];
		if (!open[key]) {
			r->base_total += total[0][i] * scale[0];
			r->new_total += total[1][i] * scale[1];
		}
		open[key]++;
	}
	/* stacks: nodes with self samples in either profile */
	for (i = 1; i < n; i++) {
		if (!self[0][i] && !self[1][i])
			continue;
		srows[nstacks].key = i;
		srows[nstacks].base_self = srows[nstacks].base_total = self[0][i] * scale[0];
		srows[nstacks].new_self = srows[nstacks].new_total = self[1][i] * scale[1];
		nstacks++;
	}
	qsort(rows, nrows, sizeof(*rows), by_change);
	qsort(srows, nstacks, sizeof(*srows), by_change);

	{
		char a[32], b[32];

		fmt_value(a, sizeof(a), grand[0], o->unit, true, false);
		fmt_value(b, sizeof(b), grand[1], o->unit, true, false);
		op_buf_printf(out, "base %s: %s; new %s: %s (%s/%s); changes in %s\n\n",
			      o->names[0] ? o->names[0] : "", a, o->names[1] ? o->names[1] : "", b,
			      o->type ? o->type : "", o->unit ? o->unit : "",
			      o->absolute ? "absolute values" : "percentage points of each total");
	}
	op_buf_printf(out, "functions by change (total: on the stack; self: the leaf)\n");
	op_buf_printf(out, "%11s %11s %12s  %11s %11s %12s  %s\n", "total base", "total new",
		      "change", "self base", "self new", "change", "function");
	for (i = 0; i < nrows && i < o->top; i++) {
		if (delta_total(&rows[i]) == 0 && delta_self(&rows[i]) == 0)
			break;
		cells(out, o, rows[i].base_total, rows[i].new_total);
		cells(out, o, rows[i].base_self, rows[i].new_self);
		op_buf_printf(out, "%s\n", op_view_s(v, rows[i].key));
	}
	op_buf_printf(out, "\nstacks by change (the path to a leaf, root first; ... = earlier "
			   "frames)\n");
	op_buf_printf(out, "%11s %11s %12s  %s\n", "base", "new", "change", "stack");
	for (i = 0; i < nstacks && i < o->top; i++) {
		uint32_t path[8], np = 0, x = srows[i].key;

		if (delta_total(&srows[i]) == 0)
			break;
		cells(out, o, srows[i].base_total, srows[i].new_total);
		while (x && np < 8) {
			path[np++] = x;
			x = v->parent[x];
		}
		if (x)
			op_buf_puts(out, "...;");
		while (np--) {
			op_buf_puts(out, op_view_s(v, op_view_frame(v, v->frame[path[np]])->name));
			if (np)
				op_buf_puts(out, ";");
		}
		op_buf_puts(out, "\n");
	}
	rc = out->oom ? -ENOMEM : 0;
out:
	free(self[0]);
	free(self[1]);
	free(total[0]);
	free(total[1]);
	free(open);
	free(stack);
	free(rows);
	free(srows);
	free(row_of);
	return rc;
}
