/*
 * writer.h - the trace file and the per-thread chunk buffers.
 *
 * Each thread encodes its events into its own buffer (wbuf_t, mmap'd, never
 * from the hooked heap); a full buffer, an old one (MALLOCK_FLUSH_MS), a
 * thread exit or the process exit turns it into one chunk, written with one
 * write() to the O_APPEND trace file. An idle thread's old buffer is
 * written by another thread's hook (writer_sweep). Process-level records
 * (PROCESS, MODULE, NOTE, END) go in chunks of tid 0, built under the
 * process-chunk lock.
 *
 * Invariants:
 * - wbuf memory is never unmapped while the process runs (a buffer of a
 *   finished thread goes to a free list and is reused by a new thread).
 * - The owner publishes wbuf.committed (payload bytes holding complete
 *   records) with a release store after each record; a flusher writes only
 *   committed bytes.
 * - wbuf.flush_lock is taken only on flush paths (never on the hot path): by
 *   the owner's flush, the sweep (trylock) and the final flush at exit. Only
 *   the owner resets its buffer; another thread writes the committed bytes
 *   past done_len and moves done_len. After the final flush
 *   a buffer is closed: its owner's later events are discarded, and the shim
 *   is stopped (g_off) so nothing more is recorded.
 * - Writes happen only in the process that created the file (a forked child
 *   before its atfork handler ran writes nothing), and only to the trace
 *   file itself: the fd is checked by identity before each write (writer.c).
 * - END counts add up over the END records of a file (an exec that failed
 *   leaves one, the exit another with the rest).
 */
#ifndef MALLOCK_SHIM_WRITER_H
#define MALLOCK_SHIM_WRITER_H

#include "tls.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Room kept free at the end of a buffer for the records of one hook
 * (a STACK record of 64 frames, a LOCK_NEW, a few events). */
#define WRITER_RESERVE 2048u

typedef struct wbuf {
	struct wbuf *next, *prev; /* registry (active or free list) */
	pthread_mutex_t flush_lock;
	_Atomic size_t committed; /* payload bytes of complete records */
	uint32_t tid;
	uint32_t seq;      /* next chunk's sequence number */
	uint64_t tsc_base; /* of the chunk being filled */
	int closed;        /* final flush done: write nothing more */
	uint32_t gen;      /* g_trace_gen when its owner got it (tls.h) */
	/* The DROP records of the chunk being filled and the counts they
	 * carry (owner's; for END when the chunk cannot be written). */
	uint64_t drop_recs, drop_vals;
	/* Another thread wrote this buffer's first done_len committed bytes
	 * (the sweep of an idle thread's buffer, or an exec that failed),
	 * and exec_drops of its owner's pending drops (writer_exec); the
	 * owner writes only the rest at its next flush. Under flush_lock. */
	size_t done_len;
	uint64_t exec_drops;
	uintptr_t thread; /* pthread_self() of the owner */
	tls_t *owner;     /* its shim_tls (alive while in the active list) */
	size_t map_size;
	size_t cap;     /* payload capacity */
	uint8_t *chunk; /* 48 header bytes, then the payload */
} wbuf_t;

/* Creates the trace file at path (relative to the directory fd dirfd, or
 * AT_FDCWD), writes the file header. abs_path: the same file's absolute
 * path, by which the file is reopened if the host closes the fd (NULL or
 * relative: never reopened). Returns 0, or an errno value (EEXIST: a file
 * or symlink is already there). */
int writer_open(int dirfd, const char *path, const char *abs_path);

/* Nonzero once the file is open (or will be opened lazily) and writable. */
int writer_active(void);

/* Defers the file's creation to the first write: open_fn (which calls
 * writer_open and writes the opening records) runs then, once. A nonzero
 * return stops the shim. Used by a forked child. */
void writer_open_lazily(int (*open_fn)(void));

