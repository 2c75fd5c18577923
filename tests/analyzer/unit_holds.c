/*
 * unit_holds.c - unit test of the model's hold accounting
 * (analyzer/model/aggregate*.c, through load_trace): one thread holds lock
 * 1 twice, 100 ticks with two allocations and a free inside, then 50 ticks
 * with nothing; lock 2 is taken and never released. 1 tick is 1 ns (the
 * chunk's clock pair). The lock's counters must say two completed holds,
 * 150 ns held, 100 the longest, one hold that called the allocator with
 * three calls, two of them allocations. Thread 2 waits twice on a
 * condition in a hold of lock 3, the first wait timed out. A second trace nests
 * 20 holds (more than the 16 running sums a thread's first snapshot array
 * holds), each with one allocation inside: the outermost lock counts all 20,
 * the innermost its own; the replay (replay.c) reports each lock's one hold, as
 * long as the model counts it. A third trace gives the replay a contended
 * release whose acquisition is not in the trace (an instant at the release)
 * and a wait on the allocator's lock inside a hold (its own event, ending at
 * its record, as long as the model's allocator lock wait).
 */
#define _GNU_SOURCE /* mkstemp, fdopen (unit_trace.h) */
#include "load.h"
#include "replay.h"
#include "unit_trace.h"

static const lock_t *lock_of(const model_t *m, uint64_t id)
{
	for (size_t i = 0; i < m->nlock; i++)
		if (m->lock[i].id == id)
			return &m->lock[i];
	check(!"lock id not in the model");
	return NULL;
}

/* Stack 5: one frame. */
static const uint64_t s5[] = {0x5000};

/* The traces' start: a process chunk (1 ns a tick), then thread 1's chunk
 * begun with stack 5 (one frame) and mutexes 1 and 2; *f is the file. */
static ut_chunk_t *begin_thread(FILE **f, char *path, size_t len)
{
	*f = ut_open(path, len);
	ut_chunk_t *c = malloc(sizeof *c);
	ut_begin(c, 0, 0, 1000);
	ut_process(c, 1, 1000, 1000, 1000000000);
	ut_write(*f, c);
	ut_begin(c, 1, 0, 1000);
	ut_stack(c, 5, 1, s5);
	ut_lock_new(c, 1, 0x10040, FMT_KIND_MUTEX, 0);
	ut_lock_new(c, 2, 0x10080, FMT_KIND_MUTEX, 0);
	return c;
}

static void write_trace(char *path, size_t len)
{
	FILE *f;
	ut_chunk_t *c = begin_thread(&f, path, len);
	ut_ev(c, FMT_ACQ, 1000, 1, 5, 0, 0, 0);
	ut_ev(c, FMT_ALLOC, 1010, 0x900000, 32, 5, 4, FMT_FN_MALLOC);
	ut_ev(c, FMT_ALLOC, 1020, 0x900100, 64, 5, 4, FMT_FN_MALLOC);
	ut_ev(c, FMT_FREE, 1030, 0x900000, 3, 0, 0, 0);
	ut_ev(c, FMT_REL, 1100, 1, 0, 0, 0, 0);
	ut_ev(c, FMT_ACQ, 1200, 1, 5, 0, 0, 0);
	ut_ev(c, FMT_REL, 1250, 1, 0, 0, 0, 0);
	ut_ev(c, FMT_ACQ, 1300, 2, 5, 0, 0, 0);
	ut_write(f, c);
	/* thread 2: two condition waits in a hold of lock 3, the first
	 * timed out */
	ut_begin(c, 2, 0, 1000);
	ut_stack(c, 5, 1, s5);
	ut_lock_new(c, 3, 0x100c0, FMT_KIND_MUTEX, 0);
	ut_lock_new(c, 4, 0x10100, FMT_KIND_COND, 0);
	ut_ev(c, FMT_ACQ, 2000, 3, 5, 0, 0, 0);
	ut_ev(c, FMT_COND_WAIT, 2010, 4, 3, 0, 0, 0);
	ut_ev(c, FMT_COND_WAKE, 2100, 4, 3, FMT_WAKEF_TIMEDOUT, 0, 0);
	ut_ev(c, FMT_COND_WAIT, 2110, 4, 3, 0, 0, 0);
	ut_ev(c, FMT_COND_WAKE, 2150, 4, 3, 0, 0, 0);
	ut_ev(c, FMT_REL, 2160, 3, 0, 0, 0, 0);
	ut_write(f, c);
	fclose(f);
	free(c);
}

static model_t m;

static void test_holds(void)
{
	const lock_t *l = lock_of(&m, 1);
	if (!l)
		return;
	check_eq(l->s.acq, 2);
	check_eq(l->s.holds, 2);
	check_eq(l->s.hold_ns, 150);
	check_eq(l->s.hold_max, 100);
	check_eq(l->s.holds_with_alloc, 1);
	check_eq(l->s.alloc_calls, 3);
	check_eq(l->s.alloc_allocs, 2);
	const lock_t *open = lock_of(&m, 2);
	if (open) {
		check_eq(open->s.acq, 1);
		check_eq(open->s.holds, 0); /* never released: not completed */
	}
	const lock_t *cl = lock_of(&m, 3);
	if (cl) {
		check_eq(cl->s.cond_wakes, 2);
		check_eq(cl->s.cond_timeouts, 1);
	}
}

#define NEST 20

