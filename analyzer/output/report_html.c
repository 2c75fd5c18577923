/*
 * report_html.c - `--format=html`: one self-contained page (no network):
 * the findings with their evidence, the lock table (sortable), a flame
 * graph per metric (top-down or bottom-up, with search) and a timeline of
 * the top lock over the whole trace, exact in the window where waiting on
 * it cost most.
 *
 * The page is data plus script: the JSON report (report_json.c), the
 * evidence members' units and phrases (finding_evidence.h), the folded
 * stacks of each metric (report_folded.c, and allocator time here)
 * and the timeline's bins and slices go into one <script
 * type="application/json">; html/page.js draws them as SVG, at once (no
 * transition, so a capture or a print shows the selected view). The
 * script and style are compiled into the binary (html/embed.cmake ->
 * html_assets.c). The timeline comes from two more passes over the trace
 * (replay.h).
 */
#define _GNU_SOURCE /* open_memstream */
#include "replay.h"
#include "report.h"
#include "symbols.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char html_page_js[], html_page_css[];
extern const size_t html_page_js_len, html_page_css_len;

#define TL_WINDOW_NS 2000000u /* the timeline's detailed window */
#define TL_MAX_SLICES 40000u
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

/* ---- the timeline of one lock ----
 *
 * Two passes over the trace (replay.h). The first sums, per thread and per
 * bin of the whole trace (TL_BINS bins), the time it spent holding the
 * lock, waiting for it, in allocator calls while holding it and waiting on
 * the allocator's own lock inside those calls: the overview the page zooms
 * and pans over. It also sums the lock's wait and the allocator time in
 * its holds per fine bin, to choose the window where the cascade cost most
 * (TL_WINDOW_NS wide, see below). The second
 * pass keeps that window's slices exactly (at most TL_MAX_SLICES): the
 * cascade, drawn when the view is inside it. */

#define TL_BINS 1000u
#define TL_FINE_PER_WINDOW 8u
#define TL_MAX_FINE 1000000u
#define TL_MAX_ROWS 64u

enum { TLK_HOLD, TLK_WAIT, TLK_ALLOC, TLK_ALLOC_WAIT, TLK_N };

typedef struct tl_slice {
	uint32_t thread; /* row */
	uint8_t kind;    /* TLK_* */
	uint64_t t0, t1;
} tl_slice_t;

typedef struct tl {
	uint32_t lock;
	uint64_t dur, bin_ns, fine_ns;
	uint32_t *row; /* per model thread: row + 1, 0 when none yet */
	uint32_t nrow; /* rows[TL_MAX_ROWS] is "other threads" */
	uint32_t rowthr[TL_MAX_ROWS];
	uint64_t *bins;  /* [(row * TLK_N + kind) * TL_BINS + bin] */
	uint64_t *fine;  /* wait on the lock per fine bin */
	uint64_t *finea; /* allocator time in its holds per fine bin */
	size_t nfine;
	bool other; /* a thread past TL_MAX_ROWS was seen */
	/* pass 2 */
	bool window;
	uint64_t w0, w1, wait_in, alloc_in, alw_in;
	tl_slice_t *s;
	size_t ns, caps;
	bool cut;
} tl_t;

static bool holds(const replay_ev_t *e, uint32_t lock)
{
	for (uint32_t i = 0; i < e->nheld; i++)
		if (e->held[i] == lock)
			return true;
	return false;
}

/* The timeline kind of e for lock t->lock, or -1. */
static int tl_kind(const tl_t *t, const replay_ev_t *e)
{
	switch (e->kind) {
	case REPLAY_HOLD:
		/* an untimed hold (w 0) has no times to draw */
		return e->lock == t->lock && e->matched && e->w ? TLK_HOLD : -1;
	case REPLAY_WAIT:
		return e->lock == t->lock ? TLK_WAIT : -1;
	case REPLAY_ALLOC:
		return holds(e, t->lock) ? TLK_ALLOC : -1;
	case REPLAY_ALLOC_WAIT:
		return holds(e, t->lock) ? TLK_ALLOC_WAIT : -1;
	}
	return -1;
}

