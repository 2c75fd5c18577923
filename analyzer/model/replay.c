/*
 * replay.c - the second pass of replay.h. Its hold bookkeeping mirrors
 * aggregate.c's push_hold()/release(): keep them in step.
 */
#include "replay.h"

#include "progress.h"
#include "reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLAY_HELD_MAX 1024 /* aggregate.c's HELD_MAX */

typedef struct rheld {
	uint32_t lock, site;
	uint64_t tsc;
	uint32_t w; /* aggregate.c's held_t.w */
} rheld_t;

typedef struct rthr {
	uint32_t cond_site1; /* aggregate.c's thread_t.cond_site1 */
	uint32_t hold_w;     /* aggregate.c's thread_t.hold_w */
	rheld_t *h;
	uint32_t *locks; /* the held locks' indexes, for replay_ev_t.held */
	size_t n, cap, capl;
} rthr_t;

typedef struct rstate {
	model_t *m;
	rthr_t *thr;
	uint32_t *last_stack, *last_thr; /* per lock: last contended release */
	replay_fn fn;
	void *ctx;
} rstate_t;

static inline uint64_t sat(double v)
{
	return v < 18446744073709549568.0 ? (v > 0 ? (uint64_t)v : 0)
	                                  : UINT64_MAX;
}

static uint64_t dur_ns(const model_t *m, uint64_t ticks)
{
	return sat((double)ticks * m->ns_per_tick + 0.5);
}

static uint64_t at_ns(const model_t *m, uint64_t tsc)
{
	return tsc > m->first_tsc ? dur_ns(m, tsc - m->first_tsc) : 0;
}

static uint32_t find(const u64map_t *map, uint64_t id)
{
	const uint32_t *v = u64map_find(map, id);
	return v ? *v : NONE32;
}

static uint32_t lock_of(const model_t *m, uint64_t id)
{
	return find(&m->lock_by_id, id == U64MAP_EMPTY ? U64MAP_EMPTY - 1 : id);
}

static uint32_t stack_of(const model_t *m, uint64_t id)
{
	return id == 0 || id == U64MAP_EMPTY ? NONE32 : find(&m->stk_by_id, id);
}

static void push(rstate_t *s, uint32_t ti, uint32_t li, uint32_t site,
                 uint64_t tsc, uint32_t w)
{
	rthr_t *t = &s->thr[ti];
	t->hold_w = w ? w : 1;
	if (t->n >= REPLAY_HELD_MAX)
		return;
	VEC_RESERVE(t->h, t->cap, t->n);
	t->h[t->n++] = (rheld_t){li, site, tsc, w};
}

/* aggregate.c's hold_weight(). */
static uint32_t hold_weight(const model_t *m, unsigned type)
{
	if (type == FMT_ACQ_UNTIMED || type == FMT_ACQ_SHARED_UNTIMED)
		return 0;
	if (type == FMT_ACQ_SAMPLED || type == FMT_ACQ_SHARED_SAMPLED)
		return m->hold_every > 1 && m->hold_every <= UINT32_MAX
		           ? (uint32_t)m->hold_every
		           : 1;
	return 1;
}

/* Ends ti's innermost hold of li at tsc and reports it; an unmatched
 * contended release is reported too (the model counts it). */
static void pop(rstate_t *s, uint32_t ti, uint32_t li, uint64_t tsc,
                bool contended, uint32_t holder_stack)
{
	const model_t *m = s->m;
	rthr_t *t = &s->thr[ti];
	size_t i = t->n;
	while (i > 0 && t->h[i - 1].lock != li)
		i--;
	replay_ev_t ev = {.kind = REPLAY_HOLD,
	                  .thread = ti,
	                  .lock = li,
	                  .stack = NONE32,
	                  .holder_stack = holder_stack,
	                  .holder_thread = ti,
	                  .contended = contended,
	                  .w = 1};
	ev.t1 = at_ns(m, tsc);
	if (i == 0) {
		if (!contended)
			return;
		ev.t0 = ev.t1;
	} else {
		rheld_t h = t->h[i - 1];
		memmove(&t->h[i - 1], &t->h[i], (t->n - i) * sizeof h);
		t->n--;
		ev.matched = true;
		ev.stack = h.site;
		ev.w = h.w;
		ev.t0 = h.w ? at_ns(m, h.tsc) : ev.t1;
		ev.ns = h.w && tsc > h.tsc ? dur_ns(m, tsc - h.tsc) : 0;
		ev.wns = ev.ns * h.w;
		const uint64_t *apart =
		    h.w > 1 ? model_hold_apart(m, ti, h.tsc) : NULL;
		if (apart)
			ev.wns = *apart;
	}
	s->fn(s->ctx, &ev);
}

