// SPDX-License-Identifier: Apache-2.0
/* Perf maps (/tmp/perf-PID.map): see perfmap.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbol/perfmap.h"
#include "util/hex.h"

/* Entries looked at below the one found, for an older, longer range covering the address. */
#define FIND_BACK  32
#define RECHECK_NS (200ull * 1000000ull)

/* A hex number at *@p (optional 0x), at most 16 digits; advances *@p. False when none. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end && op_hexval(*s) >= 0; s++, digits++) {
		if (digits == 16)
			return false;
		v = v << 4 | (uint64_t)op_hexval(*s);
	}
	if (!digits)
		return false;
	*p = s;
	*out = v;
	return true;
}

static int add_name(struct op_perfmap *m, const char *s, size_t len, uint32_t *off)
{
	if (len > OP_PERFMAP_MAX_NAME)
		len = OP_PERFMAP_MAX_NAME;
	if (m->names_len + len + 1 > UINT32_MAX)
		return -ENOMEM;
	if (m->names_len + len + 1 > m->names_cap) {
		size_t cap = m->names_cap ? m->names_cap * 2 : 4096;
		char *n;

		while (cap < m->names_len + len + 1)
			cap *= 2;
		n = realloc(m->names, cap);
		if (!n)
			return -ENOMEM;
		m->names = n;
		m->names_cap = cap;
	}
	memcpy(m->names + m->names_len, s, len);
	m->names[m->names_len + len] = '\0';
	*off = (uint32_t)m->names_len;
	m->names_len += len + 1;
	return 0;
}

/* Code [@start, @start + @size) named @s (@len bytes): the newest entry. */
static int add_ent(struct op_perfmap *m, uint64_t start, uint64_t size, const char *s, size_t len)
{
	uint32_t name;
	int err;

	if (m->n >= OP_PERFMAP_MAX_ENTRIES) {
		m->dropped++;
		return 0;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct op_perfmap_ent *e = realloc(m->ents, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		m->ents = e;
		m->cap = cap;
	}
	err = add_name(m, s, len, &name);
	if (err)
		return err;
	m->ents[m->n] = (struct op_perfmap_ent){ start, start + size, name, (uint32_t)m->n };
	m->n++;
	return 0;
}

static int parse_line(struct op_perfmap *m, const char *s, const char *end)
{
	uint64_t start, size;

	while (end > s && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (s == end)
		return 0;
	if (!parse_hex(&s, end, &start) || s == end || (*s != ' ' && *s != '\t'))
		goto bad;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (!parse_hex(&s, end, &size) || s == end || (*s != ' ' && *s != '\t'))
		goto bad;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == end || !size || start + size < start)
		goto bad;
	return add_ent(m, start, size, s, (size_t)(end - s));
bad:
	m->bad_lines++;
	return 0;
}

int op_perfmap_parse(struct op_perfmap *m, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		int err = parse_line(m, p, le);

		if (err)
			return err;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/* ------------------------------------------------------------------ jitdump */

#define JD_MAGIC      0x4A695444u
#define JD_HEADER     40 /* magic version total_size elf_mach pad1 pid (u32), timestamp flags (u64) */
#define JD_RECORD     16 /* id total_size (u32), timestamp (u64) */
#define JD_LOAD	      0
#define JD_MOVE	      1
#define JD_LOAD_FIXED 40 /* pid tid (u32), vma code_addr code_size code_index (u64) */
#define JD_MOVE_FIXED 48 /* pid tid (u32), vma old_code_addr new_code_addr size index (u64) */
#define JD_MAX_HEADER 4096

static uint32_t jd_u32(const struct op_jitdump *j, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return j->swap ? __builtin_bswap32(v) : v;
}

static uint64_t jd_u64(const struct op_jitdump *j, const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return j->swap ? __builtin_bswap64(v) : v;
}

static int jd_load(struct op_perfmap *m, const struct op_jitdump *j, const uint8_t *b, size_t n)
{
	uint64_t addr, size;
	const uint8_t *name, *nul;

	if (n < JD_LOAD_FIXED + 1)
		goto bad;
	addr = jd_u64(j, b + 16);
	size = jd_u64(j, b + 24);
	name = b + JD_LOAD_FIXED;
	nul = memchr(name, '\0', n - JD_LOAD_FIXED);
	/* the name ends inside the record, and the code bytes follow it there */
	if (!nul || nul == name || !size || addr + size < addr ||
	    size > (uint64_t)(b + n - (nul + 1)))
		goto bad;
	return add_ent(m, addr, size, (const char *)name, (size_t)(nul - name));
bad:
	m->bad_lines++;
	return 0;
}

static int jd_move(struct op_perfmap *m, const struct op_jitdump *j, const uint8_t *b, size_t n)
{
	char name[OP_PERFMAP_MAX_NAME + 1];
	uint64_t old, to, size, start;
	const char *s;

	if (n < JD_MOVE_FIXED)
		goto bad;
	old = jd_u64(j, b + 16);
	to = jd_u64(j, b + 24);
	size = jd_u64(j, b + 32);
	if (!size || to + size < to)
		goto bad;
	s = op_perfmap_find(m, old, &start);
	if (!s || start != old) /* code we never saw loaded: nothing to name it by */
		goto bad;
	snprintf(name, sizeof(name), "%s", s); /* add_ent may move the names */
	return add_ent(m, to, size, name, strlen(name));
bad:
	m->bad_lines++;
	return 0;
}

long op_jitdump_parse(struct op_perfmap *m, struct op_jitdump *j, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	if (j->broken)
		return -EINVAL;
	if (!j->header) {
		uint32_t magic, hsize;

		if (len < JD_HEADER)
			return 0;
		memcpy(&magic, buf, sizeof(magic));
		if (magic == JD_MAGIC)
			j->swap = false;
		else if (__builtin_bswap32(magic) == JD_MAGIC)
			j->swap = true;
		else
			goto broken;
		hsize = jd_u32(j, buf + 8);
		if (hsize < JD_HEADER || hsize > JD_MAX_HEADER)
			goto broken;
		if (len < hsize)
			return 0;
		j->header = true;
		off = hsize;
	}
	while (len - off >= JD_RECORD) {
		uint32_t id = jd_u32(j, buf + off), size = jd_u32(j, buf + off + 4);
		const uint8_t *body = buf + off + JD_RECORD;
		int err = 0;

		/* a record shorter than its header, or longer than a file we read: lost sync */
		if (size < JD_RECORD || size > OP_PERFMAP_MAX_BYTES)
			goto broken;
		if (size > len - off)
			break; /* still being written */
		if (id == JD_LOAD)
			err = jd_load(m, j, body, size - JD_RECORD);
		else if (id == JD_MOVE)
			err = jd_move(m, j, body, size - JD_RECORD);
		/* debug info, close, unwinding info and ids to come: skipped by their size */
		if (err)
			return err;
		off += size;
	}
	return (long)off;
broken:
	j->broken = true;
	m->bad_lines++;
	return -EINVAL;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct op_perfmap_ent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const char *op_perfmap_find(struct op_perfmap *m, uint64_t addr, uint64_t *start)
{
	size_t lo = 0, hi, best = SIZE_MAX;

	if (m->sorted != m->n) {
		qsort(m->ents, m->n, sizeof(m->ents[0]), ent_cmp);
		m->sorted = m->n;
	}
	hi = m->n;
	/* the first entry starting after addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->ents[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* of the entries covering addr among the last few starting at or before it, the newest */
	for (size_t i = lo, k = 0; i > 0 && k < FIND_BACK; i--, k++) {
		const struct op_perfmap_ent *e = &m->ents[i - 1];

		if (addr < e->end && (best == SIZE_MAX || e->seq > m->ents[best].seq))
			best = i - 1;
	}
	if (best == SIZE_MAX)
		return NULL;
	if (start)
		*start = m->ents[best].start;
	return m->names + m->ents[best].name;
}

void op_perfmap_clear(struct op_perfmap *m)
{
	free(m->ents);
	free(m->names);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------------ per process */

struct pm_proc {
	struct pm_proc *next;
	int pid;
	bool missing;	   /* no map when last checked */
	uint64_t checked;  /* CLOCK_MONOTONIC ns of the last stat */
	uint64_t consumed; /* bytes of the file parsed (complete lines) */
	dev_t dev;
	ino_t ino;
	struct op_perfmap map;
	/* its jitdump, feeding the same map */
	char *jd_path;	      /* as the process maps it (in its mount namespace) */
	uint64_t jd_consumed; /* bytes of it parsed (header and complete records) */
	dev_t jd_dev;
	ino_t jd_ino;
	struct op_jitdump jd;
};

struct op_perfmaps {
	struct pm_proc *procs;
	uint64_t named;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct op_perfmaps *op_perfmaps_new(void)
{
	return calloc(1, sizeof(struct op_perfmaps));
}

void op_perfmaps_free(struct op_perfmaps *c)
{
	if (!c)
		return;
	while (c->procs) {
		struct pm_proc *p = c->procs;

		c->procs = p->next;
		op_perfmap_clear(&p->map);
		free(p->jd_path);
		free(p);
	}
	free(c);
}

/* The process's pid in its own pid namespace (the last NSpid field), or @pid. */
static int ns_pid(int pid)
{
	char path[64], line[256];
	int ns = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "NSpid:", 6)) {
			char *s = line + 6, *e;

			for (;;) {
				long v = strtol(s, &e, 10);

				if (e == s)
					break;
				ns = (int)v;
				s = e;
			}
			break;
		}
	}
	fclose(f);
	return ns;
}

/* Open the map: through the process's root (its mount namespace), else the host's /tmp. */
static int open_map(int pid)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map", pid, ns_pid(pid));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT)
		return fd;
	/* exited (its root is gone) or the same namespace: the host's file by host pid */
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static void read_perfmap(struct pm_proc *p);

/* The jitdump @pid maps (a file named jit-N.dump), as its maps name it; NULL if none. */
static char *find_jitdump(int pid)
{
	char path[64], line[4096], *found = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/'), *base, *nl = strchr(line, '\n');
		size_t n;

		if (!file || !nl)
			continue;
		*nl = '\0';
		base = strrchr(file, '/') + 1;
		n = strlen(base);
		if (!strncmp(base, "jit-", 4) && n > 9 && !strcmp(base + n - 5, ".dump"))
			found = strdup(file);
	}
	fclose(f);
	return found;
}

/* Parse what was appended to @p's jitdump since the last read. */
static void read_jitdump(struct pm_proc *p)
{
	char path[4200];
	struct stat st;
	uint8_t *buf;
	ssize_t got;
	size_t len;
	long used;
	int fd;

	if (!p->jd_path && !(p->jd_path = find_jitdump(p->pid)))
		return;
	snprintf(path, sizeof(path), "/proc/%d/root%s", p->pid, p->jd_path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	if ((p->jd_consumed || p->jd.broken) &&
	    (st.st_dev != p->jd_dev || st.st_ino != p->jd_ino)) {
		p->jd_consumed = 0; /* another file: its entries are newer than the old ones */
		p->jd = (struct op_jitdump){ 0 };
	}
	p->jd_dev = st.st_dev;
	p->jd_ino = st.st_ino;
	if (p->jd.broken || (uint64_t)st.st_size <= p->jd_consumed ||
	    p->jd_consumed >= OP_PERFMAP_MAX_BYTES) {
		close(fd);
		return;
	}
	len = (size_t)st.st_size - p->jd_consumed;
	if (len > OP_PERFMAP_MAX_BYTES - p->jd_consumed)
		len = OP_PERFMAP_MAX_BYTES - p->jd_consumed;
	buf = malloc(len);
	if (!buf) {
		close(fd);
		return;
	}
	got = pread(fd, buf, len, (off_t)p->jd_consumed);
	close(fd);
	if (got > 0) {
		used = op_jitdump_parse(&p->map, &p->jd, buf, (size_t)got);
		if (used > 0)
			p->jd_consumed += (uint64_t)used;
	}
	free(buf);
}

/* Parse what was appended to @p's map and jitdump since the last read. */
static void read_more(struct pm_proc *p)
{
	read_perfmap(p);
	read_jitdump(p);
}

/* Parse what was appended to @p's perf map since the last read. */
static void read_perfmap(struct pm_proc *p)
{
	struct stat st;
	char *buf;
	ssize_t got;
	size_t len, keep;
	int fd = open_map(p->pid);

	p->checked = mono_ns();
	if (fd < 0) {
		p->missing = true;
		return;
	}
	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	if (!p->missing && p->consumed && (st.st_dev != p->dev || st.st_ino != p->ino)) {
		/* another file now (the pid was reused, or the JIT started over) */
		op_perfmap_clear(&p->map);
		p->consumed = 0;
		p->jd_consumed = 0;
		p->jd = (struct op_jitdump){ 0 };
	}
	p->missing = false;
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	if ((uint64_t)st.st_size <= p->consumed || p->consumed >= OP_PERFMAP_MAX_BYTES) {
		close(fd);
		return;
	}
	len = (size_t)st.st_size - p->consumed;
	if (len > OP_PERFMAP_MAX_BYTES - p->consumed)
		len = OP_PERFMAP_MAX_BYTES - p->consumed;
	buf = malloc(len);
	if (!buf) {
		close(fd);
		return;
	}
	got = pread(fd, buf, len, (off_t)p->consumed);
	close(fd);
	if (got <= 0) {
		free(buf);
		return;
	}
	/* complete lines only: a line being written is parsed next time */
	for (keep = (size_t)got; keep > 0 && buf[keep - 1] != '\n'; keep--)
		;
	if (keep && op_perfmap_parse(&p->map, buf, keep) == 0)
		p->consumed += keep;
	free(buf);
}

const char *op_perfmaps_lookup(struct op_perfmaps *c, int pid, uint64_t addr)
{
	struct pm_proc *p;
	const char *name;

	if (!c)
		return NULL;
	for (p = c->procs; p && p->pid != pid; p = p->next)
		;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->pid = pid;
		p->next = c->procs;
		c->procs = p;
		read_more(p);
	}
	name = op_perfmap_find(&p->map, addr, NULL);
	if (!name && mono_ns() - p->checked >= RECHECK_NS) {
		read_more(p);
		name = op_perfmap_find(&p->map, addr, NULL);
	}
	if (name)
		c->named++;
	return name;
}

void op_perfmaps_forget(struct op_perfmaps *c, int pid)
{
	for (struct pm_proc **pp = c ? &c->procs : NULL; pp && *pp; pp = &(*pp)->next) {
		if ((*pp)->pid == pid) {
			struct pm_proc *p = *pp;

			*pp = p->next;
			op_perfmap_clear(&p->map);
			free(p->jd_path);
			free(p);
			return;
		}
	}
}

void op_perfmaps_stats(const struct op_perfmaps *c, struct op_perfmaps_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!c)
		return;
	st->named = c->named;
	for (const struct pm_proc *p = c->procs; p; p = p->next) {
		if (p->missing && !p->map.n)
			continue;
		st->processes++;
		st->entries += p->map.n;
		st->bad_lines += p->map.bad_lines;
		st->dropped += p->map.dropped;
	}
}