static uint32_t tl_row(tl_t *t, uint32_t thread)
{
	if (!t->row[thread]) {
		if (t->nrow >= TL_MAX_ROWS) {
			t->other = true;
			return TL_MAX_ROWS;
		}
		t->rowthr[t->nrow] = thread;
		t->row[thread] = ++t->nrow;
	}
	return t->row[thread] - 1;
}

/* Adds the overlap of [t0, t1) with each bin of width w to v[]. */
static void spread(uint64_t *v, size_t n, uint64_t w, uint64_t t0, uint64_t t1)
{
	for (size_t b = t0 / w; b < n && b * w < t1; b++) {
		uint64_t lo = b * w > t0 ? b * w : t0;
		uint64_t hi = (b + 1) * w < t1 ? (b + 1) * w : t1;
		v[b] += hi - lo;
	}
}

static void tl_pass1(void *ctx, const replay_ev_t *e)
{
	tl_t *t = ctx;
	int k = tl_kind(t, e);
	if (k < 0)
		return;
	uint32_t row = tl_row(t, e->thread);
	spread(t->bins + ((size_t)row * TLK_N + (size_t)k) * TL_BINS, TL_BINS,
	       t->bin_ns, e->t0, e->t1);
	if (k == TLK_WAIT)
		spread(t->fine, t->nfine, t->fine_ns, e->t0, e->t1);
	else if (k == TLK_ALLOC)
		spread(t->finea, t->nfine, t->fine_ns, e->t0, e->t1);
}

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
	return hi > lo ? hi - lo : 0;
}

static void tl_pass2(void *ctx, const replay_ev_t *e)
{
	tl_t *t = ctx;
	int k = tl_kind(t, e);
	if (k < 0 || e->t1 < t->w0 || e->t0 > t->w1)
		return;
	uint64_t o = overlap(e->t0, e->t1, t->w0, t->w1);
	if (k == TLK_WAIT)
		t->wait_in += o;
	else if (k == TLK_ALLOC)
		t->alloc_in += o;
	else if (k == TLK_ALLOC_WAIT)
		t->alw_in += o;
	if (t->ns >= TL_MAX_SLICES) {
		t->cut = true;
		return;
	}
	VEC_RESERVE(t->s, t->caps, t->ns);
	t->s[t->ns++] = (tl_slice_t){t->row[e->thread] ? t->row[e->thread] - 1
	                                               : TL_MAX_ROWS,
	                             (uint8_t)k, e->t0, e->t1};
}

/* The lock of the timeline: the top finding's (else the lock waited on
 * most), with its model; NONE32 when none was contended. */
static uint32_t tl_lock(const report_t *r, model_t **mp)
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
	if (li == NONE32 || !m->lock[li].s.contended)
		return NONE32;
	*mp = m;
	return li;
}

static void tl_free(tl_t *t)
{
	free(t->row);
	free(t->bins);
	free(t->fine);
	free(t->finea);
	free(t->s);
}