/* The indexes of the locks ti holds, innermost last. */
static const uint32_t *held_locks(rstate_t *s, uint32_t ti)
{
	rthr_t *t = &s->thr[ti];
	VEC_RESERVE(t->locks, t->capl, t->n);
	for (size_t i = 0; i < t->n; i++)
		t->locks[i] = t->h[i].lock;
	return t->locks;
}

static void alloc(rstate_t *s, uint32_t ti, uint64_t tsc, uint64_t stack_id,
                  uint64_t size, uint64_t ticks, bool is_alloc)
{
	rthr_t *t = &s->thr[ti];
	if (!t->n)
		return;
	held_locks(s, ti);
	replay_ev_t ev = {.kind = REPLAY_ALLOC,
	                  .thread = ti,
	                  .lock = NONE32,
	                  .stack = stack_of(s->m, stack_id),
	                  .holder_stack = NONE32,
	                  .holder_thread = NONE32,
	                  .size = size,
	                  .is_alloc = is_alloc,
	                  .held = t->locks,
	                  .nheld = (uint32_t)t->n};
	ev.ns = dur_ns(s->m, ticks);
	/* aggregate_alloc.c's call_weight() for a call in a hold */
	ev.w = ticks || (s->m->time_every <= 1 && s->m->hold_every <= 1)
	           ? t->hold_w
	           : 0;
	ev.t1 = at_ns(s->m, tsc);
	ev.t0 = ev.t1 > ev.ns ? ev.t1 - ev.ns : 0;
	s->fn(s->ctx, &ev);
}

/* The stack of the block a free releases is the model's business; the
 * replay does not track blocks (a free's stack stays NONE32). */
