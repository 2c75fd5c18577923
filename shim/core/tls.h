/*
 * tls.h - the per-thread state of the shim, in initial-exec TLS, and the
 * entry gate every hook passes.
 *
 * Invariants:
 * - shim_tls starts static-empty (gate == GATE_UNINIT): the first hook call
 *   of a thread falls to the slow path (hook_enter_slow), which sets the
 *   thread up; the hot path never tests "initialised?" separately.
 * - gate is the re-entry guard: a hook sets GATE_BUSY on entry and clears it
 *   on exit, so every allocation or lock made while a hook runs (by the real
 *   allocator, libunwind, dlsym, the writer, a signal handler) passes
 *   straight through, unrecorded. Only the owning thread (and its signal
 *   handlers) ever read or write a thread's shim_tls.
 * - g_off is the one global test on the hot path (one relaxed load): any bit
 *   set means "do not record" (not initialised, paused by the user, stopped).
 */
#ifndef MALLOCK_SHIM_TLS_H
#define MALLOCK_SHIM_TLS_H

#include "prim.h"
#include "trace_format.h"

#include <stdatomic.h>
#include <stdint.h>

enum tls_gate {
	GATE_READY = 0,  /* set up and not inside a hook: record */
	GATE_UNINIT = 1, /* the thread's first call: set up in the slow path */
	GATE_BUSY = 2,   /* inside a hook: pass through */
	GATE_DEAD = 3,   /* thread finished (or set-up failed): pass through */
};

/* How the holds of a nest are timed (tls_t.hold_clock; lock_hooks.c). */
enum tls_hold_clock {
	HOLD_UNTIMED = 0, /* no clock read: one of the N-1 of N not timed */
	HOLD_SAMPLED = 1, /* timed: the one of N (MALLOCK_HOLD_EVERY) */
	HOLD_EXACT = 2,   /* timed: a contended acquisition (or a condition
	                     wake) in the nest, or MALLOCK_HOLD_EVERY=1 */
};

/* g_off bits */
#define SHIM_OFF_INIT 1u    /* the shim is not (yet) recording */
#define SHIM_OFF_PAUSED 2u  /* mallock_recording(0) */
#define SHIM_OFF_STOPPED 4u /* final flush done, inert, or output failed */
/* A control request is pending: the next hook entry serves it (control.c). */
#define SHIM_OFF_CTL 8u
/* MALLOCK_MAX_BYTES reached: off for good, but the final flush still writes
 * NOTE and END. */
#define SHIM_OFF_CAPPED 16u

/* Entries of the pc -> site id cache (a power of 2). */
#define TLS_SITE_CACHE 64

struct wbuf;
struct scache;

typedef struct tls {
	uint8_t gate;        /* enum tls_gate */
	uint8_t in_alloc;    /* inside the real allocator call of a hook */
	uint8_t exit_rounds; /* TSD destructor rounds seen at thread exit */
	uint32_t tid;
	uint8_t *pos;        /* next free byte of the chunk payload */
	uint8_t *soft_end;   /* flush once pos passes this */
	uint8_t *end;        /* end of the payload area */
	uint64_t chunk_tsc0; /* tsc_base of the chunk being filled */
	fmt_enc_t enc;
	struct wbuf *wb;
	uint64_t chunk_events; /* core events in the chunk being filled */
	uint64_t drops;        /* events lost since the last DROP record */
	uintptr_t stack_lo, stack_hi; /* the stack (thread.h), or 0, 0 */
	/* Sampling (sample.h): bytes left before the next sampled allocation,
	 * the thread's random state; the locks it holds (tls_held_inc below:
	 * counted since the last resume, epoch = g_epoch then; an
	 * approximation). */
	int64_t sample_left;
	uint64_t rng;
	uint32_t nheld, held_epoch;
	/* Allocator calls outside locks before the next timed one (hook.h
	 * call_t0); 0 at the thread's start: its first call is timed. */
	uint32_t time_left;
	/* The shim's cost (cost.h): hook calls left before the next sampled
	 * one (0 only before the thread is set up), and the gap drawn for
	 * it (the calls that sample stands for). */
	uint32_t cost_left, cost_gap;
	/* The CPUs a timed allocator call began and ended on (hook.h call_t0,
	 * call_t1; PRIM_CPU_NONE: unknown). */
	uint32_t cpu0, cpu1;
	uint32_t flush_gen; /* g_flush_gen when this thread last flushed */
	/* g_trace_gen when the thread got its buffer: another value means
	 * its state (buffer, pending acquisition, caches) belongs to an
	 * earlier trace of an attach that was detached since. */
	uint32_t gen;
	uint8_t sc_failed;  /* the stack cache could not be set up */
	uint8_t attach_due; /* a late-library walk waits for the hold's end */
	/* The timing of the thread's current nest of holds (lock_hooks.c:
	 * from an acquisition made holding no lock to the release that
	 * leaves none): enum tls_hold_clock, meaningful while
	 * tls_holds_lock(); and the uncontended nests before the next timed
	 * one, 0 at the thread's start (its first nest is timed). */
	uint8_t hold_clock;
	uint32_t hold_left;
	/* An acquisition not yet encoded (lock_hooks.c): its
	 * record is written after the hold, or before the thread's next event,
	 * whichever is first; an untimed one that its release ends with
	 * nothing between, in one record with it (rec_hold). pend_type 0:
	 * none. */
	uint8_t pend_type, pend_kind;
	uint64_t pend_tsc; /* 0: untimed, stamped when encoded */
	void *pend_lock;
	uintptr_t pend_ra;
	/* ACQ_WAIT / ACQ_SHARED_WAIT: its fields, already resolved */
	uint64_t pend_ticks;
	uint32_t pend_id, pend_stack, pend_waiters;
	struct scache *sc; /* validated stack cache (stackcache.h), or NULL */
	/* Inside a blocking wait (cond_hooks.c, lock_hooks.c lock_wait): the
	 * waiting hook's frame address, else 0; and the hook calls passed
	 * through meanwhile with the gate BUSY (thread.c gate_revalidate). */
	uintptr_t wait_sp;
	uint32_t wait_passes;
	struct {
		uintptr_t pc;
		uint32_t id;
	} site[TLS_SITE_CACHE];
} tls_t;

