// SPDX-License-Identifier: Apache-2.0
/*
 * otelprof report PROFILE [-o FILE]: the HTML report (lib/report/html.c), and
 * otelprof diff BASE NEW [--html FILE]: the diff tables (lib/report/diff.c) and the
 * differential flamegraph in the same page.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "report/diff.h"
#include "report/html.h"
#include "report/view.h"

static void usage_report(FILE *f)
{
	fprintf(f,
		"usage: %s report [options] PROFILE\n"
		"\n"
		"Write one self-contained HTML page (no network, no server: the data is in the\n"
		"file) with an interactive flamegraph (click to zoom, search with shares), the\n"
		"top functions (self and total, sortable), the executables (share, build id,\n"
		"symbolized or not) and the processes and threads (click one to show only it).\n"
		"PROFILE may be pprof, OTLP protobuf, OTLP/JSON lines or folded stacks,\n"
		"recognised by content; '-' reads stdin.\n"
		"\n"
		"options:\n"
		"  -o, --output FILE   where to write (default: PROFILE's name with .html; '-' =\n"
		"                      stdout)\n"
		"      --title TEXT    the page's title (default: PROFILE)\n"
		"  -h, --help          this help\n"
		"\n"
		"example:\n"
		"  %s record -d 30 -o host.pb.gz && %s report host.pb.gz -o host.html\n",
		prog, prog, prog);
}

static void usage_diff(FILE *f)
{
	fprintf(f,
		"usage: %s diff [options] BASE NEW\n"
		"\n"
		"What changed from BASE to NEW: the functions and stacks whose share of the\n"
		"samples (or absolute value, --absolute) grew or shrank most, as tables in the\n"
		"terminal, and as a differential flamegraph (red grew, blue shrank) with --html.\n"
		"Frames are matched by name, so two builds of a program compare.\n"
		"\n"
		"options:\n"
		"      --html FILE     also write the differential flamegraph page\n"
		"      --absolute      compare absolute values (e.g. CPU seconds), not shares\n"
		"                      of each profile's total (the default)\n"
		"      --value TYPE    the sample type to compare (e.g. cpu, samples; default\n"
		"                      the first)\n"
		"  -n, --top N         rows per table (default 20)\n"
		"  -h, --help          this help\n"
		"\n"
		"example:\n"
		"  %s diff before.pb.gz after.pb.gz --html diff.html\n",
		prog, prog);
}

/* PROFILE's name with its extensions replaced by .html, in the current directory. */
static char *default_output(const char *in)
{
	const char *base = strrchr(in, '/') ? strrchr(in, '/') + 1 : in;
	size_t n = strcspn(base, ".");
	char *out;

	if (!strcmp(in, "-") || !n)
		return strdup("otelprof-report.html");
	out = malloc(n + 6);
	if (out) {
		memcpy(out, base, n);
		strcpy(out + n, ".html");
	}
	return out;
}

static void html_profile(struct op_html_profile *hp, const struct op_data *d, const char *name,
			 enum op_format fmt, char *ptype, size_t ptype_len)
{
	hp->name = name;
	hp->format = op_format_name(fmt);
	hp->time_ns = d->time_ns;
	hp->duration_ns = d->duration_ns;
	hp->period = d->period;
	if (d->period_type.type)
		snprintf(ptype, ptype_len, "%s/%s", op_data_s(d, d->period_type.type),
			 op_data_s(d, d->period_type.unit));
	else
		ptype[0] = 0;
	hp->period_type = ptype;
}

static int write_html(const struct op_view *v, const struct op_html_opts *o, const char *out,
		      const char *what)
{
	struct op_buf b = { 0 };
	int rc;

	if (op_html_write(v, o, &b)) {
		fprintf(stderr, "%s: cannot build the %s: out of memory\n", prog, what);
		op_buf_free(&b);
		return EXIT_RUNTIME;
	}
	rc = cli_write_file(out, b.p, b.len);
	op_buf_free(&b);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *in, *title = NULL;
	char *out = NULL, ptype[256];
	struct op_html_opts ho = { 0 };
	struct op_view *v = NULL;
	struct op_data *d = NULL;
	uint32_t types[16], t;
	enum op_format fmt;
	int c, rc = EXIT_RUNTIME;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			free(out);
			out = strdup(optarg);
			break;
		case 'T':
			title = optarg;
			break;
		case 'h':
			usage_report(stdout);
			free(out);
			return 0;
		default:
			fprintf(stderr, "%s: see '%s report --help'\n", prog, prog);
			free(out);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "%s: report needs one PROFILE (see '%s report --help')\n", prog,
			prog);
		free(out);
		return EXIT_USAGE;
	}
	in = argv[optind];
	if (!out)
		out = default_output(in);
	if (!out) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return EXIT_RUNTIME;
	}
	d = cli_read_profile(in, &fmt);
	if (!d)
		goto out;
	for (t = 0; t < d->n_types && t < 16; t++)
		types[t] = t;
	v = op_view_new(t);
	if (!v || op_view_add(v, d, types, 0) || op_view_finish(v)) {
		fprintf(stderr, "%s: cannot build the report of %s: out of memory\n", prog, in);
		goto out;
	}
	ho.title = title ? title : in;
	html_profile(&ho.profiles[0], d, in, fmt, ptype, sizeof(ptype));
	rc = write_html(v, &ho, out, "report");
