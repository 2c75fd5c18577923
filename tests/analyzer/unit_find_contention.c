/*
 * unit_find_contention.c - unit tests of find_lock_contention
 * (analyzer/find/find_contention.c) on small traces (unit_find.h's
 * uf_contend: one lock, two threads, n contended rounds of hold ticks):
 * which contended locks get a lock_contention finding, its score (the lost
 * wait, n * hold ns) and severity, its evidence, and when the lock is left
 * to alloc_under_lock instead (allocator time of CONT_ALLOC_SHARE_PCT of
 * the holds and more) or to no one (below CONT_MIN_WAITS waits, below
 * CONT_MIN_LOST_PPM of the trace, the allocator's own lock), and its
 * code when no holder stack was recorded: the heaviest waiter stack.
 */
#define _GNU_SOURCE /* mkstemp, fdopen (unit_trace.h) */
#include "thresholds.h"
#include "unit_find.h"

/* 20 rounds of 1000 ns: 20000 ns lost in a trace of about 60000 ns. */
static void test_plain(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(&u, &(uf_contend_t){1, FMT_KIND_MUTEX, 20, 1000, 0, 0, 0});
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_ALLOC_UNDER_LOCK), 0);
	const finding_t *f = uf_one(&u, FK_LOCK_CONTENTION);
	if (f) {
		check_eq(uf_cls_lock(&u, f->cls), 1);
		check_near(f->score, 20000, 1);
		check_eq(f->severity, SEV_HIGH);
		check_near(uf_ev(f, EV_LOCK_WAIT_NS), 20000, 1);
		check_eq(uf_ev(f, EV_CONTENDED), 20.0);
		check_eq(uf_ev(f, EV_ACQUISITIONS), 40.0);
		check_near(uf_ev(f, EV_CONTENDED_SHARE), 0.5, 1e-9);
		check_eq(uf_ev(f, EV_THREADS), 2.0);
		check_eq(uf_ev(f, EV_WAITING_THREADS), 1.0);
		check_eq(uf_ev(f, EV_HOLDER_STACKS), 1.0);
		check_eq(uf_ev(f, EV_TOP_HOLDER_SHARE), 1.0);
		check_eq(uf_ev(f, EV_ALLOCATOR_SHARE_OF_HOLD), 0.0);
		check_near(uf_ev(f, EV_OWN_WORK_SHARE), 1, 1e-9);
		check(uf_ev(f, EV_HOLDS) <= uf_ev(f, EV_ACQUISITIONS));
		check(f->advice[0] != 0);
	}
	uf_free(&u);
}

/* One wait short of CONT_MIN_WAITS: no finding. */
static void test_few_waits(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(&u, &(uf_contend_t){1, FMT_KIND_MUTEX, TH_CONT_MIN_WAITS - 1,
	                               1000, 0, 0, 0});
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_LOCK_CONTENTION), 0);
	check_eq(uf_count(&u, FK_ALLOC_UNDER_LOCK), 0);
	uf_free(&u);
}

/* 20 waits of 10 ns in a trace of 1 s: 0.2 ppm lost, below
 * CONT_MIN_LOST_PPM. */
static void test_small_loss(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(
	    &u, &(uf_contend_t){1, FMT_KIND_MUTEX, 20, 10, 0, 0, 1000000000});
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_LOCK_CONTENTION), 0);
	uf_free(&u);
}

/* The same 20000 ns in a trace of 400000 ns: 5 %, medium. */
static void test_medium(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(&u,
	           &(uf_contend_t){1, FMT_KIND_MUTEX, 20, 1000, 0, 0, 401000});
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_LOCK_CONTENTION);
	if (f) {
		check_near(f->score, 20000, 1);
		check_eq(f->severity, SEV_MEDIUM);
	}
	uf_free(&u);
}

/* Holders allocate 1 % of their hold (200 ns of the 20200 the two
 * threads held it): lock_contention, the allocator's
 * share in its evidence, and the lock's alloc_under_lock finding gone. */
