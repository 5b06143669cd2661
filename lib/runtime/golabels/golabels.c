// SPDX-License-Identifier: Apache-2.0
/*
 * Go pprof labels: which processes are Go programs, which Go version built them, and where
 * the runtime keeps a goroutine's labels, for bpf/runtime/golabels.bpf.h (label_procs).
 *
 * The version comes from the binary's .go.buildinfo (binary/filecache.c); the layout from
 * the table below for the versions it knows, else from the binary's DWARF (runtime.g.m,
 * runtime.m.curg, runtime.g.labels), so a newer Go with debug info works without a table
 * row, and a stripped one of an unknown version is counted, never guessed. DWARF is not
 * opened for known versions: a Go binary's DWARF is compressed and large, and inflating it
 * once per binary costs more than every sample's labels together (the table is checked
 * against DWARF for every toolchain the tests can build, tests/runtime/golabels).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "binary/filecache.h"
#include "runtime/golabels/golabels.h"
#include "sampler.skel.h"
#include "unwind/runtime.h"
#include "util/log.h"

/*
 * Offsets of Go's runtime structures on amd64, per release. Source: the DWARF of a program
 * built by each toolchain (go1.21.13, 1.22.12, 1.23.12, 1.24.13, 1.25.7, 1.26.8; `ptype /o`
 * of runtime.g and runtime.m agrees), and runtime/runtime2.go, runtime/pprof/label.go of
 * each release: labels are a map[string]string up to 1.23 and a sorted slice from 1.24.
 * g is at fs:-8 (runtime.tlsg; cgo binaries too).
 */
static const struct go_layout {
	int minor; /* go1.<minor> */
	uint32_t g_m, m_curg, g_labels;
	bool hmap;
} layouts[] = {
	{ 21, 48, 192, 344, true },  { 22, 48, 192, 344, true },  { 23, 48, 192, 352, true },
	{ 24, 48, 192, 352, false }, { 25, 48, 184, 344, false }, { 26, 48, 184, 352, false },
};

#define GO_TLS_G_OFFSET (-8)

struct golabels {
	struct op_runtime rt;
	struct op_filecache *files;
	int procs_fd;
	struct op_golabels_stats st;
};

/* "go1.22.12" → 22; -1 when not a go1.x version. */
static int go_minor(const char *v)
{
	char *end;
	long m;

	if (!v || strncmp(v, "go1.", 4))
		return -1;
	m = strtol(v + 4, &end, 10);
	if (end == v + 4 || m < 0 || m > 1000)
		return -1;
	return (int)m;
}

int op_golabels_layout(const char *version, struct op_label_proc *out)
{
	int minor = go_minor(version);

	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (layouts[i].minor != minor)
			continue;
		memset(out, 0, sizeof(*out));
		out->source = OP_LABELS_GO;
		out->go_hmap = layouts[i].hmap;
		out->tls_off = GO_TLS_G_OFFSET;
		out->g_m = layouts[i].g_m;
		out->m_curg = layouts[i].m_curg;
		out->g_labels = layouts[i].g_labels;
		return 0;
	}
	return -ENOENT;
}

static int attach(void *ctx, struct op_runtime_proc *rp)
{
	struct golabels *g = ctx;
	struct op_label_proc lp;
	__u32 key = (__u32)rp->pid;

	/* a Go program is its executable: the first file mapping (ELF load order) */
	for (size_t i = 0; i < rp->n_maps; i++) {
		const struct op_runtime_mapping *m = &rp->maps[i];
		struct op_file *f;
		const char *ver;
		int err;

		if (!m->path || m->path[0] != '/')
			continue;
		f = op_filecache_get(g->files, rp->pid, m->path, m->start, m->end);
		if (!f)
			return 0;
		if (!op_file_is_go(f)) {
			op_file_put(f);
			return 0;
		}
		ver = op_file_go_version(f);
		err = op_golabels_layout(ver, &lp);
		if (err) {
			err = op_golabels_layout_dwarf(g->files, rp->pid, m, &lp);
			/* the labels are a map up to go1.23 (releases the table knows), a slice
			 * after */
			lp.go_hmap = go_minor(ver) >= 0 && go_minor(ver) <= 23;
			if (err) {
				g->st.unknown_version++;
				op_debug("go labels: pid %d: %s %s has no known layout and no "
					 "usable "
					 "DWARF: its labels are not read",
					 rp->pid, m->path, ver ? ver : "(version unknown)");
				op_file_put(f);
				return -ENOTSUP;
			}
			g->st.from_dwarf++;
		}
		op_file_put(f);
		if (bpf_map_update_elem(g->procs_fd, &key, &lp, BPF_ANY)) {
			g->st.map_full++;
			return -errno;
		}
		g->st.processes++;
		return 1;
	}
	return 0;
}

static void detach(void *ctx, int pid)
{
	struct golabels *g = ctx;
	struct op_label_proc lp;
	__u32 key = (__u32)pid;

	/* label_procs is shared with the custom labels: remove only our own entry */
	if (bpf_map_lookup_elem(g->procs_fd, &key, &lp) == 0 && lp.source == OP_LABELS_GO &&
	    bpf_map_delete_elem(g->procs_fd, &key) == 0 && g->st.processes)
		g->st.processes--;
}

static void golabels_free(void *ctx)
{
	free(ctx);
}

struct op_runtime *op_golabels_runtime_new(const struct op_runtime_env *env)
{
	struct golabels *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->files = env->files;
	g->procs_fd = bpf_map__fd(env->skel->maps.label_procs);
	g->rt = (struct op_runtime){
		.name = "golabels",
		.kind = OP_RUNTIME_GOLABELS,
		.no_unwinder = true,
		.ctx = g,
		.attach = attach,
		.detach = detach,
		.free = golabels_free,
	};
	return &g->rt;
}

void op_golabels_stats(const struct op_runtime *rt, struct op_golabels_stats *st)
{
	const struct golabels *g = rt ? rt->ctx : NULL;

	if (g)
		*st = g->st;
	else
		memset(st, 0, sizeof(*st));
}
