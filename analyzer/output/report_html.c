/*
 * report_html.c - `--format=html`: one self-contained page (no network):
 * the findings with their evidence, the lock table (sortable), a flame
 * graph per metric (top-down or bottom-up, with search) and a timeline of
 * the top lock's holds and waits over a short window.
 *
 * The page is data plus script: the JSON report (report_json.c), the
 * folded stacks of each metric (report_folded.c, and allocator time here)
 * and the timeline's slices go into one <script type="application/json">;
 * html/page.js draws them with the vendored d3-flame-graph bundle
 * (html/vendor/, made by scripts/vendor-js.sh). The scripts and styles are
 * compiled into the binary (html/embed.cmake -> html_assets.c).
 * The timeline comes from a second pass over the trace (replay.h).
 */
#define _GNU_SOURCE /* open_memstream */
#include "replay.h"
#include "report.h"
#include "symbols.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char html_page_js[], html_page_css[], html_flame_js[],
    html_flame_css[];
extern const size_t html_page_js_len, html_page_css_len, html_flame_js_len,
    html_flame_css_len;

#define TL_WINDOW_NS 2000000u /* the timeline's span */
#define TL_MAX_SLICES 4000u
#define TL_RING 64u
#define HTML_FRAMES 128

/* Writes n bytes of s as a JSON string safe inside <script>: '<' is
 * escaped, so no "</script>" can end the element early. */
static void json_str(FILE *out, const char *s, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

/* Runs fn(r, f) into memory; returns the text (free it) and its length. */
static char *capture(const report_t *r, void (*fn)(const report_t *, FILE *),
                     size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f) {
		*len = 0;
		return xstrdup("");
	}
	fn(r, f);
	fclose(f);
	return buf;
}

/* Folded lines of allocator time (allocations and frees) by allocation
 * stack, the one metric report_folded.c does not have. */
static void folded_alloc_time(const report_t *r, FILE *out)
{
	frame_t fr[HTML_FRAMES];
	char buf[512];
	for (size_t t = 0; t < r->nm; t++) {
		model_t *m = &r->m[t];
		for (size_t i = 0; i < m->nstk; i++) {
			const site_t *s = m->stk[i].site;
			if (!s || !(s->alloc_ns + s->free_ns))
				continue;
			int n = stack_view(m, (uint32_t)i, fr, HTML_FRAMES);
			if (r->nm > 1)
				fprintf(out, "pid %" PRIu64 ";", m->pid);
			for (int k = n; k-- > 0;) {
				const char *name =
				    fr[k].function
				        ? fr[k].function
				        : frame_label(&fr[k], buf, sizeof buf);
				for (const char *c = name; *c; c++)
					fputc(*c == ';' || *c == '\n' ? ':'
					                              : *c,
					      out);
				fputc(';', out);
			}
			fprintf(out, "[allocator] %" PRIu64 "\n",
			        s->alloc_ns + s->free_ns);
		}
	}
}

/* ---- the timeline of one lock ---- */

typedef struct tl_slice {
	uint32_t thread;
	uint8_t kind; /* 0 hold, 1 wait, 2 allocator call */
	uint64_t t0, t1;
} tl_slice_t;

typedef struct tl {
	uint32_t lock;
	uint64_t after; /* the window starts at the first wait from here */
	uint64_t w0, w1;
	bool started;
	tl_slice_t ring[TL_RING]; /* before the window: the last slices */
	uint32_t nring;
	tl_slice_t *s;
	size_t ns, caps;
} tl_t;

static void tl_add(tl_t *t, const tl_slice_t *s)
{
	if (!t->started) {
		t->ring[t->nring++ % TL_RING] = *s;
		return;
	}
	if (s->t1 < t->w0 || s->t0 > t->w1 || t->ns >= TL_MAX_SLICES)
		return;
	VEC_RESERVE(t->s, t->caps, t->ns);
	t->s[t->ns++] = *s;
}

static void on_replay(void *ctx, const replay_ev_t *e)
{
	tl_t *t = ctx;
	tl_slice_t s = {e->thread, 0, e->t0, e->t1};
	if (e->kind == REPLAY_ALLOC) {
		bool held = false;
		for (uint32_t i = 0; i < e->nheld; i++)
			held |= e->held[i] == t->lock;
		if (!held)
			return;
		s.kind = 2;
	} else if (e->lock != t->lock ||
	           (e->kind == REPLAY_HOLD && !e->matched)) {
		return;
	} else if (e->kind == REPLAY_WAIT) {
		s.kind = 1;
		if (!t->started && e->t0 >= t->after) {
			t->started = true;
			t->w0 = e->t0 > TL_WINDOW_NS / 10
			            ? e->t0 - TL_WINDOW_NS / 10
			            : 0;
			t->w1 = t->w0 + TL_WINDOW_NS;
			uint32_t n = t->nring < TL_RING ? t->nring : TL_RING;
			for (uint32_t i = 0; i < n; i++)
				tl_add(t,
				       &t->ring[(t->nring - n + i) % TL_RING]);
		}
	}
	tl_add(t, &s);
}

/* Writes the timeline's JSON, or null: the top finding's lock (else the
 * lock waited on most) over a short window that starts at its first wait
 * past a quarter of the trace (else at its first wait). */