/* Writes the timeline's JSON, or null when the lock was never waited on. */
static void timeline(const report_t *r, FILE *out)
{
	model_t *m = NULL;
	uint32_t li = tl_lock(r, &m);
	if (li == NONE32) {
		fputs("null", out);
		return;
	}
	tl_t t = {.lock = li, .dur = model_duration_ns(m)};
	if (t.dur < TL_BINS)
		t.dur = TL_BINS;
	t.bin_ns = (t.dur + TL_BINS - 1) / TL_BINS;
	t.fine_ns = TL_WINDOW_NS / TL_FINE_PER_WINDOW;
	if (t.dur / t.fine_ns >= TL_MAX_FINE)
		t.fine_ns = t.dur / TL_MAX_FINE + 1;
	t.nfine = t.dur / t.fine_ns + 1;
	t.row = xcalloc(m->nthr + 1, sizeof *t.row);
	t.bins = xcalloc((size_t)(TL_MAX_ROWS + 1) * TLK_N * TL_BINS,
	                 sizeof *t.bins);
	t.fine = xcalloc(t.nfine, sizeof *t.fine);
	t.finea = xcalloc(t.nfine, sizeof *t.finea);
	if (replay(m, tl_pass1, &t)) {
		fputs("null", out);
		tl_free(&t);
		return;
	}
	/* The window of TL_FINE_PER_WINDOW fine bins where the cascade cost
	 * most: per bin, the wait on the lock times the share of the bin its
	 * holders spent in the allocator (the wait that overlapped allocator
	 * calls in holds, at the bin's resolution). With no allocator time in
	 * holds, the wait alone. */
	double sum = 0, best = 0;
	size_t at = 0;
	bool any = false;
	for (size_t i = 0; i < t.nfine && !any; i++)
		any = t.finea[i] != 0;
	for (size_t i = 0; i < t.nfine; i++) {
		double c = (double)t.fine[i];
		if (any)
			c *= (double)t.finea[i] / (double)t.fine_ns;
		t.fine[i] = (uint64_t)c; /* the cost, from here on */
		sum += (double)t.fine[i];
		if (i >= TL_FINE_PER_WINDOW)
			sum -= (double)t.fine[i - TL_FINE_PER_WINDOW];
		if (sum > best) {
			best = sum;
			at = i + 1 > TL_FINE_PER_WINDOW
			         ? i + 1 - TL_FINE_PER_WINDOW
			         : 0;
		}
	}
	t.w0 = at * t.fine_ns;
	t.w1 = t.w0 + TL_FINE_PER_WINDOW * t.fine_ns;
	if (replay(m, tl_pass2, &t)) {
		fputs("null", out);
		tl_free(&t);
		return;
	}
	char name[256];
	fputs("{\"lock\":", out);
	lock_label(m, &m->lock[li], name, sizeof name);
	json_str(out, name, strlen(name));
	fprintf(out, ",\"duration_ns\":%" PRIu64 ",\"bin_ns\":%" PRIu64, t.dur,
	        t.bin_ns);
	fprintf(out,
	        ",\"window\":{\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64
	        ",\"wait_ns\":%" PRIu64 ",\"allocator_ns\":%" PRIu64
	        ",\"allocator_lock_wait_ns\":%" PRIu64 ",\"cut\":%s}",
	        t.w0, t.w1, t.wait_in, t.alloc_in, t.alw_in,
	        t.cut ? "true" : "false");
	fputs(",\"threads\":[", out);
	uint32_t nrow = t.nrow + (t.other ? 1 : 0);
	for (uint32_t i = 0; i < nrow; i++) {
		if (i < t.nrow)
			thread_label(&m->thr[t.rowthr[i]], name, sizeof name);
		else
			snprintf(name, sizeof name, "other threads");
		fputs(i ? "," : "", out);
		json_str(out, name, strlen(name));
	}
	/* the "other threads" row, when there is one, is row t.nrow */
	fputs("],\"bins\":[", out);
	for (uint32_t i = 0; i < nrow; i++) {
		uint32_t row = i < t.nrow ? i : TL_MAX_ROWS;
		fputs(i ? ",[" : "[", out);
		for (int k = 0; k < TLK_N; k++) {
			const uint64_t *v =
			    t.bins +
			    ((size_t)row * TLK_N + (size_t)k) * TL_BINS;
			size_t n = TL_BINS;
			while (n && !v[n - 1])
				n--;
			fputs(k ? ",[" : "[", out);
			for (size_t b = 0; b < n; b++)
				fprintf(out, "%s%" PRIu64, b ? "," : "", v[b]);
			fputc(']', out);
		}
		fputc(']', out);
	}
	fputs("],\"slices\":[", out);
	for (size_t i = 0; i < t.ns; i++) {
		uint32_t row = t.s[i].thread < t.nrow ? t.s[i].thread : t.nrow;
		fprintf(out, "%s[%u,%u,%" PRIu64 ",%" PRIu64 "]", i ? "," : "",
		        row, t.s[i].kind, t.s[i].t0, t.s[i].t1);
	}
	fputs("]}", out);
	tl_free(&t);
}

