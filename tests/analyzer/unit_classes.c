/*
 * unit_classes.c - unit tests of analyzer/model/classes.c: lock instances into
 * lock classes (classes_build) and each thread's activity
 * (thread_activity), on a model read from a trace written record by record
 * (no MODULE record: frames stay addresses, every frame is a user frame, so
 * a stack's site is its first frame).
 *
 * Locks (ids) and what classes_build must make of them:
 *   1, 2, 3   initialised at 0x1000 (two callers: stacks 10 and 11): one
 *             class keyed 0x1000, by init, 3 instances; its representative
 *             is lock 2 (the only one waited on) although lock 3 has more
 *             acquisitions; named "q" and queue-like (lock 3's name).
 *   4, 5      never initialised, first acquired at 0x3000 (stacks 20 and
 *             21): one class by first site.
 *   12        initialised at a stack never defined, first acquired at
 *             0x3000: joins 4 and 5 (falls back to the first site). The
 *             representative of 4, 5, 12 is 5 (no waits; most acquisitions:
 *             3 against 2 and 1).
 *   6         initialised at 0x2000: a class of its own, queue-like (a
 *             condition variable waits on it).
 *   7, 8      allocator-internal, acquired at 0x3000: a class each, with
 *             no site.
 *   11        acquired with no site at all: a class of its own.
 *   13        never initialised, first acquired at 0x4800 (8 holds), also
 *             at 0x4000 (7 holds): the two tie (7 is at least 7/8 of 8),
 *             so the lower address keys and names it: class 0x4000.
 *   14        never initialised, acquired at 0x5000 (7 holds) first, then
 *             at 0x5800 (9 holds): 7 is under 7/8 of 9, so 0x5800.
 *   9         a condition variable: no class.
 *   10        only destroyed (never defined, taken or named): no class.
 * Threads: 1 is the process's main thread; 2 waits on the condition
 * (consumer); 3 signals it (producer); 4 only takes locks, 5 only
 * allocates (workers); 6 does nothing (idle).
 */
#define _GNU_SOURCE /* mkstemp, fdopen (unit_trace.h) */
#include "test.h"
#include "classes.h"
#include "load.h"
#include "unit_trace.h"

static uint32_t lock_ix(model_t *m, uint64_t id)
{
	for (size_t i = 0; i < m->nlock; i++)
		if (m->lock[i].id == id)
			return (uint32_t)i;
	check(!"lock id not in the model");
	return 0;
}

static const lockclass_t *cls_of(model_t *m, uint64_t id)
{
	uint32_t c = m->lock[lock_ix(m, id)].cls;
	check(c != NONE32 && c < m->ncls);
	return c != NONE32 && c < m->ncls ? &m->cls[c] : NULL;
}

static const thread_t *thr(model_t *m, uint32_t tid)
{
	for (size_t i = 0; i < m->nthr; i++)
		if (m->thr[i].tid == tid)
			return &m->thr[i];
	check(!"thread not in the model");
	return &m->thr[0];
}

static void acq(ut_chunk_t *c, uint64_t *t, uint64_t lock, uint64_t site)
{
	ut_ev(c, FMT_ACQ, ++*t, lock, site, 0, 0, 0);
	ut_ev(c, FMT_REL, ++*t, lock, 0, 0, 0, 0);
}

static void write_trace(char *path, size_t len)
{
	FILE *f = ut_open(path, len);
	ut_chunk_t *c = malloc(sizeof *c);
	uint64_t t = 1000;
	ut_begin(c, 0, 0, t);
	ut_process(c, 1, t, t, 1000000000);
	ut_write(f, c);

	ut_begin(c, 1, 0, t);
	static const uint64_t s10[] = {0x1000, 0x5000},
	                      s11[] = {0x1000, 0x6000}, s12[] = {0x2000},
	                      s20[] = {0x3000}, s21[] = {0x3000, 0x7000},
	                      s22[] = {0x4000}, s23[] = {0x4800},
	                      s24[] = {0x5000}, s25[] = {0x5800};
	ut_stack(c, 10, 2, s10);
	ut_stack(c, 11, 2, s11);
	ut_stack(c, 12, 1, s12);
	ut_stack(c, 20, 1, s20);
	ut_stack(c, 21, 2, s21);
	ut_stack(c, 22, 1, s22);
	ut_stack(c, 23, 1, s23);
	ut_stack(c, 24, 1, s24);
	ut_stack(c, 25, 1, s25);
	for (uint64_t id = 1; id <= 14; id++)
		if (id != 10)
			ut_lock_new(c, id, 0x10000 + id * 64,
			            id == 9 ? FMT_KIND_COND
			            : id == 7 || id == 8
			                ? FMT_KIND_ALLOC_INTERNAL
			                : FMT_KIND_MUTEX,
			            0);
	ut_lock_name(c, 3, FMT_NAMEF_QUEUE, "q");
	ut_ev(c, FMT_LOCK_INIT, ++t, 1, 10, 0, 0, 0);
	ut_ev(c, FMT_LOCK_INIT, ++t, 2, 11, 0, 0, 0);
	ut_ev(c, FMT_LOCK_INIT, ++t, 3, 10, 0, 0, 0);
	ut_ev(c, FMT_LOCK_INIT, ++t, 6, 12, 0, 0, 0);
	ut_ev(c, FMT_LOCK_INIT, ++t, 9, 12, 0, 0, 0);
	ut_ev(c, FMT_LOCK_INIT, ++t, 12, 999, 0, 0, 0);
	for (int i = 0; i < 3; i++)
		acq(c, &t, 1, 20);
	ut_ev(c, FMT_ACQ_WAIT, t += 500, 2, 20, 500, 2, 0);
	ut_ev(c, FMT_REL, ++t, 2, 0, 0, 0, 0);
	for (int i = 0; i < 5; i++)
		acq(c, &t, 3, 20);
	acq(c, &t, 4, 20);
	for (int i = 0; i < 3; i++)
		acq(c, &t, 5, 21);
	acq(c, &t, 12, 20);
	acq(c, &t, 7, 20);
	acq(c, &t, 8, 20);
	acq(c, &t, 11, 0);
	for (int i = 0; i < 8; i++)
		acq(c, &t, 13, 23);
	for (int i = 0; i < 7; i++) {
		acq(c, &t, 13, 22);
		acq(c, &t, 14, 24);
	}
	for (int i = 0; i < 9; i++)
		acq(c, &t, 14, 25);
	ut_ev(c, FMT_LOCK_DESTROY, ++t, 10, 0, 0, 0, 0);
	ut_write(f, c);

	ut_begin(c, 2, 0, ++t); /* consumer */
	ut_ev(c, FMT_ACQ, ++t, 6, 20, 0, 0, 0);
	ut_ev(c, FMT_COND_WAIT, ++t, 9, 6, 0, 0, 0);
	ut_ev(c, FMT_COND_WAKE, t += 10, 9, 6, 0, 0, 0);
	ut_ev(c, FMT_REL, ++t, 6, 0, 0, 0, 0);
	ut_write(f, c);
	ut_begin(c, 3, 0, ++t); /* producer */
	ut_ev(c, FMT_COND_SIGNAL, ++t, 9, 0, 0, 0, 0);
	ut_write(f, c);
	ut_begin(c, 4, 0, ++t); /* takes a lock */
	acq(c, &t, 4, 20);
	ut_write(f, c);
	ut_begin(c, 5, 0, ++t); /* allocates */
	ut_ev(c, FMT_ALLOC, ++t, 0x900000, 32, 20, 5, FMT_FN_MALLOC);
	ut_write(f, c);
	ut_begin(c, 6, 0, ++t); /* idle */
	ut_ev(c, FMT_THREAD_START, ++t, 1, 0, 0, 0, 0);
	ut_write(f, c);
	fclose(f);
	free(c);
}

