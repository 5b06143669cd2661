// SPDX-License-Identifier: Apache-2.0
/*
 * The decoded profile (data.h): interning tables over byte pools with an open-addressing
 * index each, and merged samples.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/data.h"
#include "util/hash.h"

#define NONE UINT32_MAX

static uint32_t hash_bytes(const void *data, size_t len)
{
	uint64_t h = op_hash_bytes(data, len);

	return (uint32_t)(h ^ (h >> 32));
}

void op_itab_free(struct op_itab *t)
{
	free(t->pool);
	free(t->off);
	free(t->len);
	free(t->hash);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static int itab_grow_slots(struct op_itab *t)
{
	uint32_t cap = t->slots ? t->mask + 1 : 0, ncap, i;
	uint32_t *ns;

	if (cap && (uint64_t)(t->n + 1) * 10 <= (uint64_t)cap * 7)
		return 0;
	ncap = cap ? cap * 2 : 64;
	if (ncap < cap)
		return -ENOMEM;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (i = 1; i < t->n; i++) {
		uint32_t j = t->hash[i] & (ncap - 1);

		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = i + 1;
	}
	free(t->slots);
	t->slots = ns;
	t->mask = ncap - 1;
	return 0;
}

static int itab_grow(struct op_itab *t, size_t len)
{
	if (t->n == t->cap) {
		uint32_t ncap = t->cap ? t->cap * 2 : 64;
		uint64_t *off;
		uint32_t *ln, *h;

		if (ncap < t->cap || ncap > UINT32_MAX / 2)
			return -ENOMEM;
		off = realloc(t->off, ncap * sizeof(*off));
		if (!off)
			return -ENOMEM;
		t->off = off;
		ln = realloc(t->len, ncap * sizeof(*ln));
		if (!ln)
			return -ENOMEM;
		t->len = ln;
		h = realloc(t->hash, ncap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		t->hash = h;
		t->cap = ncap;
	}
	/* entries start 8-byte aligned: the pools hold structs with 64-bit fields */
	len = (len + 7) & ~(size_t)7;
	if (t->pool_len + len > t->pool_cap) {
		size_t ncap = t->pool_cap ? t->pool_cap * 2 : 4096;
		uint8_t *np;

		while (ncap < t->pool_len + len)
			ncap *= 2;
		np = realloc(t->pool, ncap);
		if (!np)
			return -ENOMEM;
		t->pool = np;
		t->pool_cap = ncap;
	}
	return 0;
}

int op_itab_init(struct op_itab *t)
{
	memset(t, 0, sizeof(*t));
	if (itab_grow(t, 8) || itab_grow_slots(t))
		return -ENOMEM;
	/* entry 0: the empty entry, never in the index (a lookup of "" is answered directly) */
	memset(t->pool, 0, 8);
	t->pool_len = 8;
	t->off[0] = 0;
	t->len[0] = 0;
	t->hash[0] = 0;
	t->n = 1;
	return 0;
}

/* Index of the entry equal to key[0..len), added if new; NONE on ENOMEM. */
uint32_t op_itab_intern(struct op_itab *t, const void *key, size_t len, bool *added)
{
	uint32_t h, j, i;

	if (added)
		*added = false;
	if (!len)
		return 0;
	if (len > UINT32_MAX / 2)
		return NONE;
	h = hash_bytes(key, len);
	for (j = h & t->mask; t->slots[j]; j = (j + 1) & t->mask) {
		i = t->slots[j] - 1;
		if (t->hash[i] == h && t->len[i] == len && !memcmp(t->pool + t->off[i], key, len))
			return i;
	}
	if (itab_grow(t, len) || itab_grow_slots(t))
		return NONE;
	i = t->n++;
	t->off[i] = t->pool_len;
	t->len[i] = (uint32_t)len;
	t->hash[i] = h;
	memcpy(t->pool + t->pool_len, key, len);
	t->pool_len += (len + 7) & ~(size_t)7;
	for (j = h & t->mask; t->slots[j]; j = (j + 1) & t->mask)
		;
	t->slots[j] = i + 1;
	if (added)
		*added = true;
	return i;
}

struct op_data *op_data_new(void)
{
	struct op_data *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (op_itab_init(&d->strs) || op_itab_init(&d->maps) || op_itab_init(&d->funcs) ||
	    op_itab_init(&d->locs) || op_itab_init(&d->stacks) || op_itab_init(&d->attrs) ||
	    op_itab_init(&d->sets) || op_itab_init(&d->links) || op_itab_init(&d->samples)) {
		op_data_free(d);
		return NULL;
	}
	return d;
}

