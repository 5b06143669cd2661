/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process tracker: per pid, its executable, container id and executable mappings, read from
 * /proc/PID on first sight, refreshed on exec or on a PC outside every known mapping
 * (rate-limited), and dropped some time after exit so late samples still resolve.
 */
#ifndef OTELPROF_PROC_H
#define OTELPROF_PROC_H

#include <stdbool.h>
#include <stdint.h>

#include "sample/environ.h"

struct op_file;
struct op_filecache;

/* One line of /proc/PID/maps. */
struct op_maps_entry {
	uint64_t start, end, offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	bool readable, writable, executable, private_;
	bool deleted;	 /* the kernel's " (deleted)" suffix was present (and is removed) */
	char path[4096]; /* "" for anonymous; "[vdso]", "[stack]" etc. kept */
};

/* Parse one line (without or with its newline). Returns 0 or -EINVAL. Pure; fuzzed. */
int op_parse_maps_line(const char *line, struct op_maps_entry *e);

/* Container id (64 hex digits) from the text of /proc/PID/cgroup; malloc()ed, or NULL. */
char *op_container_id_from_cgroup(const char *text);

struct op_vma {
	uint64_t start, end, offset;
	char *path;	      /* NULL for anonymous executable memory */
	bool deleted;	      /* the file was unlinked: only map_files can open it */
	struct op_file *file; /* opened lazily by op_proc_vma_file(); may stay NULL */
	bool file_tried;
	uint64_t dev, ino; /* the mapped file's st_dev and inode (/proc/PID/maps), 0: unknown */
};

struct op_proc {
	int pid;
	char comm[16];
	char *exe_path;		     /* readlink /proc/PID/exe, or NULL */
	char *exe_name;		     /* basename of exe_path, else comm */
	char *container_id;	     /* from /proc/PID/cgroup, or NULL */
	struct op_resource resource; /* OTEL_SERVICE_NAME etc. (op_proctab_read_environ) */
	struct op_vma *vmas;	     /* executable mappings, sorted by start */
	size_t n_vmas;
	uint64_t loaded_ns; /* CLOCK_MONOTONIC of the last read */
	uint64_t exited_ns; /* 0 while alive */
};

struct op_proctab;

struct op_proctab *op_proctab_new(struct op_filecache *files);
/* Read each process's OpenTelemetry resource attributes from its environment (default off). */
void op_proctab_read_environ(struct op_proctab *t, bool on);
/* Also add these environment variables (comma-separated names) as resource attributes. */
int op_proctab_include_env_vars(struct op_proctab *t, const char *names);
/* Read @pid's environment as the table is configured to (nothing: @out empty). 0, -errno. */
int op_proctab_resource_read(const struct op_proctab *t, int pid, struct op_resource *out);
void op_proctab_free(struct op_proctab *t);

/* The tracked process @pid, read from /proc on first sight; NULL if it never could be read. */
struct op_proc *op_proctab_get(struct op_proctab *t, int pid);
/* Re-read /proc/PID/maps (exec, dlopen); at most once per 100 ms per pid unless @force. */
int op_proctab_refresh(struct op_proctab *t, int pid, bool force);
/* Mark exited; the entry stays until op_proctab_gc() runs after @grace_ns. */
void op_proctab_exited(struct op_proctab *t, int pid, uint64_t now_ns);
void op_proctab_gc(struct op_proctab *t, uint64_t now_ns, uint64_t grace_ns);
size_t op_proctab_count(const struct op_proctab *t);

/* Executable mapping containing @addr, or NULL. */
struct op_vma *op_proc_find_vma(struct op_proc *p, uint64_t addr);
/* Open the vma's file through the file cache (once); NULL when unreadable. */
struct op_file *op_proc_vma_file(struct op_proctab *t, struct op_proc *p, struct op_vma *v);

#endif
