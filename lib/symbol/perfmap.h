/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Perf maps: the /tmp/perf-PID.map files JITs write for profilers (Node --perf-basic-prof,
 * Python 3.12+ -X perf, Java perf-map agents and jcmd Compiler.perfmap, .NET
 * DOTNET_PerfMapEnabled, LuaJIT, Julia). One line per code range: "START SIZE NAME", START and
 * SIZE in hex (an optional 0x). perfmap.c reads a process's map through its root (the file is
 * in its mount namespace, named by its pid there), parses only what was appended since the last
 * read, and names addresses of anonymous executable memory from it; a later line for an address
 * wins (code space is reused).
 */
#ifndef OTELPROF_PERFMAP_H
#define OTELPROF_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds per process: lines kept, bytes of the file read, bytes of a name kept. */
#define OP_PERFMAP_MAX_ENTRIES (1u << 20)
#define OP_PERFMAP_MAX_BYTES   (128u << 20)
#define OP_PERFMAP_MAX_NAME    512

/* One process's map as parsed so far. */
struct op_perfmap {
	struct op_perfmap_ent {
		uint64_t start, end;
		uint32_t name; /* offset in names */
		uint32_t seq;  /* line number: the later line wins */
	} * ents;
	size_t n, cap;
	size_t sorted; /* ents[0 .. sorted) are in order */
	char *names;
	size_t names_len, names_cap;
	uint64_t bad_lines; /* lines that were not "START SIZE NAME" */
	uint64_t dropped;   /* lines past OP_PERFMAP_MAX_ENTRIES */
};

/*
 * Parse @len bytes of complete lines (a last line without its newline is parsed as well; the
 * caller hands over only complete ones) into @m. Returns 0 or -ENOMEM.
 */
int op_perfmap_parse(struct op_perfmap *m, const char *buf, size_t len);
/*
 * Jitdump files (the perf jitdump format: `node --perf-prof`, Java agents), jit-PID.dump, found
 * as a file the process maps. A header (magic "JiTD" in the writer's byte order, its size),
 * then records (id, size, timestamp): a code load (address, size, name, the code bytes) adds an
 * entry as a perf map line does, a code move names the new address as the old one; the others
 * are skipped. Malformed records count in bad_lines.
 */
struct op_jitdump {
	bool header; /* the file header was read */
	bool swap;   /* written in the other byte order */
	bool broken; /* not a jitdump, or a record size lost the sync: read no further */
};

/*
 * Parse @len bytes of a jitdump from where the last call ended into @m. Returns the bytes used
 * (complete records; a record still being written is left for the next call), -EINVAL when
 * the file is not a jitdump or a record's size is impossible (nothing further is read), or
 * -ENOMEM.
 */
long op_jitdump_parse(struct op_perfmap *m, struct op_jitdump *j, const uint8_t *buf, size_t len);

/* The name of @addr in @m (NULL if no line covers it); @start: where that code begins. */
const char *op_perfmap_find(struct op_perfmap *m, uint64_t addr, uint64_t *start);
void op_perfmap_clear(struct op_perfmap *m);

/* The perf maps of every process, read on demand. */
struct op_perfmaps;

struct op_perfmaps_stats {
	uint64_t processes; /* processes whose perf map is held */
	uint64_t entries;   /* lines held over all of them */
	uint64_t named;	    /* addresses named from a perf map */
	uint64_t bad_lines; /* lines skipped as malformed */
	uint64_t dropped;   /* lines past the per-process bound */
};

struct op_perfmaps *op_perfmaps_new(void);
void op_perfmaps_free(struct op_perfmaps *c);
/*
 * The name of @addr in process @pid's perf map, or NULL (no map, or no line for it). The map
 * is read on first use and re-read from where it ended when it grew (checked when an address
 * is not found, at most every 200 ms per process). The string lives until the next call.
 */
const char *op_perfmaps_lookup(struct op_perfmaps *c, int pid, uint64_t addr);
/* The process exited (and its samples are named): drop its map. */
void op_perfmaps_forget(struct op_perfmaps *c, int pid);
void op_perfmaps_stats(const struct op_perfmaps *c, struct op_perfmaps_stats *st);

#endif