static void write_nested(char *path, size_t len)
{
	FILE *f = ut_open(path, len);
	ut_chunk_t *c = malloc(sizeof *c);
	ut_begin(c, 0, 0, 1000);
	ut_process(c, 1, 1000, 1000, 1000000000);
	ut_write(f, c);
	ut_begin(c, 1, 0, 1000);
	ut_stack(c, 5, 1, s5);
	for (uint64_t k = 0; k < NEST; k++) {
		ut_lock_new(c, 10 + k, 0x20000 + k * 64, FMT_KIND_MUTEX, 0);
		ut_ev(c, FMT_ACQ, 1000 + k * 10, 10 + k, 5, 0, 0, 0);
		ut_ev(c, FMT_ALLOC, 1005 + k * 10, 0x900000 + k * 64, 32, 5, 2,
		      FMT_FN_MALLOC);
	}
	for (uint64_t k = NEST; k-- > 0;)
		ut_ev(c, FMT_REL, 2000 + (NEST - k) * 10, 10 + k, 0, 0, 0, 0);
	ut_write(f, c);
	fclose(f);
	free(c);
}

static void test_nested(void)
{
	for (uint64_t k = 0; k < NEST; k++) {
		const lock_t *l = lock_of(&m, 10 + k);
		if (!l)
			return;
		check_eq(l->s.holds, 1);
		check_eq(l->s.holds_with_alloc, 1);
		check_eq(l->s.alloc_allocs, NEST - k);
	}
}

/* The second pass (replay.c) over the nested trace: each lock's one
 * hold, matched to its own acquisition, as long as the model's. */
static uint64_t rholds[NEST], rns[NEST];

static void on_replay(void *ctx, const replay_ev_t *e)
{
	const model_t *mm = ctx;
	if (e->kind != REPLAY_HOLD || !e->matched)
		return;
	uint64_t k = mm->lock[e->lock].id - 10;
	if (k < NEST) {
		rholds[k]++;
		rns[k] += e->ns;
	}
}

static void test_replay(void)
{
	check_eq(replay(&m, on_replay, &m), 0);
	for (uint64_t k = 0; k < NEST; k++) {
		const lock_t *l = lock_of(&m, 10 + k);
		if (!l)
			return;
		check_eq(rholds[k], 1);
		check_eq(rns[k], l->s.hold_ns);
	}
}

/* Thread 1 holds lock 1 from tsc 1000 to 1100 and, in it, waits 30 ticks
 * for the allocator's lock 9 in a malloc (ALLOC_LOCK_WAIT at 1040); at
 * 1500 it releases lock 2, contended, which it took before the trace. */
static void write_edges(char *path, size_t len)
{
	FILE *f;
	ut_chunk_t *c = begin_thread(&f, path, len);
	ut_ev(c, FMT_ACQ, 1000, 1, 5, 0, 0, 0);
	ut_ev(c, FMT_ALLOC_LOCK_WAIT, 1040, 9, 30, 0, 0, 0);
	ut_ev(c, FMT_ALLOC, 1041, 0x900000, 32, 5, 35, FMT_FN_MALLOC);
	ut_ev(c, FMT_REL, 1100, 1, 0, 0, 0, 0);
	ut_ev(c, FMT_REL_CONTENDED, 1500, 2, 5, 0, 0, 0);
	ut_write(f, c);
	fclose(f);
	free(c);
}

typedef struct edges {
	const model_t *m;
	unsigned unmatched, alloc_waits;
	replay_ev_t rel, aw;
	uint32_t aw_held;
} edges_t;

static void on_edges(void *ctx, const replay_ev_t *e)
{
	edges_t *x = ctx;
	if (e->kind == REPLAY_HOLD && !e->matched) {
		x->unmatched++;
		x->rel = *e;
	} else if (e->kind == REPLAY_ALLOC_WAIT) {
		x->alloc_waits++;
		x->aw = *e;
		x->aw_held = e->nheld == 1 ? e->held[0] : NONE32;
	}
}

static void test_replay_edges(void)
{
	const lock_t *l1 = lock_of(&m, 1), *l2 = lock_of(&m, 2),
	             *l9 = lock_of(&m, 9);
	if (!l1 || !l2 || !l9)
		return;
	edges_t x = {.m = &m};
	check_eq(replay(&m, on_edges, &x), 0);
	/* 1 tick is 1 ns; times count from the trace's first event */
	uint64_t t_rel = 1500 - m.first_tsc, t_aw = 1040 - m.first_tsc;
	if (check_eq(x.unmatched, 1)) {
		check_eq(x.rel.lock, (uint32_t)(l2 - m.lock));
		check(x.rel.contended);
		check_eq(x.rel.t1, t_rel);
		check_eq(x.rel.t0, x.rel.t1); /* an instant: no start seen */
		check_eq(x.rel.ns, 0);
	}
	if (check_eq(x.alloc_waits, 1)) {
		check_eq(x.aw.lock, (uint32_t)(l9 - m.lock));
		check_eq(x.aw_held, (uint32_t)(l1 - m.lock));
		check_eq(x.aw.ns, 30);
		check_eq(x.aw.ns, m.tot.alloc_lw_ns);
		check_eq(x.aw.t1, t_aw);
		check_eq(x.aw.t0, t_aw - 30);
	}
}

static char path[256];

static int load(void (*write)(char *, size_t))
{
	write(path, sizeof path);
	load_opts_t o = {.symbols = false, .quiet = true};
	int rc = load_trace(path, &m, NULL, &o);
	return check_eq(rc, 0);
}

int main(void)
{
	if (load(write_trace)) {
		test_run(test_holds);
		load_free(&m);
	}
	unlink(path);
	memset(&m, 0, sizeof m);
	if (load(write_nested)) {
		test_run(test_nested);
		test_run(test_replay);
		load_free(&m);
	}
	unlink(path);
	memset(&m, 0, sizeof m);
	if (load(write_edges)) {
		test_run(test_replay_edges);
		load_free(&m);
	}
	unlink(path);
	return test_done();
}