static void timeline(const report_t *r, FILE *out)
{
	model_t *m = NULL;
	uint32_t li = NONE32;
	for (size_t i = 0; i < r->f.n && li == NONE32; i++)
		if ((li = finding_lock(&r->f.v[i])) != NONE32)
			m = r->f.v[i].m;
	if (li == NONE32 && r->nm) {
		m = &r->m[0];
		for (size_t i = 0; i < m->nlock; i++)
			if (m->lock[i].s.wait_ns &&
			    (li == NONE32 ||
			     m->lock[i].s.wait_ns > m->lock[li].s.wait_ns))
				li = (uint32_t)i;
	}
	if (li == NONE32 || !m->lock[li].s.contended) {
		fputs("null", out);
		return;
	}
	tl_t t = {.lock = li, .after = model_duration_ns(m) / 4};
	replay(m, on_replay, &t);
	if (!t.started) {
		t = (tl_t){.lock = li};
		replay(m, on_replay, &t);
	}
	if (!t.started) {
		fputs("null", out);
		free(t.s);
		return;
	}
	char name[256];
	uint32_t *row = xcalloc(m->nthr + 1, sizeof *row);
	uint32_t nrow = 0;
	fprintf(out, "{\"lock\":");
	lock_label(m, &m->lock[li], name, sizeof name);
	json_str(out, name, strlen(name));
	fprintf(out,
	        ",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64 ",\"threads\":[",
	        t.w0, t.w1);
	for (size_t i = 0; i < t.ns; i++)
		if (!row[t.s[i].thread]) {
			row[t.s[i].thread] = ++nrow;
			thread_label(&m->thr[t.s[i].thread], name, sizeof name);
			if (nrow > 1)
				fputc(',', out);
			json_str(out, name, strlen(name));
		}
	fputs("],\"slices\":[", out);
	for (size_t i = 0; i < t.ns; i++)
		fprintf(out, "%s[%u,%u,%" PRIu64 ",%" PRIu64 "]", i ? "," : "",
		        row[t.s[i].thread] - 1, t.s[i].kind, t.s[i].t0,
		        t.s[i].t1);
	fputs("]}", out);
	free(row);
	free(t.s);
}

int report_html(const report_t *r, FILE *out)
{
	static const struct {
		int metric;
		const char *key, *label, *unit;
	} metrics[] = {
	    {METRIC_WAIT, "wait", "lock wait, by waiter", "ns"},
	    {METRIC_CAUSED, "caused", "wait caused, by holder", "ns"},
	    {METRIC_ALLOC_UNDER_LOCK, "alloc-under-lock",
	     "allocator time under a lock", "ns"},
	    {METRIC_CROSS_THREAD, "cross-thread", "cross-thread frees",
	     "frees"},
	    {-1, "allocator-time", "allocator time, all calls", "ns"},
	    {METRIC_HOLD, "hold", "hold time, by acquisition site", "ns"},
	};
	const size_t nmetrics = sizeof metrics / sizeof *metrics;
	size_t len;
	fputs(
	    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	    "<title>mallock report</title>\n<style>\n",
	    out);
	fwrite(html_flame_css, 1, html_flame_css_len, out);
	fwrite(html_page_css, 1, html_page_css_len, out);
	fputs("</style></head>\n<body><div id=\"app\"></div>\n"
	      "<script id=\"mallock-data\" type=\"application/json\">\n"
	      "{\"report\":",
	      out);
	char *s = capture(r, report_json, &len);
	/* JSON's strings may hold "</": "<\/" means the same to JSON */
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '<' && i + 1 < len && s[i + 1] == '/') {
			fputs("<\\", out);
			continue;
		}
		fputc(s[i], out);
	}
	free(s);
	fputs(",\n\"metrics\":[", out);
	for (size_t i = 0; i < nmetrics; i++) {
		fprintf(out, "%s[\"%s\",", i ? "," : "", metrics[i].key);
		json_str(out, metrics[i].label, strlen(metrics[i].label));
		fputc(']', out);
	}
	fputs("],\n\"units\":{", out);
	for (size_t i = 0; i < nmetrics; i++)
		fprintf(out, "%s\"%s\":\"%s\"", i ? "," : "", metrics[i].key,
		        metrics[i].unit);
	fputs("},\n\"flame\":{", out);
	for (size_t i = 0; i < nmetrics; i++) {
		report_t one = *r;
		one.metric = metrics[i].metric;
		s = capture(&one,
		            metrics[i].metric < 0 ? folded_alloc_time
		                                  : report_folded,
		            &len);
		fprintf(out, "%s\"%s\":", i ? ",\n" : "", metrics[i].key);
		json_str(out, s, len);
		free(s);
	}
	fputs("},\n\"timeline\":", out);
	timeline(r, out);
	fputs("}\n</script>\n<script>\n", out);
	fwrite(html_flame_js, 1, html_flame_js_len, out);
	fputs("\n</script>\n<script>\n", out);
	fwrite(html_page_js, 1, html_page_js_len, out);
	fputs("\n</script>\n</body></html>\n", out);
	return ferror(out) ? 1 : 0;
}
