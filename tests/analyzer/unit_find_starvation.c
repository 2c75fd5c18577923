/*
 * unit_find_starvation.c - unit tests of find_starvation
 * (analyzer/find/find_starvation.c) on small traces (unit_find.h): threads
 * named "client-N" (one role, "threads named client") live 100000 ns each
 * (lock 2 taken at their first and last tick) and take lock 1; the last
 * one gets fewer acquisitions than its peers. Starvation counts the peer
 * behind only as far as it waited for the lock, and needs
 * STARVE_MIN_PEERS peers of one role whose rates of service differ.
 */
#define _GNU_SOURCE /* mkstemp, fdopen (unit_trace.h) */
#include "thresholds.h"
#include "unit_find.h"

#include <stdio.h>

static const uint64_t s1[] = {0x401000};

/*
 * peers threads, the first peers - 1 named client-N taking lock 1 many
 * times (holds of 10 ns, spread over ticks 10100 to 100100); the last, named
 * last, taking it twice, at ticks 31700 and 91700, after a wait of wait ns each
 * (0: ACQ). Every thread takes lock 2 at tick 10000 and at 110000.
 */
static void clients(uf_t *u, int peers, uint64_t many, uint64_t wait,
                    const char *last)
{
	for (int k = 0; k < peers; k++) {
		ut_chunk_t *c = u->c;
		uint32_t tid = (uint32_t)k + 2; /* tid 1 is the main thread */
		char name[32];
		snprintf(name, sizeof name, "client-%d", k + 1);
		ut_begin(c, tid, 0, 1000);
		ut_stack(c, 1, 1, s1);
		ut_lock_new(c, 1, 0x10040, FMT_KIND_MUTEX, 0);
		ut_lock_new(c, 2, 0x10080, FMT_KIND_MUTEX, 0);
		uf_thread_name(c, tid, k == peers - 1 ? last : name);
		uf_hold(c, 2, 1, 10000 + (uint64_t)k, 1);
		if (k < peers - 1)
			for (uint64_t i = 0; i < many; i++)
				uf_hold(c, 1, 1,
				        10100 + i * (90000 / many) +
				            (uint64_t)k * 300,
				        10);
		else
			for (uint64_t t = 31700; t < 100000; t += 60000) {
				if (wait)
					ut_ev(c, FMT_ACQ_WAIT, t, 1, 1, wait, 2,
					      0);
				else
					ut_ev(c, FMT_ACQ, t, 1, 1, 0, 0, 0);
				ut_ev(c, FMT_REL, t + 10, 1, 0, 0, 0, 0);
			}
		uf_hold(c, 2, 1, 110000 + (uint64_t)k, 1);
		ut_write(u->f, c);
	}
}

/* Four clients, the last waiting 20000 ns for each of its 2
 * acquisitions: starvation, scored its wait (40000 ns). */
static void test_starved(void)
{
	uf_t u;
	uf_open(&u);
	clients(&u, 4, 50, 20000, "client-4");
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_STARVATION);
	if (f) {
		check_eq(uf_cls_lock(&u, f->cls), 1);
		check_eq(uf_ev(f, EV_LOCK_ID), 1.0);
		check_near(f->score, 40000, 1e-6);
		check_near(uf_ev(f, EV_LOST_NS), 40000, 1e-6);
		check_eq(uf_ev(f, EV_THREADS), 4.0);
		check_eq(uf_ev(f, EV_THREADS_BEHIND), 1.0);
		check_eq(uf_ev(f, EV_THREADS_WITH_NO_ACQUISITION), 0.0);
		check_eq(uf_ev(f, EV_SERVICE_BY_COND_WAKES), 0.0);
		check_eq(uf_ev(f, EV_SERVICE_TOTAL), 152.0);
		check_eq(uf_ev(f, EV_SERVICE_MIN), 2.0);
		check_eq(uf_ev(f, EV_SERVICE_MAX), 50.0);
		check_near(uf_ev(f, EV_BEHIND_LOCK_WAIT_NS), 40000, 1e-6);
		check_eq(uf_ev(f, EV_AHEAD_LOCK_WAIT_SHARE), 0.0);
		check(uf_ev(f, EV_ACQUISITIONS_CV) * 100 >= TH_STARVE_CV_PCT);
		/* Mean waits per acquisition 0, 0, 0 and 20000 ns: mean
		 * 5000, deviation 5000 * sqrt(3). */
		check_near(uf_ev(f, EV_MEAN_WAIT_CV), sqrt(3.0), 1e-9);
		check(f->score <= uf_ev(f, EV_COVERED_NS));
		check(uf_ev(f, EV_LOST_NS) <= uf_ev(f, EV_UNWEIGHTED_LOST_NS));
		check(strstr(f->advice, "client") != NULL);
	}
	uf_free(&u);
}