static void test_alloc_small_share(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(&u, &(uf_contend_t){1, FMT_KIND_MUTEX, 20, 1000, 10, 0, 0});
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_ALLOC_UNDER_LOCK), 0);
	const finding_t *f = uf_one(&u, FK_LOCK_CONTENTION);
	if (f) {
		check_near(f->score, 20000, 1);
		check_near(uf_ev(f, EV_ALLOCATOR_SHARE_OF_HOLD), 200.0 / 20200,
		           1e-9);
		check_near(uf_ev(f, EV_ALLOCATOR_NS_IN_HOLDS), 200, 1e-6);
		check_near(uf_ev(f, EV_OWN_WORK_SHARE), 20000.0 / 20200, 1e-9);
	}
	uf_free(&u);
}

/* Holders allocate 10 % of their hold (2000 of 20200 ns): the lock's one
 * finding is alloc_under_lock, scored the whole lost wait, with the contention
 * evidence; no lock_contention. */
static void test_alloc_explains(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(&u, &(uf_contend_t){1, FMT_KIND_MUTEX, 20, 1000, 100, 0, 0});
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_LOCK_CONTENTION), 0);
	const finding_t *f = uf_one(&u, FK_ALLOC_UNDER_LOCK);
	if (f) {
		check_eq(uf_cls_lock(&u, f->cls), 1);
		check_near(f->score, 20000, 1);
		check_eq(f->severity, SEV_HIGH);
		check_eq(uf_ev(f, EV_ALLOC_SITES_FOLDED), 0.0);
		check_eq(uf_ev(f, EV_CONTENDED), 20.0);
		check_eq(uf_ev(f, EV_WAITING_THREADS), 1.0);
		check_near(uf_ev(f, EV_ALLOCATOR_SHARE_OF_HOLD), 2000.0 / 20200,
		           1e-9);
	}
	uf_free(&u);
}

/* The allocator's own lock, however contended, is alloc_under_lock's and
 * slow_alloc's to explain: no lock_contention. */
static void test_allocator_lock(void)
{
	uf_t u;
	uf_open(&u);
	uf_contend(
	    &u, &(uf_contend_t){1, FMT_KIND_ALLOC_INTERNAL, 20, 1000, 0, 0, 0});
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_LOCK_CONTENTION), 0);
	uf_free(&u);
}

/*
 * No holder stacks (every release uncontended): the finding's code is its
 * heaviest waiter stack. Thread 2 waits 10 times for 900 ns at stack 6,
 * then 10 times for 100 ns at stack 5 (defined first: the lower index).
 */
static void test_top_waiter(void)
{
	static const uint64_t fr[6][1] = {{0x401000}, {0x402000}, {0x403000},
	                                  {0x404000}, {0x405000}, {0x406000}};
	uf_t u;
	uf_open(&u);
	ut_chunk_t *c = u.c;
	ut_begin(c, 1, 0, 1000);
	for (int k = 0; k < 6; k++)
		ut_stack(c, (uint64_t)k + 1, 1, fr[k]);
	ut_lock_new(c, 1, 0x10040, FMT_KIND_MUTEX, 0);
	for (int i = 0; i < 20; i++)
		uf_hold(c, 1, 1, 10000 + (uint64_t)i * 2000, 1000);
	ut_write(u.f, c);
	ut_begin(c, 2, 0, 1000);
	for (int i = 0; i < 20; i++) {
		uint64_t t = 10000 + (uint64_t)i * 2000 + 1001;
		ut_ev(c, FMT_ACQ_WAIT, t, 1, i < 10 ? 6 : 5, i < 10 ? 900 : 100,
		      2, 0);
		ut_ev(c, FMT_REL, t + 10, 1, 0, 0, 0, 0);
	}
	ut_write(u.f, c);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_LOCK_CONTENTION);
	if (f) {
		check_near(uf_ev(f, EV_LOCK_WAIT_NS), 10000, 1);
		check_eq(uf_ev(f, EV_WAITER_STACKS), 2.0);
		check(f->stack < u.m.nstk);
		if (f->stack < u.m.nstk)
			check_eq(u.m.stk[f->stack].id, 6);
	}
	uf_free(&u);
}

