/*
 * unit_find_futex.c - unit tests of find_futex_locks
 * (analyzer/find/find_futex.c) on small traces (unit_find.h): futex word 1
 * waited on (stack 1) and woken (stack 2) through syscall(). A word some
 * thread both waits on and wakes is a lock word: futex_lock, scored the
 * waiters' time, never more than the trace covers; a signal word (its
 * waiters never wake it) or too few waits, or too little time lost, give
 * none. A lock whose waits and wakes go through one wrapper is named in
 * the advice by the frames past it. Sixteen words fill the model's lock
 * table exactly; of two waiter stacks of equal wait, the first to wait
 * names the word. A finder that loops fails the test by SIGALRM in 20 s,
 * not at CTest's timeout.
 */
#define _GNU_SOURCE /* mkstemp, fdopen (unit_trace.h) */
#include "thresholds.h"
#include "unit_find.h"

#include <unistd.h>

static const uint64_t s1[] = {0x401000}, s2[] = {0x402000};

static ut_chunk_t *thread(uf_t *u, uint32_t tid)
{
	ut_begin(u->c, tid, 0, 1000);
	ut_stack(u->c, 1, 1, s1);
	ut_stack(u->c, 2, 1, s2);
	ut_lock_new(u->c, 1, 0x10040, FMT_KIND_FUTEX, 0);
	return u->c;
}

/*
 * threads threads, each waiting n times for wait ns on word 1 (one wait
 * every 10 * wait ns from tick 10000 + wait) and waking it after each
 * wait when it wakes; end: a last event (lock 99 by thread 9) at that
 * tick, 0: none.
 */
static void words(uf_t *u, int threads, int n, uint64_t wait, bool wakes,
                  uint64_t end)
{
	for (int k = 0; k < threads; k++) {
		ut_chunk_t *c = thread(u, (uint32_t)k + 1);
		for (int i = 0; i < n; i++) {
			uint64_t t = 10000 + wait + (uint64_t)i * 10 * wait +
			             (uint64_t)k;
			ut_ev(c, FMT_FUTEX_WAIT, t, 1, 1, wait, 0, 0);
			if (wakes)
				ut_ev(c, FMT_FUTEX_WAKE, t + 1, 1, 2, 1, 0, 0);
		}
		ut_write(u->f, c);
	}
	if (!wakes) { /* another thread wakes them: a signal word */
		ut_chunk_t *c = thread(u, 8);
		for (int i = 0; i < n; i++)
			ut_ev(c, FMT_FUTEX_WAKE,
			      10000 + wait + (uint64_t)i * 10 * wait + 50, 1, 2,
			      (uint64_t)threads, 0, 0);
		ut_write(u->f, c);
	}
	if (end) {
		ut_chunk_t *c = thread(u, 9);
		ut_lock_new(c, 99, 0x20000, FMT_KIND_MUTEX, 0);
		uf_hold(c, 99, 1, end - 1, 1);
		ut_write(u->f, c);
	}
}

/* Two threads, 5 waits of 1000 ns each, both waking the word. */
static void test_lock_word(void)
{
	uf_t u;
	uf_open(&u);
	words(&u, 2, 5, 1000, true, 0);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_FUTEX_LOCK);
	if (f) {
		check_eq(uf_cls_lock(&u, f->cls), 1);
		check_near(f->score, 10000, 1e-6);
		check_eq(f->severity, SEV_HIGH);
		check_eq(uf_ev(f, EV_LOCK_WORDS), 1.0);
		check_eq(uf_ev(f, EV_FUTEX_WAITS), 10.0);
		check_near(uf_ev(f, EV_LOCK_WAIT_NS), 10000, 1e-6);
		check_near(uf_ev(f, EV_WAIT_MAX_NS), 1000, 1e-6);
		check_near(uf_ev(f, EV_MEAN_WAIT_NS), 1000, 1e-6);
		check_eq(uf_ev(f, EV_FUTEX_WAKES), 10.0);
		check_eq(uf_ev(f, EV_WAITING_THREADS), 2.0);
		check_eq(uf_ev(f, EV_WAKING_THREADS), 2.0);
		check_eq(uf_ev(f, EV_WAITER_STACKS), 1.0);
		check_eq(uf_ev(f, EV_WAKER_STACKS), 1.0);
		check(f->score <= uf_ev(f, EV_COVERED_NS));
	}
	/* a futex word has no holds: no other finding names it */
	check_eq(uf_count(&u, FK_LOCK_CONTENTION), 0);
	check_eq(uf_count(&u, FK_ALLOC_UNDER_LOCK), 0);
	uf_free(&u);
}

