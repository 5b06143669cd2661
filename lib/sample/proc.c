// SPDX-License-Identifier: Apache-2.0
/*
 * The process tracker: per pid its executable, container id and executable mappings, read from
 * /proc/PID. A process can exit while it is being read: every read that fails leaves either the
 * previous state or no entry, never a half-built one.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "util/log.h"
#include "sample/proc.h"
#include "binary/filecache.h"

#define REFRESH_MIN_NS (100ull * 1000 * 1000)

struct proc_entry {
	struct op_proc p;
	struct proc_entry *next;
};

struct op_proctab {
	struct op_filecache *files;
	struct proc_entry **buckets;
	size_t nbuckets;
	size_t n;
	bool environ;	/* read OpenTelemetry resource attributes from each environment */
	char *env_vars; /* variables added as resource attributes (include_env_vars); or NULL */
};

static uint64_t now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- maps lines */

static const char *parse_hex(const char *p, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0;

	for (;; p++, n++) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		if (n >= 16)
			return NULL;
		x = x << 4 | (uint64_t)d;
	}
	if (!n)
		return NULL;
	*v = x;
	return p;
}

static const char *parse_dec(const char *p, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0;

	for (; *p >= '0' && *p <= '9'; p++, n++) {
		if (x > (UINT64_MAX - 9) / 10)
			return NULL;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	if (!n)
		return NULL;
	*v = x;
	return p;
}

int op_parse_maps_line(const char *line, struct op_maps_entry *e)
{
	static const char deleted[] = " (deleted)";
	const char *p = line;
	uint64_t maj, min;
	size_t len;

	if (!line || !e)
		return -EINVAL;
	memset(e, 0, offsetof(struct op_maps_entry, path));
	e->path[0] = '\0';
	if (!(p = parse_hex(p, &e->start)) || *p++ != '-')
		return -EINVAL;
	if (!(p = parse_hex(p, &e->end)) || *p++ != ' ' || e->end < e->start)
		return -EINVAL;
	if (!p[0] || !p[1] || !p[2] || !p[3] || p[4] != ' ')
		return -EINVAL;
	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's'))
		return -EINVAL;
	e->readable = p[0] == 'r';
	e->writable = p[1] == 'w';
	e->executable = p[2] == 'x';
	e->private_ = p[3] == 'p';
	p += 5;
	if (!(p = parse_hex(p, &e->offset)) || *p++ != ' ')
		return -EINVAL;
	if (!(p = parse_hex(p, &maj)) || *p++ != ':')
		return -EINVAL;
	if (!(p = parse_hex(p, &min)) || maj > UINT32_MAX || min > UINT32_MAX)
		return -EINVAL;
	e->dev_major = (uint32_t)maj;
	e->dev_minor = (uint32_t)min;
	if (*p++ != ' ')
		return -EINVAL;
	if (!(p = parse_dec(p, &e->inode)))
		return -EINVAL;
	if (*p != ' ' && *p != '\n' && *p != '\0')
		return -EINVAL;
	while (*p == ' ')
		p++;
	/* the path is the rest of the line: it may contain spaces */
	len = strcspn(p, "\n");
	if (len >= sizeof(e->path))
		return -EINVAL;
	if (len > sizeof(deleted) - 1 && e->inode &&
	    !memcmp(p + len - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1)) {
		e->deleted = true;
		len -= sizeof(deleted) - 1;
	}
	memcpy(e->path, p, len);
	e->path[len] = '\0';
	return 0;
}

/* ---------------------------------------------------------------- /proc readers */

