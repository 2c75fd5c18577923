/*
 * unit_reader.c - unit tests of the reader's pass 2 merge and its clock
 * calibration (analyzer/trace/reader.h), on traces written record by record:
 *
 * - merge: three threads, five chunks written out of time order (a later
 *   chunk of one thread before an earlier chunk of another; one thread's two
 *   chunks with another's between them), with equal timestamps within and
 *   across threads. reader_next must give every event once, in TSC order,
 *   each thread's events in the order written, events of equal TSC by
 *   stream (the order in which the threads' first chunks appear in the
 *   file: what keeps a report reproducible), and the same sequence again
 *   after reader_rewind.
 * - calibration: chunk clock pairs spanning 2 ms at 0.5 ns a tick give
 *   "monotonic pairs" 0.5; pairs spanning less than 1 ms fall back to
 *   PROCESS's tsc_hz; neither gives "none" and 1 ns a tick.
 */
#define _GNU_SOURCE /* mkstemp, fdopen (unit_trace.h) */
#include "test.h"
#include "reader.h"
#include "unit_trace.h"

#include <math.h>

#define NEV 64

typedef struct seen {
	uint64_t tsc, ptr;
	uint32_t tid, stream;
} seen_t;

/* Each event is a FREE whose ptr names it: tid * 1000 + its index in the
 * thread's stream. */
static void put(ut_chunk_t *c, uint64_t tsc, uint64_t *k)
{
	ut_ev(c, FMT_FREE, tsc, c->tid * 1000 + (*k)++, 1, 0, 0, 0);
}

static int read_all(reader_t *r, seen_t *out, int max)
{
	reader_ev_t ev;
	int n = 0, rc;
	while ((rc = reader_next(r, &ev)) > 0) {
		check(ev.rec->type == FMT_FREE);
		if (n < max) {
			out[n].tsc = ev.rec->tsc;
			out[n].ptr = ev.rec->f[FMT_FREE_PTR];
			out[n].tid = ev.tid;
			out[n].stream = ev.stream;
		}
		n++;
	}
	check(rc == 0);
	return n;
}

static void test_merge(void)
{
	char path[256];
	FILE *f = ut_open(path, sizeof path);
	ut_chunk_t *c = malloc(sizeof *c);
	/* File order: thread 2's only chunk, thread 1's first, thread 3's
	 * first, thread 1's second, thread 3's second. Streams (by first
	 * chunk in the file): 0 = thread 2, 1 = thread 1, 2 = thread 3. */
	static const struct {
		uint32_t tid, seq;
		uint64_t tsc[6]; /* 0 ends */
	} chunks[] = {
	    {2, 0, {5, 20, 20, 70, 300}}, {1, 0, {10, 20, 20, 50}},
	    {3, 0, {1, 20, 100}},         {1, 1, {60, 90, 200}},
	    {3, 1, {150, 200, 200}},
	};
	uint64_t k[4] = {0, 0, 0, 0};
	for (size_t i = 0; i < sizeof chunks / sizeof *chunks; i++) {
		ut_begin(c, chunks[i].tid, chunks[i].seq, chunks[i].tsc[0]);
		for (int j = 0; j < 6 && chunks[i].tsc[j]; j++)
			put(c, chunks[i].tsc[j], &k[chunks[i].tid]);
		ut_write(f, c);
	}
	fclose(f);
	free(c);
	uint64_t k1 = k[1], k2 = k[2], k3 = k[3];
	int total = (int)(k1 + k2 + k3);

	reader_t *r;
	char err[256];
	check(reader_open(path, &r, err, sizeof err) == 0);
	unlink(path);
	const reader_info_t *in = reader_info(r);
	check(!in->truncated);
	check_eq(in->chunks, 5);
	check_eq(in->seq_gaps, 0);
	check_eq(reader_streams(r), 3);

	seen_t a[NEV], b[NEV];
	int n = read_all(r, a, NEV);
	check_eq(n, total);
	uint64_t next[4] = {0, 0, 0, 0};
	for (int i = 0; i < n; i++) {
		check(a[i].tid >= 1 && a[i].tid <= 3);
		check(a[i].stream < 3);
		/* The event belongs to the thread it is reported for, and
		 * comes in that thread's order: all of them, once. */
		check_eq(a[i].ptr / 1000, a[i].tid);
		if (a[i].tid <= 3) {
			check_eq(a[i].ptr % 1000, next[a[i].tid]);
			next[a[i].tid] = a[i].ptr % 1000 + 1;
		}
		if (i == 0)
			continue;
		check(a[i - 1].tsc <= a[i].tsc);
		if (a[i - 1].tsc == a[i].tsc)
			check(a[i - 1].stream <= a[i].stream);
	}
	check_eq(next[1], k1);
	check_eq(next[2], k2);
	check_eq(next[3], k3);
	/* Streams are numbered by first chunk in the file. */
	for (int i = 0; i < n; i++)
		check_eq(a[i].stream, a[i].tid == 2   ? 0
		                      : a[i].tid == 1 ? 1
		                                      : 2);
	/* The five events at tsc 20: thread 2's two, thread 1's two,
	 * thread 3's one. */
	int at20 = 0;
	for (int i = 0; i < n; i++)
		if (a[i].tsc == 20) {
			static const uint32_t want[] = {2, 2, 1, 1, 3};
			if (at20 < 5)
				check_eq(a[i].tid, want[at20]);
			at20++;
		}
	check_eq(at20, 5);

	reader_rewind(r);
	int n2 = read_all(r, b, NEV);
	check_eq(n2, n);
	for (int i = 0; i < n && i < n2; i++)
		check(a[i].ptr == b[i].ptr && a[i].tsc == b[i].tsc);
	reader_close(r);
}

