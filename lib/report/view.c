// SPDX-License-Identifier: Apache-2.0
/*
 * The view of profiles (view.h): frames, call tree, binaries, processes, threads and the
 * samples aggregated per (leaf node, thread, profile).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/view.h"

#define NONE	  UINT32_MAX
#define MAX_TYPES 16

const char *op_frame_kind_name(enum op_frame_kind k)
{
	static const char *const names[] = {
		"native", "kernel", "go", "marker", "process", "other"
	};

	return k < OP_KIND_MAX ? names[k] : "native";
}

static enum op_frame_kind kind_of(const char *frame_type, const char *file)
{
	if (!strcmp(frame_type, "kernel") || !strncmp(file, "[kernel", 7))
		return OP_KIND_KERNEL;
	if (!strcmp(frame_type, "go"))
		return OP_KIND_GO;
	if (!strcmp(frame_type, "abort-marker"))
		return OP_KIND_MARKER;
	if (frame_type[0] && strcmp(frame_type, "native"))
		return OP_KIND_OTHER;
	return OP_KIND_NATIVE;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* Display name of a line of a location: its function, else "[binary]", else "[unknown]". */
static const char *line_name(const struct op_data *d, const struct op_dlocation *l,
			     const struct op_dline *ln, char *buf, size_t len)
{
	const struct op_dfunction *f = op_data_func(d, ln ? ln->function : 0);
	const char *file;

	if (f->name)
		return op_data_s(d, f->name);
	if (f->system_name)
		return op_data_s(d, f->system_name);
	file = op_data_s(d, op_data_map(d, l->mapping)->filename);
	if (file[0] == '[')
		return file; /* [kernel.kallsyms], [vdso] */
	if (file[0]) {
		snprintf(buf, len, "[%s]", base_name(file));
		return buf;
	}
	return "[unknown]";
}

void op_stack_frames(const struct op_data *d, uint32_t stack,
		     void (*emit)(void *ctx, const char *name), void *ctx)
{
	uint32_t n, i, j;
	const uint32_t *locs = op_data_list(&d->stacks, stack, &n);
	char buf[512];

	for (i = n; i-- > 0;) {
		const struct op_dlocation *l = op_data_loc(d, locs[i]);
		const struct op_dline *ln = op_dloc_lines(l);

		if (!l->n_lines)
			emit(ctx, line_name(d, l, NULL, buf, sizeof(buf)));
		for (j = l->n_lines; j-- > 0;)
			emit(ctx, line_name(d, l, &ln[j], buf, sizeof(buf)));
	}
}

static uint32_t vstr(struct op_view *v, const char *s)
{
	return s && *s ? op_itab_intern(&v->strs, s, strlen(s) + 1, NULL) : 0;
}

void op_view_free(struct op_view *v)
{
	if (!v)
		return;
	op_itab_free(&v->strs);
	op_itab_free(&v->frames);
	op_itab_free(&v->bins);
	op_itab_free(&v->procs);
	op_itab_free(&v->threads);
	op_itab_free(&v->nodes);
	op_itab_free(&v->rec_index);
	free(v->bin_locs);
	free(v->bin_named);
	free(v->b_parent);
	free(v->b_frame);
	free(v->parent);
	free(v->frame);
	free(v->depth);
	free(v->recs);
	free(v->values);
	free(v);
}

struct op_view *op_view_new(uint32_t n_types)
{
	struct op_view *v = calloc(1, sizeof(*v));

	if (!v || n_types > MAX_TYPES) {
		free(v);
		return NULL;
	}
	v->n_types = n_types;
	v->cap_nodes = 4096;
	v->b_parent = malloc(v->cap_nodes * sizeof(*v->b_parent));
	v->b_frame = malloc(v->cap_nodes * sizeof(*v->b_frame));
	if (!v->b_parent || !v->b_frame || op_itab_init(&v->strs) || op_itab_init(&v->frames) ||
	    op_itab_init(&v->bins) || op_itab_init(&v->procs) || op_itab_init(&v->threads) ||
	    op_itab_init(&v->nodes) || op_itab_init(&v->rec_index)) {
		op_view_free(v);
		return NULL;
	}
	/* the root is entry 0 of the node table (the empty key) */
	v->b_parent[0] = 0;
	v->b_frame[0] = 0;
	return v;
}

