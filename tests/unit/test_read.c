// SPDX-License-Identifier: Apache-2.0
/*
 * The profile readers and writers (lib/profile/read*.c, write*.c, semconv.c): formats
 * recognised by content, the encoder fixture read back from pprof and OTLP with its values
 * and labels, pprof <-> OTLP through our writers, folded stacks, and the error lines of bad
 * input.
 */
#include "check.h"
#include "profile/profile.h"
#include "profile/read.h"
#include "profile/read_internal.h"
#include "profile/write.h"
#include "report/folded.h"
#include "test_encode_fixture.h"

static struct op_data *read_ok(const uint8_t *buf, size_t len, enum op_format want)
{
	char err[OP_READ_ERR_LEN] = "";
	enum op_format f;
	struct op_data *d = op_read_buf(buf, len, &f, err, sizeof(err));

	if (!d)
		fprintf(stderr, "read failed: %s\n", err);
	REQUIRE(d);
	CHECK_EQ(f, want);
	return d;
}

static void read_fails(const void *buf, size_t len, const char *want)
{
	char err[OP_READ_ERR_LEN] = "";
	struct op_data *d = op_read_buf(buf, len, NULL, err, sizeof(err));

	CHECK(!d);
	if (!strstr(err, want))
		fprintf(stderr, "error %s, want %s\n", err, want);
	CHECK(strstr(err, want) != NULL);
	op_data_free(d);
}

/* The value of the sample whose thread.id is @tid (summed), type 0. */
static int64_t value_of_tid(const struct op_data *d, int64_t tid)
{
	int64_t v = 0;

	for (uint32_t s = 1; s < d->samples.n; s++) {
		const struct op_dattr *a =
			op_data_find(d, op_data_sample(d, s)->attrs, "thread.id");

		if (a && a->num == tid)
			v += op_data_value(d, s, 0);
	}
	return v;
}

static void check_fixture(const struct op_data *d)
{
	const struct op_dattr *a;
	bool saw_server = false;

	CHECK_EQ(op_data_total(d, 0), 10);
	CHECK_STR(op_data_s(d, d->types[0].type), "samples");
	CHECK_EQ(d->period, FX_PERIOD);
	CHECK_EQ(value_of_tid(d, 100), 4);
	CHECK_EQ(value_of_tid(d, 101), 2);
	CHECK_EQ(value_of_tid(d, 200), 4);
	for (uint32_t s = 1; s < d->samples.n; s++) {
		const struct op_dsample *smp = op_data_sample(d, s);

		a = op_data_find(d, smp->resource, "process.pid");
		REQUIRE(a && a->kind == OP_DVAL_INT);
		if (a->num == 200) {
			saw_server = true;
			a = op_data_find(d, smp->resource, "process.executable.name");
			CHECK(a && !strcmp(op_data_s(d, a->str), "server"));
			a = op_data_find(d, smp->attrs, "thread.name");
			CHECK(a && !strcmp(op_data_s(d, a->str), "server"));
		}
	}
	CHECK(saw_server);
	/* build ids under their OTLP keys, whatever the format */
	{
		bool gnu = false;

		for (uint32_t m = 1; m < d->maps.n; m++)
			gnu |= !strcmp(op_data_s(d, op_data_map(d, m)->build_id_gnu),
				       FX_APP_BUILD_ID);
		CHECK(gnu);
	}
}

static void test_fixture_both_formats(void)
{
	struct op_profile *p = fx_build();
	uint8_t *pprof, *otlp, *out;
	size_t plen, olen, len;
	struct op_data *d, *back;

	REQUIRE(p);
	REQUIRE(!op_encode_pprof(p, &pprof, &plen));
	REQUIRE(!op_encode_otlp(p, &otlp, &olen));

	d = read_ok(pprof, plen, OP_FORMAT_PPROF);
	check_fixture(d);
	/* pprof -> OTLP -> read: the same */
	REQUIRE(!op_write_otlp(d, &out, &len));
	back = read_ok(out, len, OP_FORMAT_OTLP);
	check_fixture(back);
	op_data_free(back);
	free(out);
	op_data_free(d);

	d = read_ok(otlp, olen, OP_FORMAT_OTLP);
	check_fixture(d);
	CHECK_EQ(d->n_events, 10); /* one timestamp per sample event */
	/* OTLP -> pprof -> read: the same, and the extra cpu/nanoseconds column */
	REQUIRE(!op_write_pprof(d, &out, &len));
	back = read_ok(out, len, OP_FORMAT_PPROF);
	check_fixture(back);
	CHECK_EQ(back->n_types, 2);
	CHECK_EQ(op_data_total(back, 1), 10 * (int64_t)FX_PERIOD);
	op_data_free(back);
	free(out);
	op_data_free(d);
	free(pprof);
	free(otlp);
	op_profile_free(p);
}

