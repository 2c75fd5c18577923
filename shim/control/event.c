/*
 * event.c - the slow half of ev_commit (event.h): what happens when an event
 * finds its chunk due. The policy lives here (two decisions stay in the
 * writer, which scripts/check_layers.py lists: the byte cap's end of the
 * window, ctl_capped, and an attached process's late-library walk right
 * after a flush by a thread that holds no lock):
 * - the recording window's end (MALLOCK_DURATION) and the control poll
 *   (ctl_tick, control.c), when the TSC passes g_stop_tsc; with the poll,
 *   the flush deadline of the threads that make no hooked call
 *   (writer_sweep: their buffers are written by this thread);
 * - a late-library walk the writer put off in an attached process
 *   (attach.c), once the thread holds no lock;
 * - the flush (writer_flush) when the buffer is nearly full or older than
 *   MALLOCK_FLUSH_MS, except inside a lock hold of a compressed trace,
 *   where it is put off while the slack lasts, so that compressing never
 *   lengthens the hold (and the wait of every thread behind it).
 *
 * Runs inside a hook (gate BUSY), on the owner's buffer only.
 */
#include "event.h"

#include "attach.h"
#include "config.h"
#include "control.h"
#include "writer.h"

/* How far past its position a chunk that is due inside a lock hold gets
 * to grow before the next look. */
#define HOLD_STEP 256u

void ev_commit_slow(tls_t *t, uint64_t tsc)
{
	if (tsc > g_stop_tsc) {
		ctl_tick(tsc);
		writer_sweep(t, tsc); /* the flush deadline of idle threads */
	}
	if (unlikely(t->attach_due)) {
		/* A late-library walk writer_flush put off (attached
		 * processes only): now, if the hold has ended. */
		t->soft_end = writer_soft_end(t);
		if (!tls_holds_lock(t)) {
			t->attach_due = 0;
			attach_after_flush();
		}
	}
	if (t->attach_due && t->pos <= t->soft_end &&
	    tsc - t->chunk_tsc0 <= flush_ticks()) {
		t->soft_end = t->pos; /* look again at the next event */
		return;
	}
	if (t->pos > t->soft_end || tsc - t->chunk_tsc0 > flush_ticks()) {
		/* Due inside a hold: later, while the slack lasts (the
		 * release's own event, after the real unlock, flushes). */
		if (g_cfg.compress && tls_holds_lock(t) &&
		    t->pos + HOLD_STEP <= t->end - WRITER_RESERVE) {
			if (t->pos > t->soft_end)
				t->soft_end = t->pos + HOLD_STEP;
			return;
		}
		writer_flush(t);
	}
}