/* Whole file into a malloc()ed, NUL-terminated buffer; NULL with errno on failure. */
static char *read_file(const char *path, size_t *out_len)
{
	size_t cap = 16384, len = 0;
	char *buf = malloc(cap), *nb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		int err = fd < 0 ? errno : ENOMEM;

		if (fd >= 0)
			close(fd);
		free(buf);
		errno = err;
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (cap - len < 4096) {
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = errno;

			free(buf);
			close(fd);
			errno = err;
			return NULL;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	if (out_len)
		*out_len = len;
	return buf;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/*
 * Container id: the last run of exactly 64 lower-case hex digits in a cgroup path, as docker
 * ("/docker/<id>", "docker-<id>.scope"), containerd ("cri-containerd-<id>.scope",
 * ".../kubepods/.../<id>"), cri-o ("crio-<id>.scope") and podman ("libpod-<id>.scope") name
 * them. Returns a malloc()ed id or NULL.
 */
char *op_container_id_from_cgroup(const char *text)
{
	const char *p = text, *best = NULL;

	if (!text)
		return NULL;
	while (*p) {
		if (is_hex(*p) && (p == text || !isalnum((unsigned char)p[-1]))) {
			const char *q = p;

			while (is_hex(*q))
				q++;
			if (q - p == 64 && !isalnum((unsigned char)*q))
				best = p;
			p = q;
			continue;
		}
		p++;
	}
	return best ? strndup(best, 64) : NULL;
}

static int vma_cmp(const void *a, const void *b)
{
	const struct op_vma *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Executable mappings of @pid; 0, or -errno (the process is gone or unreadable). */
static int read_vmas(int pid, struct op_vma **out, size_t *n_out)
{
	struct op_maps_entry *e = malloc(sizeof(*e));
	struct op_vma *v = NULL;
	size_t n = 0, cap = 0;
	char path[64], *buf, *line, *next;

	if (!e)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	buf = read_file(path, NULL);
	if (!buf) {
		int err = errno;

		free(e);
		return -err;
	}
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (op_parse_maps_line(line, e) || !e->executable)
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 32;
			struct op_vma *nv = realloc(v, nc * sizeof(*nv));

			if (!nv)
				goto nomem;
			v = nv;
			cap = nc;
		}
		v[n] = (struct op_vma){ .start = e->start,
					.end = e->end,
					.offset = e->offset,
					.deleted = e->deleted,
					.dev = makedev(e->dev_major, e->dev_minor),
					.ino = e->inode };
		if (e->path[0]) {
			v[n].path = strdup(e->path);
			if (!v[n].path)
				goto nomem;
		}
		n++;
	}
	free(buf);
	free(e);
	if (n)
		qsort(v, n, sizeof(*v), vma_cmp);
	*out = v;
	*n_out = n;
	return 0;
nomem:
	while (n)
		free(v[--n].path);
	free(v);
	free(buf);
	free(e);
	return -ENOMEM;
}

static void free_vmas(struct op_vma *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].path);
		op_file_put(v[i].file);
	}
	free(v);
}

static int read_comm(int pid, char comm[16])
{
	char path[64], buf[64];
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = '\0';
	r = (ssize_t)strcspn(buf, "\n");
	if (r > 15)
		r = 15;
	memcpy(comm, buf, (size_t)r);
	comm[r] = '\0';
	return 0;
}

static char *read_exe(int pid)
{
	static const char deleted[] = " (deleted)";
	char path[64], buf[PATH_MAX];
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	r = readlink(path, buf, sizeof(buf) - 1);
	if (r <= 0)
		return NULL;
	buf[r] = '\0';
	if ((size_t)r > sizeof(deleted) - 1 && !strcmp(buf + r - (sizeof(deleted) - 1), deleted))
		buf[r - (sizeof(deleted) - 1)] = '\0';
	return strdup(buf);
}

static char *read_container_id(int pid)
{
	char path[64], *text, *id;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	text = read_file(path, NULL);
	if (!text)
		return NULL;
	id = op_container_id_from_cgroup(text);
	free(text);
	return id;
}

static void set_exe(struct op_proc *p, char *exe)
{
	const char *base;

	free(p->exe_path);
	free(p->exe_name);
	p->exe_path = exe;
	base = exe ? strrchr(exe, '/') : NULL;
	base = base ? base + 1 : exe;
	p->exe_name = strdup(base && *base ? base : p->comm);
}

/* ---------------------------------------------------------------- table */

static size_t bucket_of(const struct op_proctab *t, int pid)
{
	return ((uint32_t)pid * 2654435761u) % t->nbuckets;
}

static struct proc_entry *find(const struct op_proctab *t, int pid)
{
	struct proc_entry *e;