/*
 * Two holder stacks: thread 1 releases lock 1 contended at stack 6 ten
 * times, each after a wait of w6 ns, then at stack 5 (defined first: the
 * lower index) ten times after waits of w5 ns; thread 2, the waiter,
 * holds it 900 ns each time (no tail of long holds).
 */
static void two_holders(uf_t *u, uint64_t w6, uint64_t w5)
{
	static const uint64_t fr[6][1] = {{0x401000}, {0x402000}, {0x403000},
	                                  {0x404000}, {0x405000}, {0x406000}};
	uf_open(u);
	ut_chunk_t *c = u->c;
	ut_begin(c, 1, 0, 1000);
	for (int k = 0; k < 6; k++)
		ut_stack(c, (uint64_t)k + 1, 1, fr[k]);
	ut_lock_new(c, 1, 0x10040, FMT_KIND_MUTEX, 0);
	for (int i = 0; i < 20; i++) {
		uint64_t t = 10000 + (uint64_t)i * 2000;
		ut_ev(c, FMT_ACQ, t, 1, 1, 0, 0, 0);
		ut_ev(c, FMT_REL_CONTENDED, t + 1000, 1, i < 10 ? 6 : 5, 0, 0,
		      0);
	}
	ut_write(u->f, c);
	ut_begin(c, 2, 0, 1000);
	for (int i = 0; i < 20; i++) {
		uint64_t t = 10000 + (uint64_t)i * 2000 + 1001;
		ut_ev(c, FMT_ACQ_WAIT, t, 1, 2, i < 10 ? w6 : w5, 2, 0);
		ut_ev(c, FMT_REL, t + 900, 1, 0, 0, 0, 0);
	}
	ut_write(u->f, c);
}

/* Waits of 900 and 100 ns: the heaviest holder stack, 6, is the
 * finding's code and its top holder, having caused 9000 ns. */
static void test_top_holder(void)
{
	uf_t u;
	two_holders(&u, 900, 100);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_LOCK_CONTENTION);
	if (f) {
		check_eq(uf_ev(f, EV_HOLDER_STACKS), 2.0);
		check_near(uf_ev(f, EV_TOP_HOLDER_WAIT_CAUSED_NS), 9000, 1);
		check_near(uf_ev(f, EV_TOP_HOLDER_SHARE), 0.9, 1e-9);
		check(f->stack < u.m.nstk);
		if (f->stack < u.m.nstk)
			check_eq(u.m.stk[f->stack].id, 6);
	}
	uf_free(&u);
}

/* Waits of 500 ns at both: the top holder caused half the wait,
 * CONT_DOMINANT_PCT exactly, and the advice names one holder. */
static void test_dominant_holder(void)
{
	uf_t u;
	two_holders(&u, 500, 500);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_LOCK_CONTENTION);
	if (f) {
		check_near(uf_ev(f, EV_TOP_HOLDER_SHARE) * 100,
		           TH_CONT_DOMINANT_PCT, 1e-9);
		if (!check(strncmp(f->advice,
		                   "One holder causes most of the wait",
		                   34) == 0))
			fprintf(stderr, "  advice: %s\n", f->advice);
	}
	uf_free(&u);
}

int main(void)
{
	test_run(test_plain);
	test_run(test_few_waits);
	test_run(test_small_loss);
	test_run(test_medium);
	test_run(test_alloc_small_share);
	test_run(test_alloc_explains);
	test_run(test_allocator_lock);
	test_run(test_top_waiter);
	test_run(test_top_holder);
	test_run(test_dominant_holder);
	return test_done();
}
