// SPDX-License-Identifier: Apache-2.0
/*
 * Profile builder: interning tables with an open-addressing hash index each, merged samples
 * and per-process resources. See profile.h for the contract, profile_internal.h for layout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/log.h"
#include "otelprof.h"
#include "profile/profile_internal.h"

#define ARENA_BLOCK	     (64 * 1024)
#define KERNEL_MAPPING_START 0xffff000000000000ull

/* ------------------------------------------------------------------ hashing */

static inline uint64_t hcombine(uint64_t h, uint64_t v)
{
	return (h ^ op_mix64(v + 0x9e3779b97f4a7c15ull)) * 0x100000001b3ull;
}

static inline uint32_t fold(uint64_t h)
{
	return (uint32_t)(h ^ (h >> 32));
}

/* ------------------------------------------------------------------ hash index */

typedef bool (*eq_fn)(const struct op_profile *p, uint32_t idx, const void *key);

/* Make room for one more entry (load factor <= 0.7). */
static int htab_reserve(struct op_htab *h)
{
	uint32_t cap = h->slots ? h->mask + 1 : 0;
	struct op_hslot *ns;
	uint32_t ncap, nmask, i;

	if (cap && (uint64_t)(h->used + 1) * 10 <= (uint64_t)cap * 7)
		return 0;
	ncap = cap ? cap * 2 : 16;
	if (!ncap)
		return -ENOMEM;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	nmask = ncap - 1;
	for (i = 0; i < cap; i++) {
		uint32_t j;

		if (!h->slots[i].idx)
			continue;
		for (j = h->slots[i].hash & nmask; ns[j].idx; j = (j + 1) & nmask)
			;
		ns[j] = h->slots[i];
	}
	free(h->slots);
	h->slots = ns;
	h->mask = nmask;
	return 0;
}

/* The slot holding an equal entry, or the empty slot where it belongs. */
static struct op_hslot *htab_find(const struct op_htab *h, uint32_t hash, eq_fn eq,
				  const struct op_profile *p, const void *key)
{
	uint32_t j;

	for (j = hash & h->mask; h->slots[j].idx; j = (j + 1) & h->mask) {
		if (h->slots[j].hash == hash && eq(p, h->slots[j].idx, key))
			return &h->slots[j];
	}
	return &h->slots[j];
}

/* ------------------------------------------------------------------ vectors, arena */

static int grow(void **v, uint32_t *cap, uint32_t need, size_t elsz)
{
	uint64_t ncap;
	void *nv;

	if (need <= *cap)
		return 0;
	ncap = *cap ? (uint64_t)*cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	if (ncap > UINT32_MAX - 1)
		ncap = UINT32_MAX - 1;
	if (need > ncap)
		return -ENOMEM;
	nv = realloc(*v, ncap * elsz);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = (uint32_t)ncap;
	return 0;
}

#define GROW(p, name, need) grow((void **)&(p)->name, &(p)->cap_##name, (need), sizeof(*(p)->name))

struct op_arena_block {
	struct op_arena_block *next;
	size_t used, cap;
	char data[];
};

static char *arena_strdup(struct op_profile *p, const char *s, size_t len)
{
	struct op_arena_block *b = p->arena;
	char *out;

	if (!b || b->cap - b->used < len + 1) {
		size_t cap = len + 1 > ARENA_BLOCK / 4 ? len + 1 : ARENA_BLOCK;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		if (cap == ARENA_BLOCK || !p->arena) {
			b->next = p->arena;
			p->arena = b;
		} else {
			/* a big string gets a block of its own behind the current one */
			b->next = p->arena->next;
			p->arena->next = b;
		}
	}
	out = b->data + b->used;
	memcpy(out, s, len);
	out[len] = '\0';
	b->used += len + 1;
	return out;
}

/* ------------------------------------------------------------------ strings */

struct str_key {
	const char *s;
	size_t len;
};

static bool str_eq(const struct op_profile *p, uint32_t idx, const void *key)
{
	const struct str_key *k = key;

	return p->strs[idx].len == k->len && !memcmp(p->strs[idx].s, k->s, k->len);
}

uint32_t op_profile_string(struct op_profile *p, const char *s)
{
	struct str_key k;
	struct op_hslot *slot;
	uint32_t hash;
	char *copy;

	if (!s || !*s)
		return 0;
	k.s = s;
	k.len = strlen(s);
	if (k.len > UINT32_MAX - 1) {
		errno = EINVAL;
		return OP_PROFILE_ERR;
	}
	if (htab_reserve(&p->h_strs) || GROW(p, strs, p->n_strs + 1))
		goto nomem;
	hash = fold(op_hash_bytes(s, k.len));
	slot = htab_find(&p->h_strs, hash, str_eq, p, &k);
	if (slot->idx)
		return slot->idx;
	copy = arena_strdup(p, s, k.len);
	if (!copy)
		goto nomem;
	p->strs[p->n_strs].s = copy;
	p->strs[p->n_strs].len = (uint32_t)k.len;
	slot->idx = p->n_strs++;
	slot->hash = hash;
	p->h_strs.used++;
	return slot->idx;
nomem:
	errno = ENOMEM;
	return OP_PROFILE_ERR;
}

