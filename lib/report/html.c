// SPDX-License-Identifier: Apache-2.0
/*
 * The HTML report (html.h). The page is report.html's markup with report.css and report.js
 * inlined and the data in a <script type="application/json"> block: flat arrays of numbers
 * (frames, nodes in preorder with their depth, samples per leaf node and thread), strings
 * once each. The renderer builds everything else (totals, tables, the flamegraph) in the
 * browser, so filtering by process or thread and switching value types need no reload.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "report/assets.h"
#include "report/html.h"

/* A JSON string; '<' escaped so no name can end the <script> block. */
static void json_str(struct op_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	op_buf_add(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		const unsigned char *run = p;

		while (*p >= 0x20 && *p != '"' && *p != '\\' && *p != '<' && *p != 0x7f)
			p++;
		if (p > run)
			op_buf_add(b, run, (size_t)(p - run));
		if (!*p)
			break;
		if (*p == '"' || *p == '\\') {
			char e[2] = { '\\', (char)*p };

			op_buf_add(b, e, 2);
		} else {
			char e[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] };

			op_buf_add(b, e, 6);
		}
	}
	op_buf_add(b, "\"", 1);
}

/* Text for HTML element content or attributes. */
static void html_text(struct op_buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			op_buf_puts(b, "&lt;");
			break;
		case '>':
			op_buf_puts(b, "&gt;");
			break;
		case '&':
			op_buf_puts(b, "&amp;");
			break;
		case '"':
			op_buf_puts(b, "&quot;");
			break;
		default:
			op_buf_add(b, s, 1);
		}
	}
}