static uint32_t intern_frame(struct op_view *v, const char *name, uint32_t bin, uint32_t kind,
			     uint32_t file)
{
	struct op_vframe f = { .bin = bin, .kind = kind, .file = file };

	f.name = vstr(v, name);
	if (f.name == NONE)
		return NONE;
	return op_itab_intern(&v->frames, &f, sizeof(f), NULL);
}

static uint32_t node(struct op_view *v, uint32_t parent, uint32_t frame)
{
	uint32_t key[2] = { parent, frame }, i;
	bool added;

	i = op_itab_intern(&v->nodes, key, sizeof(key), &added);
	if (i == NONE || !added)
		return i;
	if (i >= v->cap_nodes) {
		uint32_t ncap = v->cap_nodes * 2;
		uint32_t *np = realloc(v->b_parent, ncap * sizeof(*np)), *nf;

		if (!np)
			return NONE;
		v->b_parent = np;
		nf = realloc(v->b_frame, ncap * sizeof(*nf));
		if (!nf)
			return NONE;
		v->b_frame = nf;
		v->cap_nodes = ncap;
	}
	v->b_parent[i] = parent;
	v->b_frame[i] = frame;
	return i;
}

/* Per profile added: each location's frames, root first: lf[off[l] .. off[l] + n[l]). */
struct adder {
	struct op_view *v;
	const struct op_data *d;
	uint32_t *lf_off, *lf_n, *lf;
	size_t n_lf, cap_lf;
	uint32_t *res_proc; /* resource set -> proc + 1 */
};

