/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A decoded profile: what the readers (pprof, OTLP protobuf, OTLP/JSON lines, folded stacks)
 * produce, and what the writers, the HTML report and diff read. Independent of the builder
 * in profile.h, which is fed by the sampler and has a fixed shape (one sample type, known
 * labels); this one holds whatever a file carries: several sample types, any attributes.
 *
 * It is shaped like OTLP, the richer format: a resource (a set of attributes: process.pid,
 * service.name ...) per sample, sample attributes (thread.name, thread.id,
 * cpu.logical_number, process.context.label.KEY ...), links, timestamps. pprof labels are
 * mapped onto these names by the pprof reader and back by the pprof writer (semconv.c), so a
 * pprof -> OTLP -> pprof round trip gives the labels it started with.
 *
 * Every table interns its entries by content (an equal entry returns the existing index) and
 * keeps index 0 for the zero entry ("none"). Samples with an equal key (stack, resource,
 * attributes, link) are merged: values add up, timestamps are appended.
 */
#ifndef OTELPROF_PROFILE_DATA_H
#define OTELPROF_PROFILE_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Interning table: entries are byte strings in one pool; entry 0 is the empty one. */
struct op_itab {
	uint8_t *pool;
	size_t pool_len, pool_cap;
	uint64_t *off; /* entry i is pool[off[i] .. off[i] + len[i]) */
	uint32_t *len;
	uint32_t *hash;
	uint32_t n, cap;
	uint32_t *slots; /* entry index + 1; 0 = empty */
	uint32_t mask;
};

struct op_dmapping {
	uint64_t memory_start;
	uint64_t memory_limit;
	uint64_t file_offset;
	uint32_t filename; /* string indices */
	uint32_t build_id_gnu;
	uint32_t build_id_go;
	uint32_t build_id_htlhash;
	uint8_t has_functions;
	uint8_t has_filenames;
	uint8_t has_line_numbers;
	uint8_t has_inline_frames;
	uint32_t pad;
};

struct op_dfunction {
	uint32_t name; /* string indices */
	uint32_t system_name;
	uint32_t filename;
	uint32_t pad;
	int64_t start_line;
};

struct op_dline {
	uint32_t function;
	uint32_t pad;
	int64_t line;
	int64_t column;
};

/* A location entry is this header followed by n_lines struct op_dline. */
struct op_dlocation {
	uint64_t address;
	uint32_t mapping;
	uint32_t frame_type; /* string index of profile.frame.type, 0 = not known */
	uint32_t is_folded;
	uint32_t n_lines; /* innermost inlined function first */
};

enum op_dval_kind {
	OP_DVAL_STR = 1,
	OP_DVAL_INT = 2,
	OP_DVAL_BOOL = 3,
	OP_DVAL_DOUBLE = 4,
};

struct op_dattr {
	uint32_t key;  /* string index */
	uint32_t kind; /* enum op_dval_kind */
	uint32_t str;  /* OP_DVAL_STR: string index */
	uint32_t unit; /* string index, 0 = none */
	int64_t num;   /* OP_DVAL_INT, OP_DVAL_BOOL */
	double dbl;    /* OP_DVAL_DOUBLE */
};

struct op_dlink {
	uint8_t trace_id[16];
	uint8_t span_id[8];
};

struct op_dsample {
	uint32_t stack;	   /* stacks: a list of location indices, leaf first */
	uint32_t resource; /* sets: resource attributes */
	uint32_t attrs;	   /* sets: sample attributes */
	uint32_t link;	   /* links, 0 = none */
};

struct op_dtype {
	uint32_t type; /* string indices */
	uint32_t unit;
};

/* pprof fields OTLP has no place for, kept for pprof -> pprof. */
struct op_dpprof {
	uint32_t drop_frames, keep_frames, doc_url, default_sample_type; /* string indices */
	uint32_t *comments;
	uint32_t n_comments;
};

struct op_data {
	struct op_itab strs;	/* NUL-terminated strings; 0 = "" */
	struct op_itab maps;	/* struct op_dmapping */
	struct op_itab funcs;	/* struct op_dfunction */
	struct op_itab locs;	/* struct op_dlocation + lines */
	struct op_itab stacks;	/* uint32_t location indices */
	struct op_itab attrs;	/* struct op_dattr */
	struct op_itab sets;	/* uint32_t attribute indices, sorted */
	struct op_itab links;	/* struct op_dlink */
	struct op_itab samples; /* struct op_dsample */

	struct op_dtype *types; /* the values of a sample, in this order */
	uint32_t n_types;
	int64_t *values; /* samples.n * n_types */
	size_t cap_values;

	/* one entry per timestamp: which sample, when */
	uint32_t *ev_sample;
	uint64_t *ev_ts;
	size_t n_events, cap_events;