/* Intern several strings; returns false if any failed. */
static bool intern_all(struct op_profile *p, const char *const *in, uint32_t *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		out[i] = op_profile_string(p, in[i]);
		if (out[i] == OP_PROFILE_ERR)
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------ attributes */

static uint32_t attr_hash(const struct op_attr *a)
{
	uint64_t h = hcombine(hcombine(a->key, a->kind), a->kind == OP_ATTR_STR ? a->str : 0);

	return fold(hcombine(h, a->kind == OP_ATTR_INT ? (uint64_t)a->num : 0));
}

static bool attr_eq(const struct op_profile *p, uint32_t idx, const void *key)
{
	const struct op_attr *a = &p->attrs[idx], *b = key;

	return a->key == b->key && a->kind == b->kind && a->str == b->str && a->num == b->num;
}

static uint32_t attr_intern(struct op_profile *p, const struct op_attr *a)
{
	struct op_hslot *slot;
	uint32_t hash;

	if (!a->key || a->key >= p->n_strs || a->str >= p->n_strs) {
		errno = EINVAL;
		return OP_PROFILE_ERR;
	}
	if (htab_reserve(&p->h_attrs) || GROW(p, attrs, p->n_attrs + 1)) {
		errno = ENOMEM;
		return OP_PROFILE_ERR;
	}
	hash = attr_hash(a);
	slot = htab_find(&p->h_attrs, hash, attr_eq, p, a);
	if (slot->idx)
		return slot->idx;
	p->attrs[p->n_attrs] = *a;
	slot->idx = p->n_attrs++;
	slot->hash = hash;
	p->h_attrs.used++;
	return slot->idx;
}

uint32_t op_profile_attr_str(struct op_profile *p, uint32_t key, uint32_t value)
{
	struct op_attr a = { .key = key, .kind = OP_ATTR_STR, .str = value };

	return attr_intern(p, &a);
}

uint32_t op_profile_attr_int(struct op_profile *p, uint32_t key, int64_t value)
{
	struct op_attr a = { .key = key, .kind = OP_ATTR_INT, .num = value };

	return attr_intern(p, &a);
}

const char *op_frame_type_name(enum op_frame_type t)
{
	switch (t) {
	case OP_FRAME_NATIVE:
		return "native";
	case OP_FRAME_KERNEL:
		return "kernel";
	case OP_FRAME_GO:
		return "go";
	case OP_FRAME_ABORT:
		return "abort-marker"; /* the upstream eBPF profiler's name for it */
	case OP_FRAME_CPYTHON:
		return "cpython";
	case OP_FRAME_V8JS:
		return "v8js";
	case OP_FRAME_HOTSPOT:
		return "jvm"; /* the semantic conventions' value for HotSpot frames */
	case OP_FRAME_TYPE_MAX:
		break;
	}
	return "native";
}

/* ------------------------------------------------------------------ mappings */

static uint32_t mapping_hash(const struct op_mapping *m)
{
	uint64_t h =
		hcombine(hcombine(hcombine(0, m->memory_start), m->memory_limit), m->file_offset);

	h = hcombine(h, ((uint64_t)m->filename << 32) | m->build_id_gnu);
	h = hcombine(h, ((uint64_t)m->build_id_go << 32) | m->build_id_htlhash);
	return fold(h);
}

static bool mapping_eq(const struct op_profile *p, uint32_t idx, const void *key)
{
	const struct op_mapping *a = &p->mappings[idx], *b = key;

	return a->memory_start == b->memory_start && a->memory_limit == b->memory_limit &&
	       a->file_offset == b->file_offset && a->filename == b->filename &&
	       a->build_id_gnu == b->build_id_gnu && a->build_id_go == b->build_id_go &&
	       a->build_id_htlhash == b->build_id_htlhash;
}

uint32_t op_profile_mapping(struct op_profile *p, const struct op_mapping_desc *d)
{
	const char *in[4] = { d->filename, d->build_id_gnu, d->build_id_go, d->build_id_htlhash };
	uint32_t s[4];
	struct op_mapping m = { 0 };
	struct op_hslot *slot;
	uint32_t hash, a;

	if (!intern_all(p, in, s, 4))
		return OP_PROFILE_ERR;
	m.memory_start = d->memory_start;
	m.memory_limit = d->memory_limit;
	m.file_offset = d->file_offset;
	m.filename = s[0];
	m.build_id_gnu = s[1];
	m.build_id_go = s[2];
	m.build_id_htlhash = s[3];
	m.has_functions = !!d->has_functions;
	m.has_line_numbers = !!d->has_line_numbers;
	m.has_inline_frames = !!d->has_inline_frames;

	if (htab_reserve(&p->h_mappings) || GROW(p, mappings, p->n_mappings + 1))
		goto nomem;
	hash = mapping_hash(&m);
	slot = htab_find(&p->h_mappings, hash, mapping_eq, p, &m);
	if (slot->idx) {
		struct op_mapping *old = &p->mappings[slot->idx];

		/* the has_* flags describe the mapping as a whole: any symbolized frame sets them
		 */
		old->has_functions |= m.has_functions;
		old->has_line_numbers |= m.has_line_numbers;
		old->has_inline_frames |= m.has_inline_frames;
		return slot->idx;
	}

	/* build ids travel as mapping attributes in OTLP (semantic conventions) */
	if (m.build_id_gnu) {
		a = op_profile_attr_str(p, p->wk[OP_WK_BUILD_ID_GNU], m.build_id_gnu);
		if (a == OP_PROFILE_ERR)
			return a;
		m.attrs[m.n_attrs++] = a;
	}
	if (m.build_id_go) {
		a = op_profile_attr_str(p, p->wk[OP_WK_BUILD_ID_GO], m.build_id_go);
		if (a == OP_PROFILE_ERR)
			return a;
		m.attrs[m.n_attrs++] = a;
	}
	if (m.build_id_htlhash) {
		a = op_profile_attr_str(p, p->wk[OP_WK_BUILD_ID_HTLHASH], m.build_id_htlhash);
		if (a == OP_PROFILE_ERR)
			return a;
		m.attrs[m.n_attrs++] = a;
	}
	p->mappings[p->n_mappings] = m;
	slot->idx = p->n_mappings++;
	slot->hash = hash;
	p->h_mappings.used++;
	return slot->idx;
nomem:
	errno = ENOMEM;
	return OP_PROFILE_ERR;
}

/* ------------------------------------------------------------------ functions */

static uint32_t function_hash(const struct op_function *f)
{
	uint64_t h = hcombine(hcombine(0, ((uint64_t)f->name << 32) | f->system_name), f->filename);

	return fold(hcombine(h, (uint64_t)f->start_line));
}

static bool function_eq(const struct op_profile *p, uint32_t idx, const void *key)
{
	const struct op_function *a = &p->functions[idx], *b = key;

	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename && a->start_line == b->start_line;
}

uint32_t op_profile_function(struct op_profile *p, const struct op_function_desc *d)
{
	const char *in[3] = { d->name, d->system_name, d->filename };
	struct op_function f = { 0 };
	struct op_hslot *slot;
	uint32_t s[3], hash;

	if (!intern_all(p, in, s, 3))
		return OP_PROFILE_ERR;
	f.name = s[0];
	f.system_name = s[1];
	f.filename = s[2];
	f.start_line = d->start_line;
	if (htab_reserve(&p->h_functions) || GROW(p, functions, p->n_functions + 1)) {
		errno = ENOMEM;
		return OP_PROFILE_ERR;
	}
	hash = function_hash(&f);
	slot = htab_find(&p->h_functions, hash, function_eq, p, &f);
	if (slot->idx)
		return slot->idx;
	p->functions[p->n_functions] = f;
	slot->idx = p->n_functions++;
	slot->hash = hash;
	p->h_functions.used++;
	return slot->idx;
}

/* ------------------------------------------------------------------ locations */

struct loc_key {
	uint64_t address;
	uint32_t mapping;
	uint32_t type;
	const struct op_line_desc *lines;
	size_t n_lines;
};

static uint32_t loc_hash(const struct loc_key *k)
{
	uint64_t h = hcombine(hcombine(0, k->address), ((uint64_t)k->mapping << 8) | k->type);
	size_t i;

	for (i = 0; i < k->n_lines; i++) {
		h = hcombine(h, k->lines[i].function);
		h = hcombine(h, (uint64_t)k->lines[i].line);
		h = hcombine(h, (uint64_t)k->lines[i].column);
	}
	return fold(hcombine(h, k->n_lines));
}

static bool loc_eq(const struct op_profile *p, uint32_t idx, const void *key)
{
	const struct op_location *l = &p->locations[idx];
	const struct loc_key *k = key;
	size_t i;

	if (l->address != k->address || l->mapping != k->mapping || l->type != k->type ||
	    l->n_lines != k->n_lines)
		return false;
	for (i = 0; i < k->n_lines; i++) {
		const struct op_line *a = &p->lines[l->first_line + i];

		if (a->function != k->lines[i].function || a->line != k->lines[i].line ||
		    a->column != k->lines[i].column)
			return false;
	}
	return true;
}

static uint32_t kernel_mapping(struct op_profile *p)
{
	struct op_mapping_desc d = {
		.memory_start = KERNEL_MAPPING_START,
		.memory_limit = UINT64_MAX,
		.filename = "[kernel.kallsyms]",
		.has_functions = 1,
	};

	if (!p->kernel_mapping) {
		uint32_t m = op_profile_mapping(p, &d);

		if (m == OP_PROFILE_ERR)
			return m;
		p->kernel_mapping = m;
	}
	return p->kernel_mapping;
}

uint32_t op_profile_location(struct op_profile *p, uint32_t mapping, uint64_t address,
			     const struct op_line_desc *lines, size_t n_lines,
			     enum op_frame_type type)
{
	struct loc_key k = { address, mapping, type, lines, n_lines };
	struct op_location *l;
	struct op_hslot *slot;
	uint32_t hash, attr;
	size_t i;

	if (mapping >= p->n_mappings || (n_lines && !lines) || n_lines > UINT32_MAX / 2 ||
	    (unsigned int)type >= OP_FRAME_TYPE_MAX)
		goto inval;
	for (i = 0; i < n_lines; i++) {
		if (lines[i].function >= p->n_functions)
			goto inval;
	}
	if (type == OP_FRAME_KERNEL && !mapping) {
		k.mapping = kernel_mapping(p);
		if (k.mapping == OP_PROFILE_ERR)
			return k.mapping;
	}
	attr = op_profile_attr_str(p, p->wk[OP_WK_FRAME_TYPE], p->wk[OP_WK_NATIVE + type]);
	if (attr == OP_PROFILE_ERR)
		return attr;
	if (htab_reserve(&p->h_locations) || GROW(p, locations, p->n_locations + 1) ||
	    GROW(p, lines, p->n_lines + (uint32_t)n_lines))
		goto nomem;
	hash = loc_hash(&k);
	slot = htab_find(&p->h_locations, hash, loc_eq, p, &k);
	if (slot->idx)
		return slot->idx;
	l = &p->locations[p->n_locations];
	l->address = address;
	l->mapping = k.mapping;
	l->type = type;
	l->first_line = p->n_lines;
	l->n_lines = (uint32_t)n_lines;
	l->attr = attr;
	for (i = 0; i < n_lines; i++) {
		struct op_line *o = &p->lines[p->n_lines++];

		o->function = lines[i].function;
		o->line = lines[i].line;
		o->column = lines[i].column;
	}
	slot->idx = p->n_locations++;
	slot->hash = hash;
	p->h_locations.used++;
	return slot->idx;
inval:
	errno = EINVAL;
	return OP_PROFILE_ERR;
nomem:
	errno = ENOMEM;
	return OP_PROFILE_ERR;
}

/* ------------------------------------------------------------------ stacks */

struct stack_key {
	const uint32_t *locs;
	size_t n;
};

static bool stack_eq(const struct op_profile *p, uint32_t idx, const void *key)
{
	const struct op_stack *s = &p->stacks[idx];
	const struct stack_key *k = key;

	return s->n == k->n && !memcmp(&p->stack_locs[s->first], k->locs, k->n * sizeof(*k->locs));
}

uint32_t op_profile_stack(struct op_profile *p, const uint32_t *locations, size_t n)
{
	struct stack_key k = { locations, n };
	struct op_hslot *slot;
	uint32_t hash;
	size_t i;

	if (!n)
		return 0;
	if (!locations || n > UINT32_MAX / 2)
		goto inval;
	for (i = 0; i < n; i++) {
		if (!locations[i] || locations[i] >= p->n_locations)
			goto inval;
	}
	if (htab_reserve(&p->h_stacks) || GROW(p, stacks, p->n_stacks + 1) ||
	    GROW(p, stack_locs, p->n_stack_locs + (uint32_t)n)) {
		errno = ENOMEM;
		return OP_PROFILE_ERR;
	}
	hash = fold(op_hash_bytes(locations, n * sizeof(*locations)));
	slot = htab_find(&p->h_stacks, hash, stack_eq, p, &k);
	if (slot->idx)
		return slot->idx;
	p->stacks[p->n_stacks].first = p->n_stack_locs;
	p->stacks[p->n_stacks].n = (uint32_t)n;
	memcpy(&p->stack_locs[p->n_stack_locs], locations, n * sizeof(*locations));
	p->n_stack_locs += (uint32_t)n;
	slot->idx = p->n_stacks++;
	slot->hash = hash;
	p->h_stacks.used++;
	return slot->idx;
inval:
	errno = EINVAL;
	return OP_PROFILE_ERR;
}

/* ------------------------------------------------------------------ attribute sets, links */

static bool set_eq(const struct op_profile *p, uint32_t idx, const void *key)
{
	const struct op_attrset *s = &p->sets[idx];
	const struct stack_key *k = key;

	return s->n == k->n && !memcmp(&p->set_attrs[s->first], k->locs, k->n * sizeof(*k->locs));
}

uint32_t op_profile_attrset(struct op_profile *p, const uint32_t *attrs, size_t n)
{
	struct stack_key k = { attrs, n };
	struct op_hslot *slot;
	uint32_t hash;
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		if (!attrs[i] || attrs[i] >= p->n_attrs) {
			errno = EINVAL;
			return OP_PROFILE_ERR;
		}
	}
	if (n > 4096 || htab_reserve(&p->h_sets) || GROW(p, sets, p->n_sets + 1) ||
	    GROW(p, set_attrs, p->n_set_attrs + (uint32_t)n)) {
		errno = ENOMEM;
		return OP_PROFILE_ERR;
	}
	hash = fold(op_hash_bytes(attrs, n * sizeof(*attrs)));
	slot = htab_find(&p->h_sets, hash, set_eq, p, &k);
	if (slot->idx)
		return slot->idx;
	p->sets[p->n_sets].first = p->n_set_attrs;
	p->sets[p->n_sets].n = (uint32_t)n;
	memcpy(&p->set_attrs[p->n_set_attrs], attrs, n * sizeof(*attrs));
	p->n_set_attrs += (uint32_t)n;
	slot->idx = p->n_sets++;
	slot->hash = hash;
	p->h_sets.used++;
	return slot->idx;
}

