/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPython 3.8-3.13 frames (issue 15): detection of the interpreter in a process
 * (libpython3.X.so or an executable with the interpreter linked in), its layout per version
 * for bpf/runtime/python.bpf.h, and the naming of the frames it records (code object ->
 * qualified name, file, first line, line of the instruction). The decoders of what is read
 * from a process (line tables, strings) are pure and fuzzed (tests/fuzz/fuzz_python.c).
 */
#ifndef OTELPROF_RUNTIME_PYTHON_H
#define OTELPROF_RUNTIME_PYTHON_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/runtime.h"

struct op_runtime *op_python_runtime_new(const struct op_runtime_env *env);

/* Why Python frames were not named, counted (otelprof_stats python_*). */
struct op_python_stats {
	uint64_t processes;	  /* processes with a CPython we unwind, now */
	uint64_t unknown_version; /* processes with a CPython whose layout we do not know */
	uint64_t frames;	  /* eval-loop frames replaced by Python frames (BPF) */
	uint64_t no_proc, no_tstate, read_failed, chain_ended; /* eval-loop frames left native */
	uint64_t stale_code; /* frames whose code object was gone or changed at naming time */
};

void op_python_stats(const struct op_runtime *rt, struct op_python_stats *st);

/*
 * The source line of the instruction at byte offset @lasti of a code object of CPython
 * 3.@minor whose first line is @first, from its line table @tab (@len bytes): co_lnotab up
 * to 3.9, co_linetable in 3.10's format, and the location table of 3.11 and later. Returns
 * the line, or @first when the offset is before the code (a frame not started yet) or the
 * table has no line for it.
 */
int64_t op_py_line(int minor, const uint8_t *tab, size_t len, int64_t first, int64_t lasti);

/*
 * A str's characters (@n of them, @kind bytes each: 1 Latin-1, 2 UCS-2, 4 UCS-4, little
 * endian) as UTF-8 into @out (@cap bytes, NUL-terminated, cut at a character boundary; NUL,
 * lone surrogates and values past U+10FFFF become U+FFFD).
 * Returns the bytes written, or -1 when @kind is not 1, 2 or 4.
 */
int op_py_utf8(const uint8_t *chars, size_t n, int kind, char *out, size_t cap);

/* The version a Py_Version word (PY_VERSION_HEX) or a file name (libpython3.11.so.1.0,
 * python3.9) says, as major*100 + minor; -1 when it says none. */
int op_py_version_hex(uint32_t hex);
int op_py_version_name(const char *path);

/*
 * The name of the marker frame (@payload, @data) bpf/runtime/python.bpf.h records before the
 * first eval-loop frame its frame chain could not replace ("[python: frame chain changed
 * during the walk]", "[python: frame chain unreadable]"), or NULL when it is a Python frame.
 */
const char *op_py_marker_name(uint64_t payload, uint64_t data);

#endif