	struct op_dtype period_type;
	int64_t period;
	uint64_t time_ns;     /* start, unix ns; 0 = not known */
	uint64_t duration_ns; /* 0 = not known */
	uint32_t scope_name, scope_version;
	struct op_dpprof pprof;
};

/* Limits a reader enforces on input before it costs memory. */
#define OP_DATA_MAX_TYPES 64

/* The interning tables, for other indexes of content (the report's call tree). */
int op_itab_init(struct op_itab *t);
void op_itab_free(struct op_itab *t);
/* Index of the entry equal to key[0..len), added if new (*added); UINT32_MAX on ENOMEM. */
uint32_t op_itab_intern(struct op_itab *t, const void *key, size_t len, bool *added);

struct op_data *op_data_new(void);
void op_data_free(struct op_data *d);

/* Interning. Each returns the entry index or UINT32_MAX on ENOMEM. */
uint32_t op_data_str(struct op_data *d, const char *s);
uint32_t op_data_strn(struct op_data *d, const char *s, size_t len);
/* Index of the string @s if the profile holds it, else UINT32_MAX (nothing is added). */
uint32_t op_data_lookup_str(const struct op_data *d, const char *s);
uint32_t op_data_mapping(struct op_data *d, const struct op_dmapping *m);
uint32_t op_data_function(struct op_data *d, const struct op_dfunction *f);
uint32_t op_data_location(struct op_data *d, const struct op_dlocation *l,
			  const struct op_dline *lines);
uint32_t op_data_stack(struct op_data *d, const uint32_t *locs, size_t n);
uint32_t op_data_attr(struct op_data *d, const struct op_dattr *a);
uint32_t op_data_attr_str(struct op_data *d, const char *key, const char *value);
uint32_t op_data_attr_int(struct op_data *d, const char *key, int64_t value, const char *unit);
/* @attrs is sorted in place (sets compare as sets). */
uint32_t op_data_set(struct op_data *d, uint32_t *attrs, size_t n);
uint32_t op_data_link(struct op_data *d, const struct op_dlink *l);

/* Index of the sample type (type, unit), added if new; UINT32_MAX on ENOMEM or too many. */
uint32_t op_data_type(struct op_data *d, const char *type, const char *unit);

/*
 * Add @value of type @type to the sample with key @s (merged with an equal one), and its
 * @n_ts timestamps. Returns the sample index, UINT32_MAX on ENOMEM.
 */
uint32_t op_data_add(struct op_data *d, const struct op_dsample *s, uint32_t type, int64_t value,
		     const uint64_t *ts, size_t n_ts);

/* Accessors: pointers into the pools, valid until the next interning call. */
static inline const char *op_data_s(const struct op_data *d, uint32_t i)
{
	return i < d->strs.n ? (const char *)d->strs.pool + d->strs.off[i] : "";
}

static inline const void *op_itab_get(const struct op_itab *t, uint32_t i, uint32_t *len)
{
	if (len)
		*len = t->len[i];
	return t->pool + t->off[i];
}

static inline const struct op_dmapping *op_data_map(const struct op_data *d, uint32_t i)
{
	static const struct op_dmapping zero;

	return i && i < d->maps.n ? op_itab_get(&d->maps, i, NULL) : &zero;
}

static inline const struct op_dfunction *op_data_func(const struct op_data *d, uint32_t i)
{
	static const struct op_dfunction zero;

	return i && i < d->funcs.n ? op_itab_get(&d->funcs, i, NULL) : &zero;
}

static inline const struct op_dlocation *op_data_loc(const struct op_data *d, uint32_t i)
{
	static const struct op_dlocation zero;

	return i && i < d->locs.n ? op_itab_get(&d->locs, i, NULL) : &zero;
}

static inline const struct op_dline *op_dloc_lines(const struct op_dlocation *l)
{
	return (const struct op_dline *)(l + 1);
}

static inline const uint32_t *op_data_list(const struct op_itab *t, uint32_t i, uint32_t *n)
{
	const void *p = op_itab_get(t, i, n);

	*n /= sizeof(uint32_t);
	return p;
}

static inline const struct op_dattr *op_data_at(const struct op_data *d, uint32_t i)
{
	return op_itab_get(&d->attrs, i, NULL);
}

static inline const struct op_dsample *op_data_sample(const struct op_data *d, uint32_t i)
{
	return op_itab_get(&d->samples, i, NULL);
}

static inline int64_t op_data_value(const struct op_data *d, uint32_t sample, uint32_t type)
{
	return d->values[(size_t)sample * d->n_types + type];
}

/* The attribute of @key in set @set, or NULL. */
const struct op_dattr *op_data_find(const struct op_data *d, uint32_t set, const char *key);

/* Sum of the values of @type over all samples. */
int64_t op_data_total(const struct op_data *d, uint32_t type);

/* Index of the type named @type (e.g. "cpu"), else UINT32_MAX. */
uint32_t op_data_type_named(const struct op_data *d, const char *type);

#endif