/* An integer, with a comma before it unless @first: the data has a million of them. */
static void num(struct op_buf *b, int64_t v, bool first)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	if (!first)
		*--p = ',';
	op_buf_add(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

static void u32s(struct op_buf *b, const char *key, const uint32_t *a, size_t n, size_t stride)
{
	op_buf_printf(b, "\"%s\":[", key);
	for (size_t i = 0; i < n; i++)
		num(b, a[i * stride], !i);
	op_buf_puts(b, "]");
}

static void write_data(const struct op_view *v, const struct op_html_opts *o, struct op_buf *b)
{
	uint32_t i, t, p, n_prof = o->diff ? 2 : 1;

	op_buf_puts(b, "{\"v\":1,\"mode\":");
	json_str(b, o->diff ? "diff" : "report");
	op_buf_printf(b, ",\"absolute\":%s,\"title\":", o->absolute ? "true" : "false");
	json_str(b, o->title ? o->title : "");
	op_buf_puts(b, ",\"profiles\":[");
	for (p = 0; p < n_prof; p++) {
		const struct op_html_profile *pr = &o->profiles[p];

		op_buf_puts(b, p ? ",{\"name\":" : "{\"name\":");
		json_str(b, pr->name ? pr->name : "");
		op_buf_puts(b, ",\"format\":");
		json_str(b, pr->format ? pr->format : "");
		op_buf_printf(b,
			      ",\"timeMs\":%.3f,\"durationMs\":%.3f,\"period\":%" PRId64
			      ",\"periodType\":",
			      pr->time_ns / 1e6, pr->duration_ns / 1e6, pr->period);
		json_str(b, pr->period_type ? pr->period_type : "");
		op_buf_puts(b, "}");
	}
	op_buf_puts(b, "],\"types\":[");
	for (t = 0; t < v->n_types; t++) {
		if (t)
			op_buf_puts(b, ",");
		json_str(b, op_view_s(v, v->type_names[t]));
	}
	op_buf_puts(b, "],\"kinds\":[");
	for (i = 0; i < OP_KIND_MAX; i++) {
		if (i)
			op_buf_puts(b, ",");
		json_str(b, op_frame_kind_name(i));
	}
	op_buf_puts(b, "],\"strings\":[");
	for (i = 0; i < v->strs.n; i++) {
		if (i)
			op_buf_puts(b, ",");
		json_str(b, op_view_s(v, i));
	}
	op_buf_puts(b, "],\n\"frames\":{");
	{
		op_buf_puts(b, "\"name\":[0");
		for (i = 1; i < v->frames.n; i++)
			op_buf_printf(b, ",%u", op_view_frame(v, i)->name);
		op_buf_puts(b, "],\"bin\":[0");
		for (i = 1; i < v->frames.n; i++)
			op_buf_printf(b, ",%u", op_view_frame(v, i)->bin);
		op_buf_puts(b, "],\"kind\":[0");
		for (i = 1; i < v->frames.n; i++)
			op_buf_printf(b, ",%u", op_view_frame(v, i)->kind);
		op_buf_puts(b, "],\"file\":[0");
		for (i = 1; i < v->frames.n; i++)
			op_buf_printf(b, ",%u", op_view_frame(v, i)->file);
		op_buf_puts(b, "]}");
	}
	op_buf_puts(b, ",\n\"bins\":{\"path\":[0");
	for (i = 1; i < v->bins.n; i++)
		op_buf_printf(b, ",%u", op_view_bin(v, i)->path);
	op_buf_puts(b, "],\"buildId\":[0");
	for (i = 1; i < v->bins.n; i++)
		op_buf_printf(b, ",%u", op_view_bin(v, i)->build_id);
	op_buf_puts(b, "],\"locs\":[0");
	for (i = 1; i < v->bins.n; i++)
		op_buf_printf(b, ",%u", v->bin_locs[i]);
	op_buf_puts(b, "],\"named\":[0");
	for (i = 1; i < v->bins.n; i++)
		op_buf_printf(b, ",%u", v->bin_named[i]);
	op_buf_puts(b, "]},\n\"procs\":{\"pid\":[");
	for (i = 0; i < v->procs.n; i++) {
		const struct op_vproc *pr = op_itab_get(&v->procs, i, NULL);

		/* entry 0 of the table is the empty key: no process */
		op_buf_printf(b, i ? ",%lld" : "%lld", i ? (long long)pr->pid : -1LL);
	}
	op_buf_puts(b, "],\"exe\":[0");
	for (i = 1; i < v->procs.n; i++)
		op_buf_printf(b, ",%u",
			      ((const struct op_vproc *)op_itab_get(&v->procs, i, NULL))->exe);
	op_buf_puts(b, "],\"service\":[0");
	for (i = 1; i < v->procs.n; i++)
		op_buf_printf(b, ",%u",
			      ((const struct op_vproc *)op_itab_get(&v->procs, i, NULL))->service);
	op_buf_puts(b, "]},\n\"threads\":{\"proc\":[0");
	for (i = 1; i < v->threads.n; i++)
		op_buf_printf(b, ",%u",
			      ((const struct op_vthread *)op_itab_get(&v->threads, i, NULL))->proc);
	op_buf_puts(b, "],\"tid\":[-1");
	for (i = 1; i < v->threads.n; i++)
		op_buf_printf(
			b, ",%lld",
			(long long)((const struct op_vthread *)op_itab_get(&v->threads, i, NULL))
				->tid);
	op_buf_puts(b, "],\"name\":[0");
	for (i = 1; i < v->threads.n; i++)
		op_buf_printf(b, ",%u",
			      ((const struct op_vthread *)op_itab_get(&v->threads, i, NULL))->name);
	op_buf_puts(b, "]},\n\"nodes\":{");
	u32s(b, "depth", v->depth, v->n_nodes, 1);
	op_buf_puts(b, ",");
	u32s(b, "frame", v->frame, v->n_nodes, 1);
	op_buf_puts(b, "},\n\"samples\":{");
	u32s(b, "node", &v->recs[0].node, v->n_recs, sizeof(struct op_vrec) / sizeof(uint32_t));
	op_buf_puts(b, ",");
	u32s(b, "thread", &v->recs[0].thread, v->n_recs, sizeof(struct op_vrec) / sizeof(uint32_t));
	op_buf_puts(b, ",");
	u32s(b, "profile", &v->recs[0].profile, v->n_recs,
	     sizeof(struct op_vrec) / sizeof(uint32_t));
	op_buf_puts(b, ",\"values\":[");
	for (t = 0; t < v->n_types; t++) {
		op_buf_puts(b, t ? ",[" : "[");
		for (i = 0; i < v->n_recs; i++)
			num(b, v->values[(size_t)i * v->n_types + t], !i);
		op_buf_puts(b, "]");
	}
	op_buf_puts(b, "]}}");
}

int op_html_write(const struct op_view *v, const struct op_html_opts *o, struct op_buf *b)
{
	op_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		       "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
		       "<title>");
	html_text(b, o->title ? o->title : "otelprof report");
	op_buf_puts(b, "</title>\n<style>\n");
	op_buf_add(b, op_asset_report_css, sizeof(op_asset_report_css) - 1);
	op_buf_puts(b, "</style>\n</head>\n<body>\n");
	op_buf_add(b, op_asset_report_html, sizeof(op_asset_report_html) - 1);
	op_buf_puts(b, "<script id=\"otelprof-data\" type=\"application/json\">");
	write_data(v, o, b);
	op_buf_puts(b, "</script>\n<script>\n");
	op_buf_add(b, op_asset_report_js, sizeof(op_asset_report_js) - 1);
	op_buf_puts(b, "</script>\n</body>\n</html>\n");
	return b->oom ? -ENOMEM : 0;
}