/* The set of at most @max string attributes @kv (keys prefixed with @prefix, "" for none). */
static uint32_t kv_set(struct op_profile *p, const struct op_kv *kv, size_t n, const char *prefix,
		       size_t max)
{
	uint32_t a[64];
	size_t m = 0;
	char key[256];

	for (size_t i = 0; i < n && m < max && m < sizeof(a) / sizeof(a[0]); i++) {
		if (!kv[i].key || !kv[i].key[0] || !kv[i].value)
			continue;
		struct op_attr at = { .kind = OP_ATTR_STR };

		snprintf(key, sizeof(key), "%s%s", prefix, kv[i].key);
		at.key = op_profile_string(p, key);
		at.str = op_profile_string(p, kv[i].value);
		at.label_key = prefix[0] ? op_profile_string(p, kv[i].key) : 0;
		if (at.key == OP_PROFILE_ERR || at.str == OP_PROFILE_ERR ||
		    at.label_key == OP_PROFILE_ERR)
			return OP_PROFILE_ERR;
		a[m] = attr_intern(p, &at);
		if (a[m] == OP_PROFILE_ERR)
			return OP_PROFILE_ERR;
		m++;
	}
	return op_profile_attrset(p, a, m);
}

static bool link_eq(const struct op_profile *p, uint32_t idx, const void *key)
{
	return !memcmp(&p->links[idx], key, sizeof(struct op_link));
}

