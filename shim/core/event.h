/*
 * event.h - encoding of core events straight into the calling thread's
 * buffer: the hot path of every hook.
 *
 * Usage, inside a hook that passed hook_enter():
 *     uint8_t *p = ev_head(t, FMT_ALLOC, tsc);
 *     p = fmt_put_ptr(p, &t->enc, ptr); p = fmt_put_u(p, size); ...
 *     ev_commit(t, p, tsc);
 *
 * Invariant: at hook entry t->pos <= t->soft_end, so one event (and the few
 * metadata records writer_meta adds, which check for themselves) always fit:
 * ev_commit flushes as soon as pos passes soft_end.
 */
#ifndef MALLOCK_SHIM_EVENT_H
#define MALLOCK_SHIM_EVENT_H

#include "tls.h"
#include "writer.h"

/* g_flush_ticks and g_spin_ticks: tls.h. */

/* Encodes the thread's pending acquisition (tls.h; lock_hooks.c). */
void acq_pend_flush(tls_t *t);

/* The slow half of ev_commit (event.c), which decides what the writer does:
 * the window's end (MALLOCK_DURATION, ctl_tick), a late-library walk put
 * off in an attached process, then a flush when the buffer is nearly full
 * or old, unless a lock hold puts it off. Gate BUSY; owner only. */
void ev_commit_slow(tls_t *t, uint64_t tsc);

/* Encodes a pending acquisition: it happened before the event about to
 * be written, which then starts at t->pos (the fmt_put_* encoders of
 * trace_format.h write a whole event, type byte included). */
static inline void ev_pend(tls_t *t)
{
	if (unlikely(t->pend_type))
		acq_pend_flush(t);
}

/* Starts an event. A pending acquisition goes first: it happened before. */
static inline uint8_t *ev_head(tls_t *t, unsigned type, uint64_t tsc)
{
	ev_pend(t);
	return fmt_put_head(t->pos, &t->enc, type, tsc);
}

/* Publishes the event ending at p; flushes when the buffer is nearly full or
 * its chunk is older than MALLOCK_FLUSH_MS, and ends the window once the
 * MALLOCK_DURATION deadline has passed (compares on the TSC the hook already
 * read). */
static inline void ev_commit(tls_t *t, uint8_t *p, uint64_t tsc)
{
	t->chunk_events++;
	wbuf_publish(t, p);
	if (unlikely((p > t->soft_end) | (tsc - t->chunk_tsc0 > flush_ticks()) |
	             (tsc > g_stop_tsc)))
		ev_commit_slow(t, tsc);
}

#endif