static int location_frames(struct adder *a, uint32_t li)
{
	struct op_view *v = a->v;
	const struct op_data *d = a->d;
	const struct op_dlocation *l = op_data_loc(d, li);
	const struct op_dline *lines = op_dloc_lines(l);
	const struct op_dmapping *m = op_data_map(d, l->mapping);
	struct op_vbin bk = { 0 };
	uint32_t nl = l->n_lines ? l->n_lines : 1, bin = 0, kind, j;
	bool named = false, added = false;
	char buf[512];

	if (a->lf_n[li])
		return 0;
	bk.path = vstr(v, op_data_s(d, m->filename));
	bk.build_id = vstr(v, op_data_s(d, m->build_id_gnu	 ? m->build_id_gnu
					   : m->build_id_htlhash ? m->build_id_htlhash
								 : m->build_id_go));
	if (bk.path == NONE || bk.build_id == NONE)
		return -ENOMEM;
	if (l->mapping && (bin = op_itab_intern(&v->bins, &bk, sizeof(bk), &added)) == NONE)
		return -ENOMEM;
	if (added) {
		uint32_t *nl2 = realloc(v->bin_locs, (v->bins.n + 1) * sizeof(*nl2)), *nn;

		if (!nl2)
			return -ENOMEM;
		v->bin_locs = nl2;
		nn = realloc(v->bin_named, (v->bins.n + 1) * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		v->bin_named = nn;
		v->bin_locs[bin] = v->bin_named[bin] = 0;
	}
	kind = kind_of(op_data_s(d, l->frame_type), op_data_s(d, m->filename));
	if (a->n_lf + nl > a->cap_lf) {
		size_t ncap = a->cap_lf ? a->cap_lf * 2 : 4096;
		uint32_t *n;

		while (ncap < a->n_lf + nl)
			ncap *= 2;
		n = realloc(a->lf, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		a->lf = n;
		a->cap_lf = ncap;
	}
	a->lf_off[li] = (uint32_t)a->n_lf;
	for (j = nl; j-- > 0;) {
		const struct op_dline *ln = l->n_lines ? &lines[j] : NULL;
		const char *name = line_name(d, l, ln, buf, sizeof(buf));
		const struct op_dfunction *f = op_data_func(d, ln ? ln->function : 0);
		uint32_t k = kind, fr, file;

		named |= f->name || f->system_name;
		if (kind == OP_KIND_NATIVE && !l->mapping && name[0] == '[' && ln)
			k = OP_KIND_MARKER; /* [truncated] and the like, from files without types */
		file = vstr(v, op_data_s(d, f->filename));
		if (file == NONE || (fr = intern_frame(v, name, bin, k, file)) == NONE)
			return -ENOMEM;
		a->lf[a->n_lf++] = fr;
	}
	a->lf_n[li] = nl;
	if (bin) {
		v->bin_locs[bin]++;
		v->bin_named[bin] += named;
	}
	return 0;
}

static uint32_t proc_of(struct adder *a, uint32_t res)
{
	struct op_view *v = a->v;
	const struct op_data *d = a->d;
	struct op_vproc p = { .pid = -1 };
	const struct op_dattr *at;
	uint32_t i;

	if (a->res_proc[res])
		return a->res_proc[res] - 1;
	if ((at = op_data_find(d, res, "process.pid")) && at->kind == OP_DVAL_INT)
		p.pid = at->num;
	if ((at = op_data_find(d, res, "process.executable.name")) && at->kind == OP_DVAL_STR)
		p.exe = vstr(v, op_data_s(d, at->str));
	if ((at = op_data_find(d, res, "service.name")) && at->kind == OP_DVAL_STR)
		p.service = vstr(v, op_data_s(d, at->str));
	if (p.exe == NONE || p.service == NONE)
		return NONE;
	i = op_itab_intern(&v->procs, &p, sizeof(p), NULL);
	if (i != NONE)
		a->res_proc[res] = i + 1;
	return i;
}

int op_view_add(struct op_view *v, const struct op_data *d, const uint32_t *types, uint32_t profile)
{
	struct adder a = { .v = v, .d = d };
	uint32_t s, i, t, nt = v->n_types;
	int rc = -ENOMEM;

	for (t = 0; t < nt; t++) {
		char name[512];

		snprintf(name, sizeof(name), "%s/%s", op_data_s(d, d->types[types[t]].type),
			 op_data_s(d, d->types[types[t]].unit));
		if ((v->type_names[t] = vstr(v, name)) == NONE)
			return -ENOMEM;
	}
	a.lf_off = calloc(d->locs.n + 1, sizeof(*a.lf_off));
	a.lf_n = calloc(d->locs.n + 1, sizeof(*a.lf_n));
	a.res_proc = calloc(d->sets.n + 1, sizeof(*a.res_proc));
	if (!a.lf_off || !a.lf_n || !a.res_proc)
		goto out;
	for (s = 1; s < d->samples.n; s++) {
		const struct op_dsample *smp = op_data_sample(d, s);
		struct op_vthread th = { .tid = -1 };
		struct op_vrec key = { .profile = profile };
		const struct op_dattr *at;
		const struct op_vproc *pr;
		uint32_t n, cur, pf, rec;
		const uint32_t *locs;
		char pname[64];
		const char *pn;
		bool added;

		if ((th.proc = proc_of(&a, smp->resource)) == NONE)
			goto out;
		if ((at = op_data_find(d, smp->attrs, "thread.id")) && at->kind == OP_DVAL_INT)
			th.tid = at->num;
		if ((at = op_data_find(d, smp->attrs, "thread.name")) && at->kind == OP_DVAL_STR &&
		    (th.name = vstr(v, op_data_s(d, at->str))) == NONE)
			goto out;
		if ((key.thread = op_itab_intern(&v->threads, &th, sizeof(th), NULL)) == NONE)
			goto out;
		pr = op_itab_get(&v->procs, th.proc, NULL);
		if (pr->exe) {
			pn = op_view_s(v, pr->exe);
		} else if (pr->pid >= 0) {
			snprintf(pname, sizeof(pname), "pid %lld", (long long)pr->pid);
			pn = pname;
		} else {
			pn = "[all]";
		}
		/* pn may point into the strings pool: interning it again finds it, moves nothing */
		cur = 0;
		if (!v->no_process_frames &&
		    ((pf = intern_frame(v, pn, 0, OP_KIND_PROCESS, 0)) == NONE ||
		     (cur = node(v, 0, pf)) == NONE))
			goto out;
		locs = op_data_list(&d->stacks, smp->stack, &n);
		for (i = n; i-- > 0;) {
			uint32_t li = locs[i], k;

			if (location_frames(&a, li))
				goto out;
			for (k = 0; k < a.lf_n[li]; k++)
				if ((cur = node(v, cur, a.lf[a.lf_off[li] + k])) == NONE)
					goto out;
		}
		key.node = cur;
		rec = op_itab_intern(&v->rec_index, &key, sizeof(key), &added);
		if (rec == NONE)
			goto out;
		if ((size_t)(rec + 1) * nt > v->cap_values) {
			size_t ncap =
				v->cap_values ? v->cap_values * 2 : 4096 * (size_t)(nt ? nt : 1);
			int64_t *nv;

			while (ncap < (size_t)(rec + 1) * nt)
				ncap *= 2;
			nv = realloc(v->values, ncap * sizeof(*nv));
			if (!nv)
				goto out;
			memset(nv + v->cap_values, 0, (ncap - v->cap_values) * sizeof(*nv));
			v->values = nv;
			v->cap_values = ncap;
		}
		for (t = 0; t < nt; t++) {
			int64_t *dst = &v->values[(size_t)rec * nt + t];

			if (__builtin_add_overflow(*dst, op_data_value(d, s, types[t]), dst))
				*dst = INT64_MAX;
		}
	}
	rc = 0;
out:
	free(a.lf_off);
	free(a.lf_n);
	free(a.lf);
	free(a.res_proc);
	return rc;
}

static int by_name(const void *x, const void *y, void *ctx)
{
	const struct op_view *v = ctx;

	return strcmp(op_view_s(v, op_view_frame(v, v->b_frame[*(const uint32_t *)x])->name),
		      op_view_s(v, op_view_frame(v, v->b_frame[*(const uint32_t *)y])->name));
}

int op_view_finish(struct op_view *v)
{
	uint32_t n = v->nodes.n, *first, *kids, *stack, *newidx, *pos, i, top = 0, out = 0;
	int rc = -ENOMEM;

	first = calloc((size_t)n + 1, sizeof(*first));
	kids = malloc((size_t)n * sizeof(*kids));
	stack = malloc((size_t)n * sizeof(*stack));
	newidx = malloc((size_t)n * sizeof(*newidx));
	pos = malloc((size_t)n * sizeof(*pos));
	v->parent = malloc((size_t)n * sizeof(*v->parent));
	v->frame = malloc((size_t)n * sizeof(*v->frame));
	v->depth = malloc((size_t)n * sizeof(*v->depth));
	/* records, in the order they were made (entry 0 of the index is the empty key) */
	v->n_recs = v->rec_index.n - 1;
	v->recs = malloc(((size_t)v->n_recs + 1) * sizeof(*v->recs));
	if (!first || !kids || !stack || !newidx || !pos || !v->parent || !v->frame || !v->depth ||
	    !v->recs)
		goto out;
	if (v->n_recs) {
		/* values[] was indexed by record index (1-based): shift to 0-based */
		memmove(v->values, v->values + v->n_types,
			(size_t)v->n_recs * v->n_types * sizeof(*v->values));
	}
	for (i = 0; i < v->n_recs; i++)
		v->recs[i] = *(const struct op_vrec *)op_itab_get(&v->rec_index, i + 1, NULL);

	for (i = 1; i < n; i++)
		first[v->b_parent[i] + 1]++;
	for (i = 1; i <= n; i++)
		first[i] += first[i - 1];
	memcpy(pos, first, (size_t)n * sizeof(*pos));
	for (i = 1; i < n; i++)
		kids[pos[v->b_parent[i]]++] = i;
	/* each child list by name; pushed in reverse below, so the first is popped first */
	for (i = 0; i < n; i++)
		if (first[i + 1] - first[i] > 1)
			qsort_r(&kids[first[i]], first[i + 1] - first[i], sizeof(*kids), by_name,
				v);
	stack[top++] = 0;
	while (top) {
		uint32_t x = stack[--top], k;

		newidx[x] = out;
		v->frame[out] = v->b_frame[x];
		v->parent[out] = x ? newidx[v->b_parent[x]] : 0;
		v->depth[out] = x ? v->depth[v->parent[out]] + 1 : 0;
		out++;
		for (k = first[x + 1]; k-- > first[x];)
			stack[top++] = kids[k];
	}
	v->n_nodes = out;
	for (i = 0; i < v->n_recs; i++)
		v->recs[i].node = newidx[v->recs[i].node];
	rc = 0;
out:
	free(first);
	free(kids);
	free(stack);
	free(newidx);
	free(pos);
	return rc;
}
