/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Minimal helpers for the unit tests (tests/unit/test_*.c). A test is a standalone program:
 * exit 0 = pass, 77 = skip (print why), anything else = fail.
 *
 *   CHECK(expr)              record a failure (file:line and the expression) and go on
 *   CHECK_EQ(a, b)           integers; prints both values
 *   CHECK_STR(a, b)          strings (NULL-safe); prints both values
 *   REQUIRE(expr)            like CHECK, but return from main with failure at once
 *   SKIP(fmt, ...)           print the reason and exit 77
 *   return check_done();     at the end of main: prints a summary, returns 0 or 1
 *   check_run(cmd, out, len) run a shell command; its output (trailing blanks cut) in out
 */
#ifndef OTELPROF_TESTS_CHECK_H
#define OTELPROF_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(expr)                                                                              \
	do {                                                                                     \
		check_count++;                                                                   \
		if (!(expr)) {                                                                   \
			check_failures++;                                                        \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr); \
		}                                                                                \
	} while (0)

#define CHECK_EQ(a, b)                                                                    \
	do {                                                                              \
		long long check_a_ = (long long)(a), check_b_ = (long long)(b);           \
		check_count++;                                                            \
		if (check_a_ != check_b_) {                                               \
			check_failures++;                                                 \
			fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", \
				__FILE__, __LINE__, #a, #b, check_a_, check_b_);          \
		}                                                                         \
	} while (0)

#define CHECK_STR(a, b)                                                                       \
	do {                                                                                  \
		const char *check_a_ = (a), *check_b_ = (b);                                  \
		check_count++;                                                                \
		if (!check_a_ || !check_b_ ? check_a_ != check_b_                             \
					   : strcmp(check_a_, check_b_) != 0) {               \
			check_failures++;                                                     \
			fprintf(stderr, "%s:%d: check failed: %s == %s (\"%s\" != \"%s\")\n", \
				__FILE__, __LINE__, #a, #b, check_a_ ? check_a_ : "(null)",   \
				check_b_ ? check_b_ : "(null)");                              \
		}                                                                             \
	} while (0)

#define REQUIRE(expr)                                                                             \
	do {                                                                                      \
		check_count++;                                                                    \
		if (!(expr)) {                                                                    \
			fprintf(stderr, "%s:%d: required check failed: %s\n", __FILE__, __LINE__, \
				#expr);                                                           \
			exit(1);                                                                  \
		}                                                                                 \
	} while (0)

#define SKIP(...)                                      \
	do {                                           \
		fprintf(stderr, "skip: " __VA_ARGS__); \
		fprintf(stderr, "\n");                 \
		exit(77);                              \
	} while (0)

/*
 * Run @cmd with popen(). With @out, its output (at most @len - 1 bytes, trailing newlines and
 * spaces cut) goes there; without, it is read and discarded. Returns pclose()'s status.
 */
static inline int check_run(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;

	if (!p)
		return -1;
	if (out) {
		n = fread(out, 1, len - 1, p);
		out[n] = '\0';
		while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
			out[--n] = '\0';
	} else {
		char buf[4096];

		while (fread(buf, 1, sizeof(buf), p) > 0)
			;
	}
	return pclose(p);
}

static inline int check_done(void)
{
	if (check_failures) {
		fprintf(stderr, "%d of %d checks failed\n", check_failures, check_count);
		return 1;
	}
	printf("%d checks passed\n", check_count);
	return 0;
}

#endif