static uint32_t link_get(struct op_profile *p, const uint8_t *trace_id, const uint8_t *span_id)
{
	struct op_link l;
	struct op_hslot *slot;
	uint32_t hash;

	memcpy(l.trace_id, trace_id, sizeof(l.trace_id));
	memcpy(l.span_id, span_id, sizeof(l.span_id));
	if (htab_reserve(&p->h_links) || GROW(p, links, p->n_links + 1)) {
		errno = ENOMEM;
		return OP_PROFILE_ERR;
	}
	hash = fold(op_hash_bytes(&l, sizeof(l)));
	slot = htab_find(&p->h_links, hash, link_eq, p, &l);
	if (slot->idx)
		return slot->idx;
	p->links[p->n_links] = l;
	slot->idx = p->n_links++;
	slot->hash = hash;
	p->h_links.used++;
	return slot->idx;
}

/* ------------------------------------------------------------------ processes, samples */

static bool process_eq(const struct op_profile *p, uint32_t idx, const void *key)
{
	return p->processes[idx].pid == *(const int32_t *)key;
}

/* The process entry for @d->pid; later descriptions fill fields the first one lacked. */
static uint32_t process_get(struct op_profile *p, const struct op_process_desc *d)
{
	const char *in[3] = { d->executable_name, d->executable_path, d->container_id };
	struct op_process *pr;
	struct op_hslot *slot;
	uint32_t hash, s[3], res;

	if (htab_reserve(&p->h_processes) || GROW(p, processes, p->n_processes + 1)) {
		errno = ENOMEM;
		return OP_PROFILE_ERR;
	}
	hash = fold(op_mix64((uint32_t)d->pid));
	slot = htab_find(&p->h_processes, hash, process_eq, p, &d->pid);
	if (slot->idx) {
		pr = &p->processes[slot->idx];
		if (!pr->resource && d->n_resource) {
			res = kv_set(p, d->resource, d->n_resource, "", OP_PROCESS_MAX_RESOURCE);
			if (res == OP_PROFILE_ERR)
				return OP_PROFILE_ERR;
			pr = &p->processes[slot->idx];
			pr->resource = res;
		}
		if ((!pr->exe_name && d->executable_name) ||
		    (!pr->exe_path && d->executable_path) ||
		    (!pr->container_id && d->container_id)) {
			if (!intern_all(p, in, s, 3))
				return OP_PROFILE_ERR;
			pr->exe_name = pr->exe_name ? pr->exe_name : s[0];
			pr->exe_path = pr->exe_path ? pr->exe_path : s[1];
			pr->container_id = pr->container_id ? pr->container_id : s[2];
		}
		return slot->idx;
	}
	if (!intern_all(p, in, s, 3))
		return OP_PROFILE_ERR;
	res = kv_set(p, d->resource, d->n_resource, "", OP_PROCESS_MAX_RESOURCE);
	if (res == OP_PROFILE_ERR)
		return OP_PROFILE_ERR;
	pr = &p->processes[p->n_processes];
	memset(pr, 0, sizeof(*pr));
	pr->pid = d->pid;
	pr->resource = res;
	pr->exe_name = s[0];
	pr->exe_path = s[1];
	pr->container_id = s[2];
	slot->idx = p->n_processes++;
	slot->hash = hash;
	p->h_processes.used++;
	return slot->idx;
}

