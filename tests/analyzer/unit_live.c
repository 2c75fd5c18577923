/*
 * unit_live.c - `mallock top`'s incremental engine (analyzer/pipeline/
 * live.h) against a re-read of the window (live_t.reread: load_trace at
 * the same watermark), on traces written as they grow.
 *
 * usage: unit_live TRACE...
 *
 * Each TRACE is copied chunk by chunk into a new file, cut at several
 * chunk boundaries and once inside a chunk (its half written: the
 * growing edge), and after each cut both engines poll at one watermark
 * (the lowest merge key of the chunks still to come, as the shim's flush
 * deadline makes it: later chunks of the threads written hold events
 * above it, which stay pending). Their views must be equal, field by
 * field (the engine applying the records 1000 at a time, as the screen
 * does between its keys): the window's and the interval's figures of
 * every lock class, (class, site) pair, finding and thread. Then the
 * file is replaced by a shorter one: the engine must read it from its
 * start and agree again. The chunks' clock pairs are first set on one
 * line from the PROCESS record's pair (1 ns a tick), so that every prefix
 * calibrates alike: the engine keeps its first poll's clock, a re-read
 * takes every pair written since (live.h). Also: how top's columns cut a
 * long name (output/top_out.h).
 */
#define _GNU_SOURCE
#include "test.h"
#include "live.h"
#include "top_out.h"
#include "reader.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct trace {
	uint8_t *data;
	size_t len;
	size_t *off;   /* chunk starts, then the file's end */
	uint64_t *low; /* each chunk's lowest merge key (reader.c) */
	size_t nchunk;
	uint64_t ptsc, pmono; /* the PROCESS record's clock pair */
} trace_t;

static int load(const char *path, trace_t *t)
{
	memset(t, 0, sizeof *t);
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	t->len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	t->data = malloc(t->len);
	if (fread(t->data, 1, t->len, f) != t->len) {
		fclose(f);
		return -1;
	}
	fclose(f);
	reader_t *r;
	char err[256];
	if (reader_open(path, &r, err, sizeof err) != 0) {
		fprintf(stderr, "%s: %s\n", path, err);
		return -1;
	}
	const reader_info_t *in = reader_info(r);
	if (in->have_process) {
		t->ptsc = in->process.tsc;
		t->pmono = in->process.mono_ns;
	}
	reader_close(r);
	t->off = malloc((t->len / FMT_CHUNK_HEADER_SIZE + 2) * sizeof *t->off);
	size_t o = FMT_FILE_HEADER_SIZE;
	while (o + FMT_CHUNK_HEADER_SIZE <= t->len) {
		fmt_chunk_header_t h;
		if (fmt_chunk_parse(t->data + o, &h) < 0 ||
		    h.payload_len > t->len - o - FMT_CHUNK_HEADER_SIZE)
			break;
		/* On the PROCESS pair's line, 1 ns a tick. */
		if (t->ptsc && h.tsc_flush) {
			h.mono_flush_ns = t->pmono + h.tsc_flush - t->ptsc;
			fmt_chunk_seal(t->data + o, &h,
			               t->data + o + FMT_CHUNK_HEADER_SIZE);
		}
		t->off[t->nchunk++] = o;
		o += FMT_CHUNK_HEADER_SIZE + h.payload_len;
	}
	t->off[t->nchunk] = o;
	/* The process's chunks (PROCESS, its clock pair) first, as the shim
	 * writes them. */
	uint8_t *d2 = malloc(t->len);
	memcpy(d2, t->data, FMT_FILE_HEADER_SIZE);
	size_t *o2 = malloc((t->nchunk + 1) * sizeof *o2), k = 0;
	o = FMT_FILE_HEADER_SIZE;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < t->nchunk; i++) {
			fmt_chunk_header_t h;
			fmt_chunk_parse(t->data + t->off[i], &h);
			if ((h.tid == 0) != (pass == 0))
				continue;
			size_t n = t->off[i + 1] - t->off[i];
			memcpy(d2 + o, t->data + t->off[i], n);
			o2[k++] = o;
			o += n;
		}
	o2[k] = o;
	free(t->data);
	free(t->off);
	t->data = d2;
	t->off = o2;
	t->low = malloc((t->nchunk + 1) * sizeof *t->low);
	uint8_t *buf = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < t->nchunk; i++) {
		fmt_chunk_header_t h;
		fmt_chunk_parse(t->data + t->off[i], &h);
		const uint8_t *recs;
		uint32_t n;
		t->low[i] = UINT64_MAX;
		if (fmt_chunk_inflate(
		        &h, t->data + t->off[i] + FMT_CHUNK_HEADER_SIZE, &buf,
		        &cap, &recs, &n) < 0)
			continue;
		fmt_chunk_header_t hr = h;
		hr.payload_len = n;
		fmt_dec_t d;
		fmt_record_t rec;
		size_t eo;
		fmt_dec_init(&d, &hr, recs);
		while (fmt_decode(&d, &rec, &eo) > 0) {
			/* A call's records are keyed at its start at the
			 * earliest: its tsc less its ticks. */
			uint64_t k = rec.tsc, ticks = 0;
			if (rec.type == FMT_FREE)
				ticks = rec.f[FMT_FREE_TICKS];
			else if (rec.type == FMT_ALLOC)
				ticks = rec.f[FMT_ALLOC_TICKS];
			else if (rec.type == FMT_REALLOC)
				ticks = rec.f[FMT_REALLOC_TICKS];
			k -= ticks < k ? ticks : 0;
			if (k < t->low[i])
				t->low[i] = k;
		}
	}
	free(buf);
	return 0;
}