static void test_labels(void)
{
	struct op_data *d = op_data_new();
	const char *unit;
	bool res;
	uint32_t a;

	REQUIRE(d);
	a = op_label_to_attr(d, "pid", NULL, 42, "id", true, &res);
	CHECK(res);
	CHECK_STR(op_data_s(d, op_data_at(d, a)->key), "process.pid");
	CHECK_EQ(op_data_at(d, a)->unit, 0);
	CHECK_STR(op_label_key("process.pid", &unit), "pid");
	CHECK_STR(unit, "id");
	a = op_label_to_attr(d, "span_id", "abc", 0, NULL, false, &res);
	CHECK(!res);
	CHECK_STR(op_data_s(d, op_data_at(d, a)->key), "process.context.label.span_id");
	CHECK_STR(op_label_key("process.context.label.span_id", &unit), "span_id");
	a = op_label_to_attr(d, "service.name", "checkout", 0, NULL, false, &res);
	CHECK(res);
	a = op_label_to_attr(d, "thread.name", "w", 0, NULL, false, &res);
	CHECK(!res);
	CHECK_STR(op_build_id_kind("0123456789abcdef0123456789abcdef01234567"), "gnu");
	CHECK_STR(op_build_id_kind("00112233445566778899aabbccddeeff"), "htlhash");
	CHECK_STR(op_build_id_kind("goid-abc/goid-def"), "go");
	op_data_free(d);
}

static void test_folded(void)
{
	static const char in[] =
		"# a comment\nmain;work;leaf 10\n\nmain;other 3\nmain;work;leaf 2\n";
	struct op_data *d = read_ok((const uint8_t *)in, sizeof(in) - 1, OP_FORMAT_FOLDED);
	struct op_buf b = { 0 };

	CHECK_EQ(op_data_total(d, 0), 15);
	REQUIRE(!op_write_folded(d, 0, &b));
	CHECK_STR(b.p, "main;work;leaf 12\nmain;other 3\n");
	op_buf_free(&b);
	op_data_free(d);
}

static void test_bad_input(void)
{
	struct op_profile *p = fx_build();
	uint8_t *pprof;
	size_t plen;
	/* field 1 (length 123) then garbage: protobuf, not JSON, though it starts "\n{" */
	static const uint8_t fake[] = { 0x0a, 0x7b, 0x01, 0x02 };

	REQUIRE(p && !op_encode_pprof(p, &pprof, &plen));
	read_fails("", 0, "empty file");
	read_fails(pprof, plen / 2, "truncated gzip data");
	read_fails("{\"traceEvents\":[]}", 18, "not OTLP profiles");
	read_fails("{\"resourceProfiles\":[", 21, "truncated JSON");
	read_fails("main;a 1\nnot a stack\n", 21, "line 2: not folded stacks");
	read_fails("\x7f"
		   "ELF\x02\x01\x01",
		   7, "not a profile");
	read_fails(fake, sizeof(fake), "truncated protobuf");
	/* an index outside its table, in an OTLP request */
	{
		static const char js[] =
			"{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{"
			"\"sampleType\":{},\"samples\":[{\"stackIndex\":5}]}]}]}],"
			"\"dictionary\":{\"stackTable\":[{}],\"stringTable\":[\"\"]}}";

		read_fails(js, sizeof(js) - 1, "refers to stack_table entry 5, the table has 1");
	}
	free(pprof);
	op_profile_free(p);
}

int main(void)
{
	test_fixture_both_formats();
	test_labels();
	test_folded();
	test_bad_input();
	return check_done();
}