/* The one behind never waited for the lock, or waited 2 % of its life
 * (below STARVE_MIN_WAIT_PCT): something else held it back, no finding. */
static void test_no_demand(void)
{
	for (uint64_t wait = 0; wait <= 1000; wait += 1000) {
		uf_t u;
		uf_open(&u);
		clients(&u, 4, 50, wait, "client-4");
		if (!uf_load(&u))
			return;
		check_eq(uf_count(&u, FK_STARVATION), 0);
		uf_free(&u);
	}
}

/* Two peers, enough service (102 acquisitions) but fewer peers than
 * STARVE_MIN_PEERS: no finding. */
static void test_few_peers(void)
{
	uf_t u;
	uf_open(&u);
	clients(&u, TH_STARVE_MIN_PEERS - 1, 100, 20000, "client-9");
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_STARVATION), 0);
	uf_free(&u);
}

/* The one behind is of another role (server): no peer of the clients,
 * no finding. */
static void test_other_role(void)
{
	uf_t u;
	uf_open(&u);
	clients(&u, 4, 50, 20000, "server-1");
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_STARVATION), 0);
	uf_free(&u);
}

/* Too little service to compare: 3 clients of 20 acquisitions and the
 * one behind, 62 in all, fewer than STARVE_MIN_OPS. */
static void test_little_service(void)
{
	uf_t u;
	uf_open(&u);
	clients(&u, 4, 20, 20000, "client-4");
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_STARVATION), 0);
	uf_free(&u);
}

/*
 * Four clients visit lock 1 and wait on condition 3 under it: clients 1-3
 * are woken WOKEN times each, one wake a visit; client-4 visits it 20
 * times and is woken once. The wakes add up to STARVE_MIN_OPS exactly, so
 * service is counted by wakes, and client-4, awake and visiting, is
 * behind: a finding. Counted by acquisitions (33, 33, 33, 20) the clients
 * are too alike for one.
 */
#define WOKEN ((TH_STARVE_MIN_OPS - 1) / 3)
_Static_assert(3 * WOKEN + 1 == TH_STARVE_MIN_OPS, "wakes add up");