	for (e = t->buckets[bucket_of(t, pid)]; e; e = e->next)
		if (e->p.pid == pid)
			return e;
	return NULL;
}

static void grow(struct op_proctab *t)
{
	size_t nb = t->nbuckets * 2, i;
	struct proc_entry **b = calloc(nb, sizeof(*b)), *e, *n;
	struct op_proctab tmp = { .nbuckets = nb };

	if (!b)
		return;
	for (i = 0; i < t->nbuckets; i++)
		for (e = t->buckets[i]; e; e = n) {
			size_t k;

			n = e->next;
			k = bucket_of(&tmp, e->p.pid);
			e->next = b[k];
			b[k] = e;
		}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = nb;
}

struct op_proctab *op_proctab_new(struct op_filecache *files)
{
	struct op_proctab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->files = files;
	t->nbuckets = 256;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return NULL;
	}
	return t;
}

static void entry_free(struct proc_entry *e)
{
	free_vmas(e->p.vmas, e->p.n_vmas);
	free(e->p.exe_path);
	free(e->p.exe_name);
	free(e->p.container_id);
	op_resource_free(&e->p.resource);
	free(e);
}

void op_proctab_free(struct op_proctab *t)
{
	struct proc_entry *e, *n;
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nbuckets; i++)
		for (e = t->buckets[i]; e; e = n) {
			n = e->next;
			entry_free(e);
		}
	free(t->buckets);
	free(t->env_vars);
	free(t);
}

void op_proctab_read_environ(struct op_proctab *t, bool on)
{
	if (t)
		t->environ = on;
}

int op_proctab_include_env_vars(struct op_proctab *t, const char *names)
{
	char *c = names && *names ? strdup(names) : NULL;

	if (!t || (names && *names && !c))
		return -ENOMEM;
	free(t->env_vars);
	t->env_vars = c;
	return 0;
}

int op_proctab_resource_read(const struct op_proctab *t, int pid, struct op_resource *out)
{
	memset(out, 0, sizeof(*out));
	if (!t || (!t->environ && !t->env_vars))
		return 0;
	return op_resource_read_vars(pid, t->environ, t->env_vars, out);
}

size_t op_proctab_count(const struct op_proctab *t)
{
	return t ? t->n : 0;
}

struct op_proc *op_proctab_get(struct op_proctab *t, int pid)
{
	struct proc_entry *e;
	int err;

	if (!t || pid <= 0)
		return NULL;
	e = find(t, pid);
	if (e)
		return &e->p;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->p.pid = pid;
	if (read_comm(pid, e->p.comm) < 0)
		goto gone;
	err = read_vmas(pid, &e->p.vmas, &e->p.n_vmas);
	if (err < 0) {
		if (err != -ENOENT && err != -ESRCH)
			op_debug("cannot read /proc/%d/maps: %s", pid, strerror(-err));
		goto gone;
	}
	set_exe(&e->p, read_exe(pid));
	e->p.container_id = read_container_id(pid);
	/* unreadable: no attributes, not an error */
	op_proctab_resource_read(t, pid, &e->p.resource);
	e->p.loaded_ns = now_mono_ns();
	if (t->n >= t->nbuckets)
		grow(t);
	e->next = t->buckets[bucket_of(t, pid)];
	t->buckets[bucket_of(t, pid)] = e;
	t->n++;
	return &e->p;
gone:
	entry_free(e);
	return NULL;
}

/* Keep opened files of mappings that did not change. */
static void carry_files(struct op_vma *old, size_t n_old, struct op_vma *nv, size_t n_new)
{
	size_t i = 0, j = 0;

	while (i < n_old && j < n_new) {
		if (old[i].start < nv[j].start) {
			i++;
		} else if (old[i].start > nv[j].start) {
			j++;
		} else {
			if (old[i].end == nv[j].end && old[i].offset == nv[j].offset &&
			    old[i].deleted == nv[j].deleted && !old[i].path == !nv[j].path &&
			    (!old[i].path || !strcmp(old[i].path, nv[j].path))) {
				nv[j].file = old[i].file;
				nv[j].file_tried = old[i].file_tried;
				old[i].file = NULL;
			}
			i++;
			j++;
		}
	}
}