/* One wait short of FUTEX_MIN_WAITS: no finding. */
static void test_few_waits(void)
{
	uf_t u;
	uf_open(&u);
	words(&u, 1, TH_FUTEX_MIN_WAITS - 1, 1000, true, 0);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_FUTEX_LOCK), 0);
	uf_free(&u);
}

/* Waiters that never wake the word (woken by thread 8): waiting for
 * work, no finding. */
static void test_signal_word(void)
{
	uf_t u;
	uf_open(&u);
	words(&u, 2, 10, 1000, false, 0);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_FUTEX_LOCK), 0);
	uf_free(&u);
}

/* 20 waits of 10 ns in a trace of 1 s: 0.2 ppm lost, below
 * FUTEX_MIN_LOST_PPM. */
static void test_small_loss(void)
{
	uf_t u;
	uf_open(&u);
	words(&u, 2, 10, 10, true, 1000000000);
	if (!uf_load(&u))
		return;
	check_eq(uf_count(&u, FK_FUTEX_LOCK), 0);
	uf_free(&u);
}

/* Eight threads asleep at once: 8 x 2 waits of 10000 ns, 160000 ns, in
 * a trace of about 100000 ns: scored what the trace covers. */
static void test_capped(void)
{
	uf_t u;
	uf_open(&u);
	words(&u, 8, 2, 10000, true, 0);
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_FUTEX_LOCK);
	if (f) {
		double dur = (double)model_recorded_ns(&u.m);
		check_near(uf_ev(f, EV_LOCK_WAIT_NS), 160000, 1e-6);
		check_eq(uf_ev(f, EV_COVERED_NS), dur);
		check_eq(f->score, dur);
		check(f->score < uf_ev(f, EV_LOCK_WAIT_NS));
	}
	uf_free(&u);
}

/*
 * Waits through fx_wait (stack 3: 0x401000 called from 0x403000) and wakes
 * through the same wrapper (stack 4: 0x401000 called from 0x404000), in
 * module /opt/fx.so at 0x400000: the advice names the callers, the
 * frames where the two stacks part.
 */
static void test_wrapper(void)
{
	static const uint64_t s3[] = {0x401000, 0x403000},
	                      s4[] = {0x401000, 0x404000};
	uf_t u;
	uf_open(&u);
	uint8_t b[128], *p = b;
	p = fmt_put_u(p, 0x400000); /* bias */
	p = fmt_put_u(p, 0x400000);
	p = fmt_put_u(p, 0x500000);
	p = fmt_put_str(p, "/opt/fx.so", 10);
	p = fmt_put_str(p, "", 0); /* no build-id */
	for (uint32_t k = 1; k <= 2; k++) {
		ut_chunk_t *c = u.c;
		ut_begin(c, k, 0, 1000);
		if (k == 1)
			ut_meta(c, FMT_MODULE, b, (size_t)(p - b));
		ut_stack(c, 3, 2, s3);
		ut_stack(c, 4, 2, s4);
		ut_lock_new(c, 1, 0x10040, FMT_KIND_FUTEX, 0);
		for (int i = 0; i < 5; i++) {
			uint64_t t = 11000 + (uint64_t)i * 10000 + k;
			ut_ev(c, FMT_FUTEX_WAIT, t, 1, 3, 1000, 0, 0);
			ut_ev(c, FMT_FUTEX_WAKE, t + 1, 1, 4, 1, 0, 0);
		}
		ut_write(u.f, c);
	}
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_FUTEX_LOCK);
	if (f) {
		check(strstr(f->advice,
		             "wait for this lock in fx.so+0x3000,") != NULL);
		check(strstr(f->advice, "releases it in fx.so+0x4000:") !=
		      NULL);
		if (!strstr(f->advice, "fx.so+0x3000"))
			fprintf(stderr, "  advice: %s\n", f->advice);
	}
	uf_free(&u);
}