static int grow_events(struct op_profile *p)
{
	uint32_t cap = p->cap_events;

	if (grow((void **)&p->ev_sample, &cap, p->n_events + 1, sizeof(*p->ev_sample)))
		return -ENOMEM;
	if (cap != p->cap_events) {
		uint64_t *ts = realloc(p->ev_ts, (size_t)cap * sizeof(*ts));

		if (!ts)
			return -ENOMEM; /* ev_sample is merely larger than needed */
		p->ev_ts = ts;
		if (p->ev_val) {
			int64_t *v = realloc(p->ev_val, (size_t)cap * sizeof(*v));

			if (!v)
				return -ENOMEM; /* ev_ts is merely larger than needed */
			p->ev_val = v;
		}
		p->cap_events = cap;
	}
	return 0;
}

static uint32_t sample_hash(const struct op_psample *s)
{
	uint64_t h = hcombine(hcombine(0, ((uint64_t)s->process << 32) | s->stack),
			      ((uint64_t)s->thread_name << 32) | (uint32_t)s->tid);

	h = hcombine(h, ((uint64_t)s->labels << 32) | s->link);
	h = hcombine(h, ((uint64_t)s->kind << 32) | s->thread_state);
	return fold(hcombine(h, (uint32_t)s->cpu));
}

static bool sample_eq(const struct op_profile *p, uint32_t idx, const void *key)
{
	const struct op_psample *a = &p->samples[idx], *b = key;

	return a->process == b->process && a->stack == b->stack &&
	       a->thread_name == b->thread_name && a->tid == b->tid && a->cpu == b->cpu &&
	       a->labels == b->labels && a->link == b->link && a->kind == b->kind &&
	       a->thread_state == b->thread_state;
}

