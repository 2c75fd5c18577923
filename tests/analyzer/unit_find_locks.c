/*
 * unit_find_locks.c - unit tests of find_alloc_under_lock and
 * find_nested_locks (analyzer/find/find_locks.c) on small traces
 * (unit_find.h). alloc_under_lock cases use 5 contended rounds, fewer than
 * CONT_MIN_WAITS, so that find_lock_contention leaves the finding as
 * find_alloc_under_lock made it: scored W x S, the lost wait times the
 * share of the hold time spent in the allocator; advised by the mix of
 * allocations and frees. nested_lock cases nest lock 2 in lock 1.
 */
#define _GNU_SOURCE /* mkstemp, fdopen (unit_trace.h) */
#include "thresholds.h"
#include "unit_find.h"

/* 5 rounds: holds of 1000 ns (and the waiter's 5 of 10 ns), 5000 ns
 * lost. */
#define H5 (5 * 1000.0 + 5 * 10.0)

static void test_aul_allocs(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(&u, &(uf_contend_t){1, FMT_KIND_MUTEX, 5, 1000, 100, 0, 0});
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_LOCK_CONTENTION), 0);
	const finding_t *f = uf_one(&u, FK_ALLOC_UNDER_LOCK);
	if (f) {
		check_eq(uf_cls_lock(&u, f->cls), 1);
		check_near(f->score, 5000 * 500 / H5, 1e-6);
		check_near(uf_ev(f, EV_LOCK_WAIT_NS), 5000, 1e-6);
		check_eq(uf_ev(f, EV_CALLS), 5.0);
		check_eq(uf_ev(f, EV_ALLOCS), 5.0);
		check_eq(uf_ev(f, EV_FREES), 0.0);
		check_eq(uf_ev(f, EV_FREE_SHARE), 0.0);
		check_eq(uf_ev(f, EV_HOLDS_WITH_ALLOC), 5.0);
		check_eq(uf_ev(f, EV_HOLDS), 10.0);
		check_near(uf_ev(f, EV_ALLOCATOR_SHARE_OF_HOLD), 500 / H5,
		           1e-12);
		check_eq(uf_ev(f, EV_SITES), 1.0);
		check(uf_ev(f, EV_CONTENDED) <= uf_ev(f, EV_ACQUISITIONS));
		check(strncmp(f->advice, "Move the allocation", 19) == 0);
	}
	uf_free(&u);
}

/* The allocation site (0x402000) in a module whose file name is 292
 * characters long: its label, name+0x2000, is 299 characters, the most a
 * site's label holds, and the advice shows it whole. */
static void test_aul_long_site(void)
{
	uf_t u;
	uf_open(&u);
	char path[320] = "/opt/", label[300];
	memset(path + 5, 'm', 292);
	path[297] = 0;
	ut_begin(u.c, 0, 1, 1000);
	uint8_t b[400], *p = b;
	p = fmt_put_u(p, 0x400000); /* bias */
	p = fmt_put_u(p, 0x400000);
	p = fmt_put_u(p, 0x500000);
	p = fmt_put_str(p, path, strlen(path));
	p = fmt_put_str(p, "", 0); /* no build-id */
	ut_meta(u.c, FMT_MODULE, b, (size_t)(p - b));
	ut_write(u.f, u.c);
	uf_contend(&u, &(uf_contend_t){1, FMT_KIND_MUTEX, 5, 1000, 100, 0, 0});
	if (!uf_load(&u))
		return;
	int n = snprintf(label, sizeof label, "%s+0x2000", path + 5);
	check_eq(n, 299);
	const finding_t *f = uf_one(&u, FK_ALLOC_UNDER_LOCK);
	if (f) {
		char want[400];
		snprintf(want, sizeof want, "Move the allocation at %s out ",
		         label);
		check(strncmp(f->advice, want, strlen(want)) == 0);
	}
	uf_free(&u);
}

