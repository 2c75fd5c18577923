/*
 * aggregate_int.h - internal to the aggregate stage: what the per-event
 * loop (aggregate.c, lock and thread events) and the allocator events
 * (aggregate_alloc.c) share. Not for other stages: they use aggregate.h.
 *
 * Every function here takes the model being built and the acting thread t
 * (m->thr[ti]); none is called for an excluded thread (--thread) but
 * agg_on_excluded. They may allocate (the model's tables grow); none
 * fails.
 */
#ifndef MALLOCK_AGGREGATE_INT_H
#define MALLOCK_AGGREGATE_INT_H

#include "aggregate.h"

#include <stdint.h>

/* double -> uint64_t, saturating: a forged count or tick value must not
 * overflow the conversion, which is undefined (found by fuzzing). */
static inline uint64_t sat_u64(double v)
{
	return v < 18446744073709549568.0 ? (v > 0 ? (uint64_t)v : 0)
	                                  : UINT64_MAX;
}

static inline uint64_t to_ns(const model_t *m, uint64_t ticks)
{
	return sat_u64((double)ticks * m->ns_per_tick + 0.5);
}

/* When a call stamped tsc after ticks in it began (a forged ticks larger
 * than tsc: at 0). */
static inline uint64_t call_began(uint64_t tsc, uint64_t ticks)
{
	return tsc - (ticks < tsc ? ticks : 0);
}

/* How far the merged order may put a free after its block's next
 * allocation on another CPU: the TSCs of two CPUs differ (up to 110 ns
 * seen between the two vCPUs of a KVM guest whose kernel marks the TSC
 * unstable), and the merge orders their threads' records by them. An
 * ALLOC of a live block's address is taken as that block's free arriving
 * late when the free comes within this window (aggregate_alloc.c). */
#define REUSE_SKEW_NS 50000

/* aggregate.c */

/* Keeps stack (a stack index or NONE32) among t's first distinct whole
 * stacks (THREAD_FIRST_STACKS of them, for its entry function). */
void agg_first_stack(model_t *m, thread_t *t, uint32_t stack);

/* aggregate_alloc.c */

/* An ALLOC record: the allocation's site statistics, its live block, and
 * the call charged to the locks t holds (with the allocator lock waits
 * pending on t, which it consumes). */
void agg_on_alloc(model_t *m, thread_t *t, uint32_t ti, const fmt_record_t *r);
/* A FREE record: ends its block (an unknown free when the live map does
 * not know it) and charges the call as agg_on_alloc does. */
void agg_on_free(model_t *m, thread_t *t, uint32_t ti, const fmt_record_t *r);
/* A REALLOC's free of its old block, given apart at the call's start
 * (READER_REALLOC_FREE, reader.h); its lifetime ends at the record's tsc. */
void agg_on_realloc_free(model_t *m, thread_t *t, uint32_t ti,
                         const fmt_record_t *r);
/* A REALLOC given whole (part READER_WHOLE: frees its old block when it
 * moved or freed it) or its rest after agg_on_realloc_free: one allocator
 * call, the new block's allocation. */
void agg_on_realloc(model_t *m, thread_t *t, uint32_t ti, const fmt_record_t *r,
                    reader_part_t part);
/* An event of an excluded thread: only an ALLOC's or FREE's effect on the
 * live map is kept, so the reported threads' frees find their blocks. */
void agg_on_excluded(model_t *m, uint32_t ti, const fmt_record_t *r);

#endif