/*
 * Gives the calling thread a buffer (tid t->tid) and starts its first chunk.
 * Returns 0, or ENOMEM. Takes the registry lock; allocation-free (mmap).
 */
int writer_attach(tls_t *t);

/* Flushes the thread's buffer and returns it to the free list; the thread
 * records nothing after this. Takes the flush and registry locks. */
void writer_detach(tls_t *t);

/*
 * A thread of an earlier trace (tls_stale, the caller itself, gate held):
 * its buffer, whose records belong to that trace, goes to the free list
 * unwritten, and it gets a new one, as writer_attach. Returns 0, or
 * ENOMEM. Takes the registry lock.
 */
int writer_regen(tls_t *t);

/*
 * The start of a new trace after a detach (attach.c): closes every
 * registered buffer (their records belong to the ended trace) and moves
 * g_trace_gen on, both under the registry lock: a thread that gets a
 * buffer later is of the new trace, one that had one before re-registers
 * at its next hook entry. Ends with a full fence (the wait for quiet
 * threads reads their state after it).
 */
void writer_gen_next(void);

/*
 * Waits until no registered thread but self is inside a hook outside a
 * blocking wait (gate BUSY and wait_sp 0), for up to timeout_ns. Returns
 * 0, or the tid of a thread still inside one. A thread inside a blocking
 * wait is not waited for: the wait's end sees the new generation (after
 * clearing wait_sp and a full fence) and touches no shared table. Not
 * seen: a thread descheduled, since before the detach, between
 * hook_enter's load of g_off and its store of GATE_BUSY (two
 * instructions; the fast path has no fence to close that window).
 */
uint32_t writer_wait_quiet(const tls_t *self, uint64_t timeout_ns);

/* Makes the writer as new for the next trace (after writer_gen_next and
 * the wait): closes the ended trace's file when it is still that file,
 * zeroes the END counters, the process chunk and the failure state. The
 * caller then opens the new file (writer_open). */
void writer_rearm(void);

/*
 * Writes the thread's committed records as one chunk (if any) and starts a
 * new chunk (with a DROP record first if events were lost). Called by the
 * owner only, from the commit slow path or any hook. Preserves errno.
 */
void writer_flush(tls_t *t);

/*
 * Appends one metadata record (type, body) to the thread's buffer, flushing
 * first if it would not leave WRITER_RESERVE/2 bytes. Returns 0, or -1 if
 * the record can never fit (it is then dropped).
 */
int writer_meta(tls_t *t, unsigned type, const uint8_t *body, size_t len);

/*
 * The flush deadline for threads that make no hooked call (MALLOCK_FLUSH_MS):
 * writes the committed records of every other thread's buffer whose chunk
 * is older than that, as chunks of that thread; the owner writes only what
 * it added since, at its next flush. Called by any thread's hook from the
 * control poll (ev_commit_slow, about every 10 ms; it rate-limits itself
 * to a quarter of the deadline). Only trylocks; nothing when the caller
 * holds a lock of the host's (the writes would lengthen its hold).
 */
void writer_sweep(tls_t *t, uint64_t tsc);

/* The same after a window stopped (gen: g_flush_gen): every other
 * thread's committed records, whatever their age, once per stop, from a
 * hook entry while paused (hook_enter_slow): an idle thread's tail of the
 * window reaches the file without waiting for its own next call. Nothing
 * when the caller holds a lock of the host's (a later hook does it). */
void writer_sweep_stopped(tls_t *t, uint32_t gen);

/* The final flush (process exit): writes every thread's committed records,
 * closes the buffers, writes END. Stops recording first. */
void writer_final(void);

/*
 * Before an exec (exec_hooks.c): writes every thread's committed records
 * and pending drops, a NOTE(why) and an END without FMT_ENDF_CLEAN (with
 * the counts so far). Recording goes on: if the exec fails, the buffers of
 * the other threads settle at their owners' next flush (what they added
 * since is counted as dropped), and the exit's END adds the rest. self:
 * the caller's state, flushed as its own; NULL when the caller was inside
 * a hook (its buffer is then written as another thread's). Caller holds
 * its gate. Returns 0, or -1 in a process that has no file of its
 * own (a forked child before its first write, a vfork child).
 */