/* Frees, in the holds, of blocks allocated outside: advised as frees. */
static void test_aul_frees(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(&u, &(uf_contend_t){1, FMT_KIND_MUTEX, 5, 1000, 0, 100, 0});
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_ALLOC_UNDER_LOCK);
	if (f) {
		check_near(f->score, 5000 * 500 / H5, 1e-6);
		check_eq(uf_ev(f, EV_CALLS), 5.0);
		check_eq(uf_ev(f, EV_ALLOCS), 0.0);
		check_eq(uf_ev(f, EV_FREES), 5.0);
		check_eq(uf_ev(f, EV_FREE_SHARE), 1.0);
		check_near(uf_ev(f, EV_FREE_NS_IN_HOLDS), 500, 1e-6);
		check_eq(uf_ev(f, EV_FREE_HOLD_SITES), 1.0);
		check(strncmp(f->advice, "Free the blocks", 15) == 0);
		check(!strstr(f->advice, "Move the allocation"));
	}
	uf_free(&u);
}

/* Half allocations, half frees: both pieces of advice. */
static void test_aul_mixed(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(&u, &(uf_contend_t){1, FMT_KIND_MUTEX, 5, 1000, 50, 50, 0});
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_ALLOC_UNDER_LOCK);
	if (f) {
		check_near(f->score, 5000 * 500 / H5, 1e-6);
		check_eq(uf_ev(f, EV_CALLS), 10.0);
		check_eq(uf_ev(f, EV_ALLOCS), 5.0);
		check_eq(uf_ev(f, EV_FREES), 5.0);
		check_near(uf_ev(f, EV_FREE_SHARE), 0.5, 1e-12);
		check_eq(uf_ev(f, EV_SITES), 2.0);
		check(strstr(f->advice, "Move the allocation") != NULL);
		check(strstr(f->advice, "Free the blocks") != NULL);
	}
	uf_free(&u);
}

/*
 * Frees in holds whose site is unknown count in the class's free time,
 * never in a site's: 5 contended rounds as in test_aul_frees (100 ns of
 * frees in each hold), the holds taken at stack 1, whose one frame is at
 * address 1; thread 3 frees a block (300 ns) in a hold of lock 1 it got
 * back from a condition wait whose acquisition is not in the trace.
 */
static void test_aul_unknown_site(void)
{
	uf_t u;
	uf_open(&u);
	ut_chunk_t *c = u.c;
	static const uint64_t fr[5][1] = {
	    {0x1}, {0x402000}, {0x403000}, {0x404000}, {0x405000}};
	ut_begin(c, 1, 0, 1000);
	for (int k = 0; k < 5; k++)
		ut_stack(c, (uint64_t)k + 1, 1, fr[k]);
	ut_lock_new(c, 1, 0x10040, FMT_KIND_MUTEX, 0);
	ut_lock_new(c, 6, 0x10080, FMT_KIND_COND, 0);
	for (uint64_t i = 0; i < 5; i++) {
		uint64_t t = 10000 + i * 2100, blk = 0x900000 + i * 256;
		ut_ev(c, FMT_ALLOC, t - 20, blk, 48, 3, 10, FMT_FN_MALLOC);
		ut_ev(c, FMT_ACQ, t, 1, 1, 0, 0, 0);
		ut_ev(c, FMT_FREE, t + 2, blk, 100, 0, 0, 0);
		ut_ev(c, FMT_REL_CONTENDED, t + 1000, 1, 4, 0, 0, 0);
	}
	ut_write(u.f, c);
	ut_begin(c, 2, 0, 1000);
	for (uint64_t i = 0; i < 5; i++) {
		uint64_t t = 10000 + i * 2100 + 1001;
		ut_ev(c, FMT_ACQ_WAIT, t, 1, 5, 1000, 2, 0);
		ut_ev(c, FMT_REL, t + 10, 1, 0, 0, 0, 0);
	}
	ut_write(u.f, c);
	ut_begin(c, 3, 0, 1000);
	ut_ev(c, FMT_ALLOC, 30000, 0x990000, 48, 3, 10, FMT_FN_MALLOC);
	ut_ev(c, FMT_COND_WAKE, 30100, 6, 1, 0, 0, 0);
	ut_ev(c, FMT_FREE, 30110, 0x990000, 300, 0, 0, 0);
	ut_ev(c, FMT_REL, 30500, 1, 0, 0, 0, 0);
	ut_write(u.f, c);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_ALLOC_UNDER_LOCK);
	if (f) {
		check_eq(uf_cls_lock(&u, f->cls), 1);
		check_near(uf_ev(f, EV_FREE_NS_IN_HOLDS), 800, 1e-6);
		check_eq(uf_ev(f, EV_FREE_HOLD_SITES), 1.0);
		check_near(uf_ev(f, EV_FREE_NS_AT_HOLD_SITE), 500, 1e-6);
	}
	uf_free(&u);
}

