// SPDX-License-Identifier: Apache-2.0
/*
 * Kernel symbols from /proc/kallsyms: text symbols sorted by address, module names kept.
 * Without CAP_SYSLOG (or with kernel.kptr_restrict=2) every address reads as zero; that is
 * detected and reported once, and kernel frames then keep their raw addresses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "symfile.h"
#include "symbolize.h"

struct ksym {
	uint64_t addr;
	const char *name;
	const char *module; /* NULL for vmlinux */
	int rank;
};

struct op_ksyms {
	struct ksym *syms;
	size_t n;
	struct op_strpool pool;
	const char *path;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return y->rank - x->rank;
}

/* The kallsyms path; tests point it at a fixture. */
static const char *kallsyms_path(void)
{
	const char *p = getenv("OTELPROF_KALLSYMS");

	return p && *p ? p : "/proc/kallsyms";
}

struct op_ksyms *op_ksyms_load(void)
{
	struct op_ksyms *k = calloc(1, sizeof(*k));
	const char *path = kallsyms_path();
	const char *last_mod = NULL;
	size_t cap = 0, nonzero = 0, total = 0, len = 0, i, m;
	char *line = NULL;
	FILE *fp;

	if (!k)
		return NULL;
	fp = fopen(path, "re");
	if (!fp) {
		int err = errno;

		op_warn("cannot read %s: %s (kernel frames keep raw addresses)", path,
			strerror(err));
		free(k);
		errno = err;
		return NULL;
	}
	while (getline(&line, &len, fp) > 0) {
		char *p = line, *end, *name, *mod = NULL;
		unsigned long long addr;
		char type;
		size_t nl;

		addr = strtoull(p, &end, 16);
		if (end == p || *end != ' ')
			continue;
		p = end + 1;
		type = *p;
		if (!type || p[1] != ' ')
			continue;
		name = p + 2;
		nl = strcspn(name, "\t\n");
		if (name[nl] == '\t') {
			char *m0 = name + nl + 1;

			if (*m0 == '[') {
				size_t ml = strcspn(m0 + 1, "]\n");

				m0[1 + ml] = '\0';
				mod = m0 + 1;
			}
		}
		name[nl] = '\0';
		total++;
		if (addr)
			nonzero++;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (!*name)
			continue;
		if (k->n == cap) {
			size_t nc = cap ? cap * 2 : 65536;
			struct ksym *ns = realloc(k->syms, nc * sizeof(*ns));

			if (!ns)
				goto nomem;
			k->syms = ns;
			cap = nc;
		}
		if (mod && (!last_mod || strcmp(last_mod, mod))) {
			last_mod = op_strpool_add(&k->pool, mod, strlen(mod));
			if (!last_mod)
				goto nomem;
		}
		k->syms[k->n].addr = addr;
		k->syms[k->n].name = op_strpool_add(&k->pool, name, nl);
		k->syms[k->n].module = mod ? last_mod : NULL;
		k->syms[k->n].rank = (type == 'T') * 2 + (type == 't');
		if (!k->syms[k->n].name)
			goto nomem;
		k->n++;
	}
	free(line);
	fclose(fp);
	if (total > 0 && nonzero == 0) {
		op_warn("kernel symbol addresses are hidden (%s shows only zeros): run as root "
			"with CAP_SYSLOG, or lower sysctl kernel.kptr_restrict; kernel frames keep "
			"raw addresses",
			path);
		op_ksyms_free(k);
		errno = EPERM;
		return NULL;
	}
	qsort(k->syms, k->n, sizeof(*k->syms), ksym_cmp);
	for (i = 0, m = 0; i < k->n; i++)
		if (!m || k->syms[m - 1].addr != k->syms[i].addr)
			k->syms[m++] = k->syms[i];
	k->n = m;
	op_debug("loaded %zu kernel text symbols from %s", k->n, path);
	return k;
nomem:
	free(line);
	fclose(fp);
	op_ksyms_free(k);
	errno = ENOMEM;
	return NULL;
}

void op_ksyms_free(struct op_ksyms *k)
{
	if (!k)
		return;
	free(k->syms);
	op_strpool_free(&k->pool);
	free(k);
}

size_t op_ksyms_count(const struct op_ksyms *k)
{
	return k ? k->n : 0;
}

const char *op_ksyms_resolve(const struct op_ksyms *k, uint64_t addr, const char **module)
{
	size_t lo = 0, hi;
	const struct ksym *s;

	if (module)
		*module = NULL;
	if (!k || !k->n)
		return NULL;
	hi = k->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &k->syms[lo - 1];
	/* past the last symbol of all: only trust a small distance */
	if (lo == k->n && addr - s->addr > (1u << 20))
		return NULL;
	if (module)
		*module = s->module;
	return s->name;
}
