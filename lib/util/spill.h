/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory for large tables that are written once and read now and then (inflated debug
 * sections, kernel symbols): an unlinked file of its own on a disk file system, mapped
 * shared. Its pages are page cache, clean once written back, and op_spill_release() takes
 * them out of the agent's resident memory between uses; the next read faults in only what
 * it touches. Where no such file can be made, callers keep the table in ordinary memory.
 *
 * The directory: OTELPROF_SPILL_DIR, default /var/tmp; "" means none. A directory on tmpfs
 * or ramfs is not used: it would move the memory, not free it.
 */
#ifndef OTELPROF_SPILL_H
#define OTELPROF_SPILL_H

#include <stddef.h>

/* @size bytes, zeroed, blocks reserved on disk; NULL: no spill file (use malloc). */
void *op_spill_alloc(size_t size);
void op_spill_free(void *p, size_t size);
/* Drop @p's pages from resident memory; their contents stay (read back on use). */
void op_spill_release(void *p, size_t size);

#endif