int op_profile_add_sample(struct op_profile *p, const struct op_sample_desc *d)
{
	struct op_psample k = { 0 }, *s;
	struct op_hslot *slot;
	uint32_t hash, idx;

	if (!d->process || d->stack >= p->n_stacks)
		return -EINVAL;
	k.process = process_get(p, d->process);
	if (k.process == OP_PROFILE_ERR)
		return -errno;
	k.thread_name = op_profile_string(p, d->thread_name);
	if (k.thread_name == OP_PROFILE_ERR)
		return -errno;
	if ((unsigned int)d->kind >= OP_SAMPLE_KINDS)
		return -EINVAL;
	k.stack = d->stack;
	k.tid = d->tid;
	k.cpu = d->cpu;
	k.kind = d->kind;
	k.thread_state = op_profile_string(p, d->thread_state);
	if (k.thread_state == OP_PROFILE_ERR)
		return -errno;
	k.labels = kv_set(p, d->labels, d->n_labels, OP_LABEL_ATTR_PREFIX, 64);
	if (k.labels == OP_PROFILE_ERR)
		return -errno;
	if (d->trace_id && d->span_id) {
		k.link = link_get(p, d->trace_id, d->span_id);
		if (k.link == OP_PROFILE_ERR)
			return -errno;
	}
	if (htab_reserve(&p->h_samples) || GROW(p, samples, p->n_samples + 1) || grow_events(p))
		return -ENOMEM;
	if (d->kind != OP_SAMPLE_CPU && !p->ev_val) {
		/* the first event with a value of its own: every earlier one counts 1 */
		p->ev_val = malloc((size_t)p->cap_events * sizeof(*p->ev_val));
		if (!p->ev_val)
			return -ENOMEM;
		for (uint32_t e = 0; e < p->n_events; e++)
			p->ev_val[e] = 1;
	}
	hash = sample_hash(&k);
	slot = htab_find(&p->h_samples, hash, sample_eq, p, &k);
	if (slot->idx) {
		idx = slot->idx;
		if (p->samples[idx].count == UINT32_MAX)
			return -EOVERFLOW;
	} else {
		uint32_t a[OP_SAMPLE_ATTRS], n = 0;

		if (k.thread_name) {
			a[n] = op_profile_attr_str(p, p->wk[OP_WK_THREAD_NAME], k.thread_name);
			if (a[n++] == OP_PROFILE_ERR)
				return -errno;
		}
		a[n] = op_profile_attr_int(p, p->wk[OP_WK_THREAD_ID], k.tid);
		if (a[n++] == OP_PROFILE_ERR)
			return -errno;
		if (k.cpu >= 0) {
			a[n] = op_profile_attr_int(p, p->wk[OP_WK_CPU_LOGICAL], k.cpu);
			if (a[n++] == OP_PROFILE_ERR)
				return -errno;
		}
		if (k.thread_state) {
			a[n] = op_profile_attr_str(p, p->wk[OP_WK_THREAD_STATE], k.thread_state);
			if (a[n++] == OP_PROFILE_ERR)
				return -errno;
		}
		memset(k.attrs, 0, sizeof(k.attrs));
		memcpy(k.attrs, a, n * sizeof(a[0]));
		idx = p->n_samples++;
		p->samples[idx] = k;
		slot->idx = idx;
		slot->hash = hash;
		p->h_samples.used++;
	}
	s = &p->samples[idx];
	s->count++;
	if (d->kind != OP_SAMPLE_CPU)
		s->value += d->value;
	p->processes[s->process].events++;
	p->ev_sample[p->n_events] = idx;
	p->ev_ts[p->n_events] = d->timestamp_ns;
	if (p->ev_val)
		p->ev_val[p->n_events] = d->kind == OP_SAMPLE_CPU ? 1 : d->value;
	p->n_events++;
	p->events++;
	if (d->timestamp_ns) {
		if (!p->min_ts || d->timestamp_ns < p->min_ts)
			p->min_ts = d->timestamp_ns;
		if (d->timestamp_ns > p->max_ts)
			p->max_ts = d->timestamp_ns;
	}
	return 0;
}

uint64_t op_profile_sample_count(const struct op_profile *p)
{
	return p ? p->events : 0;
}

void op_profile_set_end(struct op_profile *p, uint64_t end_ns)
{
	p->end_ns = end_ns;
}

uint64_t op_profile_duration(const struct op_profile *p)
{
	uint64_t end = p->end_ns ? p->end_ns : p->max_ts;

	return end > p->opts.start_ns ? end - p->opts.start_ns : 0;
}

/* ------------------------------------------------------------------ lifecycle */

