// SPDX-License-Identifier: Apache-2.0
/*
 * Kernel symbols: a kallsyms fixture (unsorted, modules, non-text symbols), one with every
 * address hidden (kptr_restrict), then the real /proc/kallsyms when its addresses are visible.
 */
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "check.h"
#include "util/log.h"
#include "otelprof.h"
#include "symbol/ksyms.h"

static char last_log[1024];

static void logcb(enum otelprof_log_level level, const char *msg, void *ctx)
{
	snprintf(last_log, sizeof(last_log), "%s", msg);
}

static void write_fixture(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	REQUIRE(f);
	fputs(text, f);
	fclose(f);
}

static void test_fixture(void)
{
	char path[] = "/tmp/otelprof-kallsyms-XXXXXX";
	const char *mod, *name;
	struct op_ksyms *k;
	int fd = mkstemp(path);

	REQUIRE(fd >= 0);
	close(fd);
	write_fixture(path, "ffffffff81000000 T _stext\n"
			    "ffffffff81002000 t helper_b\n"
			    "ffffffff81001000 T do_work\n"
			    "ffffffff81001800 D some_data\n"
			    "ffffffff81003000 W weak_text\n"
			    "ffffffffc0100000 t mod_fn_a\t[nf_tables]\n"
			    "ffffffffc0100400 T mod_fn_b\t[nf_tables]\n"
			    "ffffffffc0200000 t other_mod\t[xfs]\n"
			    "garbage line\n"
			    "ffffffff81004000 A abs_sym\n");
	setenv("OTELPROF_KALLSYMS", path, 1);
	k = op_ksyms_load();
	REQUIRE(k);
	CHECK_EQ(op_ksyms_count(k), 7);
	CHECK_STR(op_ksyms_resolve(k, 0xffffffff81001234ull, &mod), "do_work");
	CHECK(mod == NULL);
	/* data symbols do not cut text symbols short */
	CHECK_STR(op_ksyms_resolve(k, 0xffffffff81001900ull, &mod), "do_work");
	CHECK_STR(op_ksyms_resolve(k, 0xffffffff81002000ull, &mod), "helper_b");
	CHECK_STR(op_ksyms_resolve(k, 0xffffffff81003010ull, &mod), "weak_text");
	name = op_ksyms_resolve(k, 0xffffffffc0100410ull, &mod);
	CHECK_STR(name, "mod_fn_b");
	CHECK_STR(mod, "nf_tables");
	CHECK_STR(op_ksyms_resolve(k, 0xffffffffc0200010ull, &mod), "other_mod");
	CHECK_STR(mod, "xfs");
	CHECK(op_ksyms_resolve(k, 0xffffffff80000000ull, &mod) == NULL);
	CHECK(op_ksyms_resolve(k, 0xffffffffc0200000ull + (64u << 20), &mod) == NULL);
	CHECK(op_ksyms_resolve(NULL, 0xffffffff81001234ull, &mod) == NULL);
	op_ksyms_free(k);

	/* kptr_restrict: all zeros -> NULL, EPERM, and a message that says what to do */
	write_fixture(path, "0000000000000000 T _stext\n"
			    "0000000000000000 T do_work\n"
			    "0000000000000000 t mod_fn_a\t[nf_tables]\n");
	otelprof_set_log(logcb, NULL, OTELPROF_LOG_DEBUG);
	errno = 0;
	k = op_ksyms_load();
	CHECK(k == NULL);
	CHECK_EQ(errno, EPERM);
	CHECK(strstr(last_log, "CAP_SYSLOG") != NULL);
	CHECK(strstr(last_log, "kptr_restrict") != NULL);
	otelprof_set_log(NULL, NULL, OTELPROF_LOG_WARN);
	unlink(path);
	unsetenv("OTELPROF_KALLSYMS");
}

static void test_real(void)
{
	unsigned long long addr = 0;
	char line[512], name[256], type;
	const char *mod;
	struct op_ksyms *k;
	FILE *f;

	f = fopen("/proc/kallsyms", "r");
	if (!f) {
		printf("note: no /proc/kallsyms, real-kernel part skipped\n");
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 &&
		    !strcmp(name, "schedule"))
			break;
	fclose(f);
	if (!addr) {
		if (geteuid() != 0) {
			printf("note: kallsyms addresses hidden (not root, kernel.kptr_restrict): "
			       "real-kernel part skipped\n");
			return;
		}
		CHECK(addr != 0);
		return;
	}
	k = op_ksyms_load();
	REQUIRE(k);
	CHECK(op_ksyms_count(k) > 10000);
	CHECK_STR(op_ksyms_resolve(k, addr, &mod), "schedule");
	CHECK_STR(op_ksyms_resolve(k, addr + 8, &mod), "schedule");
	CHECK(mod == NULL);
	op_ksyms_free(k);
}

int main(void)
{
	test_fixture();
	test_real();
	return check_done();
}
