/*
 * unit_find_allocs.c - unit tests of find_alloc_sites
 * (analyzer/find/find_allocs.c) on small traces (unit_find.h): one
 * allocation site (stack 2) whose blocks are freed on another thread
 * (cross_thread_free), freed soon after (alloc_churn) or allocated slowly
 * (slow_alloc), each at its threshold and one step below it.
 */
#define _GNU_SOURCE /* mkstemp, fdopen (unit_trace.h) */
#include "thresholds.h"
#include "unit_find.h"

static const uint64_t s1[] = {0x401000}, s2[] = {0x402000};

static ut_chunk_t *thread(uf_t *u, uint32_t tid)
{
	ut_begin(u->c, tid, 0, 1000);
	ut_stack(u->c, 1, 1, s1);
	ut_stack(u->c, 2, 1, s2);
	return u->c;
}

/* Thread 1 allocates n blocks of 64 bytes at stack 2 (50 ns each), from
 * tick 10000; thread 2 frees the first x of them, thread 1 the rest. */
static void xfree(uf_t *u, int n, int x)
{
	ut_chunk_t *c = thread(u, 1);
	for (int i = 0; i < n; i++)
		ut_ev(c, FMT_ALLOC, 10000 + (uint64_t)i * 100,
		      0x900000 + (uint64_t)i * 64, 64, 2, 50, FMT_FN_MALLOC);
	for (int i = x; i < n; i++)
		ut_ev(c, FMT_FREE, 400000 + (uint64_t)i * 100,
		      0x900000 + (uint64_t)i * 64, 50, 0, 0, 0);
	ut_write(u->f, c);
	c = thread(u, 2);
	for (int i = 0; i < x; i++)
		ut_ev(c, FMT_FREE, 300000 + (uint64_t)i * 100,
		      0x900000 + (uint64_t)i * 64, 50, 0, 0, 0);
	ut_write(u->f, c);
}

static void test_xfree(void)
{
	uf_t u;
	uf_open(&u);
	xfree(&u, TH_XFREE_MIN, TH_XFREE_MIN);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_CROSS_THREAD_FREE);
	if (f) {
		check_eq(uf_ev(f, EV_CROSS_THREAD_FREES), 100.0);
		check_eq(uf_ev(f, EV_FREES), 100.0);
		check_eq(uf_ev(f, EV_SHARE), 1.0);
		check_eq(uf_ev(f, EV_BYTES), 6400.0);
		check_near(uf_ev(f, EV_ALLOCATOR_NS), 100 * 100, 1e-6);
		check_eq(uf_ev(f, EV_ALLOCATING_THREADS), 1.0);
		check_eq(uf_ev(f, EV_FREEING_THREADS), 1.0);
		check_eq(uf_ev(f, EV_TIMED_SAMPLES), 200.0);
		check(!finding_has(f, EV_UNCAPPED_SCORE_NS));
		check(f->score >= 0);
	}
	check_eq(uf_count(&u, FK_ALLOC_CHURN), 0);
	uf_free(&u);
}

/* One cross-thread free short of XFREE_MIN: no finding. */
static void test_xfree_few(void)
{
	uf_t u;
	uf_open(&u);
	xfree(&u, TH_XFREE_MIN - 1, TH_XFREE_MIN - 1);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_CROSS_THREAD_FREE), 0);
	uf_free(&u);
}

/* 100 cross-thread frees of 1100 frees: 9 %, below XFREE_MIN_SHARE_PCT,
 * no finding; of 1000 frees: 10 %, exactly the threshold, a finding. */
static void test_xfree_share(void)
{
	for (int n = 1000; n <= 1100; n += 100) {
		uf_t u;
		uf_open(&u);
		xfree(&u, n, 100);
		if (!uf_load(&u))
			return;
		check_eq(uf_count(&u, FK_CROSS_THREAD_FREE),
		         100 * 100 >= n * TH_XFREE_MIN_SHARE_PCT);
		uf_free(&u);
	}
}

/* n blocks of 32 bytes at stack 2 by thread 1, each freed life ns after
 * its allocation (40 ns for each call), one every 200 ns (or, when they
 * live longer, all allocated, then all freed). */
static void churn(uf_t *u, int n, uint64_t life)
{
	ut_chunk_t *c = thread(u, 1);
	uint64_t t = 10000;
	if (life < 200) {
		for (int i = 0; i < n; i++, t += 200) {
			ut_ev(c, FMT_ALLOC, t, 0x900000, 32, 2, 40,
			      FMT_FN_MALLOC);
			ut_ev(c, FMT_FREE, t + life, 0x900000, 40, 0, 0, 0);
		}
	} else {
		for (int i = 0; i < n; i++)
			ut_ev(c, FMT_ALLOC, t + (uint64_t)i * 100,
			      0x900000 + (uint64_t)i * 32, 32, 2, 40,
			      FMT_FN_MALLOC);
		for (int i = 0; i < n; i++)
			ut_ev(c, FMT_FREE, t + life + (uint64_t)i * 100,
			      0x900000 + (uint64_t)i * 32, 40, 0, 0, 0);
	}
	ut_write(u->f, c);
}