/* The evidence members a finding of each kind puts in words on the page,
 * first to last (the page folds every member under "all evidence"). */
#define HEADLINE(...)                                                          \
	{                                                                      \
		sizeof((ev_t[]){__VA_ARGS__}) / sizeof(ev_t),                  \
		{                                                              \
			__VA_ARGS__                                            \
		}                                                              \
	}
static const struct {
	size_t n;
	ev_t e[6];
} headline[FK_COUNT] = {
    [FK_ALLOC_UNDER_LOCK] =
        HEADLINE(EV_LOCK_WAIT_NS, EV_ALLOCATOR_SHARE_OF_HOLD,
                 EV_ALLOCATOR_LOCK_WAIT_NS, EV_GIVES_BACK_NS),
    [FK_NESTED_LOCK] =
        HEADLINE(EV_OUTER_WAIT_NS, EV_INNER_WAIT_NS_WHILE_OUTER_HELD,
                 EV_OUTER_HOLD_SHARE_IN_INNER),
    [FK_CROSS_THREAD_FREE] =
        HEADLINE(EV_CROSS_THREAD_FREES, EV_FREEING_THREADS, EV_ALLOCATOR_NS),
    [FK_ALLOC_CHURN] = HEADLINE(EV_RATE_PER_S, EV_SHORT_LIVED, EV_ALLOCATOR_NS),
    [FK_SLOW_ALLOC] = HEADLINE(EV_SLOW_CALLS, EV_SLOW_NS, EV_MEDIAN_CALL_NS,
                               EV_ALLOCATOR_LOCK_WAIT_NS),
    [FK_STARVATION] =
        HEADLINE(EV_THREADS_BEHIND, EV_LOST_NS, EV_SERVICE_SHORTFALL),
    [FK_FUTEX_LOCK] = HEADLINE(EV_FUTEX_WAITS, EV_LOCK_WAIT_NS, EV_WAIT_MAX_NS,
                               EV_WAITING_THREADS),
    [FK_LOCK_CONTENTION] =
        HEADLINE(EV_LOCK_WAIT_NS, EV_CONTENDED, EV_HOLD_MEDIAN_NS,
                 EV_HOLD_P99_NS, EV_TOP_HOLDER_SHARE),
};

/* The evidence list (finding_evidence.h) as the page reads it: each
 * member's unit and phrase by JSON name, and the members each kind puts
 * in words. */
static void evidence_table(FILE *out)
{
	fputs("\"evidence\":{", out);
	for (int e = 0; e < EV_COUNT_; e++) {
		const char *w = ev_words(e);
		fprintf(out,
		        "%s\"%s\":{\"unit\":\"%s\",\"words\":", e ? "," : "",
		        ev_name(e), ev_unit_name(ev_unit(e)));
		if (w)
			json_str(out, w, strlen(w));
		else
			fputs("null", out);
		fputc('}', out);
	}
	fputs("},\n\"headline\":{", out);
	for (int k = 0; k < FK_COUNT; k++) {
		fprintf(out, "%s\"%s\":[", k ? "," : "", finding_kind_name(k));
		for (size_t i = 0; i < headline[k].n; i++)
			fprintf(out, "%s\"%s\"", i ? "," : "",
			        ev_name(headline[k].e[i]));
		fputc(']', out);
	}
	fputc('}', out);
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
	fputs("},\n", out);
	evidence_table(out);
	fputs(",\n\"flame\":{", out);
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
	fwrite(html_page_js, 1, html_page_js_len, out);
	fputs("\n</script>\n</body></html>\n", out);
	return ferror(out) ? 1 : 0;
}