/* Allocation under a lock nobody waited for costs no one: no finding. */
static void test_aul_uncontended(void)
{
	uf_t u;
	uf_open(&u);
	ut_chunk_t *c = u.c;
	static const uint64_t s1[] = {0x401000}, s2[] = {0x402000};
	ut_begin(c, 1, 0, 1000);
	ut_stack(c, 1, 1, s1);
	ut_stack(c, 2, 1, s2);
	ut_lock_new(c, 1, 0x10040, FMT_KIND_MUTEX, 0);
	for (uint64_t i = 0; i < 20; i++) {
		uint64_t t = 10000 + i * 2000;
		ut_ev(c, FMT_ACQ, t, 1, 1, 0, 0, 0);
		ut_ev(c, FMT_ALLOC, t + 1, 0x900000 + i * 64, 32, 2, 500,
		      FMT_FN_MALLOC);
		ut_ev(c, FMT_REL, t + 1000, 1, 0, 0, 0, 0);
	}
	ut_write(u.f, c);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_ALLOC_UNDER_LOCK), 0);
	check_eq(uf_count(&u, FK_LOCK_CONTENTION), 0);
	uf_free(&u);
}

/* 1 ns of allocator time in holds of 100000 ns: 10 ppm of the hold, below
 * AUL_MIN_SHARE_PPM. */
static void test_aul_min_share(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(&u, &(uf_contend_t){1, FMT_KIND_MUTEX, 5, 100000, 1, 0, 0});
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_ALLOC_UNDER_LOCK), 0);
	uf_free(&u);
}

/*
 * Thread 1 takes lock 1 (stack 1) n times for 1000 ns, and lock 2 (stack
 * 2) inside it for 100 ns; thread 2 waits 1000 ns for lock 1 after the
 * first waits of them. Thread 3 takes lock 2, then lock 1 inside it, rev
 * times (no wait).
 */
static void nest(uf_t *u, int n, int waits, int rev)
{
	ut_chunk_t *c = u->c;
	static const uint64_t s1[] = {0x401000}, s2[] = {0x402000},
	                      s4[] = {0x404000}, s5[] = {0x405000};
	ut_begin(c, 1, 0, 1000);
	ut_stack(c, 1, 1, s1);
	ut_stack(c, 2, 1, s2);
	ut_stack(c, 4, 1, s4);
	ut_stack(c, 5, 1, s5);
	ut_lock_new(c, 1, 0x10040, FMT_KIND_MUTEX, 0);
	ut_lock_new(c, 2, 0x10080, FMT_KIND_MUTEX, 0);
	for (int i = 0; i < n; i++) {
		uint64_t t = 10000 + (uint64_t)i * 2200;
		ut_ev(c, FMT_ACQ, t, 1, 1, 0, 0, 0);
		uf_hold(c, 2, 2, t + 10, 100);
		ut_ev(c, i < waits ? FMT_REL_CONTENDED : FMT_REL, t + 1000, 1,
		      4, 0, 0, 0);
	}
	ut_write(u->f, c);
	ut_begin(c, 2, 0, 1000);
	for (int i = 0; i < waits; i++) {
		uint64_t t = 10000 + (uint64_t)i * 2200 + 1001;
		ut_ev(c, FMT_ACQ_WAIT, t, 1, 5, 1000, 2, 0);
		ut_ev(c, FMT_REL, t + 10, 1, 0, 0, 0, 0);
	}
	ut_write(u->f, c);
	ut_begin(c, 3, 0, 1000);
	for (int i = 0; i < rev; i++) {
		uint64_t t = 10000 + (uint64_t)i * 2200 + 1100;
		ut_ev(c, FMT_ACQ, t, 2, 2, 0, 0, 0);
		uf_hold(c, 1, 1, t + 10, 50);
		ut_ev(c, FMT_REL, t + 100, 2, 0, 0, 0, 0);
	}
	ut_write(u->f, c);
}

