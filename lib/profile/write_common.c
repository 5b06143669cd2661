// SPDX-License-Identifier: Apache-2.0
/* What the pprof and OTLP writers share: index remapping, the derived CPU column, flags. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/read_internal.h"

int op_wmap_init(struct op_wmap *m, uint32_t n_in)
{
	m->map = calloc(n_in + 1, sizeof(*m->map));
	m->order = calloc(n_in + 1, sizeof(*m->order));
	m->n = 1;
	return m->map && m->order ? 0 : -ENOMEM;
}

void op_wmap_free(struct op_wmap *m)
{
	free(m->map);
	free(m->order);
	memset(m, 0, sizeof(*m));
}

static bool named(const struct op_data *d, uint32_t s, const char *name)
{
	return !strcmp(op_data_s(d, s), name);
}

bool op_pprof_adds_period_column(const struct op_data *d)
{
	return d->n_types == 1 && d->period > 0 && named(d, d->types[0].type, "samples") &&
	       named(d, d->types[0].unit, "count") && d->period_type.type &&
	       !(d->period_type.type == d->types[0].type &&
		 d->period_type.unit == d->types[0].unit);
}

bool op_type_is_derived(const struct op_data *d, uint32_t t)
{
	if (t == 0 || d->period <= 0 || d->types[t].type != d->period_type.type ||
	    d->types[t].unit != d->period_type.unit || !named(d, d->types[0].type, "samples"))
		return false;
	for (uint32_t s = 1; s < d->samples.n; s++) {
		int64_t v;

		if (__builtin_mul_overflow(op_data_value(d, s, 0), d->period, &v) ||
		    v != op_data_value(d, s, t))
			return false;
	}
	return true;
}

void op_mapping_flags_from_frames(const struct op_data *d, uint8_t (*flags)[4])
{
	memset(flags, 0, (size_t)d->maps.n * sizeof(*flags));
	for (uint32_t i = 1; i < d->locs.n; i++) {
		const struct op_dlocation *l = op_data_loc(d, i);
		const struct op_dline *ln = op_dloc_lines(l);

		if (!l->mapping)
			continue;
		for (uint32_t j = 0; j < l->n_lines; j++) {
			const struct op_dfunction *f = op_data_func(d, ln[j].function);

			flags[l->mapping][0] |= f->name != 0;
			flags[l->mapping][1] |= f->filename != 0;
			flags[l->mapping][2] |= ln[j].line != 0;
		}
		flags[l->mapping][3] |= l->n_lines > 1;
	}
}

int op_group_timestamps(const struct op_data *d, uint32_t **offp, uint64_t **tsp)
{
	uint32_t *off = calloc((size_t)d->samples.n + 1, sizeof(*off)), *pos;
	uint64_t *ts = malloc((d->n_events ? d->n_events : 1) * sizeof(*ts));
	size_t i;

	pos = calloc((size_t)d->samples.n + 1, sizeof(*pos));
	if (!off || !ts || !pos) {
		free(off);
		free(ts);
		free(pos);
		return -ENOMEM;
	}
	for (i = 0; i < d->n_events; i++)
		off[d->ev_sample[i] + 1]++;
	for (i = 1; i <= d->samples.n; i++)
		off[i] += off[i - 1];
	memcpy(pos, off, (size_t)d->samples.n * sizeof(*pos));
	for (i = 0; i < d->n_events; i++)
		ts[pos[d->ev_sample[i]]++] = d->ev_ts[i];
	free(pos);
	*offp = off;
	*tsp = ts;
	return 0;
}
