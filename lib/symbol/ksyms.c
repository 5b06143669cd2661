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
#include <sys/uio.h>

#include "util/log.h"
#include "binary/file.h"
#include "symbol/ksyms.h"
#include "util/spill.h"

/* 16 bytes a symbol: about 2 MB for a distribution kernel's 120k text symbols. */
struct ksym {
	uint64_t addr;
	uint32_t name; /* offset in the string blob */
	uint16_t mod;  /* index in mods, 0 for vmlinux */
	uint8_t rank;
};

struct op_ksyms {
	struct ksym *syms;
	size_t n;
	char *blob; /* every name and module name, NUL-terminated */
	size_t blob_len, blob_cap;
	/* syms and blob moved into one spill mapping (util/spill.h), or NULL: malloc'd */
	void *spill;
	size_t spill_len;
	uint32_t *mods; /* blob offsets of module names; [0] unused */
	size_t n_mods;
};

static int ksym_cmp(const struct ksym *x, const struct ksym *y)
{
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return (int)y->rank - (int)x->rank; /* best first */
	/* then file order (names are appended in it), as a stable sort would keep it */
	return x->name < y->name ? -1 : x->name > y->name;
}

/* In-place heap sort: no temporary copy of the table (glibc's qsort allocates one). */
static void sift_down(struct ksym *a, size_t root, size_t n)
{
	for (;;) {
		size_t c = 2 * root + 1;
		struct ksym t;

		if (c >= n)
			return;
		if (c + 1 < n && ksym_cmp(&a[c], &a[c + 1]) < 0)
			c++;
		if (ksym_cmp(&a[root], &a[c]) >= 0)
			return;
		t = a[root];
		a[root] = a[c];
		a[c] = t;
		root = c;
	}
}

static void ksym_sort(struct ksym *a, size_t n)
{
	size_t i;

	if (n < 2)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down(a, i, n);
	for (i = n - 1; i > 0; i--) {
		struct ksym t = a[0];

		a[0] = a[i];
		a[i] = t;
		sift_down(a, 0, i);
	}
}

/* Append @len bytes of @s and a NUL to the blob; its offset, or UINT32_MAX on ENOMEM. */
static uint32_t blob_add(struct op_ksyms *k, const char *s, size_t len)
{
	size_t off = k->blob_len;

	if (k->blob_cap - k->blob_len < len + 1) {
		size_t nc = k->blob_cap ? k->blob_cap * 2 : 1u << 20;
		char *nb;

		while (nc - k->blob_len < len + 1)
			nc *= 2;
		if (nc > UINT32_MAX)
			return UINT32_MAX;
		nb = realloc(k->blob, nc);
		if (!nb)
			return UINT32_MAX;
		k->blob = nb;
		k->blob_cap = nc;
	}
	memcpy(k->blob + off, s, len);
	k->blob[off + len] = '\0';
	k->blob_len += len + 1;
	return (uint32_t)off;
}

/* The kallsyms path; tests point it at a fixture. */
static const char *kallsyms_path(void)
{
	const char *p = getenv("OTELPROF_KALLSYMS");

	return p && *p ? p : "/proc/kallsyms";
}

/*
 * The finished table and names into a spill mapping (3-5 MiB on a distribution kernel, of
 * which a lookup reads a few pages): out of resident memory between lookups (op_ksyms_idle).
 * Kept in malloc'd memory when there is no spill file.
 */
static void spill(struct op_ksyms *k)
{
	size_t syms = k->n * sizeof(*k->syms), len;
	struct iovec v[2] = { { k->syms, syms }, { k->blob, k->blob_len } };
	uint8_t *m = op_spill_copy(v, 2, &len);

	if (!m)
		return;
	free(k->syms);
	free(k->blob);
	k->syms = (struct ksym *)m;
	k->blob = (char *)m + syms;
	k->spill = m;
	k->spill_len = len;
}

struct op_ksyms *op_ksyms_load(void)
{
	struct op_ksyms *k = calloc(1, sizeof(*k));
	const char *path = kallsyms_path();
	uint16_t last_mod = 0;
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
		if (mod && (!last_mod || strcmp(k->blob + k->mods[last_mod], mod))) {
			uint32_t *nm, off;

			if (k->n_mods >= UINT16_MAX)
				goto nomem;
			off = blob_add(k, mod, strlen(mod));
			nm = realloc(k->mods, (k->n_mods + 2) * sizeof(*nm));
			if (off == UINT32_MAX || !nm)
				goto nomem;
			k->mods = nm;
			if (!k->n_mods)
				k->n_mods = 1; /* [0]: vmlinux */
			k->mods[k->n_mods] = off;
			last_mod = (uint16_t)k->n_mods++;
		}
		/* padding too: the table is written to a spill file whole */
		memset(&k->syms[k->n], 0, sizeof(k->syms[k->n]));
		k->syms[k->n].addr = addr;
		k->syms[k->n].name = blob_add(k, name, nl);
		k->syms[k->n].mod = mod ? last_mod : 0;
		k->syms[k->n].rank = (uint8_t)((type == 'T') * 2 + (type == 't'));
		if (k->syms[k->n].name == UINT32_MAX)
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
	ksym_sort(k->syms, k->n);
	for (i = 0, m = 0; i < k->n; i++)
		if (!m || k->syms[m - 1].addr != k->syms[i].addr)
			k->syms[m++] = k->syms[i];
	k->n = m;
	/* give back the growth slack (large blocks shrink in place) */
	if (k->n) {
		struct ksym *ns = realloc(k->syms, k->n * sizeof(*ns));

		if (ns)
			k->syms = ns;
	}
	if (k->blob_len) {
		char *nb = realloc(k->blob, k->blob_len);

		if (nb) {
			k->blob = nb;
			k->blob_cap = k->blob_len;
		}
	}
	spill(k);
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
	if (k->spill) {
		op_spill_free(k->spill, k->spill_len);
	} else {
		free(k->syms);
		free(k->blob);
	}
	free(k->mods);
	free(k);
}

void op_ksyms_idle(struct op_ksyms *k)
{
	if (k && k->spill)
		op_spill_release(k->spill, k->spill_len);
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
		*module = s->mod ? k->blob + k->mods[s->mod] : NULL;
	return k->blob + s->name;
}
