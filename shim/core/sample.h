/*
 * sample.h - allocation sampling (MALLOCK_SAMPLE_BYTES=N), as tcmalloc and
 * jemalloc sample: each thread counts down the bytes it allocates; when the
 * count passes zero the allocation is sampled (recorded with its full stack
 * and tracked) and a new count is drawn from an exponential distribution of
 * mean N, so every byte has the same chance 1/N and a sampled allocation of
 * size s stands for 1 / (1 - exp(-s/N)) allocations (the analyzer scales).
 *
 * What is recorded while sampling (docs/server.md, docs/trace-format.md):
 * - a sampled allocation: ALLOC/REALLOC as usual; its block is tracked;
 * - an unsampled allocator call made while the thread holds a lock: ALLOC
 *   (or REALLOC) with pointer 0 and the one-frame call site as its stack,
 *   so allocator time and allocator-internal lock waits inside critical
 *   sections stay complete; the block is not tracked;
 * - a free of a tracked block, wherever it happens (cross-thread frees of
 *   sampled blocks are seen); a free of an untracked block only while the
 *   thread holds a lock (the analyzer counts it as an allocator call of
 *   an unknown block);
 * - nothing for unsampled calls outside locks (no clock read either).
 * Lock events are never sampled.
 *
 * Tracked blocks live in a fixed lock-free set: 2^15 buckets of 4 pointers
 * behind a 4 KiB bitmap of non-empty buckets, so a free of an untracked
 * block costs one L1 load. A full bucket evicts (counted, noted at exit):
 * the evicted block's free is then not recorded.
 *
 * The per-thread lock count (tls nheld) is kept by the lock hooks while
 * recording; it restarts at each resume (g_epoch), so it can miss a lock
 * taken before the resume for a moment.
 */
#ifndef MALLOCK_SHIM_SAMPLE_H
#define MALLOCK_SHIM_SAMPLE_H

#include "tls.h"

#include <stdatomic.h>
#include <stdint.h>

enum sample_kind {
	SAMPLE_SKIP = 0,  /* not recorded */
	SAMPLE_TRACK = 1, /* recorded with its stack; block tracked */
	SAMPLE_CALL = 2,  /* recorded as an allocator call (pointer 0) */
};

extern int g_sampling; /* MALLOCK_SAMPLE_BYTES != 0; read-only after init */

#define SSET_BITS 15
#define SSET_WAYS 4
extern _Atomic uint64_t sset_nonempty[(1u << SSET_BITS) / 64];

/* Forgets every tracked block (a new trace after a detach: its frees are
 * of blocks that trace never saw). Caller: no hook records meanwhile. */
void sample_forget_all(void);

/* Draws the next countdown (and seeds the thread's generator). */
void sample_reset(tls_t *t);
/* Seeds a new thread's countdown (thread_setup). */
void sample_thread_init(tls_t *t);

/* Calls until the next timed allocator call outside locks (hook.h
 * call_t0): uniform in 1 .. 2 MALLOCK_TIME_EVERY - 1, mean
 * MALLOCK_TIME_EVERY, so that a program's periodic pattern of calls (malloc,
 * free, malloc, ...) is not always timed at the same place. */
uint32_t sample_time_interval(tls_t *t);
/* Uncontended nests of holds until the next timed one (lock_hooks.c), as
 * sample_time_interval with MALLOCK_HOLD_EVERY: uniform in
 * 1 .. 2 MALLOCK_HOLD_EVERY - 1. */
uint32_t sample_hold_interval(tls_t *t);
/* The thread's generator (xorshift64*, seeded on first use): for the
 * countdowns of other samplings (cost.c). */
uint64_t sample_rng(tls_t *t);
/* Tracks ptr (a sampled block). Lock-free. */
void sample_track(const void *ptr);
/* The slow half of sample_untrack. */
int sample_untrack_slow(unsigned b, uintptr_t p);
/* Blocks evicted from the set (their frees are not recorded). */
uint64_t sample_evicted(void);

static inline unsigned sset_hash(uintptr_t p)
{
	return (unsigned)(((p >> 4) * 0x9E3779B97F4A7C15ull) >>
	                  (64 - SSET_BITS));
}

/* 1 when ptr was tracked (it no longer is). Call before the real free. */
static inline int sample_untrack(const void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	unsigned b = sset_hash(p);
	if (likely(!(atomic_load_explicit(&sset_nonempty[b >> 6],
	                                  memory_order_relaxed) &
	             (1ull << (b & 63)))))
		return 0;
	return sample_untrack_slow(b, p);
}

/* The decision for an allocation of n bytes. */
static inline int sample_alloc(tls_t *t, size_t n)
{
	t->sample_left -= (int64_t)n;
	if (unlikely(t->sample_left < 0)) {
		sample_reset(t);
		return SAMPLE_TRACK;
	}
	return tls_holds_lock(t) ? SAMPLE_CALL : SAMPLE_SKIP;
}

/* Whether to record a free of ptr (untracks it). */
static inline int sample_free(tls_t *t, const void *ptr)
{
	return sample_untrack(ptr) || tls_holds_lock(t);
}

/* The decision for realloc(old, n): a tracked old block keeps the chain
 * tracked; realloc(old, 0) is a free. *was_tracked says whether old was. */
int sample_realloc(tls_t *t, const void *old, size_t n, int *was_tracked);

/* At init: g_sampling from the configuration. */
void sample_init(void);

#endif