void op_data_free(struct op_data *d)
{
	if (!d)
		return;
	op_itab_free(&d->strs);
	op_itab_free(&d->maps);
	op_itab_free(&d->funcs);
	op_itab_free(&d->locs);
	op_itab_free(&d->stacks);
	op_itab_free(&d->attrs);
	op_itab_free(&d->sets);
	op_itab_free(&d->links);
	op_itab_free(&d->samples);
	free(d->types);
	free(d->values);
	free(d->ev_sample);
	free(d->ev_ts);
	free(d->pprof.comments);
	free(d);
}

uint32_t op_data_strn(struct op_data *d, const char *s, size_t len)
{
	char small[256], *buf = small;
	uint32_t r;

	if (!s || !len)
		return 0;
	/* stored with its NUL, so op_data_s() can hand out C strings */
	if (len + 1 > sizeof(small)) {
		buf = malloc(len + 1);
		if (!buf)
			return NONE;
	}
	memcpy(buf, s, len);
	buf[len] = 0;
	r = op_itab_intern(&d->strs, buf, len + 1, NULL);
	if (buf != small)
		free(buf);
	return r;
}

uint32_t op_data_lookup_str(const struct op_data *d, const char *s)
{
	size_t len = strlen(s) + 1;
	uint32_t h, j, i;

	if (len == 1)
		return 0;
	h = hash_bytes(s, len);
	for (j = h & d->strs.mask; d->strs.slots[j]; j = (j + 1) & d->strs.mask) {
		i = d->strs.slots[j] - 1;
		if (d->strs.hash[i] == h && d->strs.len[i] == len &&
		    !memcmp(d->strs.pool + d->strs.off[i], s, len))
			return i;
	}
	return NONE;
}

uint32_t op_data_str(struct op_data *d, const char *s)
{
	return s ? op_data_strn(d, s, strlen(s)) : 0;
}

uint32_t op_data_mapping(struct op_data *d, const struct op_dmapping *m)
{
	struct op_dmapping k = *m;

	k.pad = 0;
	return op_itab_intern(&d->maps, &k, sizeof(k), NULL);
}

uint32_t op_data_function(struct op_data *d, const struct op_dfunction *f)
{
	struct op_dfunction k = *f;

	k.pad = 0;
	return op_itab_intern(&d->funcs, &k, sizeof(k), NULL);
}

uint32_t op_data_location(struct op_data *d, const struct op_dlocation *l,
			  const struct op_dline *lines)
{
	struct op_dlocation small[1 + 8 * sizeof(struct op_dline) / sizeof(struct op_dlocation)];
	size_t len = sizeof(*l) + (size_t)l->n_lines * sizeof(*lines);
	struct op_dlocation *k = small;
	struct op_dline *kl;
	uint32_t r, i;

	if (len > sizeof(small)) {
		k = malloc(len);
		if (!k)
			return NONE;
	}
	*k = *l;
	kl = (struct op_dline *)(k + 1);
	for (i = 0; i < l->n_lines; i++) {
		kl[i] = lines[i];
		kl[i].pad = 0;
	}
	r = op_itab_intern(&d->locs, k, len, NULL);
	if (k != small)
		free(k);
	return r;
}

uint32_t op_data_stack(struct op_data *d, const uint32_t *locs, size_t n)
{
	return op_itab_intern(&d->stacks, locs, n * sizeof(*locs), NULL);
}

uint32_t op_data_attr(struct op_data *d, const struct op_dattr *a)
{
	struct op_dattr k;

	memset(&k, 0, sizeof(k));
	k.key = a->key;
	k.kind = a->kind;
	k.unit = a->unit;
	if (a->kind == OP_DVAL_STR)
		k.str = a->str;
	else if (a->kind == OP_DVAL_DOUBLE)
		k.dbl = a->dbl;
	else
		k.num = a->num;
	return op_itab_intern(&d->attrs, &k, sizeof(k), NULL);
}

uint32_t op_data_attr_str(struct op_data *d, const char *key, const char *value)
{
	struct op_dattr a = { .kind = OP_DVAL_STR };

	a.key = op_data_str(d, key);
	a.str = op_data_str(d, value);
	if (a.key == NONE || a.str == NONE)
		return NONE;
	return op_data_attr(d, &a);
}

