/*
 * writer_int.h - what the writer's files share (writer.c: the file,
 * wbuf.c: the buffers, writer_proc.c: the process chunk); not for any
 * other file. Everything here is hidden (the shim exports only hooks and
 * mallock_*), and every function keeps THE RULE (hook.h): it may run
 * inside a hook.
 *
 * Lock order: lazy_lock (ensure_file: the lazily created file, whose
 * opening records go through the writer) -> proc_lock -> reg_lock ->
 * wbuf.flush_lock.
 */
#ifndef MALLOCK_SHIM_WRITER_INT_H
#define MALLOCK_SHIM_WRITER_INT_H

#include "writer.h"

#include "real.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define WRITER_HIDDEN __attribute__((visibility("hidden")))

/* The copy a lock is reset from in a fork child (it may have been held by
 * a thread that does not exist there). */
static const pthread_mutex_t mutex_init_value = PTHREAD_MUTEX_INITIALIZER;

/* ---- writer.c: the file ---- */

/* The trace fd (-1: none), unchecked: trace_fd() checks it before a
 * write. */
extern WRITER_HIDDEN _Atomic int g_fd;
/* writer_fatal runs: no warning (not signal-safe). */
extern WRITER_HIDDEN int g_in_fatal;

/* Nonzero while the file is still to be created lazily and this process
 * has never recorded: what it writes until then (a paused thread's exit,
 * process records) is not an event of a window, and goes nowhere. */
WRITER_HIDDEN int lazy_unrecorded(void);

/* Creates the lazily opened file (once), before any lock of the writer is
 * taken: open_fn writes the opening records through the writer itself. A
 * process that has never recorded creates none. */
WRITER_HIDDEN void ensure_file(void);

/*
 * Seals and writes one chunk (header at chunk[0..47], payload after).
 * Returns 0, or -1 when nothing was written (file closed, wrong process,
 * earlier failure, or this write failed: then warns once and stops the
 * shim). events: the chunk's core events, for the END counters; lost: the
 * program's events it stands for (events, less its DROP records, plus the
 * counts they carry), added to END's dropped when it is not written
 * (a DROP's count was lost with its chunk).
 */
WRITER_HIDDEN int write_chunk(uint8_t *chunk, uint32_t tid, uint32_t seq,
                              uint64_t tsc_base, size_t len, uint64_t events,
                              uint64_t lost, int compress);

/* The fork child's side of the file: the parent's fd closed (when it is
 * still the trace file), no file, no failure, lazy_lock and the fd fixer
 * reset. */
WRITER_HIDDEN void writer_file_fork_child(void);

/* ---- wbuf.c: the buffers ---- */

/* The registry: the active buffers' list (its head), under reg_lock. */
extern WRITER_HIDDEN pthread_mutex_t reg_lock;
extern WRITER_HIDDEN wbuf_t active;

/* The writer's locks this thread holds or waits for (bits), and the
 * buffers whose flush_lock it holds. A bit (or an entry) is set before the
 * lock is taken and cleared after it is released: a signal handler in
 * between sees it set, and skips a lock it could have taken (safe), never
 * the reverse. The buffers are a stack, not one slot: an exit() from a
 * handler that interrupted this thread's own flush takes and releases
 * other buffers' locks, and must still know, at the last buffer of its
 * pass, that the interrupted flush holds that one. */
#define W_REG 1u
#define W_PROC 2u
extern WRITER_HIDDEN __thread unsigned w_held
    __attribute__((tls_model("initial-exec")));
/* How many flush_locks this thread holds or waits for (wbuf.c). */
extern WRITER_HIDDEN __thread unsigned w_nheld
    __attribute__((tls_model("initial-exec")));

static inline void wlock(pthread_mutex_t *m, unsigned bit)
{
	w_held |= bit;
	atomic_signal_fence(memory_order_seq_cst);
	real.pthread_mutex_lock(m);
}

static inline void wunlock(pthread_mutex_t *m, unsigned bit)
{
	real.pthread_mutex_unlock(m);
	atomic_signal_fence(memory_order_seq_cst);
	w_held &= ~bit;
}

/*
 * The passes over every thread's buffer at exit and at exec. Locks the
 * caller already holds (a signal handler that interrupted the writer on
 * this thread called exit or exec) are not waited for: what they guard is
 * skipped and named in the returned note text (empty: nothing skipped).
 * close: the final flush (the buffers are closed); else an exec.
 */
WRITER_HIDDEN const char *wbuf_flush_all(int close);

/* The fatal-signal pass (async-signal-safe, trylocks only): self's
 * committed records, then every other buffer's, each closed. */
WRITER_HIDDEN void wbuf_fatal_flush(tls_t *self);

/* ---- writer_proc.c: the process chunk ---- */

extern WRITER_HIDDEN pthread_mutex_t proc_lock;

/* The fork child's side of the process chunk: empty, numbered from 0, no
 * END sent yet. */
WRITER_HIDDEN void writer_proc_fork_child(void);
/* The same for the next trace of a re-attach (takes proc_lock). */
WRITER_HIDDEN void writer_proc_rearm(void);

#endif
