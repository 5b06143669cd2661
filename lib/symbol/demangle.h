/* SPDX-License-Identifier: Apache-2.0 */
/* C++ and Rust symbol names for display (demangle.c, through libiberty). */
#ifndef OTELPROF_DEMANGLE_H
#define OTELPROF_DEMANGLE_H

struct op_file;

/* Display name for a raw symbol (interned in @f), or @raw itself if not mangled. */
const char *op_file_demangle(struct op_file *f, const char *raw);
/* malloc()ed demangled name (no parameters), or NULL if @raw is not mangled. */
char *op_demangle(const char *raw);

#endif