static void test_churn(void)
{
	uf_t u;
	uf_open(&u);
	churn(&u, TH_CHURN_MIN_BLOCKS, 100);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_ALLOC_CHURN);
	if (f) {
		check_eq(uf_ev(f, EV_SHORT_LIVED), 1000.0);
		check_eq(uf_ev(f, EV_ALLOCS), 1000.0);
		check(uf_ev(f, EV_SHORT_LIVED) <= uf_ev(f, EV_ALLOCS));
		check_eq(uf_ev(f, EV_SIZE), 32.0);
		check_eq(uf_ev(f, EV_SIZE_SHARE), 1.0);
		check_near(uf_ev(f, EV_MEAN_LIFETIME_NS), 100, 1e-6);
		check_near(uf_ev(f, EV_ALLOCATOR_NS), 1000 * 80, 1e-6);
		check_near(f->score, 1000 * 80, 1e-6);
		/* 1000 blocks in about 200 us */
		check(uf_ev(f, EV_RATE_PER_S) > 1e6);
		check_eq(uf_ev(f, EV_NODE_CONTAINER), 0.0);
	}
	check_eq(uf_count(&u, FK_CROSS_THREAD_FREE), 0);
	uf_free(&u);
}

/* 2000 short-lived blocks of two sizes, 32 and 4096 bytes in turn: the
 * commonest size is half of them, CHURN_SIZE_SHARE_PCT exactly, a
 * finding. */
static void test_churn_size_share(void)
{
	uf_t u;
	uf_open(&u);
	ut_chunk_t *c = thread(&u, 1);
	uint64_t t = 10000;
	for (int i = 0; i < 2 * TH_CHURN_MIN_BLOCKS; i++, t += 200) {
		ut_ev(c, FMT_ALLOC, t, 0x900000, i % 2 ? 4096 : 32, 2, 40,
		      FMT_FN_MALLOC);
		ut_ev(c, FMT_FREE, t + 100, 0x900000, 40, 0, 0, 0);
	}
	ut_write(u.f, c);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_ALLOC_CHURN);
	if (f)
		check_eq(uf_ev(f, EV_SIZE_SHARE) * 100,
		         TH_CHURN_SIZE_SHARE_PCT);
	uf_free(&u);
}

/* One block short of CHURN_MIN_BLOCKS: no finding. */
static void test_churn_few(void)
{
	uf_t u;
	uf_open(&u);
	churn(&u, TH_CHURN_MIN_BLOCKS - 1, 100);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_ALLOC_CHURN), 0);
	uf_free(&u);
}

/* Blocks living 2 ms, longer than CHURN_LIFETIME_NS: no finding. */
static void test_churn_long_lived(void)
{
	uf_t u;
	uf_open(&u);
	churn(&u, 2000, 2 * TH_CHURN_LIFETIME_NS);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_ALLOC_CHURN), 0);
	uf_free(&u);
}

/* Thread 1 allocates 100 blocks at stack 2, slow of them taking 5000 ns
 * (the first nbig of those of big bytes) and the others 50 ns, one every
 * 10000 ns, each inside a hold of lock 1 when held; blocks are 64 bytes
 * unless big. */
static void slow_sized(uf_t *u, int nslow, bool held, int nbig, uint64_t big)
{
	ut_chunk_t *c = thread(u, 1);
	ut_lock_new(c, 1, 0x10040, FMT_KIND_MUTEX, 0);
	for (int i = 0; i < 100; i++) {
		uint64_t t = 10000 + (uint64_t)i * 10000;
		if (held)
			ut_ev(c, FMT_ACQ, t - 1, 1, 1, 0, 0, 0);
		ut_ev(c, FMT_ALLOC, t, 0x1000000 + (uint64_t)i * 0x100000,
		      i < nbig ? big : 64, 2, i < nslow ? 5000 : 50,
		      FMT_FN_MALLOC);
		if (held)
			ut_ev(c, FMT_REL, t + 1, 1, 0, 0, 0, 0);
	}
	ut_write(u->f, c);
}

static void slow(uf_t *u, int nslow, bool held)
{
	slow_sized(u, nslow, held, 0, 0);
}