/* 10 nestings, 5 waits for the outer lock: scored its wait times the
 * share of its hold spent holding the inner lock. */
static void test_nested(void)
{
	uf_t u;
	uf_open(&u);
	nest(&u, TH_NEST_MIN, 5, 0);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_LOCK_CONTENTION), 0);
	const finding_t *f = uf_one(&u, FK_NESTED_LOCK);
	if (f) {
		check_eq(uf_cls_lock(&u, f->cls), 1);
		check_eq(uf_cls_lock(&u, f->cls2), 2);
		double H = 10 * 1000.0 + 5 * 10.0;
		check_near(f->score, 5000 * 1000 / H, 1e-6);
		check_eq(uf_ev(f, EV_NESTED_ACQUISITIONS), 10.0);
		check_near(uf_ev(f, EV_INNER_HOLD_NS_WHILE_OUTER_HELD), 1000,
		           1e-6);
		check_eq(uf_ev(f, EV_INNER_WAIT_NS_WHILE_OUTER_HELD), 0.0);
		check_near(uf_ev(f, EV_OUTER_WAIT_NS), 5000, 1e-6);
		check_near(uf_ev(f, EV_OUTER_HOLD_SHARE_IN_INNER), 1000 / H,
		           1e-12);
		check_eq(uf_ev(f, EV_INNER_ACQUISITIONS), 10.0);
		check(uf_ev(f, EV_OUTER_HOLD_SHARE_IN_INNER) <= 1);
		check(!finding_has(f, EV_INVERSION));
		/* the inner lock is never taken alone: one lock for both */
		check(strstr(f->advice, "use one lock") != NULL);
	}
	uf_free(&u);
}

/* One nesting short of NEST_MIN: no finding. */
static void test_nested_few(void)
{
	uf_t u;
	uf_open(&u);
	nest(&u, TH_NEST_MIN - 1, 5, 0);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_NESTED_LOCK), 0);
	uf_free(&u);
}

/* Nested but neither lock ever waited for: no finding. */
static void test_nested_uncontended(void)
{
	uf_t u;
	uf_open(&u);
	nest(&u, 20, 0, 0);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_NESTED_LOCK), 0);
	uf_free(&u);
}

/* Both orders, 10 times each: one finding, an inversion. */
static void test_inversion(void)
{
	uf_t u;
	uf_open(&u);
	nest(&u, 10, 5, 10);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_NESTED_LOCK);
	if (f) {
		check_eq(uf_ev(f, EV_INVERSION), 1.0);
		check_eq(uf_ev(f, EV_NESTED_ACQUISITIONS), 10.0);
		check_eq(uf_ev(f, EV_REVERSE_NESTED_ACQUISITIONS), 10.0);
		check(f->score > 0);
		check(strncmp(f->advice, "Lock order inversion", 20) == 0);
	}
	uf_free(&u);
}

int main(void)
{
	test_run(test_aul_allocs);
	test_run(test_aul_long_site);
	test_run(test_aul_frees);
	test_run(test_aul_mixed);
	test_run(test_aul_unknown_site);
	test_run(test_aul_uncontended);
	test_run(test_aul_min_share);
	test_run(test_nested);
	test_run(test_nested_few);
	test_run(test_nested_uncontended);
	test_run(test_inversion);
	return test_done();
}