int writer_exec(tls_t *self, const char *why);

/* Nonzero when this process owns its file and has never had a recording
 * window (ctl_ever_recorded): its trace then holds nothing the process did
 * (at most the exits of threads that ended while it was paused). */
int writer_unrecorded(void);

/* Nonzero if path (relative to dirfd) is the trace file itself. */
int writer_is_file(int dirfd, const char *path);

/* A privilege drop to uid (cred_hooks.c, still root): the trace file
 * becomes uid's, so that the process can reopen it by its path after the
 * host closed every fd. */
void writer_cred_drop(uint32_t uid);

/* Nonzero when this process owns an open trace file (not a vfork child,
 * not a forked child before its first write, no write failure). */
int writer_owner(void);

/* Nonzero when a final flush by this process would write its own trace:
 * writer_owner(), or a forked child before its first write whose thread t
 * holds recorded events (its file is then created). */
int writer_ends_here(const tls_t *t);

/* The fatal-signal flush: async-signal-safe (trylocks only, no
 * allocation). Writes self's and then the other threads' committed records,
 * a NOTE(why) and an END without FMT_ENDF_CLEAN, and stops recording.
 * Does nothing in a process that does not own the file. */
void writer_fatal(tls_t *self, const char *why);

/* ---- process-level chunk (tid 0) ---- */

/* Takes the process-chunk lock; records appended until writer_proc_end() go
 * into tid-0 chunks. */
void writer_proc_begin(void);
/* Appends a metadata record to the process chunk (flushing it when full). */
void writer_proc_meta(unsigned type, const uint8_t *body, size_t len);
/* Writes the process chunk and releases the lock. */
void writer_proc_end(void);

/* Writes the queued NOTE records as a process chunk (takes the lock). */
void writer_notes(void);

/* Why recording stopped for good because of the output (the trace could
 * not be created, reopened or written), or NULL: the control page's
 * reason (control.c). */
const char *writer_stop_why(void);

/* Bytes of the trace file so far (for the status file and the cap). */
uint64_t writer_bytes(void);

/* Where the thread's chunk is due for a flush when no lock hold puts it
 * off: WRITER_RESERVE and the hold slack (compressed traces) before its
 * end. Owner only. */
uint8_t *writer_soft_end(const tls_t *t);

/* Publishes the owner's records up to p: t->pos moves there and the
 * committed count, which another thread's flush reads (final, exec,
 * fatal), with release order. The one place that store is written. */
static inline void wbuf_publish(tls_t *t, uint8_t *p)
{
	t->pos = p;
	atomic_store_explicit(&t->wb->committed,
	                      (size_t)(p - t->wb->chunk) -
	                          FMT_CHUNK_HEADER_SIZE,
	                      memory_order_release);
}

/* Counters for END. */
extern _Atomic uint64_t g_events_written, g_events_dropped;

/* ---- fork ---- */
/* atfork prepare/parent: hold/release the writer's global locks. */
void writer_fork_prepare(void);
void writer_fork_parent(void);
/* atfork child: forget other threads' buffers and the parent's file; keep
 * the caller's buffer (emptied, tid updated). The caller then opens the
 * child's file with writer_open(). */
void writer_fork_child(tls_t *t);

/* The tid of the registered thread whose pthread_self() is th, or 0. Takes
 * the registry lock. */
uint32_t writer_tid_of(uintptr_t th);
/* THREAD_NAME records from the kernel's thread names: of every thread with
 * a buffer (at the final flush), or of the calling thread (at its exit).
 * Flush paths only: they read /proc and take the process-chunk lock. */
void writer_thread_names(void);
void writer_thread_name_self(uint32_t tid);

#endif