static void test_slow(void)
{
	uf_t u;
	uf_open(&u);
	slow(&u, 40, false);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_SLOW_ALLOC);
	if (f) {
		check_eq(uf_ev(f, EV_LOCK_HELD), 0.0);
		check_eq(uf_ev(f, EV_SLOW_CALLS), 40.0);
		check_eq(uf_ev(f, EV_CALLS), 100.0);
		check(uf_ev(f, EV_SLOW_CALLS) <= uf_ev(f, EV_CALLS));
		check_near(uf_ev(f, EV_SLOW_SHARE), 0.4, 1e-12);
		check_near(uf_ev(f, EV_SLOW_NS), 40 * 5000, 1e-6);
		check_near(uf_ev(f, EV_MEAN_SLOW_NS), 5000, 1e-6);
		check_eq(uf_ev(f, EV_TIMED_SLOW_CALLS), 40.0);
		check_eq(uf_ev(f, EV_ESTIMATED), 0.0);
		check_eq(uf_ev(f, EV_THRESHOLD_NS), (double)TH_SLOW_ALLOC_NS);
		double med = uf_ev(f, EV_MEDIAN_CALL_NS);
		check_near(f->score, 40 * 5000 - 40 * med, 1e-6);
		check(!finding_has(f, EV_UNCAPPED_SCORE_NS));
	}
	uf_free(&u);
}

/* The same calls inside holds: the finding says a lock was held. */
static void test_slow_held(void)
{
	uf_t u;
	uf_open(&u);
	slow(&u, 40, true);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_SLOW_ALLOC);
	if (f) {
		check_eq(uf_ev(f, EV_LOCK_HELD), 1.0);
		check_eq(uf_ev(f, EV_SLOW_CALLS), 40.0);
		check(strstr(f->advice, "while a lock is held") != NULL);
	}
	uf_free(&u);
}

/* 20 slow calls, fewer than MIN_TIMED_SAMPLES: at most low, scored at
 * most the low band's top, the score it would have had kept. */
static void test_slow_capped(void)
{
	uf_t u;
	uf_open(&u);
	slow(&u, 20, false);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_SLOW_ALLOC);
	if (f) {
		double dur = (double)model_recorded_ns(&u.m);
		check(f->severity <= SEV_LOW);
		check(finding_has(f, EV_UNCAPPED_SCORE_NS));
		check(uf_ev(f, EV_UNCAPPED_SCORE_NS) >= f->score);
		check(f->score <= dur * TH_SEV_MEDIUM_PPM / 1e6);
	}
	uf_free(&u);
}

/* A program on jemalloc (its library loaded) whose 40 slow calls are 30
 * of 64 KiB blocks and 10 of 64 bytes: 30 were above jemalloc's thread
 * cache limit (32 KiB, the first of SITE_BIG_LIMITS), and the advice
 * says so. */
static void test_slow_jemalloc(void)
{
	uf_t u;
	uf_open(&u);
	ut_begin(u.c, 0, 1, 1000);
	uint8_t b[256], *p = b;
	static const char lib[] = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
	p = fmt_put_u(p, 0);
	p = fmt_put_u(p, 0x7e0000000000ull);
	p = fmt_put_u(p, 0x7e0000100000ull);
	p = fmt_put_str(p, lib, strlen(lib));
	p = fmt_put_u(p, 0);
	ut_meta(u.c, FMT_MODULE, b, (size_t)(p - b));
	ut_write(u.f, u.c);
	slow_sized(&u, 40, false, 30, 64 << 10);
	if (!uf_load(&u))
		return;
	check(strcmp(model_allocator(&u.m), "jemalloc") == 0);
	const finding_t *f = uf_one(&u, FK_SLOW_ALLOC);
	if (f) {
		check_eq(uf_ev(f, EV_SLOW_CALLS), 40.0);
		check_eq(uf_ev(f, EV_SLOW_CALLS_ABOVE_CACHE_LIMIT), 30.0);
		check(strstr(f->advice,
		             "30 of the 40 slow ones were above "
		             "jemalloc's thread cache limit") != NULL);
	}
	uf_free(&u);
}

/* One slow call short of SLOW_MIN_CALLS: no finding. */
static void test_slow_few(void)
{
	uf_t u;
	uf_open(&u);
	slow(&u, TH_SLOW_MIN_CALLS - 1, false);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_SLOW_ALLOC), 0);
	uf_free(&u);
}

int main(void)
{
	test_run(test_xfree);
	test_run(test_xfree_few);
	test_run(test_xfree_share);
	test_run(test_churn);
	test_run(test_churn_size_share);
	test_run(test_churn_few);
	test_run(test_churn_long_lived);
	test_run(test_slow);
	test_run(test_slow_held);
	test_run(test_slow_capped);
	test_run(test_slow_jemalloc);
	test_run(test_slow_few);
	return test_done();
}