/*
 * 16 lock words (ids 1 to 16, at 64-byte steps), each waited on for 1000
 * ns and woken once by each of two threads: one finding over all 16
 * words, 32 waits. 16 is the lock table's first size (vec_grow): the
 * model's table is then exactly full, and a read past its last record is
 * one past the block (AddressSanitizer in the sanitized build).
 */
static void test_full_table(void)
{
	uf_t u;
	uf_open(&u);
	for (uint32_t k = 1; k <= 2; k++) {
		ut_chunk_t *c = thread(&u, k);
		for (uint64_t w = 2; w <= 16; w++)
			ut_lock_new(c, w, 0x10000 + w * 64, FMT_KIND_FUTEX, 0);
		for (uint64_t w = 1; w <= 16; w++) {
			uint64_t t = 10000 + w * 10000 + k * 3000;
			ut_ev(c, FMT_FUTEX_WAIT, t, w, 1, 1000, 0, 0);
			ut_ev(c, FMT_FUTEX_WAKE, t + 1, w, 2, 1, 0, 0);
		}
		ut_write(u.f, c);
	}
	if (!uf_load(&u))
		return;
	check_eq(u.m.nlock, 16);
	const finding_t *f = uf_one(&u, FK_FUTEX_LOCK);
	if (f) {
		check_eq(uf_ev(f, EV_LOCK_WORDS), 16.0);
		check_eq(uf_ev(f, EV_FUTEX_WAITS), 32.0);
		check_near(uf_ev(f, EV_LOCK_WAIT_NS), 32000, 1e-6);
	}
	uf_free(&u);
}

/*
 * Two waiter stacks of equal weight: thread 1 waits on word 1 five times
 * for 1000 ns at stack 3 from tick 11000, thread 2 as long at stack 1
 * from tick 11500; both wake it at stack 2. On a tie the stack that
 * waited first names the word (side_stacks keeps the first of the
 * heaviest, in the order the trace shows them), although stack 1 has
 * the lower id and index.
 */
static void test_tie(void)
{
	static const uint64_t s3[] = {0x403000};
	uf_t u;
	uf_open(&u);
	for (uint32_t k = 1; k <= 2; k++) {
		ut_chunk_t *c = thread(&u, k);
		ut_stack(c, 3, 1, s3);
		for (uint64_t i = 0; i < 5; i++) {
			uint64_t t = 11000 + (k - 1) * 500 + i * 10000;
			ut_ev(c, FMT_FUTEX_WAIT, t, 1, k == 1 ? 3 : 1, 1000, 0,
			      0);
			ut_ev(c, FMT_FUTEX_WAKE, t + 1, 1, 2, 1, 0, 0);
		}
		ut_write(u.f, c);
	}
	if (!uf_load(&u))
		return;
	const finding_t *f = uf_one(&u, FK_FUTEX_LOCK);
	if (f) {
		check_eq(uf_ev(f, EV_WAITER_STACKS), 2.0);
		check(f->stack != NONE32 && u.m.stk[f->stack].id == 3);
	}
	uf_free(&u);
}

int main(void)
{
	alarm(20);
	test_run(test_lock_word);
	test_run(test_few_waits);
	test_run(test_signal_word);
	test_run(test_small_loss);
	test_run(test_capped);
	test_run(test_wrapper);
	test_run(test_full_table);
	test_run(test_tie);
	return test_done();
}