static const char *const wk_strings[OP_WK_MAX] = {
	[OP_WK_SAMPLES] = "samples",
	[OP_WK_COUNT] = "count",
	[OP_WK_CPU] = "cpu",
	[OP_WK_NANOSECONDS] = "nanoseconds",
	[OP_WK_PID] = "pid",
	[OP_WK_TID] = "tid",
	[OP_WK_THREAD_NAME] = "thread.name",
	[OP_WK_EXE_NAME] = "process.executable.name",
	[OP_WK_CPU_LABEL] = "cpu",
	[OP_WK_THREAD_ID] = "thread.id",
	[OP_WK_CPU_LOGICAL] = "cpu.logical_number",
	[OP_WK_FRAME_TYPE] = "profile.frame.type",
	[OP_WK_BUILD_ID_GNU] = "process.executable.build_id.gnu",
	[OP_WK_BUILD_ID_GO] = "process.executable.build_id.go",
	[OP_WK_BUILD_ID_HTLHASH] = "process.executable.build_id.htlhash",
	[OP_WK_KERNEL_MAPPING] = "[kernel.kallsyms]",
	[OP_WK_NATIVE] = "native",
	[OP_WK_KERNEL] = "kernel",
	[OP_WK_GO] = "go",
	[OP_WK_ABORT] = "abort-marker",
	[OP_WK_CPYTHON] = "cpython",
	[OP_WK_V8JS] = "v8js",
	[OP_WK_HOTSPOT] = "jvm",
	[OP_WK_ID] = "id",
	[OP_WK_OFF_CPU] = "off_cpu",
	[OP_WK_THREAD_STATE] = "thread.state",
	[OP_WK_ALLOC_OBJECTS] = "alloc_objects",
	[OP_WK_ALLOC_SPACE] = "alloc_space",
	[OP_WK_INUSE_OBJECTS] = "inuse_objects",
	[OP_WK_INUSE_SPACE] = "inuse_space",
	[OP_WK_BYTES] = "bytes",
	[OP_WK_EVENTS] = "events",
};

struct op_profile *op_profile_new(const struct op_profile_opts *opts)
{
	struct op_profile *p = calloc(1, sizeof(*p));
	int i;

	if (!p)
		goto nomem;
	if (opts)
		p->opts = *opts;
	p->scope_name = strdup(p->opts.scope_name ? p->opts.scope_name : "otelprof");
	p->scope_version =
		strdup(p->opts.scope_version ? p->opts.scope_version : OTELPROF_VERSION_STRING);
	if (!p->scope_name || !p->scope_version)
		goto nomem;
	p->opts.scope_name = p->scope_name;
	p->opts.scope_version = p->scope_version;

	/* element 0 of every table is the zero entry */
	if (GROW(p, strs, 1) || GROW(p, mappings, 1) || GROW(p, functions, 1) ||
	    GROW(p, locations, 1) || GROW(p, stacks, 1) || GROW(p, attrs, 1) ||
	    GROW(p, processes, 1) || GROW(p, samples, 1) || GROW(p, sets, 1) || GROW(p, links, 1))
		goto nomem;
	memset(&p->sets[0], 0, sizeof(p->sets[0]));
	memset(&p->links[0], 0, sizeof(p->links[0]));
	p->n_sets = p->n_links = 1;
	memset(&p->strs[0], 0, sizeof(p->strs[0]));
	p->strs[0].s = "";
	memset(&p->mappings[0], 0, sizeof(p->mappings[0]));
	memset(&p->functions[0], 0, sizeof(p->functions[0]));
	memset(&p->locations[0], 0, sizeof(p->locations[0]));
	memset(&p->stacks[0], 0, sizeof(p->stacks[0]));
	memset(&p->attrs[0], 0, sizeof(p->attrs[0]));
	memset(&p->processes[0], 0, sizeof(p->processes[0]));
	memset(&p->samples[0], 0, sizeof(p->samples[0]));
	p->n_strs = p->n_mappings = p->n_functions = p->n_locations = 1;
	p->n_stacks = p->n_attrs = p->n_processes = p->n_samples = 1;

	for (i = 0; i < OP_WK_MAX; i++) {
		p->wk[i] = op_profile_string(p, wk_strings[i]);
		if (p->wk[i] == OP_PROFILE_ERR)
			goto nomem;
	}
	return p;
nomem:
	op_profile_free(p);
	errno = ENOMEM;
	return NULL;
}

void op_profile_free(struct op_profile *p)
{
	struct op_arena_block *b, *next;

	if (!p)
		return;
	for (b = p->arena; b; b = next) {
		next = b->next;
		free(b);
	}
	free(p->strs);
	free(p->h_strs.slots);
	free(p->mappings);
	free(p->h_mappings.slots);
	free(p->functions);
	free(p->h_functions.slots);
	free(p->locations);
	free(p->h_locations.slots);
	free(p->lines);
	free(p->stacks);
	free(p->h_stacks.slots);
	free(p->stack_locs);
	free(p->attrs);
	free(p->h_attrs.slots);
	free(p->processes);
	free(p->h_processes.slots);
	free(p->sets);
	free(p->h_sets.slots);
	free(p->set_attrs);
	free(p->links);
	free(p->h_links.slots);
	free(p->samples);
	free(p->h_samples.slots);
	free(p->ev_sample);
	free(p->ev_ts);
	free(p->ev_val);
	free(p->scope_name);
	free(p->scope_version);
	free(p);
}

