// SPDX-License-Identifier: Apache-2.0
/*
 * fixture_otlp [--empty] OTLP_FILE [PPROF_FILE]
 *
 * Builds the known profile of test_encode_fixture.h (or, with --empty, a profile without
 * samples) and writes it as a serialized OTLP ExportProfilesServiceRequest (and as gzipped
 * pprof). Run by
 * tests/integration/otlp_roundtrip_test.go, which decodes the files with pdata, google/pprof
 * and `go tool pprof`.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "test_encode_fixture.h"

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f) {
		perror(path);
		return -1;
	}
	if (fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct op_profile_opts o = { .period_ns = FX_PERIOD, .start_ns = FX_T0 };
	struct op_profile *p;
	bool empty = false;
	uint8_t *buf;
	size_t len;
	int err;

	if (argc > 1 && !strcmp(argv[1], "--empty")) {
		empty = true;
		argc--;
		argv++;
	}
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: fixture_otlp [--empty] OTLP_FILE [PPROF_FILE]\n");
		return 2;
	}
	p = empty ? op_profile_new(&o) : fx_build();
	if (!p || op_profile_sample_count(p) != (empty ? 0 : 10)) {
		fprintf(stderr, "fixture_otlp: cannot build the fixture profile\n");
		return 1;
	}
	err = op_encode_otlp(p, &buf, &len);
	if (err) {
		fprintf(stderr, "fixture_otlp: cannot encode OTLP: error %d\n", err);
		return 1;
	}
	if (write_file(argv[1], buf, len))
		return 1;
	free(buf);
	if (argc == 3) {
		err = op_encode_pprof(p, &buf, &len);
		if (err) {
			fprintf(stderr, "fixture_otlp: cannot encode pprof: error %d\n", err);
			return 1;
		}
		if (write_file(argv[2], buf, len))
			return 1;
		free(buf);
	}
	op_profile_free(p);
	return 0;
}