static void on_event(rstate_t *s, uint32_t ti, const fmt_record_t *r)
{
	model_t *m = s->m;
	uint32_t li;
	switch (r->type) {
	case FMT_ALLOC:
		alloc(s, ti, r->tsc, r->f[FMT_ALLOC_STACK],
		      r->f[FMT_ALLOC_SIZE], r->f[FMT_ALLOC_TICKS], true);
		break;
	case FMT_FREE:
		alloc(s, ti, r->tsc, 0, 0, r->f[FMT_FREE_TICKS], false);
		break;
	case FMT_REALLOC:
		alloc(s, ti, r->tsc, r->f[FMT_REALLOC_STACK],
		      r->f[FMT_REALLOC_SIZE], r->f[FMT_REALLOC_TICKS], true);
		break;
	case FMT_ACQ:
	case FMT_ACQ_SHARED:
	case FMT_ACQ_UNTIMED:
	case FMT_ACQ_SHARED_UNTIMED:
	case FMT_ACQ_SAMPLED:
	case FMT_ACQ_SHARED_SAMPLED:
		if ((li = lock_of(m, r->f[FMT_ACQ_LOCK])) != NONE32)
			push(s, ti, li, stack_of(m, r->f[FMT_ACQ_SITE]), r->tsc,
			     hold_weight(m, r->type));
		break;
	case FMT_ACQ_WAIT:
	case FMT_ACQ_SHARED_WAIT: {
		if ((li = lock_of(m, r->f[FMT_ACQ_WAIT_LOCK])) == NONE32)
			break;
		uint32_t stack = stack_of(m, r->f[FMT_ACQ_WAIT_STACK]);
		push(s, ti, li, stack, r->tsc, 1);
		replay_ev_t ev = {.kind = REPLAY_WAIT,
		                  .w = 1,
		                  .thread = ti,
		                  .lock = li,
		                  .stack = stack,
		                  .holder_stack = s->last_stack[li],
		                  .holder_thread = s->last_thr[li],
		                  .waiters = r->f[FMT_ACQ_WAIT_WAITERS]};
		ev.ns = dur_ns(m, r->f[FMT_ACQ_WAIT_WAIT]);
		ev.t1 = at_ns(m, r->tsc);
		ev.t0 = ev.t1 > ev.ns ? ev.t1 - ev.ns : 0;
		s->fn(s->ctx, &ev);
		break;
	}
	case FMT_REL:
		if ((li = lock_of(m, r->f[FMT_REL_LOCK])) != NONE32)
			pop(s, ti, li, r->tsc, false, NONE32);
		break;
	case FMT_REL_CONTENDED: {
		if ((li = lock_of(m, r->f[FMT_REL_CONTENDED_LOCK])) == NONE32)
			break;
		uint32_t stack = stack_of(m, r->f[FMT_REL_CONTENDED_STACK]);
		pop(s, ti, li, r->tsc, true, stack);
		s->last_stack[li] = stack;
		s->last_thr[li] = ti;
		break;
	}
	case FMT_COND_WAIT:
		/* The hold re-taken at the wake continues this one: it gets
		 * its site (aggregate.c does the same). */
		if ((li = lock_of(m, r->f[FMT_COND_WAIT_LOCK])) != NONE32) {
			rthr_t *t = &s->thr[ti];
			t->cond_site1 = 0;
			for (size_t k = t->n; k-- > 0;)
				if (t->h[k].lock == li) {
					t->cond_site1 = t->h[k].site + 1;
					break;
				}
			pop(s, ti, li, r->tsc, false, NONE32);
		}
		break;
	case FMT_COND_WAKE:
		if ((li = lock_of(m, r->f[FMT_COND_WAKE_LOCK])) != NONE32) {
			push(s, ti, li, s->thr[ti].cond_site1 - 1, r->tsc, 1);
			s->thr[ti].cond_site1 = 0;
		}
		break;
	case FMT_ALLOC_LOCK_WAIT: {
		li = lock_of(m, r->f[FMT_ALLOC_LOCK_WAIT_LOCK]);
		if (li == NONE32 || !s->thr[ti].n)
			break;
		replay_ev_t ev = {.kind = REPLAY_ALLOC_WAIT,
		                  .thread = ti,
		                  .lock = li,
		                  .stack = NONE32,
		                  .holder_stack = NONE32,
		                  .holder_thread = NONE32,
		                  .held = held_locks(s, ti),
		                  .nheld = (uint32_t)s->thr[ti].n};
		ev.ns = dur_ns(m, r->f[FMT_ALLOC_LOCK_WAIT_WAIT]);
		ev.t1 = at_ns(m, r->tsc);
		ev.t0 = ev.t1 > ev.ns ? ev.t1 - ev.ns : 0;
		s->fn(s->ctx, &ev);
		break;
	}
	case FMT_THREAD_EXIT:
		s->thr[ti].n = 0;
		break;
	case FMT_MARK:
		for (size_t i = 0; i < m->nthr; i++)
			s->thr[i].n = 0;
		break;
	default:
		break;
	}
}

int replay(model_t *m, replay_fn fn, void *ctx)
{
	reader_t *r;
	reader_ev_t ev;
	char err[256];
	if (reader_open(m->path, &r, err, sizeof err)) {
		fprintf(stderr, "mallock: %s: %s\n", m->path, err);
		return 1;
	}
	if (m->lim_from_tsc || m->lim_until_tsc)
		reader_limit(r, m->lim_from_tsc, m->lim_until_tsc);
	rstate_t s = {.m = m, .fn = fn, .ctx = ctx};
	s.thr = xcalloc(m->nthr + 1, sizeof *s.thr);
	s.last_stack = xmalloc((m->nlock + 1) * sizeof *s.last_stack);
	s.last_thr = xmalloc((m->nlock + 1) * sizeof *s.last_thr);
	memset(s.last_stack, 0xff, (m->nlock + 1) * sizeof *s.last_stack);
	memset(s.last_thr, 0xff, (m->nlock + 1) * sizeof *s.last_thr);
	progress_pass(m->path, 3);
	while (reader_next(r, &ev) > 0) {
		/* A moving REALLOC is one allocator call: its free part
		 * (reader.h) is left out, its rest is the call. */
		if (FMT_IS_META(ev.rec->type) || ev.part == READER_REALLOC_FREE)
			continue;
		uint32_t ti = find(&m->thr_by_tid, ev.tid);
		if (ti == NONE32 || m->thr[ti].excluded)
			continue;
		on_event(&s, ti, ev.rec);
	}
	for (size_t i = 0; i < m->nthr; i++) {
		free(s.thr[i].h);
		free(s.thr[i].locks);
	}
	free(s.thr);
	free(s.last_stack);
	free(s.last_thr);
	progress_done();
	reader_close(r);
	return 0;
}