out:
	op_view_free(v);
	op_data_free(d);
	free(out);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "html", required_argument, NULL, 'H' },  { "absolute", no_argument, NULL, 'a' },
		{ "value", required_argument, NULL, 'V' }, { "top", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },	   { 0 },
	};
	const char *html = NULL, *value = NULL, *names[2];
	struct op_data *d[2] = { NULL, NULL };
	enum op_format fmt[2];
	struct op_html_opts ho = { 0 };
	struct op_diff_opts dopt = { .top = 20 };
	struct op_view *v = NULL;
	struct op_buf text = { 0 };
	char ptype[2][256], *end;
	uint32_t type[2];
	int c, rc = EXIT_RUNTIME, p;
	long top;

	optind = 1;
	while ((c = getopt_long(argc, argv, "n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'H':
			html = optarg;
			break;
		case 'a':
			dopt.absolute = true;
			break;
		case 'V':
			value = optarg;
			break;
		case 'n':
			top = strtol(optarg, &end, 10);
			if (*end || top < 1 || top > 100000) {
				fprintf(stderr,
					"%s: invalid --top '%s': expected 1 to 100000 rows\n", prog,
					optarg);
				return EXIT_USAGE;
			}
			dopt.top = (unsigned)top;
			break;
		case 'h':
			usage_diff(stdout);
			return 0;
		default:
			fprintf(stderr, "%s: see '%s diff --help'\n", prog, prog);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "%s: diff needs BASE and NEW (see '%s diff --help')\n", prog, prog);
		return EXIT_USAGE;
	}
	names[0] = argv[optind];
	names[1] = argv[optind + 1];
	for (p = 0; p < 2; p++) {
		d[p] = cli_read_profile(names[p], &fmt[p]);
		if (!d[p])
			goto out;
	}
	/* the type compared: by name in both, so a pprof and an OTLP file compare */
	if ((rc = cli_value_type(d[0], value, names[0], &type[0])))
		goto out;
	if (!value)
		value = op_data_s(d[0], d[0]->types[type[0]].type);
	if ((rc = cli_value_type(d[1], value, names[1], &type[1])))
		goto out;
	rc = EXIT_RUNTIME;
	if (strcmp(op_data_s(d[0], d[0]->types[type[0]].unit),
		   op_data_s(d[1], d[1]->types[type[1]].unit))) {
		fprintf(stderr, "%s: cannot compare %s in %s with %s in %s (choose --value)\n",
			prog, op_data_s(d[0], d[0]->types[type[0]].unit), names[0],
			op_data_s(d[1], d[1]->types[type[1]].unit), names[1]);
		rc = EXIT_USAGE;
		goto out;
	}
	v = op_view_new(1);
	if (v)
		v->no_process_frames = true;
	if (!v || op_view_add(v, d[0], &type[0], 0) || op_view_add(v, d[1], &type[1], 1) ||
	    op_view_finish(v)) {
		fprintf(stderr, "%s: cannot compare the profiles: out of memory\n", prog);
		goto out;
	}
	dopt.type = op_data_s(d[0], d[0]->types[type[0]].type);
	dopt.unit = op_data_s(d[0], d[0]->types[type[0]].unit);
	dopt.names[0] = names[0];
	dopt.names[1] = names[1];
	if (op_diff_text(v, &dopt, &text)) {
		fprintf(stderr, "%s: cannot compare the profiles: out of memory\n", prog);
		goto out;
	}
	if (html) {
		ho.diff = true;
		ho.absolute = dopt.absolute;
		ho.title = "otelprof diff";
		for (p = 0; p < 2; p++)
			html_profile(&ho.profiles[p], d[p], names[p], fmt[p], ptype[p],
				     sizeof(ptype[p]));
		if ((rc = write_html(v, &ho, html, "differential flamegraph")))
			goto out;
	}
	fwrite(text.p, 1, text.len, stdout);
	rc = 0;
out:
	op_buf_free(&text);
	op_view_free(v);
	op_data_free(d[0]);
	op_data_free(d[1]);
	return rc;
}