int op_proctab_refresh(struct op_proctab *t, int pid, bool force)
{
	struct proc_entry *e;
	struct op_vma *v;
	uint64_t now = now_mono_ns();
	size_t n;
	char comm[16];
	int err;

	if (!t)
		return -EINVAL;
	e = find(t, pid);
	if (!e)
		return op_proctab_get(t, pid) ? 0 : -ESRCH;
	if (!force && now - e->p.loaded_ns < REFRESH_MIN_NS)
		return -EAGAIN;
	e->p.loaded_ns = now;
	err = read_vmas(pid, &v, &n);
	if (err < 0)
		return err == -ENOENT ? -ESRCH : err; /* gone: keep what we had for late samples */
	if (!n && e->p.n_vmas) {
		/* a zombie: its memory is gone, its mappings are what we knew */
		free(v);
		return -ESRCH;
	}
	carry_files(e->p.vmas, e->p.n_vmas, v, n);
	free_vmas(e->p.vmas, e->p.n_vmas);
	e->p.vmas = v;
	e->p.n_vmas = n;
	if (read_comm(pid, comm) == 0)
		memcpy(e->p.comm, comm, sizeof(comm));
	if (force) {
		/* exec: a new executable, maybe a new container */
		char *exe = read_exe(pid), *cid;

		if (exe)
			set_exe(&e->p, exe);
		cid = read_container_id(pid);
		if (cid) {
			free(e->p.container_id);
			e->p.container_id = cid;
		}
		if (t->environ || t->env_vars) {
			struct op_resource r;

			/* exec may set a new environment; keep the old one if it is gone */
			if (op_proctab_resource_read(t, pid, &r) == 0) {
				op_resource_free(&e->p.resource);
				e->p.resource = r;
			}
		}
	}
	return 0;
}

void op_proctab_exited(struct op_proctab *t, int pid, uint64_t now_ns)
{
	struct proc_entry *e = t ? find(t, pid) : NULL;

	if (e && !e->p.exited_ns)
		e->p.exited_ns = now_ns ? now_ns : now_mono_ns();
}

void op_proctab_gc(struct op_proctab *t, uint64_t now_ns, uint64_t grace_ns)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nbuckets; i++) {
		struct proc_entry **pp = &t->buckets[i];

		while (*pp) {
			struct proc_entry *e = *pp;

			if (e->p.exited_ns && now_ns >= e->p.exited_ns &&
			    now_ns - e->p.exited_ns >= grace_ns) {
				*pp = e->next;
				entry_free(e);
				t->n--;
			} else {
				pp = &e->next;
			}
		}
	}
}

struct op_vma *op_proc_find_vma(struct op_proc *p, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!p)
		return NULL;
	hi = p->n_vmas;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->vmas[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < p->vmas[lo - 1].end)
		return &p->vmas[lo - 1];
	return NULL;
}

struct op_file *op_proc_vma_file(struct op_proctab *t, struct op_proc *p, struct op_vma *v)
{
	if (!t || !p || !v)
		return NULL;
	if (v->file_tried)
		return v->file;
	v->file_tried = true;
	if (!v->path || !t->files)
		return NULL;
	if (v->path[0] != '/' && strcmp(v->path, "[vdso]"))
		return NULL;
	if (v->deleted) {
		/* tell the cache not to open whatever now has this name */
		char *dp;

		if (asprintf(&dp, "%s (deleted)", v->path) < 0)
			return NULL;
		v->file = op_filecache_get(t->files, p->pid, dp, v->start, v->end);
		free(dp);
	} else {
		v->file = op_filecache_get(t->files, p->pid, v->path, v->start, v->end);
	}
	if (!v->file && !v->deleted)
		/* exited (map_files gone): the same file as mapped by another process */
		v->file = op_filecache_get_mapped(t->files, v->dev, v->ino);
	if (!v->file)
		op_debug("cannot open %s of pid %d: %s (frames keep mapping and address)", v->path,
			 p->pid, strerror(errno));
	return v->file;
}