int main(void)
{
	char path[256];
	write_trace(path, sizeof path);
	model_t m;
	load_opts_t o = {.symbols = false, .quiet = true};
	int rc = load_trace(path, &m, NULL, &o);
	unlink(path);
	check(rc == 0);
	if (rc)
		return test_done();
	/* load_trace ran classes_build and thread_activity; run them again
	 * to check they start over (no class twice). */
	classes_build(&m);
	thread_activity(&m);

	check_eq(m.ncls, 8);
	const lockclass_t *l13 = cls_of(&m, 13), *l14 = cls_of(&m, 14);
	if (l13 && l14) {
		check_eq(l13->key, 0x4000);
		check_eq(l13->site, model_stack(&m, 22));
		check_eq(l14->key, 0x5800);
		check_eq(l14->site, model_stack(&m, 25));
	}
	const lockclass_t *a = cls_of(&m, 1), *c = cls_of(&m, 4);
	if (a) {
		check(cls_of(&m, 2) == a && cls_of(&m, 3) == a);
		check_eq(a->key, 0x1000);
		check(a->by_init);
		check_eq(a->site, model_stack(&m, 10)); /* lock 1's init */
		check_eq(a->ninst, 3);
		check_eq(a->rep, lock_ix(&m, 2));
		check(a->queue);
		check(a->name && strcmp(a->name, "q") == 0);
		check_eq(a->s.acq, 3 + 1 + 5);
		check_eq(a->s.contended, 1);
		check_eq(a->s.wait_ns, 500);
		check_eq(a->kind, FMT_KIND_MUTEX);
	}
	if (c) {
		check(cls_of(&m, 5) == c && cls_of(&m, 12) == c);
		check_eq(c->key, 0x3000);
		check(!c->by_init);
		check_eq(c->site, model_stack(&m, 20)); /* lock 4's first */
		check_eq(c->ninst, 3);
		check_eq(c->rep, lock_ix(&m, 5));
		check(!c->queue);
		check(c->name == NULL);
		check_eq(c->s.acq, 2 + 3 + 1); /* lock 4: threads 1 and 4 */
	}
	const lockclass_t *b = cls_of(&m, 6);
	if (b) {
		check(b != a && b != c);
		check_eq(b->key, 0x2000);
		check_eq(b->site, model_stack(&m, 12));
		check(b->by_init);
		check_eq(b->ninst, 1);
		check(b->queue); /* a condition variable waits on it */
	}
	const lockclass_t *i7 = cls_of(&m, 7), *i8 = cls_of(&m, 8);
	if (i7 && i8) {
		check(i7 != i8 && i7 != c);
		check(i7->key >> 63 && i8->key >> 63);
		check(i7->site == NONE32 && i8->site == NONE32);
		check_eq(i7->kind, FMT_KIND_ALLOC_INTERNAL);
		check_eq(i7->ninst, 1);
	}
	const lockclass_t *n11 = cls_of(&m, 11);
	if (n11) {
		check(n11->key >> 63);
		check(n11->site == NONE32);
		check_eq(n11->ninst, 1);
	}
	check(m.lock[lock_ix(&m, 9)].cls == NONE32);
	check(m.lock[lock_ix(&m, 10)].cls == NONE32);

	check_eq(thr(&m, 1)->role, "main");
	check(strncmp(thr(&m, 2)->role, "consumer", 8) == 0);
	check(strncmp(thr(&m, 3)->role, "producer", 8) == 0);
	check_eq(thr(&m, 4)->role, "worker (takes locks)");
	check_eq(thr(&m, 5)->role, "worker (allocates)");
	check_eq(thr(&m, 6)->role, "idle");
	load_free(&m);
	return test_done();
}