/* The watermark once the first n chunks are written, as the monotonic
 * clock: the lowest key of the chunks still to come (the shim's flush
 * deadline makes that so: below the watermark every thread's events are
 * on disk). Later chunks of the threads hold events above it. */
static uint64_t watermark(const trace_t *t, size_t n)
{
	uint64_t low = UINT64_MAX;
	for (size_t i = n; i < t->nchunk; i++)
		if (t->low[i] < low)
			low = t->low[i];
	if (low == UINT64_MAX)
		return UINT64_MAX / 2;
	return low > t->ptsc ? t->pmono + (low - t->ptsc) : t->pmono;
}

static int same_views(const live_view_t *a, const live_view_t *b)
{
	int bad = 0;
	bad |= !check_eq(a->events, b->events);
	bad |= !check_eq(a->ievents, b->ievents);
	bad |= !check_eq(a->threads, b->threads);
	bad |= !check_eq(a->dropped, b->dropped);
	bad |= !check_eq(a->idropped, b->idropped);
	bad |= !check_eq(a->have_end, b->have_end);
	bad |= !check_eq(a->trunc, b->trunc);
	bad |= !check_eq(a->exe, b->exe);
	bad |= !check_eq(a->nlock, b->nlock);
	bad |= !check_eq(a->nsite, b->nsite);
	bad |= !check_eq(a->nfind, b->nfind);
	bad |= !check_eq(a->nthr, b->nthr);
	if (bad)
		return 0;
	for (size_t i = 0; i < a->nlock; i++) {
		const live_lock_t *x = &a->lock[i], *y = &b->lock[i];
		bad |= !check_eq(x->key, y->key);
		bad |= !check_eq(x->name, y->name);
		bad |= !check_eq(x->site, y->site);
		bad |= !check_eq(x->ninst, y->ninst);
		bad |= !check(!memcmp(&x->win, &y->win, sizeof x->win));
		bad |= !check(!memcmp(&x->ivl, &y->ivl, sizeof x->ivl));
		bad |= !check(
		    !memcmp(&x->wait_hist, &y->wait_hist, sizeof x->wait_hist));
	}
	for (size_t i = 0; i < a->nsite; i++) {
		const live_site_t *x = &a->site[i], *y = &b->site[i];
		bad |= !check_eq(x->lock, y->lock);
		bad |= !check_eq(x->site, y->site);
		bad |= !check_eq(x->calls, y->calls);
		bad |= !check_eq(x->allocs, y->allocs);
		bad |= !check_eq(x->ns, y->ns);
		bad |= !check_eq(x->lw_ns, y->lw_ns);
		bad |= !check_eq(x->icalls, y->icalls);
		bad |= !check_eq(x->iallocs, y->iallocs);
		bad |= !check_eq(x->ins, y->ins);
		bad |= !check_eq(x->ilw_ns, y->ilw_ns);
	}
	for (size_t i = 0; i < a->nfind; i++) {
		const live_find_t *x = &a->find[i], *y = &b->find[i];
		bad |= !check_eq(x->kind, y->kind);
		bad |= !check_eq(x->lock, y->lock);
		bad |= !check_eq(x->site, y->site);
		bad |= !check_eq(x->summary, y->summary);
		bad |= !check(x->score_ns == y->score_ns);
	}
	for (size_t i = 0; i < a->nthr; i++) {
		const live_thread_t *x = &a->thr[i], *y = &b->thr[i];
		bad |= !check_eq(x->tid, y->tid);
		bad |= !check_eq(x->name, y->name);
		bad |= !check_eq(x->events, y->events);
		bad |= !check_eq(x->acq, y->acq);
		bad |= !check_eq(x->contended, y->contended);
		bad |= !check_eq(x->wait_ns, y->wait_ns);
		bad |= !check_eq(x->allocs, y->allocs);
		bad |= !check_eq(x->frees, y->frees);
		bad |= !check_eq(x->alloc_ns, y->alloc_ns);
		bad |= !check_eq(x->ievents, y->ievents);
		bad |= !check_eq(x->iwait_ns, y->iwait_ns);
		bad |= !check_eq(x->ialloc_ns, y->ialloc_ns);
	}
	return !bad;
}

