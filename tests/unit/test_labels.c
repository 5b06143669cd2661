// SPDX-License-Identifier: Apache-2.0
/*
 * Trace correlation's pure parts: resource attributes from an environment block, trace and
 * span ids in labels, the Go version in .go.buildinfo, Go runtime layouts by release, and
 * where an executable's TLS variable lies from the thread pointer.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "binary/file.h"
#include "check.h"
#include "profile/links.h"
#include "runtime/customlabels/customlabels.h"
#include "runtime/golabels/golabels.h"
#include "sample/environ.h"

/* An environment block: NUL-separated entries, as /proc/PID/environ holds them. */
static size_t env_block(char *buf, size_t cap, const char *const *vars)
{
	size_t n = 0;

	for (; *vars; vars++) {
		size_t l = strlen(*vars) + 1;

		if (n + l > cap)
			break;
		memcpy(buf + n, *vars, l);
		n += l;
	}
	return n;
}

static void test_environ(void)
{
	char buf[4096];
	struct op_resource r;
	size_t n;

	{
		const char *const vars[] = {
			"PATH=/usr/bin",
			"OTEL_RESOURCE_ATTRIBUTES=service.name=from-attrs, "
			"deployment.environment.name"
			"=prod,service.version=1.2%2C3,bad=%zz,=novalue,team = a%20b ",
			"OTEL_SERVICE_NAME=checkout",
			"HOME=/root",
			NULL,
		};

		n = env_block(buf, sizeof(buf), vars);
		CHECK_EQ(op_resource_from_environ(buf, n, &r), 0);
		/* OTEL_SERVICE_NAME wins over service.name in OTEL_RESOURCE_ATTRIBUTES */
		CHECK_STR(op_resource_get(&r, "service.name"), "checkout");
		CHECK_STR(op_resource_get(&r, "deployment.environment.name"), "prod");
		CHECK_STR(op_resource_get(&r, "service.version"), "1.2,3"); /* percent-decoded */
		CHECK_STR(op_resource_get(&r, "team"), "a b");		    /* trimmed, decoded */
		CHECK(!op_resource_get(&r, "bad"));			    /* malformed: dropped */
		CHECK(!op_resource_get(&r, ""));
		CHECK_EQ(r.n, 4);
		op_resource_free(&r);
	}
	{
		const char *const vars[] = { "OTEL_RESOURCE_ATTRIBUTES=service.name=svc", NULL };

		n = env_block(buf, sizeof(buf), vars);
		CHECK_EQ(op_resource_from_environ(buf, n, &r), 0);
		CHECK_STR(op_resource_get(&r, "service.name"), "svc");
		op_resource_free(&r);
	}
	{
		/* nothing to take; a block cut mid-entry (no final NUL) is still read */
		const char cut[] = "A=1\0OTEL_SERVICE_NAME=cut-off";

		CHECK_EQ(op_resource_from_environ("X=1", 4, &r), 0);
		CHECK_EQ(r.n, 0);
		op_resource_free(&r);
		CHECK_EQ(op_resource_from_environ(cut, sizeof(cut) - 1, &r), 0);
		CHECK_STR(op_resource_get(&r, "service.name"), "cut-off");
		op_resource_free(&r);
	}
	{
		/* bounded: more attributes than kept, a value too long */
		char big[8192], *p = big;

		p += sprintf(p, "OTEL_RESOURCE_ATTRIBUTES=");
		for (int i = 0; i < 50; i++)
			p += sprintf(p, "k%d=v%d,", i, i);
		p += sprintf(p, "long=");
		memset(p, 'x', 300);
		p[300] = '\0';
		CHECK_EQ(op_resource_from_environ(big, strlen(big) + 1, &r), 0);
		CHECK_EQ(r.n, OP_RESOURCE_MAX_ATTRS);
		CHECK(!op_resource_get(&r, "long"));
		op_resource_free(&r);
	}
	{
		/* include_env_vars (issue 22): listed names only, exact, blanks around names */
		const char *const vars[] = { "HOME=/root", "HOMER=simpson",	    "EMPTY=",
					     "A=1=2",	   "OTEL_SERVICE_NAME=svc", "=x",
					     NULL };

		n = env_block(buf, sizeof(buf), vars);
		memset(&r, 0, sizeof(r));
		CHECK_EQ(op_resource_env_vars(buf, n, " HOME , EMPTY,A,,MISSING", &r), 0);
		CHECK_STR(op_resource_get(&r, "process.environment_variable.HOME"), "/root");
		CHECK_STR(op_resource_get(&r, "process.environment_variable.EMPTY"), "");
		CHECK_STR(op_resource_get(&r, "process.environment_variable.A"), "1=2");
		CHECK(!op_resource_get(&r, "process.environment_variable.HOMER"));
		CHECK(!op_resource_get(&r, "process.environment_variable.MISSING"));
		CHECK_EQ(r.n, 3);
		op_resource_free(&r);
		/* nothing listed: nothing added */
		CHECK_EQ(op_resource_env_vars(buf, n, "", &r), 0);
		CHECK_EQ(r.n, 0);
		CHECK_EQ(op_resource_env_vars(buf, n, NULL, &r), 0);
		CHECK_EQ(r.n, 0);
	}
}