static void test_by_wakes(void)
{
	uf_t u;
	uf_open(&u);
	for (int k = 0; k < 4; k++) {
		ut_chunk_t *c = u.c;
		uint32_t tid = (uint32_t)k + 2;
		char name[32];
		snprintf(name, sizeof name, "client-%d", k + 1);
		ut_begin(c, tid, 0, 1000);
		ut_stack(c, 1, 1, s1);
		ut_lock_new(c, 1, 0x10040, FMT_KIND_MUTEX, 0);
		ut_lock_new(c, 2, 0x10080, FMT_KIND_MUTEX, 0);
		ut_lock_new(c, 3, 0x100c0, FMT_KIND_COND, 0);
		uf_thread_name(c, tid, name);
		uf_hold(c, 2, 1, 10000 + (uint64_t)k, 1);
		uint64_t n = k < 3 ? WOKEN : 20;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t t =
			    10100 + i * (90000 / n) + (uint64_t)k * 300;
			ut_ev(c, FMT_ACQ, t, 1, 1, 0, 0, 0);
			if (k < 3 || i == 0) {
				ut_ev(c, FMT_COND_WAIT, t + 5, 3, 1, 0, 0, 0);
				ut_ev(c, FMT_COND_WAKE, t + 15, 3, 1, 0, 0, 0);
			}
			ut_ev(c, FMT_REL, t + 20, 1, 0, 0, 0, 0);
		}
		uf_hold(c, 2, 1, 110000 + (uint64_t)k, 1);
		ut_write(u.f, c);
	}
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_STARVATION);
	if (f) {
		check_eq(uf_ev(f, EV_LOCK_ID), 1.0);
		check_eq(uf_ev(f, EV_SERVICE_BY_COND_WAKES), 1.0);
		check_eq(uf_ev(f, EV_SERVICE_TOTAL), (double)TH_STARVE_MIN_OPS);
		check_eq(uf_ev(f, EV_SERVICE_MIN), 1.0);
		check_eq(uf_ev(f, EV_SERVICE_MAX), (double)WOKEN);
		check_eq(uf_ev(f, EV_THREADS_BEHIND), 1.0);
	}
	uf_free(&u);
}

/*
 * The time the trace covers for the peers behind runs from the first
 * event of the earliest of them to the last of the latest, however early
 * in the trace that is. At a tick of 0.0001 ns (a 10 THz clock, the
 * fastest the reader accepts), four clients live 8000 ticks (0.8 ns)
 * from the trace's start: clients 1-3 take lock 1 50 times each, client-4
 * once, after a wait of 6000 ticks; client-4 (ticks 1003 to 9004) is the
 * one behind.
 */
static void test_covered_early(void)
{
	uf_t u;
	uf_open_hz(&u, 10000000000000ull);
	for (int k = 0; k < 4; k++) {
		ut_chunk_t *c = u.c;
		uint32_t tid = (uint32_t)k + 2;
		char name[32];
		snprintf(name, sizeof name, "client-%d", k + 1);
		ut_begin(c, tid, 0, 1000);
		ut_stack(c, 1, 1, s1);
		ut_lock_new(c, 1, 0x10040, FMT_KIND_MUTEX, 0);
		ut_lock_new(c, 2, 0x10080, FMT_KIND_MUTEX, 0);
		uf_thread_name(c, tid, name);
		uf_hold(c, 2, 1, 1000 + (uint64_t)k, 1);
		if (k < 3)
			for (uint64_t i = 0; i < 50; i++)
				uf_hold(c, 1, 1,
				        1100 + i * 150 + (uint64_t)k * 30, 10);
		else {
			ut_ev(c, FMT_ACQ_WAIT, 7000, 1, 1, 6000, 2, 0);
			ut_ev(c, FMT_REL, 7010, 1, 0, 0, 0, 0);
		}
		uf_hold(c, 2, 1, 9000 + (uint64_t)k, 1);
		ut_write(u.f, c);
	}
	if (!uf_load(&u))
		return;
	check_near(u.m.ns_per_tick, 1e-4, 1e-12);
	const finding_t *f = uf_one(&u, FK_STARVATION);
	if (f) {
		check_eq(uf_ev(f, EV_THREADS_BEHIND), 1.0);
		check_near(uf_ev(f, EV_COVERED_NS), (9004 - 1003) * 1e-4, 1e-9);
		check(f->score <= uf_ev(f, EV_COVERED_NS));
	}
	uf_free(&u);
}

int main(void)
{
	test_run(test_starved);
	test_run(test_no_demand);
	test_run(test_few_peers);
	test_run(test_other_role);
	test_run(test_little_service);
	test_run(test_by_wakes);
	test_run(test_covered_early);
	return test_done();
}