static void append(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "ab");
	check(f && fwrite(p, 1, n, f) == n);
	if (f)
		fclose(f);
}

/* Both engines at watermark w on path: 1 when they agree. */
static int poll_both(live_t *inc, live_t *ref, uint64_t w, const char *what)
{
	/* In steps of 1000 records, as the screen applies them. */
	int steps = 0;
	do
		check_eq(live_advance(inc, w, 1000), 0);
	while (inc->behind && ++steps < 1000000);
	int a = live_poll(inc, w, LIVE_SORT_WAIT);
	int b = live_poll(ref, w, LIVE_SORT_WAIT);
	if (!check_eq(a, 0) || !check_eq(b, 0))
		return 0;
	/* Incremental: the running model is kept between polls. */
	check(inc->m && inc->rd && !ref->m);
	int ok = same_views(&inc->cur, &ref->cur);
	if (!ok)
		fprintf(stderr, "  views differ %s\n", what);
	return ok;
}

static const char *g_trace;

static void test_grow(void)
{
	trace_t t;
	if (!check(load(g_trace, &t) == 0) || !check(t.nchunk >= 4))
		return;
	char path[256];
	test_tmp_path(path, sizeof path, "mallock-live-XXXXXX");
	int fd = mkstemp(path);
	check(fd >= 0);
	close(fd);
	FILE *f = fopen(path, "wb");
	fwrite(t.data, 1, FMT_FILE_HEADER_SIZE, f);
	fclose(f);
	/* The index forgets what was read at every poll. */
	live_t inc = {.path = path, .symbols = true, .forget_min = 1};
	live_t ref = {.path = path, .symbols = true, .reread = true};
	size_t cuts = t.nchunk < 12 ? t.nchunk : 12, done = 0;
	uint64_t w = 0;
	int agreed = 0;
	for (size_t k = 1; k <= cuts; k++) {
		size_t n = t.nchunk * k / cuts;
		if (n <= done)
			continue;
		if (k == cuts / 2 && n - done >= 2) {
			/* A chunk written by half: left for the next poll. */
			size_t mid =
			    t.off[n - 1] + (t.off[n] - t.off[n - 1]) / 2;
			append(path, t.data + t.off[done], mid - t.off[done]);
			w = watermark(&t, n - 1);
			agreed += poll_both(&inc, &ref, w, "at a half chunk");
			append(path, t.data + mid, t.off[n] - mid);
		} else {
			append(path, t.data + t.off[done],
			       t.off[n] - t.off[done]);
		}
		done = n;
		w = watermark(&t, n);
		char what[64];
		snprintf(what, sizeof what, "after %zu of %zu chunks", n,
		         t.nchunk);
		agreed += poll_both(&inc, &ref, w, what);
	}
	/* The last poll past every event: the whole trace. */
	agreed += poll_both(&inc, &ref, UINT64_MAX / 2, "at the end");
	reader_t *r;
	char err[256];
	check(reader_open(g_trace, &r, err, sizeof err) == 0);
	live_t whole = {.path = g_trace, .reread = true};
	check(live_poll(&whole, UINT64_MAX / 2, LIVE_SORT_WAIT) == 0);
	uint64_t all = whole.cur.events;
	check(inc.cur.events > 0);
	check_eq(inc.cur.events, all);
	reader_close(r);
	live_free(&whole);
	/* Another file at the path, shorter: read from its start. */
	unlink(path);
	f = fopen(path, "wb");
	fwrite(t.data, 1, t.off[t.nchunk / 2], f);
	fclose(f);
	agreed += poll_both(&inc, &ref, UINT64_MAX / 2, "after a rewrite");
	check(inc.cur.events < all);
	fprintf(stderr,
	        "  %s: %zu chunks, %d polls agreed, %zu chunks forgotten\n",
	        g_trace, t.nchunk, agreed, inc.forgot);
	check(inc.forgot > 0);
	check(agreed >= 4);
	live_free(&inc);
	live_free(&ref);
	unlink(path);
	free(t.data);
	free(t.off);
	free(t.low);
}