uint32_t op_data_attr_int(struct op_data *d, const char *key, int64_t value, const char *unit)
{
	struct op_dattr a = { .kind = OP_DVAL_INT, .num = value };

	a.key = op_data_str(d, key);
	a.unit = op_data_str(d, unit);
	if (a.key == NONE || a.unit == NONE)
		return NONE;
	return op_data_attr(d, &a);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

uint32_t op_data_set(struct op_data *d, uint32_t *attrs, size_t n)
{
	size_t i, j;

	if (!n)
		return 0;
	qsort(attrs, n, sizeof(*attrs), cmp_u32);
	/* the same attribute twice is once; the zero attribute is none */
	for (i = j = 0; i < n; i++)
		if (attrs[i] && (!j || attrs[j - 1] != attrs[i]))
			attrs[j++] = attrs[i];
	return op_itab_intern(&d->sets, attrs, j * sizeof(*attrs), NULL);
}

uint32_t op_data_link(struct op_data *d, const struct op_dlink *l)
{
	static const struct op_dlink zero;

	if (!memcmp(l, &zero, sizeof(zero)))
		return 0;
	return op_itab_intern(&d->links, l, sizeof(*l), NULL);
}

static int widen_values(struct op_data *d, uint32_t n_types)
{
	size_t n = d->samples.n, i;
	int64_t *nv;

	if (!d->n_types) {
		d->n_types = n_types;
		return 0;
	}
	nv = calloc(d->cap_values ? d->cap_values / d->n_types * n_types : n_types, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	for (i = 0; i < n && d->values; i++)
		memcpy(&nv[i * n_types], &d->values[i * d->n_types], d->n_types * sizeof(*nv));
	d->cap_values = d->cap_values ? d->cap_values / d->n_types * n_types : n_types;
	free(d->values);
	d->values = nv;
	d->n_types = n_types;
	return 0;
}

uint32_t op_data_type(struct op_data *d, const char *type, const char *unit)
{
	struct op_dtype t, *nt;
	uint32_t i;

	t.type = op_data_str(d, type);
	t.unit = op_data_str(d, unit);
	if (t.type == NONE || t.unit == NONE)
		return NONE;
	for (i = 0; i < d->n_types; i++)
		if (d->types[i].type == t.type && d->types[i].unit == t.unit)
			return i;
	if (d->n_types >= OP_DATA_MAX_TYPES)
		return NONE;
	nt = realloc(d->types, (d->n_types + 1) * sizeof(*nt));
	if (!nt)
		return NONE;
	d->types = nt;
	nt[d->n_types] = t;
	if (widen_values(d, d->n_types + 1))
		return NONE;
	return d->n_types - 1;
}

uint32_t op_data_add(struct op_data *d, const struct op_dsample *s, uint32_t type, int64_t value,
		     const uint64_t *ts, size_t n_ts)
{
	struct op_dsample k = *s;
	uint32_t i;
	bool added;
	size_t need, j;

	if (type >= d->n_types)
		return NONE;
	i = op_itab_intern(&d->samples, &k, sizeof(k), &added);
	if (i == NONE)
		return NONE;
	need = (size_t)d->samples.n * d->n_types;
	if (need > d->cap_values) {
		size_t ncap = d->cap_values ? d->cap_values * 2 : 1024 * d->n_types;
		int64_t *nv;

		while (ncap < need)
			ncap *= 2;
		nv = realloc(d->values, ncap * sizeof(*nv));
		if (!nv)
			return NONE;
		memset(nv + d->cap_values, 0, (ncap - d->cap_values) * sizeof(*nv));
		d->values = nv;
		d->cap_values = ncap;
	}
	/* saturate rather than overflow: a hostile file may hold huge values */
	{
		int64_t *v = &d->values[(size_t)i * d->n_types + type];

		if (__builtin_add_overflow(*v, value, v))
			*v = value > 0 ? INT64_MAX : INT64_MIN;
	}
	if (n_ts) {
		if (d->n_events + n_ts > d->cap_events) {
			size_t ncap = d->cap_events ? d->cap_events * 2 : 4096;
			uint32_t *ns;
			uint64_t *nt;

			while (ncap < d->n_events + n_ts)
				ncap *= 2;
			ns = realloc(d->ev_sample, ncap * sizeof(*ns));
			if (!ns)
				return NONE;
			d->ev_sample = ns;
			nt = realloc(d->ev_ts, ncap * sizeof(*nt));
			if (!nt)
				return NONE;
			d->ev_ts = nt;
			d->cap_events = ncap;
		}
		for (j = 0; j < n_ts; j++) {
			d->ev_sample[d->n_events] = i;
			d->ev_ts[d->n_events++] = ts[j];
		}
	}
	return i;
}

const struct op_dattr *op_data_find(const struct op_data *d, uint32_t set, const char *key)
{
	uint32_t n, i;
	const uint32_t *a = op_data_list(&d->sets, set, &n);

	for (i = 0; i < n; i++) {
		const struct op_dattr *at = op_data_at(d, a[i]);

		if (!strcmp(op_data_s(d, at->key), key))
			return at;
	}
	return NULL;
}

int64_t op_data_total(const struct op_data *d, uint32_t type)
{
	int64_t t = 0;

	for (uint32_t i = 1; i < d->samples.n && type < d->n_types; i++)
		if (__builtin_add_overflow(t, op_data_value(d, i, type), &t))
			return INT64_MAX;
	return t;
}

uint32_t op_data_type_named(const struct op_data *d, const char *type)
{
	for (uint32_t i = 0; i < d->n_types; i++)
		if (!strcmp(op_data_s(d, d->types[i].type), type))
			return i;
	return NONE;
}