size_t op_profile_memory(const struct op_profile *p)
{
	const struct op_htab *h[] = { &p->h_strs,      &p->h_mappings, &p->h_functions,
				      &p->h_locations, &p->h_stacks,   &p->h_attrs,
				      &p->h_processes, &p->h_samples,  &p->h_sets,
				      &p->h_links };
	const struct op_arena_block *b;
	size_t n = sizeof(*p);
	size_t i;

	for (b = p->arena; b; b = b->next)
		n += sizeof(*b) + b->cap;
	for (i = 0; i < sizeof(h) / sizeof(h[0]); i++)
		n += h[i]->slots ? (h[i]->mask + 1) * sizeof(struct op_hslot) : 0;
	n += (size_t)p->cap_strs * sizeof(*p->strs);
	n += (size_t)p->cap_mappings * sizeof(*p->mappings);
	n += (size_t)p->cap_functions * sizeof(*p->functions);
	n += (size_t)p->cap_locations * sizeof(*p->locations);
	n += (size_t)p->cap_lines * sizeof(*p->lines);
	n += (size_t)p->cap_stacks * sizeof(*p->stacks);
	n += (size_t)p->cap_stack_locs * sizeof(*p->stack_locs);
	n += (size_t)p->cap_attrs * sizeof(*p->attrs);
	n += (size_t)p->cap_sets * sizeof(*p->sets);
	n += (size_t)p->cap_set_attrs * sizeof(*p->set_attrs);
	n += (size_t)p->cap_links * sizeof(*p->links);
	n += (size_t)p->cap_processes * sizeof(*p->processes);
	n += (size_t)p->cap_samples * sizeof(*p->samples);
	n += (size_t)p->cap_events *
	     (sizeof(*p->ev_sample) + sizeof(*p->ev_ts) + (p->ev_val ? sizeof(*p->ev_val) : 0));
	return n;
}

/* ------------------------------------------------------------------ encoder helpers */

int op_profile_group(const struct op_profile *p, struct op_grouped *g)
{
	uint32_t *fill = NULL;
	uint32_t i, pos;

	memset(g, 0, sizeof(*g));
	g->order = malloc((size_t)p->n_samples * sizeof(*g->order));
	g->ts_off = calloc((size_t)p->n_samples + 1, sizeof(*g->ts_off));
	g->ts = malloc(((size_t)p->n_events + 1) * sizeof(*g->ts));
	if (p->ev_val)
		g->val = malloc(((size_t)p->n_events + 1) * sizeof(*g->val));
	g->proc_first = calloc(p->n_processes, sizeof(*g->proc_first));
	g->proc_n = calloc(p->n_processes, sizeof(*g->proc_n));
	g->pk_first = calloc((size_t)p->n_processes * OP_SAMPLE_KINDS, sizeof(*g->pk_first));
	g->pk_n = calloc((size_t)p->n_processes * OP_SAMPLE_KINDS, sizeof(*g->pk_n));
	fill = calloc((size_t)(p->n_samples > p->n_processes * OP_SAMPLE_KINDS
				       ? p->n_samples
				       : p->n_processes * OP_SAMPLE_KINDS) +
			      1,
		      sizeof(*fill));
	if (!g->order || !g->ts_off || !g->ts || !g->proc_first || !g->proc_n || !g->pk_first ||
	    !g->pk_n || !fill || (p->ev_val && !g->val)) {
		free(fill);
		op_grouped_free(g);
		return -ENOMEM;
	}

	/* counting sort of the samples by (process, kind), keeping first-seen order within one */
	for (i = 1; i < p->n_samples; i++)
		g->pk_n[p->samples[i].process * OP_SAMPLE_KINDS + p->samples[i].kind]++;
	for (pos = 0, i = OP_SAMPLE_KINDS; i < p->n_processes * OP_SAMPLE_KINDS; i++) {
		g->pk_first[i] = pos;
		pos += g->pk_n[i];
		g->proc_n[i / OP_SAMPLE_KINDS] += g->pk_n[i];
	}
	for (i = 1; i < p->n_processes; i++)
		g->proc_first[i] = g->pk_first[i * OP_SAMPLE_KINDS];
	memset(fill, 0, (size_t)p->n_processes * OP_SAMPLE_KINDS * sizeof(*fill));
	for (i = 1; i < p->n_samples; i++) {
		uint32_t pk = p->samples[i].process * OP_SAMPLE_KINDS + p->samples[i].kind;

		g->order[g->pk_first[pk] + fill[pk]++] = i;
	}

	/* counting sort of the events by sample, keeping arrival order */
	for (i = 0; i < p->n_events; i++)
		g->ts_off[p->ev_sample[i]]++;
	for (pos = 0, i = 0; i < p->n_samples; i++) {
		uint32_t c = g->ts_off[i];

		g->ts_off[i] = pos;
		pos += c;
	}
	g->ts_off[p->n_samples] = pos;
	memset(fill, 0, ((size_t)p->n_samples + 1) * sizeof(*fill));
	for (i = 0; i < p->n_events; i++) {
		uint32_t s = p->ev_sample[i];

		if (g->val)
			g->val[g->ts_off[s] + fill[s]] = p->ev_val[i];
		g->ts[g->ts_off[s] + fill[s]++] = p->ev_ts[i];
	}
	free(fill);
	return 0;
}

void op_grouped_free(struct op_grouped *g)
{
	free(g->order);
	free(g->ts_off);
	free(g->ts);
	free(g->proc_first);
	free(g->proc_n);
	free(g->val);
	free(g->pk_first);
	free(g->pk_n);
	memset(g, 0, sizeof(*g));
}

int op_remap_init(struct op_remap *r, uint32_t n_in)
{
	r->map = calloc(n_in ? n_in : 1, sizeof(*r->map));
	r->order = calloc(n_in ? n_in : 1, sizeof(*r->order));
	r->n = 1;
	if (!r->map || !r->order) {
		op_remap_free(r);
		return -ENOMEM;
	}
	return 0;
}

void op_remap_free(struct op_remap *r)
{
	free(r->map);
	free(r->order);
	r->map = r->order = NULL;
	r->n = 0;
}
