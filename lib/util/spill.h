/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory for large tables that are written once and read now and then (inflated debug
 * sections, kernel symbols): an unlinked file of its own on a disk file system, written with
 * pwritev() and mapped shared, read-only. Written through the mapping instead, every page
 * written was resident until released: kallsyms' 4 MiB, made while the BPF programs load, were
 * in the start's peak. Its pages are page cache, clean once written back, and op_spill_release()
 * takes them out of the agent's resident memory between uses; the next read faults in only what it
 * touches. Where no such file can be made, callers keep the table in ordinary memory.
 *
 * The directory: OTELPROF_SPILL_DIR, default /var/tmp; "" means none. A directory on tmpfs
 * or ramfs is not used: it would move the memory, not free it.
 */
#ifndef OTELPROF_SPILL_H
#define OTELPROF_SPILL_H

#include <stdbool.h>
#include <stddef.h>

struct iovec;

/* Whether spill files can be made (the directory was accepted). */
bool op_spill_available(void);
/*
 * A read-only spill mapping of the @n (at most 8) buffers of @iov, one after another, its
 * length in *@size; NULL: no spill file or a write failed (a full disk): the caller keeps its
 * copy. None of it is resident yet.
 */
void *op_spill_copy(const struct iovec *iov, int n, size_t *size);
void op_spill_free(void *p, size_t size);
/* Drop @p's pages from resident memory; their contents stay (read back on use). */
void op_spill_release(void *p, size_t size);

#endif
