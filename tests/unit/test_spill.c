// SPDX-License-Identifier: Apache-2.0
/*
 * Spill files (lib/util/spill.h): a table copied into one (in two parts) is not resident
 * until read, reads back the same, and the same again after its pages left resident memory; a
 * directory in RAM or "" gives none (callers keep tables in memory), and a directory the user named
 * but that cannot be used says so in a one-line warning with the way out. Each directory setting in
 * a child process of its own (the directory is read once per process).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "otelprof.h"
#include "util/spill.h"

#define LEN (3u << 20)

/* KiB of the mapping at @p in this process's resident memory (smaps Rss; mincore would
 * count the page cache). SIZE_MAX when not found. */
static size_t resident(void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;
	size_t kb = SIZE_MAX;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's first line */
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && sscanf(line, "Rss: %zu kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	return kb;
}

#define NONE   1 /* no spill file: the caller keeps its table in memory */
#define WARNED 4 /* and a one-line warning named the variable and the way out */

static bool warned;

static void on_log(enum otelprof_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (level == OTELPROF_LOG_WARN && strstr(msg, "OTELPROF_SPILL_DIR=") &&
	    strstr(msg, "disk file system") && !strchr(msg, '\n'))
		warned = true;
}

/*
 * In a child with OTELPROF_SPILL_DIR=@dir (NULL: unset): 0 spilled and read back, NONE, 2 a
 * spilled table wrong; WARNED added when a warning said why.
 */
static int child(const char *dir)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		size_t n = LEN / sizeof(uint32_t), len = 0;
		uint32_t *src = malloc(LEN), *t;
		struct iovec v[2] = { { src, LEN / 3 }, { (char *)src + LEN / 3, LEN - LEN / 3 } };
		int bad = 0;

		if (dir)
			setenv("OTELPROF_SPILL_DIR", dir, 1);
		else
			unsetenv("OTELPROF_SPILL_DIR");
		otelprof_set_log(on_log, NULL, OTELPROF_LOG_DEBUG);
		if (!src)
			_exit(2);
		for (size_t i = 0; i < n; i++)
			src[i] = (uint32_t)(i * 2654435761u);
		t = op_spill_copy(v, 2, &len); /* the table in two parts, one after the other */
		if (!t)
			_exit(NONE | (warned ? WARNED : 0));
		free(src);
		if (len != LEN || resident(t) != 0)
			bad = 1; /* written, not yet read: none of it resident */
		for (size_t i = 0; i < n; i++)
			bad |= t[i] != (uint32_t)(i * 2654435761u); /* read back, the same */
		if (resident(t) < LEN / 1024)
			bad = 1;
		op_spill_release(t, LEN);
		if (resident(t) != 0)
			bad = 1; /* out of resident memory again */
		for (size_t i = 0; i < n; i++)
			bad |= t[i] != (uint32_t)(i * 2654435761u); /* and back, the same */
		op_spill_free(t, LEN);
		_exit((bad ? 2 : 0) | (warned ? WARNED : 0));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int main(void)
{
	char dir[] = "/var/tmp/otelprof-spill-XXXXXX";

	bool ram;

	REQUIRE(mkdtemp(dir));
	/* a /var/tmp in RAM is refused like any tmpfs: then the default gives none either */
	ram = system("stat -f -c %T /var/tmp 2>/dev/null | grep -qxE 'tmpfs|ramfs'") == 0;
	if (ram)
		fprintf(stderr, "note: /var/tmp is in RAM here; spilling there is refused\n");
	CHECK_EQ(child(dir), ram ? NONE | WARNED : 0);
	CHECK_EQ(child(NULL), ram ? NONE : 0); /* the default, /var/tmp: no warning */
	CHECK_EQ(child(""), NONE);	       /* none asked: tables stay in memory, quietly */
	CHECK_EQ(child("/nonexistent/otelprof"), NONE | WARNED);
	if (system("stat -f -c %T /dev/shm 2>/dev/null | grep -qx tmpfs") == 0)
		CHECK_EQ(child("/dev/shm"), NONE | WARNED); /* RAM: the memory would only move */
	else
		fprintf(stderr, "note: /dev/shm is not tmpfs here; that case is not checked\n");
	rmdir(dir); /* nothing left in it: the files were never linked */
	CHECK_EQ(access(dir, F_OK), -1);
	return check_done();
}
