// SPDX-License-Identifier: Apache-2.0
/*
 * The C ABI contract: exported symbols match include/libotelprof.map exactly, versions agree at
 * compile and run time, option validation names the bad field, free functions take NULL.
 * Needs no privileges: every call here fails (on purpose) before any BPF is loaded.
 */
#include <errno.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otelprof.h"
#include "check.h"

static char last_log[1024];

static void capture(enum otelprof_log_level level, const char *msg, void *ctx)
{
	snprintf(last_log, sizeof(last_log), "%s", msg);
}

/* Sorted, newline-separated list of symbols from a command's output. */
static char *run_sorted(const char *cmd)
{
	static char buf[1 << 16];
	FILE *f = popen(cmd, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	if (pclose(f))
		return NULL;
	return strdup(buf);
}

static void check_exports(void)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	char cmd[1024];
	char *exported, *declared;

	snprintf(cmd, sizeof(cmd),
		 "nm -D --defined-only %s/libotelprof.so | awk '$2 ~ /^[TDBR]$/ {sub(/@.*/, \"\", $3); print $3}' | "
		 "grep -v '^OTELPROF_' | sort",
		 build);
	exported = run_sorted(cmd);
	declared = run_sorted("sed -n 's/^[[:space:]]*\\(otelprof_[a-z_]*\\);.*/\\1/p' "
			      "include/libotelprof.map | sort");
	REQUIRE(exported && declared);
	CHECK(strlen(exported) > 0);
	if (strcmp(exported, declared)) {
		fprintf(stderr, "exports of libotelprof.so:\n%s\nversion script:\n%s\n", exported,
			declared);
		CHECK(!"exports differ from include/libotelprof.map");
	}
	/* every export is declared in the public header */
	for (char *s = strtok(exported, "\n"); s; s = strtok(NULL, "\n")) {
		snprintf(cmd, sizeof(cmd), "grep -q '%s(' include/otelprof.h", s);
		if (system(cmd)) {
			fprintf(stderr, "%s is exported but not in include/otelprof.h\n", s);
			CHECK(!"export missing from the header");
		}
	}
	free(exported);
	free(declared);
}

static void check_opts(void)
{
	struct otelprof_opts o = OTELPROF_OPTS_INIT;
	struct {
		struct otelprof_opts o;
		char future[8];
	} big = { .o = OTELPROF_OPTS_INIT };
	int pid = 0x7ffffff0;

	otelprof_set_log(capture, NULL, OTELPROF_LOG_DEBUG);

	o.frequency_hz = OTELPROF_MAX_FREQUENCY + 1;
	errno = 0;
	CHECK(otelprof_open(&o) == NULL);
	CHECK_EQ(errno, OTELPROF_ERR_OPTS);
	CHECK(strstr(last_log, "invalid frequency") != NULL);

	o = (struct otelprof_opts)OTELPROF_OPTS_INIT;
	o.pid_cnt = 1;
	CHECK(otelprof_open(&o) == NULL);
	CHECK_EQ(errno, OTELPROF_ERR_OPTS);
	CHECK(strstr(last_log, "pids is NULL") != NULL);

	o = (struct otelprof_opts)OTELPROF_OPTS_INIT;
	o.pids = &pid;
	o.pid_cnt = 1;
	CHECK(otelprof_open(&o) == NULL);
	CHECK_EQ(errno, OTELPROF_ERR_NO_SUCH_PID);
	CHECK(strstr(last_log, "no such process: pid 2147483632") != NULL);

	o = (struct otelprof_opts)OTELPROF_OPTS_INIT;
	o.flags = 1u << 30;
	CHECK(otelprof_open(&o) == NULL);
	CHECK_EQ(errno, OTELPROF_ERR_OPTS);

	o.sz = 4;
	o.flags = 0;
	CHECK(otelprof_open(&o) == NULL);
	CHECK_EQ(errno, OTELPROF_ERR_OPTS);
	CHECK(strstr(last_log, "OTELPROF_OPTS_INIT") != NULL);

	/* a newer caller's larger struct: fine when the unknown tail is zero, else rejected */
	big.o.sz = sizeof(big);
	big.o.frequency_hz = OTELPROF_MAX_FREQUENCY + 1; /* fail after the size check */
	CHECK(otelprof_open(&big.o) == NULL);
	CHECK(strstr(last_log, "invalid frequency") != NULL);
	big.future[3] = 1;
	CHECK(otelprof_open(&big.o) == NULL);
	CHECK(strstr(last_log, "unknown to library version") != NULL);

	otelprof_set_log(NULL, NULL, OTELPROF_LOG_ERROR);
}

int main(void)
{
	CHECK_EQ(otelprof_version_number(), OTELPROF_VERSION_NUMBER);
	CHECK_STR(otelprof_version_string(), OTELPROF_VERSION_STRING);

	for (int e = OTELPROF_ERR_BASE; e <= OTELPROF_ERR_LAST; e++) {
		const char *s = otelprof_strerror(-e);

		CHECK(s && *s && islower((unsigned char)s[0]));
		CHECK(s == otelprof_strerror(e));
	}
	CHECK(strstr(otelprof_strerror(-EPERM), "CAP_BPF") != NULL);
	CHECK(otelprof_strerror(-12345) != NULL);

	CHECK_STR(otelprof_unwind_error_name(OTELPROF_UNWIND_PC_NOT_COVERED), "pc_not_covered");
	CHECK_STR(otelprof_unwind_error_name(-1), "unknown");
	CHECK_STR(otelprof_unwind_error_name(OTELPROF_UNWIND_ERROR_MAX), "unknown");

	/* NULL everywhere is safe */
	otelprof_close(NULL);
	otelprof_buf_free(NULL);
	CHECK_EQ(otelprof_start(NULL), -EINVAL);
	CHECK_EQ(otelprof_stop(NULL), -EINVAL);
	CHECK_EQ(otelprof_collect(NULL, OTELPROF_FORMAT_PPROF, NULL, NULL), -EINVAL);
	CHECK_EQ(otelprof_get_stats(NULL, NULL), -EINVAL);

	check_opts();
	check_exports();
	return check_done();
}