/* One thread's two chunks with clock pairs (t0, n0) and (t1, n1); a
 * process chunk with PROCESS (tsc_hz) first when tsc_hz is set. */
static const reader_info_t *calib(reader_t **r, uint64_t t0, uint64_t n0,
                                  uint64_t t1, uint64_t n1, uint64_t tsc_hz)
{
	char path[256], err[256];
	FILE *f = ut_open(path, sizeof path);
	ut_chunk_t *c = malloc(sizeof *c);
	uint64_t k = 0;
	if (tsc_hz) {
		ut_begin(c, 0, 0, t0);
		ut_process(c, 1, t0, n0, tsc_hz);
		c->flush_tsc = t0;
		c->flush_ns = n0;
		ut_write(f, c);
	}
	ut_begin(c, 1, 0, t0);
	put(c, t0, &k);
	c->flush_tsc = t0;
	c->flush_ns = n0;
	ut_write(f, c);
	ut_begin(c, 1, 1, t1);
	put(c, t1, &k);
	c->flush_tsc = t1;
	c->flush_ns = n1;
	ut_write(f, c);
	fclose(f);
	free(c);
	int rc = reader_open(path, r, err, sizeof err);
	unlink(path);
	check(rc == 0);
	return rc == 0 ? reader_info(*r) : NULL;
}

static void test_calibration(void)
{
	reader_t *r;
	const reader_info_t *in;
	/* 4M ticks over 2 ms: 0.5 ns a tick, from the pairs. */
	in = calib(&r, 1000000, 500000, 5000000, 2500000, 0);
	if (in) {
		check(fabs(in->ns_per_tick - 0.5) < 1e-9);
		check_eq(in->clock_source, "monotonic pairs");
		reader_close(r);
	}
	/* Pairs over 0.2 ms only: PROCESS's tsc_hz (4 GHz) instead. */
	in = calib(&r, 1000000, 500000, 1400000, 700000, 4000000000ull);
	if (in) {
		check(fabs(in->ns_per_tick - 0.25) < 1e-9);
		check_eq(in->clock_source, "tsc_hz");
		reader_close(r);
	}
	/* Short pairs and no PROCESS: 1 ns a tick, said to be a guess. */
	in = calib(&r, 1000000, 500000, 1400000, 700000, 0);
	if (in) {
		check(fabs(in->ns_per_tick - 1.0) < 1e-9);
		check_eq(in->clock_source, "none");
		reader_close(r);
	}
}

int main(void)
{
	test_run(test_merge);
	test_run(test_calibration);
	return test_done();
}