extern __thread tls_t shim_tls __attribute__((tls_model("initial-exec")));
extern _Atomic unsigned g_off;
/* The trace's generation: 0 for a preloaded shim's one trace; each
 * `mallock attach` after a detach moves it on (attach.c, wbuf.c
 * writer_gen_next). A thread whose t->gen differs takes the slow path at
 * its next hook entry, which gives it a new buffer (thread.c
 * thread_regen). */
extern _Atomic uint32_t g_trace_gen;
/* TSC of the next control poll or the end of the window (MALLOCK_DURATION),
 * whichever comes first; UINT64_MAX while paused. Read on the hot path by
 * ev_commit (event.h), which calls ev_commit_slow -> ctl_tick past it;
 * kept by control.c. */
extern uint64_t g_stop_tsc;
/* MALLOCK_FLUSH_MS and MALLOCK_SPIN_NS in TSC ticks, set by init (init.c)
 * and read by every event (event.h) and lock hook. The flush deadline
 * also changes while a reader of the growing trace asks for a shorter one
 * (control.c): read it with flush_ticks(). UINT64_MAX: no deadline. */
extern uint64_t g_flush_ticks;
extern uint64_t g_spin_ticks;

static inline uint64_t flush_ticks(void)
{
	return __atomic_load_n(&g_flush_ticks, __ATOMIC_RELAXED);
}

/*
 * The slow half of hook_enter(): resolves the real functions if needed, sets
 * the thread up on its first call. Returns 1 with the gate set to GATE_BUSY
 * when the hook may record, 0 when it must pass through (the gate is then
 * unchanged). Allocation-free except for the thread set-up, which holds the
 * gate while it allocates.
 */
int hook_enter_slow(tls_t *t);

/*
 * Takes the gate for a call that is to be recorded, whatever g_off says
 * (the caller has decided): READY becomes BUSY; UNINIT sets the thread up
 * (BUSY, or DEAD if the set-up failed). Returns 1 with the gate BUSY (call
 * hook_leave), 0 to pass through. Allocates only in the set-up (init.c).
 */
int gate_take(tls_t *t);

/*
 * A gate left BUSY by a hook that never returned (a signal handler
 * longjmp'ed out of its wait): reopens it when the hook's frame
 * is certainly gone and counts the hook's lost end, and the calls that
 * passed through since, as drops (thread.c). Called with the gate BUSY and
 * t->wait_sp set; async-signal-safe.
 */
void gate_revalidate(tls_t *t);

/*
 * The held-lock count: how many locks the thread holds, as far as the lock
 * hooks counted while recording. Every start of a recording window
 * (resume, control.c) bumps g_epoch, which makes every thread's count
 * stale: a stale count reads as none, and the next acquisition counts
 * again from zero.
 */
extern _Atomic uint32_t g_epoch;

/* Nonzero while the thread holds a lock (as far as the hooks counted). */
static inline int tls_holds_lock(const tls_t *t)
{
	return t->nheld && t->held_epoch == atomic_load_explicit(
	                                        &g_epoch, memory_order_relaxed);
}

/* A lock was acquired / released by this thread (recording). */
static inline void tls_held_inc(tls_t *t)
{
	uint32_t e = atomic_load_explicit(&g_epoch, memory_order_relaxed);
	if (unlikely(t->held_epoch != e)) {
		t->held_epoch = e;
		t->nheld = 0;
	}
	t->nheld++;
}

static inline void tls_held_dec(tls_t *t)
{
	if (t->nheld)
		t->nheld--;
}

/* Nonzero when t's state belongs to an earlier trace (tls.h g_trace_gen). */
static inline int tls_stale(const tls_t *t)
{
	return t->gen !=
	       atomic_load_explicit(&g_trace_gen, memory_order_relaxed);
}

/* Enters a hook: 1 = record (gate now BUSY; call hook_leave), 0 = pass
 * through. One predictable branch on the hot path (a thread of an earlier
 * trace fails it too: tls_stale). */
static inline int hook_enter(tls_t *t)
{
	if (likely(!(t->gate |
	             atomic_load_explicit(&g_off, memory_order_relaxed) |
	             (t->gen ^ atomic_load_explicit(&g_trace_gen,
	                                            memory_order_relaxed))))) {
		t->gate = GATE_BUSY;
		atomic_signal_fence(memory_order_seq_cst);
		return 1;
	}
	return hook_enter_slow(t);
}

static inline void hook_leave(tls_t *t)
{
	atomic_signal_fence(memory_order_seq_cst);
	t->gate = GATE_READY;
}

/* Holds the gate around the shim's own work outside a hook's body (set-up,
 * dlsym, fork, exec, a fatal signal, attach): whatever the thread
 * allocates or locks until gate_restore() passes through, unrecorded.
 * Returns the gate to give back (it may already be BUSY: nesting is fine). */
static inline uint8_t gate_hold(tls_t *t)
{
	uint8_t g = t->gate;
	t->gate = GATE_BUSY;
	atomic_signal_fence(memory_order_seq_cst);
	return g;
}

static inline void gate_restore(tls_t *t, uint8_t g)
{
	atomic_signal_fence(memory_order_seq_cst);
	t->gate = g;
}

#endif
