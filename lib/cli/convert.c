// SPDX-License-Identifier: Apache-2.0
/*
 * otelprof convert IN OUT: pprof <-> OTLP <-> folded stacks. The input format is recognised
 * by content; the output format is --to, else OUT's name (*.pb.gz / *.pprof: pprof,
 * *.otlp* : OTLP protobuf, *.folded / *.txt: folded stacks).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "profile/write.h"
#include "report/folded.h"

static void usage_convert(FILE *f)
{
	fprintf(f,
		"usage: %s convert [options] IN OUT\n"
		"\n"
		"Convert a profile between pprof, OTLP and folded stacks. IN may be pprof\n"
		"(gzipped or not), OTLP protobuf (an ExportProfilesServiceRequest), OTLP/JSON "
		"(the\n"
		"collector file exporter's output, one request per line) or folded stacks; its\n"
		"format is recognised by content. '-' reads stdin or writes stdout.\n"
		"\n"
		"options:\n"
		"  -t, --to FORMAT     pprof, otlp or folded (default: from OUT's name: *.pb.gz,\n"
		"                      *.pprof -> pprof; *.otlp, *.otlp.pb -> otlp; *.folded,\n"
		"                      *.txt -> folded)\n"
		"      --value TYPE    folded output: the sample type to sum (e.g. cpu, samples;\n"
		"                      default the first)\n"
		"  -h, --help          this help\n"
		"\n"
		"A pprof -> OTLP -> pprof round trip keeps every sample, value, label, location,\n"
		"function, mapping and build id; timestamps and span links exist in OTLP only.\n"
		"\n"
		"examples:\n"
		"  %s convert host.pb.gz host.otlp.pb\n"
		"  %s convert /tmp/otelprof/profiles.jsonl out.pb.gz && go tool pprof -top "
		"out.pb.gz\n"
		"  %s convert host.pb.gz - --to folded | flamegraph.pl > host.svg\n",
		prog, prog, prog, prog);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static const char *format_from_name(const char *path)
{
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof") ||
	    ends_with(path, ".pprof.gz") || ends_with(path, ".prof"))
		return "pprof";
	if (strstr(path, ".otlp"))
		return "otlp";
	if (ends_with(path, ".folded") || ends_with(path, ".txt") || ends_with(path, ".collapsed"))
		return "folded";
	return NULL;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "value", required_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *to = NULL, *value = NULL, *in, *out;
	struct op_data *d = NULL;
	struct op_buf text = { 0 };
	uint8_t *buf = NULL;
	size_t len = 0;
	uint32_t type;
	int c, rc = EXIT_RUNTIME, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			to = optarg;
			break;
		case 'V':
			value = optarg;
			break;
		case 'h':
			usage_convert(stdout);
			return 0;
		default:
			fprintf(stderr, "%s: see '%s convert --help'\n", prog, prog);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "%s: convert needs IN and OUT (see '%s convert --help')\n", prog,
			prog);
		return EXIT_USAGE;
	}
	in = argv[optind];
	out = argv[optind + 1];
	if (!to)
		to = format_from_name(out);
	if (!to) {
		fprintf(stderr,
			"%s: cannot tell the output format from the name %s (give --to pprof, "
			"otlp or folded)\n",
			prog, out);
		return EXIT_USAGE;
	}
	if (strcmp(to, "pprof") && strcmp(to, "otlp") && strcmp(to, "folded")) {
		fprintf(stderr, "%s: invalid output format '%s': expected pprof, otlp or folded\n",
			prog, to);
		return EXIT_USAGE;
	}
	d = cli_read_profile(in, NULL);
	if (!d)
		return EXIT_RUNTIME;
	if (!strcmp(to, "pprof")) {
		err = op_write_pprof(d, &buf, &len);
	} else if (!strcmp(to, "otlp")) {
		err = op_write_otlp(d, &buf, &len);
	} else {
		rc = cli_value_type(d, value, in, &type);
		if (rc)
			goto out;
		rc = EXIT_RUNTIME;
		err = op_write_folded(d, type, &text);
		buf = (uint8_t *)text.p;
		len = text.len;
		text.p = NULL;
	}
	if (err) {
		fprintf(stderr, "%s: cannot convert %s: out of memory\n", prog, in);
		goto out;
	}
	rc = cli_write_file(out, buf, len);
out:
	free(buf);
	op_buf_free(&text);
	op_data_free(d);
	return rc;
}
