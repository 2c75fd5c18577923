/*
 * cost.h - the shim's own cost, sampled: of the hook calls that make
 * nearly all events (the malloc family, operator new and delete, the lock,
 * trylock and unlock of mutexes, rwlocks and spinlocks), one in COST_EVERY
 * on average reads the clock at its entry (after the gate) and at its exit
 * (before the gate is released), and around its real call(s), so that the
 * shim's own time in that call is (exit - entry) - (the real calls' time).
 * The sums go to the control page (format/ctl_page.h cost_*), where
 * `mallock top` reads them without touching the process.
 *
 * Invariants:
 * - An unsampled call pays one decrement of its thread's countdown and
 *   one branch (cost_due); nothing else of this file runs for it.
 * - The gap to the next sampled call is drawn as MALLOCK_TIME_EVERY's
 *   (sample.h): uniform in 1 .. 2 COST_EVERY - 1, so that a periodic
 *   pattern of calls is not always sampled at the same place. A thread's
 *   first call is never sampled (its set-up, first unwind and table
 *   entries are not the steady cost, and would be weighted by the gap).
 * - A sample adds clock reads an unsampled call does not make (a read
 *   before a real call the hook would not have timed, and after it):
 *   each costs about one read of the clock, which cost_end subtracts,
 *   measured in the same sample (two reads back to back at its end). With
 *   reads at t_entry, r0, r1, t_exit, each costing L and stamped in its
 *   middle, (t_exit - t_entry) - (r1 - r0) = the shim's work + 2L when
 *   r0 and r1 are both the sample's own, + L when r1 is a read the hook
 *   makes anyway, + 0 when the hook times that call itself.
 * - The span is from the gate's opening to just before its release: the
 *   call into the hook, the gate test and the call through real.* to
 *   the real function are not in it (a few ns: an underestimate).
 * - The page's counters are written with relaxed atomic adds by sampled
 *   calls only; cost_end calls nothing that can take a lock.
 * - A sample whose shim time exceeds COST_MAX_NS (the thread was almost
 *   surely descheduled inside the hook: rdtsc counts wall time) is not
 *   summed: it is counted in cost_over, and its gap still counts as calls
 *   (the mean of the others stands for it).
 */
#ifndef MALLOCK_SHIM_COST_H
#define MALLOCK_SHIM_COST_H

#include "ctl_page.h"
#include "prim.h"
#include "tls.h"

#include <stdint.h>

#define COST_EVERY 1024u
#define COST_MAX_NS 1000000u

/* The page the sums go to: the control page, or a static one while there
 * is none (control.c sets it when it maps a page). */
extern ctl_page_t *g_cost_page;

/* One sampled call: its entry, the ticks of its real calls and how many
 * clock reads the sample added inside it. */
typedef struct cost {
	uint64_t e0;
	uint64_t real;
	unsigned extra;
} cost_t;

/* At init, after g_tsc_hz: the ticks -> ns factor. */
void cost_init(void);
/* Seeds a thread's countdown (sample_thread_init): its first call is not
 * sampled. */
void cost_thread_init(tls_t *t);
/* The end of a sampled call at x1 (read by the caller just before):
 * sums it into the page and draws the next gap. */
void cost_end(tls_t *t, const cost_t *c, uint64_t x1);

/* 1 when this call is to be sampled (the countdown ran out). */
static inline int cost_due(tls_t *t)
{
	return unlikely(--t->cost_left == 0);
}

/* The entry of a sampled call: its entry read. The countdown is set to
 * run out again at the thread's next call, should this one never reach
 * cost_end (an exception out of operator new, a longjmp out of a
 * handler); cost_end draws the real gap. */
static inline uint64_t cost_begin(tls_t *t)
{
	t->cost_left = 1;
	return prim_tsc();
}

/* A real call the hook does not time itself, inside a sampled call (c)
 * or not (c NULL: nothing, folded away where c is a constant): cost_r0
 * before it, cost_r1 after it. */
static inline uint64_t cost_r0(cost_t *c)
{
	return c ? prim_tsc() : 0;
}

static inline void cost_r1(cost_t *c, uint64_t r0)
{
	if (c) {
		c->real += prim_tsc() - r0;
		c->extra += 2;
	}
}

/* A real allocator call timed as hook.h says (call_t0 .. call_t1): a
 * timed one (t0) is measured by its own reads; an untimed one reads the
 * clock after it anyway (t1, its stamp), so the sample adds one read
 * before it (r0 = cost_r0u). */
static inline uint64_t cost_r0u(cost_t *c, uint64_t t0)
{
	return c && !t0 ? prim_tsc() : 0;
}

static inline void cost_r1u(cost_t *c, uint64_t t0, uint64_t r0, uint64_t t1)
{
	if (c) {
		c->real += t1 - (t0 ? t0 : r0);
		c->extra += !t0;
	}
}

#endif
