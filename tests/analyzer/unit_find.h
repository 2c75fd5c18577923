/*
 * unit_find.h - what the finders' unit tests (unit_find_*.c) share: a trace
 * of one process written thread by thread with unit_trace.h, loaded with
 * its findings (load_trace: classes built, every detector run, as `mallock
 * report` does), and the findings of one kind. The process's clock pair is
 * (1000, 1000) at 1 GHz (uf_open_hz: another rate): 1 tick is 1 ns, so a
 * test's ticks are the nanoseconds the findings count. No MODULE record
 * unless a test writes one: frames stay addresses and every frame is a
 * user frame. Includers define _GNU_SOURCE first.
 */
#ifndef MALLOCK_UNIT_FIND_H
#define MALLOCK_UNIT_FIND_H

#include "load.h"
#include "unit_trace.h"

#include <math.h>
#include <stdbool.h>

typedef struct uf {
	char path[256];
	FILE *f;
	ut_chunk_t *c;
	model_t m;
	findings_t F;
} uf_t;

/* A new trace whose process ticks at tsc_hz: the process chunk written,
 * u->c free for the threads. */
static inline void uf_open_hz(uf_t *u, uint64_t tsc_hz)
{
	memset(u, 0, sizeof *u);
	u->f = ut_open(u->path, sizeof u->path);
	u->c = malloc(sizeof *u->c);
	if (!u->c) {
		perror("malloc");
		exit(1);
	}
	ut_begin(u->c, 0, 0, 1000);
	ut_process(u->c, 1, 1000, 1000, tsc_hz);
	ut_write(u->f, u->c);
}

/* A new trace at 1 GHz (1 tick is 1 ns). */
static inline void uf_open(uf_t *u)
{
	uf_open_hz(u, 1000000000);
}

/* THREAD_NAME of tid into c. */
static inline void uf_thread_name(ut_chunk_t *c, uint64_t tid, const char *name)
{
	uint8_t b[128], *p = b;
	p = fmt_put_u(p, tid);
	p = fmt_put_str(p, name, strlen(name));
	ut_meta(c, FMT_THREAD_NAME, b, (size_t)(p - b));
}

/* One hold of lock by the current chunk's thread from t to t + hold,
 * taken at site (ACQ, REL). */
static inline void uf_hold(ut_chunk_t *c, uint64_t lock, uint64_t site,
                           uint64_t t, uint64_t hold)
{
	ut_ev(c, FMT_ACQ, t, lock, site, 0, 0, 0);
	ut_ev(c, FMT_REL, t + hold, lock, 0, 0, 0, 0);
}

/*
 * One lock contended by two threads, n rounds from tick 10000, one every
 * 2 * hold + 100 ticks: thread 1 takes lock at stack 1, calls the
 * allocator inside (an allocation of alloc ticks at stack 2, and a free of
 * free ticks of a block it allocated at stack 3 just before the hold; 0:
 * none), and releases it contended (holder stack 4) after hold ticks;
 * thread 2 waited for it all that time (stack 5) and holds it 10 ticks.
 * The lost wait is n * hold. end: a last event (lock 99 by thread 3) at
 * that tick, stretching the trace; 0: none.
 */
typedef struct uf_contend {
	uint64_t lock, kind;
	int n;
	uint64_t hold, alloc, free, end;
} uf_contend_t;

static inline void uf_contend(uf_t *u, const uf_contend_t *s)
{
	ut_chunk_t *c = u->c;
	static const uint64_t fr[5][1] = {
	    {0x401000}, {0x402000}, {0x403000}, {0x404000}, {0x405000}};
	uint64_t P = 2 * s->hold + 100;
	ut_begin(c, 1, 0, 1000);
	for (int k = 0; k < 5; k++)
		ut_stack(c, (uint64_t)k + 1, 1, fr[k]);
	ut_lock_new(c, s->lock, 0x10000 + s->lock * 64, s->kind, 0);
	for (int i = 0; i < s->n; i++) {
		uint64_t t = 10000 + (uint64_t)i * P;
		uint64_t blk = 0x900000 + (uint64_t)i * 256;
		if (s->free)
			ut_ev(c, FMT_ALLOC, t - 20, blk + 128, 48, 3, 10,
			      FMT_FN_MALLOC);
		ut_ev(c, FMT_ACQ, t, s->lock, 1, 0, 0, 0);
		if (s->alloc)
			ut_ev(c, FMT_ALLOC, t + 1, blk, 32, 2, s->alloc,
			      FMT_FN_MALLOC);
		if (s->free)
			ut_ev(c, FMT_FREE, t + s->alloc + 2, blk + 128, s->free,
			      0, 0, 0);
		ut_ev(c, FMT_REL_CONTENDED, t + s->hold, s->lock, 4, 0, 0, 0);
	}
	ut_write(u->f, c);
	ut_begin(c, 2, 0, 1000);
	for (int i = 0; i < s->n; i++) {
		uint64_t t = 10000 + (uint64_t)i * P + s->hold + 1;
		ut_ev(c, FMT_ACQ_WAIT, t, s->lock, 5, s->hold, 2, 0);
		ut_ev(c, FMT_REL, t + 10, s->lock, 0, 0, 0, 0);
	}
	ut_write(u->f, c);
	if (s->end) {
		ut_begin(c, 3, 0, 1000);
		ut_lock_new(c, 99, 0x20000, FMT_KIND_MUTEX, 0);
		uf_hold(c, 99, 1, s->end - 1, 1);
		ut_write(u->f, c);
	}
}

/* Closes the file and loads it with its findings. Returns whether it
 * loaded (a failed check otherwise). */
static inline bool uf_load(uf_t *u)
{
	fclose(u->f);
	free(u->c);
	u->f = NULL;
	u->c = NULL;
	load_opts_t o = {.symbols = false, .quiet = true};
	int rc = load_trace(u->path, &u->m, &u->F, &o);
	unlink(u->path);
	return check_eq(rc, 0);
}

static inline void uf_free(uf_t *u)
{
	free(u->F.v);
	load_free(&u->m);
}

/* How many findings of kind u has. */
static inline int uf_count(const uf_t *u, int kind)
{
	int n = 0;
	for (size_t i = 0; i < u->F.n; i++)
		n += u->F.v[i].kind == kind;
	return n;
}

/* u's one finding of kind: NULL (a failed check) when it has none or
 * several. */
static inline const finding_t *uf_one(const uf_t *u, int kind)
{
	const finding_t *f = NULL;
	int n = 0;
	for (size_t i = 0; i < u->F.n; i++)
		if (u->F.v[i].kind == kind) {
			f = &u->F.v[i];
			n++;
		}
	if (!check_eq(n, 1)) {
		fprintf(stderr, "  (no single %s finding)\n",
		        finding_kind_name(kind));
		return NULL;
	}
	return f;
}

/* Evidence member e of f, NAN when f lacks it (so a check on it fails). */
static inline double uf_ev(const finding_t *f, ev_t e)
{
	return finding_ev(f, e, NAN);
}

/* The lock id of the representative of f's class (cls2: second). */
static inline uint64_t uf_cls_lock(const uf_t *u, uint32_t cls)
{
	if (cls == NONE32 || cls >= u->m.ncls)
		return 0;
	return u->m.lock[u->m.cls[cls].rep].id;
}

#endif
