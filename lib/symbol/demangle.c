// SPDX-License-Identifier: Apache-2.0
/*
 * Display names for mangled symbols: Itanium C++ (_Z...) and Rust (legacy _ZN...h<hash>E and
 * v0 _R...) through libiberty's demangler. Parameters are left out, as profilers usually show
 * them (`ns::Class<T>::method`); the raw symbol stays available as system_name.
 */
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "binary/file.h"
#include "symbol/demangle.h"

char *op_demangle(const char *raw)
{
	char *d;

	if (!raw || raw[0] != '_' || (raw[1] != 'Z' && raw[1] != 'R'))
		return NULL;
	d = cplus_demangle(raw, DMGL_AUTO | DMGL_ANSI);
	if (d && !*d) {
		free(d);
		return NULL;
	}
	return d;
}

const char *op_file_demangle(struct op_file *f, const char *raw)
{
	const char *out;
	char *d;

	d = op_demangle(raw);
	if (!d)
		return raw;
	out = op_file_intern(f, d);
	free(d);
	return out ? out : raw;
}