static void test_links(void)
{
	uint8_t t[16], s[8];
	static const uint8_t want_t[16] = { 0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd,
					    0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c };
	static const uint8_t want_s[8] = { 0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31 };
	static const uint8_t dd_s[8] = { 0, 0, 0, 0, 0, 0, 0x30, 0x39 };

	CHECK_EQ(op_label_trace_id("trace_id", "0af7651916cd43dd8448eb211c80319c", t), 0);
	CHECK(!memcmp(t, want_t, 16));
	CHECK_EQ(op_label_trace_id("TraceId", "0AF7651916CD43DD8448EB211C80319C", t), 0);
	CHECK(!memcmp(t, want_t, 16));
	CHECK_EQ(op_label_trace_id("otel.trace_id", "0af7651916cd43dd8448eb211c80319c", t), 0);
	CHECK(op_label_trace_id("trace_id", "0af7651916cd43dd8448eb211c80319", t) < 0);	 /* short */
	CHECK(op_label_trace_id("trace_id", "00000000000000000000000000000000", t) < 0); /* zero */
	CHECK(op_label_trace_id("trace_id", "0af7651916cd43dd8448eb211c80319g", t) < 0);
	CHECK_EQ(op_label_trace_id("route", "0af7651916cd43dd8448eb211c80319c", t), -ENOENT);

	CHECK_EQ(op_label_span_id("span_id", "b7ad6b7169203331", s), 0);
	CHECK(!memcmp(s, want_s, 8));
	CHECK_EQ(op_label_span_id("span.id", "b7ad6b7169203331", s), 0);
	CHECK_EQ(op_label_span_id("spanID", "b7ad6b7169203331", s), 0);
	/* Datadog's tracers write decimal ids under "span id" */
	CHECK_EQ(op_label_span_id("span id", "12345", s), 0);
	CHECK(!memcmp(s, dd_s, 8));
	CHECK(op_label_span_id("span id", "-1", s) < 0);
	CHECK(op_label_span_id("span id", "18446744073709551616", s) < 0); /* > 64 bits */
	CHECK(op_label_span_id("span_id", "b7ad6b716920333", s) < 0);
	CHECK_EQ(op_label_span_id("trace_id", "b7ad6b7169203331", s), -ENOENT);
}

/* A .go.buildinfo section: 32-byte header, then the inline varint-prefixed version. */
static size_t buildinfo(uint8_t *b, const char *version, uint8_t flags)
{
	size_t n = strlen(version);

	memset(b, 0, 64);
	memcpy(b, "\xff Go buildinf:", 14);
	b[14] = 8;
	b[15] = flags;
	b[32] = (uint8_t)n;
	memcpy(b + 33, version, n);
	return 33 + n + 8;
}

static void test_buildinfo(void)
{
	uint8_t b[128];
	char v[24];
	size_t n;

	n = buildinfo(b, "go1.22.12", 2);
	op_go_buildinfo_version(b, n, v, sizeof(v));
	CHECK_STR(v, "go1.22.12");
	n = buildinfo(b, "go1.26.8 X:nocoverageredesign,greenteagc", 2);
	op_go_buildinfo_version(b, n, v, sizeof(v));
	CHECK_STR(v, "go1.26.8"); /* experiments: the release is the first word */
	n = buildinfo(b, "go1.22rc1", 2);
	op_go_buildinfo_version(b, n, v, sizeof(v));
	CHECK_STR(v, "go1.22rc1");
	n = buildinfo(b, "go1.2\x01", 2);
	op_go_buildinfo_version(b, n, v, sizeof(v));
	CHECK_STR(v, "");
	n = buildinfo(b, "go1.22.12", 0); /* pre-1.18 layout: pointers, not inline */
	op_go_buildinfo_version(b, n, v, sizeof(v));
	CHECK_STR(v, "");
	n = buildinfo(b, "devel +abc", 2);
	op_go_buildinfo_version(b, n, v, sizeof(v));
	CHECK_STR(v, "");
	op_go_buildinfo_version(b, 20, v, sizeof(v)); /* truncated */
	CHECK_STR(v, "");
	b[32] = 0xff; /* varint running past the data */
	op_go_buildinfo_version(b, 40, v, sizeof(v));
	CHECK_STR(v, "");
}

static void test_go_layouts(void)
{
	struct op_label_proc lp;

	CHECK_EQ(op_golabels_layout("go1.21.13", &lp), 0);
	CHECK_EQ(lp.g_labels, 344);
	CHECK_EQ(lp.m_curg, 192);
	CHECK(lp.go_hmap);
	CHECK_EQ(lp.tls_off, -8);
	CHECK_EQ(op_golabels_layout("go1.24.13", &lp), 0);
	CHECK(!lp.go_hmap);
	CHECK_EQ(op_golabels_layout("go1.26.8", &lp), 0);
	CHECK_EQ(lp.g_m, 48);
	CHECK_EQ(lp.m_curg, 184);
	CHECK_EQ(lp.g_labels, 352);
	CHECK(!lp.go_hmap);
	CHECK_EQ(op_golabels_layout("go1.19.1", &lp), -ENOENT);
	CHECK_EQ(op_golabels_layout("go1.99", &lp), -ENOENT);
	CHECK_EQ(op_golabels_layout(NULL, &lp), -ENOENT);
	CHECK_EQ(op_golabels_layout("gox", &lp), -ENOENT);
}

static void test_tls_offset(void)
{
	/* the Rust workload: PT_TLS memsz 0x58 align 8 at 0x549f0; symbol at 0x20 */
	CHECK_EQ(op_customlabels_exe_tls_offset(0x58, 8, 0x549f0, 0x20), 0x20 - 0x58);
	/* memsz rounded up to the alignment */
	CHECK_EQ(op_customlabels_exe_tls_offset(0x11, 16, 0x1000, 0), -0x20);
	/* a block starting 8 bytes into its 16-byte alignment unit */
	CHECK_EQ(op_customlabels_exe_tls_offset(0x18, 16, 0x1008, 0), -0x18);
}

int main(void)
{
	test_environ();
	test_links();
	test_buildinfo();
	test_go_layouts();
	test_tls_offset();
	return check_done();
}
