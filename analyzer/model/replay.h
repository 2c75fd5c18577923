/*
 * replay.h - a second streaming pass over a trace that the model was built
 * from, for the outputs that need what the model does not keep: each wait,
 * hold and allocator call with its thread and time (Perfetto's timeline),
 * and the thread of each waiter and holder (pprof's `thread` label).
 *
 * It follows aggregate.c's semantics exactly (the same holds, the same
 * holder credited with a wait, the same excluded threads and pause marks),
 * so sums over its events equal the model's counters; tests check that
 * against the JSON report. Memory: the threads' held-lock stacks and one
 * entry per lock, never proportional to the number of events.
 */
#ifndef MALLOCK_REPLAY_H
#define MALLOCK_REPLAY_H

#include "model.h"

#include <stdbool.h>
#include <stdint.h>

enum replay_kind {
	REPLAY_WAIT,  /* a contended acquisition */
	REPLAY_HOLD,  /* a hold ended (release, contended release, cond wait) */
	REPLAY_ALLOC, /* an allocator call made while the thread held a lock */
	/* a wait on the allocator's own lock (ALLOC_LOCK_WAIT), inside an
	 * allocator call made while the thread held a lock; lock is the
	 * allocator lock's index, held the thread's locks */
	REPLAY_ALLOC_WAIT,
};

typedef struct replay_ev {
	int kind;
	uint32_t thread; /* model thread index */
	uint32_t lock;   /* model lock index (WAIT, HOLD) */
	/* WAIT: the waiter's stack; HOLD: the acquisition site (after a
	 * condition wake, that of the hold the wait ended, which the re-taken
	 * hold continues); ALLOC: the allocation stack (NONE32 for a free) */
	uint32_t stack;
	/* HOLD: the holder's stack at a contended release, else NONE32.
	 * WAIT: the last contended release of this lock, which the model
	 * charges with this wait (stack and thread; NONE32 when none). */
	uint32_t holder_stack, holder_thread;
	/* ns since the trace's first event: WAIT from the wait's start to the
	 * acquisition; HOLD acquisition to release; ALLOC the call;
	 * ALLOC_WAIT the wait, which ends at its record's time. */
	uint64_t t0, t1;
	uint64_t ns; /* WAIT wait, HOLD hold, ALLOC allocator time */
	/* HOLD, ALLOC: what ns stands for (aggregate.c's weights: a sampled
	 * hold or call of a trace that timed one nest of holds in N stands
	 * for N); 0 when it was not timed: ns is then 0 and a hold's t0 is
	 * its t1 (its stamps are not its times). WAIT: 1. */
	uint32_t w;
	/* HOLD: the time it counts for in the model's sums: ns * w, but a
	 * sampled hold set apart as preemption counts once, and the holds it
	 * stood for at its lock's mean (aggregate.c hold_preempted). */
	uint64_t wns;
	uint64_t size;    /* ALLOC: bytes asked for (0 for a free) */
	uint64_t waiters; /* WAIT: threads waiting when it began, itself too */
	bool contended;   /* HOLD: released with REL_CONTENDED */
	bool matched;     /* HOLD: its acquisition was seen (else t0 == t1) */
	bool is_alloc;    /* ALLOC: an allocation or realloc, not a free */
	const uint32_t *held; /* ALLOC, ALLOC_WAIT: lock indexes held,
	                         innermost last */
	uint32_t nheld;
} replay_ev_t;

typedef void (*replay_fn)(void *ctx, const replay_ev_t *ev);

/*
 * Reads m->path again and calls fn for each wait, hold and allocator call
 * in a hold, in trace (TSC) order, for the threads the model did not
 * exclude, within the limits the model was read with (lim_from_tsc,
 * lim_until_tsc: `mallock top`'s window of a trace still growing).
 * Returns 0 (also when a malformed record stops it where it
 * stopped the model), or 1 when the file cannot be read again (one line on
 * stderr). Allocates only per thread and per lock.
 */
int replay(model_t *m, replay_fn fn, void *ctx);

#endif