/* top's lock column: a name cut to its width keeps the last word whole
 * (a stripped server's offsets differ only there) and whole words of its
 * head; a name without a last word that fits is cut by characters. */
static void test_name_cut(void)
{
	live_lock_t l;
	memset(&l, 0, sizeof l);
	char row[512], col[64];
	struct {
		const char *name;
		int width;
		const char *col;
	} v[] = {
	    {"mutex taken in memcached+0x13062", 28,
	     "mutex...memcached+0x13062"},
	    {"mutex taken in memcached+0x13062", 32,
	     "mutex taken in memcached+0x13062"},
	    {"mutex taken in memcached+0x13062", 24,
	     "mute...memcached+0x13062"},
	    {"rwlock taken in conn_pool_checkout_slow", 28,
	     "rw...conn_pool_checkout_slow"},
	    {"mutex taken in std::_Rb_tree_insert_and_rebalance", 28,
	     "mutex ta...ert_and_rebalance"},
	    {"svcqueue.lock", 28, "svcqueue.lock"},
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		snprintf(l.name, sizeof l.name, "%s", v[i].name);
		top_lock_row(row, sizeof row, &l, TOP_IVL, v[i].width);
		snprintf(col, sizeof col, "%.*s", v[i].width, row + 2);
		for (size_t k = strlen(col); k > 0 && col[k - 1] == ' '; k--)
			col[k - 1] = 0;
		if (!check(strcmp(col, v[i].col) == 0))
			fprintf(stderr, "%s at %d: \"%s\", not \"%s\"\n",
			        v[i].name, v[i].width, col, v[i].col);
	}
}

/* top's hold and alloc% columns: "-" for an interval whose holds were all
 * untimed (no hold time to tell), figures once one was timed. */
static void test_untimed_cols(void)
{
	live_lock_t l;
	memset(&l, 0, sizeof l);
	snprintf(l.name, sizeof l.name, "q");
	l.ivl.acq = l.ivl.holds = 4;
	l.ivl.alloc_ns = 0;
	char row[512];
	top_lock_row(row, sizeof row, &l, TOP_IVL, 8);
	char w[8][32];
	int n = sscanf(row, "%31s %31s %31s %31s %31s %31s %31s %31s", w[0],
	               w[1], w[2], w[3], w[4], w[5], w[6], w[7]);
	/* q, wait (2 words), cont, max wait, hold, alloc%, alloc-lw... */
	if (!check(n == 8 && !strcmp(w[5], "-") && !strcmp(w[6], "-")))
		fprintf(stderr, "untimed holds: \"%s\"\n", row);
	l.ivl.holds_timed = 1;
	l.ivl.hold_ns = 2000;
	l.ivl.alloc_ns = 500;
	top_lock_row(row, sizeof row, &l, TOP_IVL, 8);
	if (!check(strstr(row, "2.0 us") && strstr(row, "25.0%")))
		fprintf(stderr, "a timed hold: \"%s\"\n", row);
}

int main(int argc, char **argv)
{
	test_run(test_name_cut);
	test_run(test_untimed_cols);
	for (int i = 1; i < argc; i++) {
		g_trace = argv[i];
		test_run(test_grow);
	}
	return test_done();
}
