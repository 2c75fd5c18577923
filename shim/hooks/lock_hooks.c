/*
 * lock_hooks.c - pthread mutexes, rwlocks and spinlocks: acquisition (trylock
 * first, the clock read only around a wait that really happens), release,
 * trylock failure, init and destroy.
 *
 * Timed holds. A thread's holds come in nests: from an acquisition made
 * while it holds no lock to the release that leaves it none. The first
 * acquisition of a nest decides how the nest is timed (tls.h
 * hold_clock): a contended one is always timed (HOLD_EXACT), and so is
 * everything after it in the nest; of the uncontended ones, one nest in
 * MALLOCK_HOLD_EVERY (a per-thread countdown of random gaps, mean N:
 * sample_hold_interval) is timed (HOLD_SAMPLED), the others are not
 * (HOLD_UNTIMED). A contended acquisition inside an untimed or sampled
 * nest makes the rest of it exact. In an untimed nest no lock hook reads
 * the clock: its acquisitions (ACQ_UNTIMED, ACQ_SHARED_UNTIMED) and
 * releases are stamped with the thread's previous stamp, and its
 * allocator calls are untimed (hook.h call_t0; they read the clock once
 * for their stamp, as calls outside holds do: the merge orders a block's
 * free and its reuse on another thread by it). A sampled nest's
 * uncontended acquisitions are ACQ_SAMPLED / ACQ_SHARED_SAMPLED (each
 * stands for MALLOCK_HOLD_EVERY), an exact nest's ACQ / ACQ_SHARED. Every
 * event is recorded either way: the counts stay exact. A release that
 * finds the waited flag set reads the clock whatever the nest's timing
 * (the next holder's ACQ_WAIT is ordered after it).
 *
 * Uncontended acquisition: the real trylock succeeds -> ACQ/ACQ_SHARED(lock,
 * site), or their untimed or sampled forms. Inside the hold only the TSC is
 * read (the timestamp, needed for hold times; not at all in an untimed
 * nest); the lock id (read-only table lookup), the one-frame call-site
 * id and the encoding follow after the release's unlock, or before the
 * thread's next event (tls.h: pend_*). No atomic read-modify-write, no
 * hashing of deep stacks. A thread that exits or crashes holding a lock
 * with no event recorded since its acquisition loses that ACQ (the hold
 * never ended, so no REL either); the exit path of the main thread, and a
 * pause, write it.
 *
 * Contended acquisition: the full stack first (before the wait: it must not
 * lengthen the hold that follows), waiters++ (the count read, self
 * included, is the event's `waiters`), set the lock's waited flag, time the
 * real blocking call, waiters-- -> ACQ_WAIT/ACQ_SHARED_WAIT(lock, full
 * stack, ticks, waiters), encoded after the hold as an uncontended ACQ is.
 * A timed lock that times out -> TRY_FAIL(lock, site) only.
 *
 * Release: REL(lock), or REL_CONTENDED(lock, holder's full stack) when a
 * thread waited during this hold (the waited flag, cleared here). Its time
 * and the flag are read before the real unlock, so hold intervals never
 * overlap the next holder's; the record is encoded after it, so that the
 * encoding and the holder's stack do not lengthen the hold. The commonest
 * hold of an untimed nest, an untimed acquisition still pending at the
 * release of the same lock (the thread recorded nothing since) with no
 * waiter, is written as one record (HOLD_UNTIMED, HOLD_SHARED_UNTIMED:
 * trace format 1.8) with the lock id the release read: one table lookup,
 * one encoding and one publish for the pair, where the ACQ and the REL
 * took two of each.
 *
 * Spinning (MALLOCK_SPIN_NS, default 0: off): a waiter retries the trylock
 * for up to that long before it blocks. The shim lengthens every hold by
 * its own ACQ record and release clock read (more with an allocation inside
 * the hold: 20 to 80 ns here), and glibc's mutexes put a waiter to sleep at
 * once, so the shim turns some waits that would have ended within that time
 * into sleeps. Spinning compensates for it on hand-off patterns (producer
 * and consumer) but changes the host's locking: on threads that each loop
 * on one lock, a sleeping waiter lets the holder run alone, and spinning
 * slows both (bench/performance-notes.md measures both). Off unless asked
 * for. A spun wait is still an ACQ_WAIT (the lock was held), with its spin
 * time.
 *
 * A lock released without an entry in the lock table (taken before
 * recording started) is passed through unrecorded.
 */
#include "hook.h"

#include "config.h"

#include <errno.h>

/* ---- shared paths ---- */

enum lock_op {
	OP_MUTEX,
	OP_MUTEX_TIMED,
	OP_MUTEX_CLOCK,
	OP_RD,
	OP_RD_TIMED,
	OP_WR,
	OP_WR_TIMED,
	OP_SPIN,
	/* the clock rwlocks (glibc 2.30+) */
	OP_RD_CLOCK,
	OP_WR_CLOCK
};

static int op_call(enum lock_op op, void *l, clockid_t clk,
                   const struct timespec *abs)
{
	switch (op) {
	case OP_MUTEX:
		return real.pthread_mutex_lock(l);
	case OP_MUTEX_TIMED:
		return real.pthread_mutex_timedlock(l, abs);
	case OP_MUTEX_CLOCK:
		return real.pthread_mutex_clocklock
		           ? real.pthread_mutex_clocklock(l, clk, abs)
		           : EINVAL;
	case OP_RD:
		return real.pthread_rwlock_rdlock(l);
	case OP_RD_TIMED:
		return real.pthread_rwlock_timedrdlock(l, abs);
	case OP_WR:
		return real.pthread_rwlock_wrlock(l);
	case OP_WR_TIMED:
		return real.pthread_rwlock_timedwrlock(l, abs);
	case OP_SPIN:
		return real.pthread_spin_lock(l);
	case OP_RD_CLOCK:
		return real.pthread_rwlock_clockrdlock
		           ? real.pthread_rwlock_clockrdlock(l, clk, abs)
		           : EINVAL;
	case OP_WR_CLOCK:
		return real.pthread_rwlock_clockwrlock
		           ? real.pthread_rwlock_clockwrlock(l, clk, abs)
		           : EINVAL;
	}
	return EINVAL;
}

/*
 * The arguments glibc rejects before it tries the lock (returns EINVAL, or
 * 0 when they are fine): the shim tries the lock first, so it must reject
 * them first too, or a free lock would be taken where glibc returns EINVAL.
 * The clock variants accept CLOCK_REALTIME and CLOCK_MONOTONIC only; the
 * timed rwlocks check the timeout's nanoseconds up front (glibc's
 * pthread_rwlock_common.c), the mutexes only when they have to wait.
 */
static int op_invalid(enum lock_op op, clockid_t clk,
                      const struct timespec *abs)
{
	int clock_ok = clk == CLOCK_REALTIME || clk == CLOCK_MONOTONIC;
	int ns_ok = !abs || (abs->tv_nsec >= 0 && abs->tv_nsec < 1000000000);
	switch (op) {
	case OP_MUTEX_CLOCK:
		return clock_ok && real.pthread_mutex_clocklock ? 0 : EINVAL;
	case OP_RD_TIMED:
	case OP_WR_TIMED:
		return ns_ok ? 0 : EINVAL;
	case OP_RD_CLOCK:
		return clock_ok && ns_ok && real.pthread_rwlock_clockrdlock
		           ? 0
		           : EINVAL;
	case OP_WR_CLOCK:
		return clock_ok && ns_ok && real.pthread_rwlock_clockwrlock
		           ? 0
		           : EINVAL;
	default:
		return 0;
	}
}

/* The op's trylock; EBUSY for spinlocks (they spin by themselves). A mutex
 * is read first (glibc's lock word, __data.__lock, is 0 when free), so that
 * spinning waiters do not keep stealing its cache line from the holder. */
static int op_try(enum lock_op op, void *l)
{
	switch (op) {
	case OP_MUTEX:
	case OP_MUTEX_TIMED:
	case OP_MUTEX_CLOCK:
		if (__atomic_load_n(&((pthread_mutex_t *)l)->__data.__lock,
		                    __ATOMIC_RELAXED) != 0)
			return EBUSY;
		return real.pthread_mutex_trylock(l);
	case OP_RD:
	case OP_RD_TIMED:
	case OP_RD_CLOCK:
		return real.pthread_rwlock_tryrdlock(l);
	case OP_WR:
	case OP_WR_TIMED:
	case OP_WR_CLOCK:
		return real.pthread_rwlock_trywrlock(l);
	case OP_SPIN:
		break;
	}
	return EBUSY;
}

static unsigned op_kind(enum lock_op op)
{
	switch (op) {
	case OP_RD:
	case OP_RD_TIMED:
	case OP_RD_CLOCK:
	case OP_WR:
	case OP_WR_TIMED:
	case OP_WR_CLOCK:
		return FMT_KIND_RWLOCK;
	case OP_SPIN:
		return FMT_KIND_SPIN;
	default:
		return FMT_KIND_MUTEX;
	}
}

static int op_shared(enum lock_op op)
{
	return op == OP_RD || op == OP_RD_TIMED || op == OP_RD_CLOCK;
}

/* The timing of a nest that begins with an uncontended acquisition whose
 * countdown ran out: the next gap, and HOLD_SAMPLED (HOLD_EXACT when
 * every hold is timed). Out of line: one nest in MALLOCK_HOLD_EVERY. */
__attribute__((noinline)) static void hold_nest_timed(tls_t *t)
{
	t->hold_left = sample_hold_interval(t);
	t->hold_clock = g_cfg.hold_every > 1 ? HOLD_SAMPLED : HOLD_EXACT;
}

/* The record types of an uncontended acquisition, by the nest's
 * hold_clock and whether it is shared. */
static const uint8_t acq_types[3][2] = {
    [HOLD_UNTIMED] = {FMT_ACQ_UNTIMED, FMT_ACQ_SHARED_UNTIMED},
    [HOLD_SAMPLED] = {FMT_ACQ_SAMPLED, FMT_ACQ_SHARED_SAMPLED},
    [HOLD_EXACT] = {FMT_ACQ, FMT_ACQ_SHARED},
};

/* An uncontended acquisition (ACQ, ACQ_SHARED or their untimed or sampled
 * forms: the nest's timing) at the call site ra: only the time is taken
 * inside the hold, and not even that in an untimed nest; the lookups and
 * the encoding wait until the release has unlocked (rel_end), or until
 * the thread's next event (ev_head), whichever comes first. */
static inline void rec_acq(tls_t *t, int shared, void *l, unsigned kind,
                           uintptr_t ra)
{
	if (!tls_holds_lock(t)) { /* a nest begins */
		if (likely(t->hold_left > 1)) {
			t->hold_left--;
			t->hold_clock = HOLD_UNTIMED;
		} else {
			hold_nest_timed(t);
		}
	}
	unsigned clock = t->hold_clock;
	uint64_t tsc = clock != HOLD_UNTIMED ? prim_tsc() : 0;
	if (unlikely(t->pend_type))
		acq_pend_flush(t);
	t->pend_tsc = tsc;
	t->pend_lock = l;
	t->pend_ra = ra;
	t->pend_kind = (uint8_t)kind;
	t->pend_type = acq_types[clock][shared];
}

/* Acquisitions this thread could not record (the lock table was full):
 * the release of an unknown lock counts as a drop only against one of
 * these (every release of a lock taken before recording
 * started was counted once the table had overflowed). */
static __thread uint32_t acq_lost __attribute__((tls_model("initial-exec")));

__attribute__((noinline)) void acq_pend_flush(tls_t *t)
{
	unsigned type = t->pend_type;
	t->pend_type = 0;
	if (!type)
		return;
	/* An untimed acquisition takes the thread's previous stamp. */
	if (!t->pend_tsc)
		t->pend_tsc = t->enc.last_tsc;
	if (type == FMT_ACQ_WAIT || type == FMT_ACQ_SHARED_WAIT) {
		uint8_t *p = ev_head(t, type, t->pend_tsc);
		p = fmt_put_u(p, t->pend_id);
		p = fmt_put_u(p, t->pend_stack);
		p = fmt_put_u(p, t->pend_ticks);
		p = fmt_put_u(p, t->pend_waiters);
		t->enc.last_lock = t->pend_id; /* FMT_LOCK_RECORD */
		ev_commit(t, p, t->pend_tsc);
		return;
	}
	lock_ent_t *e = lockmap_get(t, t->pend_lock, t->pend_kind);
	if (unlikely(!e)) {
		t->drops++;
		acq_lost++;
		return;
	}
	uint32_t site = stack_site(t, t->pend_ra);
	rec_lock(t, type, t->pend_tsc,
	         atomic_load_explicit(&e->id, memory_order_relaxed), 1, site);
}

static void rec_tryfail(tls_t *t, void *l, unsigned kind, uintptr_t ra)
{
	uint64_t tsc = prim_tsc();
	lock_ent_t *e = lockmap_get(t, l, kind);
	if (!e) {
		t->drops++;
		return;
	}
	rec_uu(t, FMT_TRY_FAIL, tsc, atomic_load(&e->id), stack_site(t, ra));
}

/*
 * The contended path: the trylock failed, so this thread will wait. Returns
 * the real call's result. Out of line: the uncontended path stays small.
 */
__attribute__((noinline)) static int
lock_wait(tls_t *t, enum lock_op op, void *l, clockid_t clk,
          const struct timespec *abs, uintptr_t ra, void *fp, cost_t *cost)
{
	unsigned kind = op_kind(op);
	lock_ent_t *e = lockmap_get(t, l, kind);
	/* The stack before the wait, so that it does not lengthen the hold
	 * that follows (nor count as waiting). */
	uint32_t stack = e ? stack_here(t, ra, fp) : 0;
	int32_t waiters = 0;
	lock_cont_t *c = e ? lockmap_cont(e) : NULL;
	if (c) {
		waiters = atomic_fetch_add(&c->waiters, 1) + 1;
		if (!atomic_load_explicit(&c->waited, memory_order_relaxed))
			atomic_store_explicit(&c->waited, 1,
			                      memory_order_relaxed);
	}
	uint64_t t0 = prim_tsc(), t1 = t0;
	int r = EBUSY;
	while (g_spin_ticks && t1 - t0 < g_spin_ticks) {
		prim_pause();
		if ((r = op_try(op, l)) != EBUSY)
			break;
		t1 = prim_tsc();
	}
	if (r == EBUSY) {
		/* A signal handler may longjmp out of the wait (thread.c
		 * gate_revalidate). */
		t->wait_sp = (uintptr_t)fp;
		atomic_signal_fence(memory_order_seq_cst);
		r = op_call(op, l, clk, abs);
		atomic_signal_fence(memory_order_seq_cst);
		t->wait_sp = 0;
		t->wait_passes = 0;
		/* A wait that outlived its trace: e and c are the ended
		 * trace's entries (cond_hooks.c says why the fence). */
		atomic_thread_fence(memory_order_seq_cst);
		if (unlikely(tls_stale(t)))
			return r;
	}
	t1 = prim_tsc();
	if (cost) /* a sampled call (cost.h): the wait is the real call's */
		cost->real += t1 - t0;
	if (!e) {
		if (r == 0) {
			t->drops++;
			acq_lost++;
		}
		return r;
	}
	atomic_fetch_sub(&c->waiters, 1);
	if (r == 0 || (r == EOWNERDEAD && !op_shared(op))) {
		/* A contended acquisition times its hold and the rest of
		 * its nest. */
		t->hold_clock = HOLD_EXACT;
		/* Encoded after the hold, as an uncontended ACQ is. */
		if (unlikely(t->pend_type))
			acq_pend_flush(t);
		t->pend_tsc = t1;
		t->pend_lock = l;
		t->pend_id = atomic_load_explicit(&e->id, memory_order_relaxed);
		t->pend_stack = stack;
		t->pend_ticks = t1 - t0;
		t->pend_waiters = (uint32_t)waiters;
		t->pend_type =
		    op_shared(op) ? FMT_ACQ_SHARED_WAIT : FMT_ACQ_WAIT;
	} else if (r == ETIMEDOUT) {
		rec_uu(t, FMT_TRY_FAIL, t1, atomic_load(&e->id),
		       stack_site(t, ra));
	}
	return r;
}

/* The release of l, in two halves around the real unlock: rel_begin reads
 * the waited flag and the clock before it (so hold intervals never overlap
 * the next holder's; no clock in an untimed nest unless a thread waited),
 * rel_end encodes REL or REL_CONTENDED after it (so the encoding and the
 * holder's stack do not lengthen the hold), or the hold form of an untimed
 * hold (rec_hold). */
typedef struct rel {
	uint64_t tsc; /* 0: untimed, stamped when encoded */
	void *lock;   /* l, when id is not 0 */
	uint32_t id;
	uint8_t contended;
} rel_t;

static inline void rel_begin(tls_t *t, void *l, rel_t *rl)
{
	rl->id = 0;
	lock_ent_t *e = &lockmap_slots[lockmap_hash((uintptr_t)l)];
	if (unlikely(atomic_load_explicit(&e->addr, memory_order_relaxed) !=
	                 (uintptr_t)l ||
	             !atomic_load_explicit(&e->id, memory_order_relaxed))) {
		/* The first hold of a lock: its entry is made when its
		 * pending ACQ is encoded, so do that now. */
		if (t->pend_type && t->pend_lock == l)
			acq_pend_flush(t);
		e = lockmap_find(l);
		if (!e) {
			/* Unknown lock: taken before recording started, or
			 * one the full table has no room for, whose ACQ was
			 * counted as a drop: count its REL too. */
			if (unlikely(acq_lost)) {
				acq_lost--;
				t->drops++;
			}
			return;
		}
	}
	rl->id = atomic_load_explicit(&e->id, memory_order_relaxed);
	rl->lock = l;
	rl->contended = 0;
	lock_cont_t *c = lockmap_cont(e);
	if (unlikely(atomic_load_explicit(&c->waited, memory_order_relaxed))) {
		atomic_store_explicit(&c->waited, 0, memory_order_relaxed);
		rl->contended = 1;
	}
	rl->tsc =
	    (t->hold_clock != HOLD_UNTIMED) | rl->contended ? prim_tsc() : 0;
}

/* Whether the release rl ends the pending acquisition as an untimed hold
 * of one record: the acquisition is untimed (ACQ_UNTIMED or
 * ACQ_SHARED_UNTIMED) and of rl's lock, whose entry rel_begin found, and
 * the release untimed too (rl->tsc 0: no thread waited, the nest is
 * untimed). */
static inline int rel_is_hold(const tls_t *t, const rel_t *rl)
{
	_Static_assert(FMT_ACQ_SHARED_UNTIMED == FMT_ACQ_UNTIMED + 1,
	               "the untimed acquisitions are adjacent");
	return rl->id && !rl->tsc &&
	       (unsigned)(t->pend_type - FMT_ACQ_UNTIMED) < 2u &&
	       t->pend_lock == rl->lock;
}

/* The pending untimed acquisition and its release (rel_is_hold) as one
 * hold form (fmt_put_hold: HOLD_UNTIMED or HOLD_SHARED_UNTIMED, trace
 * format 1.8), both stamped with the thread's previous stamp as their
 * own records would be; id is the lock's, from rel_begin's entry. Two
 * events. */
static inline void rec_hold(tls_t *t, uint32_t id)
{
	int shared = t->pend_type == FMT_ACQ_SHARED_UNTIMED;
	t->pend_type = 0;
	/* May write a STACK record, or flush: before the hold form's start. */
	uint32_t site = stack_site(t, t->pend_ra);
	uint64_t tsc = t->enc.last_tsc;
	uint8_t *p = fmt_put_hold(t->pos, &t->enc, shared, tsc, id, site);
	t->chunk_events++; /* the release; ev_commit counts the acquisition */
	ev_commit(t, p, tsc);
}

static inline void rel_end(tls_t *t, const rel_t *rl, uintptr_t ra, void *fp)
{
	if (t->pend_type) {
		if (rel_is_hold(t, rl)) {
			rec_hold(t, rl->id);
			return;
		}
		acq_pend_flush(t);
	}
	if (unlikely(!rl->id))
		return;
	uint64_t tsc = rl->tsc ? rl->tsc : t->enc.last_tsc;
	if (unlikely(rl->contended))
		rec_lock(t, FMT_REL_CONTENDED, tsc, rl->id, 1,
		         stack_here(t, ra, fp));
	else
		rec_lock(t, FMT_REL, tsc, rl->id, 0, 0);
}

/* Before the real functions are known (dlsym bootstrap, one thread): locks
 * are not needed yet and are reported as taken. */
#define PASS_OR_BOOT(call) (likely(real_usable()) ? (call) : 0)

/* ---- acquisition hooks ---- */

/* The bodies below are always-inline functions of a cost_t *c, run by
 * COST_RUN unsampled or sampled (hook.h COST_SAMPLED, cost.h): a sample
 * times the real trylock and unlock with reads of its own, and the wait of
 * lock_wait with that function's. */
#define ACQ_HOOK(sym, type_t, trylock, op, shared)                             \
	__attribute__((always_inline)) static inline int sym##_body(           \
	    tls_t *t, type_t *l, uintptr_t ra, void *fp, cost_t *c)            \
	{                                                                      \
		uint64_t r0 = cost_r0(c);                                      \
		int r = real.trylock(l);                                       \
		cost_r1(c, r0);                                                \
		if (likely(r == 0) || unlikely(r == EOWNERDEAD))               \
			rec_acq(t, shared, (void *)l, op_kind(op), ra);        \
		else if (r == EBUSY)                                           \
			r = lock_wait(t, op, (void *)l, 0, NULL, ra, fp, c);   \
		if (r == 0 || r == EOWNERDEAD)                                 \
			tls_held_inc(t);                                       \
		return r;                                                      \
	}                                                                      \
	COST_SAMPLED(sym##_sampled, int, (tls_t * t, type_t * l),              \
	             sym##_body(t, l, ra, fp, c))                              \
	HOOK_EXPORT int sym(type_t *l)                                         \
	{                                                                      \
		tls_t *t = &shim_tls;                                          \
		if (unlikely(!hook_enter(t)))                                  \
			return PASS_OR_BOOT(op_call(op, (void *)l, 0, NULL));  \
		COST_RUN(t, int, sym##_sampled(t, l),                          \
		         sym##_body(t, l, HOOK_RA(), HOOK_FP(), c))            \
	}

ACQ_HOOK(pthread_mutex_lock, pthread_mutex_t, pthread_mutex_trylock, OP_MUTEX,
         0)
ACQ_HOOK(pthread_rwlock_rdlock, pthread_rwlock_t, pthread_rwlock_tryrdlock,
         OP_RD, 1)
ACQ_HOOK(pthread_rwlock_wrlock, pthread_rwlock_t, pthread_rwlock_trywrlock,
         OP_WR, 0)
ACQ_HOOK(pthread_spin_lock, pthread_spinlock_t, pthread_spin_trylock, OP_SPIN,
         0)

#define TIMED_HOOK(sym, type_t, trylock, op, shared, clk_param, clk_arg)       \
	HOOK_EXPORT int sym(type_t *l clk_param, const struct timespec *abs)   \
	{                                                                      \
		tls_t *t = &shim_tls;                                          \
		if (unlikely(!hook_enter(t)))                                  \
			return PASS_OR_BOOT(                                   \
			    op_call(op, (void *)l, clk_arg, abs));             \
		int r = op_invalid(op, clk_arg, abs);                          \
		if (likely(r == 0))                                            \
			r = real.trylock(l);                                   \
		if (likely(r == 0) || unlikely(r == EOWNERDEAD))               \
			rec_acq(t, shared, (void *)l, op_kind(op), HOOK_RA()); \
		else if (r == EBUSY)                                           \
			r = lock_wait(t, op, (void *)l, clk_arg, abs,          \
			              HOOK_RA(), HOOK_FP(), NULL);             \
		if (r == 0 || r == EOWNERDEAD)                                 \
			tls_held_inc(t);                                       \
		hook_leave(t);                                                 \
		return r;                                                      \
	}

#define NO_CLK_PARAM
#define CLK_PARAM , clockid_t clk
TIMED_HOOK(pthread_mutex_timedlock, pthread_mutex_t, pthread_mutex_trylock,
           OP_MUTEX_TIMED, 0, NO_CLK_PARAM, 0)
TIMED_HOOK(pthread_mutex_clocklock, pthread_mutex_t, pthread_mutex_trylock,
           OP_MUTEX_CLOCK, 0, CLK_PARAM, clk)
TIMED_HOOK(pthread_rwlock_timedrdlock, pthread_rwlock_t,
           pthread_rwlock_tryrdlock, OP_RD_TIMED, 1, NO_CLK_PARAM, 0)
TIMED_HOOK(pthread_rwlock_timedwrlock, pthread_rwlock_t,
           pthread_rwlock_trywrlock, OP_WR_TIMED, 0, NO_CLK_PARAM, 0)
/* std::shared_timed_mutex and code that passes a clock. */
TIMED_HOOK(pthread_rwlock_clockrdlock, pthread_rwlock_t,
           pthread_rwlock_tryrdlock, OP_RD_CLOCK, 1, CLK_PARAM, clk)
TIMED_HOOK(pthread_rwlock_clockwrlock, pthread_rwlock_t,
           pthread_rwlock_trywrlock, OP_WR_CLOCK, 0, CLK_PARAM, clk)

/* ---- trylock hooks: ACQ on success (and on EOWNERDEAD: the caller now
 * holds the mutex), TRY_FAIL on EBUSY ---- */

#define TRY_HOOK(sym, type_t, kind, shared)                                    \
	__attribute__((always_inline)) static inline int sym##_body(           \
	    tls_t *t, type_t *l, uintptr_t ra, cost_t *c)                      \
	{                                                                      \
		uint64_t r0 = cost_r0(c);                                      \
		int r = real.sym(l);                                           \
		cost_r1(c, r0);                                                \
		if (likely(r == 0) || unlikely(r == EOWNERDEAD)) {             \
			rec_acq(t, shared, (void *)l, kind, ra);               \
			tls_held_inc(t);                                       \
		} else if (r == EBUSY)                                         \
			rec_tryfail(t, (void *)l, kind, ra);                   \
		return r;                                                      \
	}                                                                      \
	COST_SAMPLED(sym##_sampled, int, (tls_t * t, type_t * l),              \
	             sym##_body(t, l, ra, c))                                  \
	HOOK_EXPORT int sym(type_t *l)                                         \
	{                                                                      \
		tls_t *t = &shim_tls;                                          \
		if (unlikely(!hook_enter(t)))                                  \
			return PASS_OR_BOOT(real.sym(l));                      \
		COST_RUN(t, int, sym##_sampled(t, l),                          \
		         sym##_body(t, l, HOOK_RA(), c))                       \
	}

TRY_HOOK(pthread_mutex_trylock, pthread_mutex_t, FMT_KIND_MUTEX, 0)
TRY_HOOK(pthread_rwlock_tryrdlock, pthread_rwlock_t, FMT_KIND_RWLOCK, 1)
TRY_HOOK(pthread_rwlock_trywrlock, pthread_rwlock_t, FMT_KIND_RWLOCK, 0)
TRY_HOOK(pthread_spin_trylock, pthread_spinlock_t, FMT_KIND_SPIN, 0)

/* ---- release hooks ---- */

/* A release's body takes only the hook's frame address and reads the
 * return address from its frame record (fp + 1 word, on x86-64 and
 * AArch64 alike: the shim is built with frame pointers) after the real
 * unlock: a return address passed in would be kept in a register across
 * that call, two more saved registers on the unsampled path. */
#define REL_HOOK(sym, type_t)                                                  \
	__attribute__((always_inline)) static inline int sym##_body(           \
	    tls_t *t, type_t *l, void *fp, cost_t *c)                          \
	{                                                                      \
		rel_t rl;                                                      \
		rel_begin(t, (void *)l, &rl);                                  \
		tls_held_dec(t);                                               \
		uint64_t r0 = cost_r0(c);                                      \
		int r = real.sym(l);                                           \
		cost_r1(c, r0);                                                \
		rel_end(t, &rl, ((const uintptr_t *)fp)[1], fp);               \
		return r;                                                      \
	}                                                                      \
	COST_SAMPLED(sym##_sampled, int, (tls_t * t, type_t * l),              \
	             sym##_body(t, l, fp, c))                                  \
	HOOK_EXPORT int sym(type_t *l)                                         \
	{                                                                      \
		tls_t *t = &shim_tls;                                          \
		if (unlikely(!hook_enter(t)))                                  \
			return PASS_OR_BOOT(real.sym(l));                      \
		COST_RUN(t, int, sym##_sampled(t, l),                          \
		         sym##_body(t, l, HOOK_FP(), c))                       \
	}

REL_HOOK(pthread_mutex_unlock, pthread_mutex_t)
REL_HOOK(pthread_rwlock_unlock, pthread_rwlock_t)
REL_HOOK(pthread_spin_unlock, pthread_spinlock_t)

/* ---- init and destroy: LOCK_NEW + LOCK_INIT(lock, init stack) as one
 * LOCK_INIT_NEW, and LOCK_DESTROY (the id dies; a later init of the
 * address gets a new one) --- */

void lock_rec_init(tls_t *t, void *l, unsigned kind, uintptr_t ra, void *fp)
{
	uint32_t fresh;
	lock_ent_t *e = lockmap_fresh(t, l, kind, &fresh);
	if (!e) {
		t->drops++;
		return;
	}
	uint32_t stack = stack_here(t, ra, fp);
	if (likely(fresh)) {
		ev_pend(t);
		uint64_t tsc = prim_tsc();
		uint8_t *p = fmt_put_init_new(t->pos, &t->enc, tsc, fresh,
		                              (uintptr_t)l, kind, stack);
		ev_commit(t, p, tsc);
		return;
	}
	rec_lock(t, FMT_LOCK_INIT, prim_tsc(), atomic_load(&e->id), 1, stack);
}

void lock_rec_destroy(tls_t *t, void *l)
{
	lock_ent_t *e = lockmap_find(l);
	if (!e)
		return;
	rec_lock(t, FMT_LOCK_DESTROY, prim_tsc(), atomic_load(&e->id), 0, 0);
	lockmap_retire(e);
}

#define INIT_HOOK(sym, type_t, attr_t, kind)                                   \
	HOOK_EXPORT int sym(type_t *l, attr_t a)                               \
	{                                                                      \
		tls_t *t = &shim_tls;                                          \
		if (unlikely(!hook_enter(t)))                                  \
			return PASS_OR_BOOT(real.sym(l, a));                   \
		int r = real.sym(l, a);                                        \
		if (r == 0)                                                    \
			lock_rec_init(t, (void *)l, kind, HOOK_RA(),           \
			              HOOK_FP());                              \
		hook_leave(t);                                                 \
		return r;                                                      \
	}

#define DESTROY_HOOK(sym, type_t)                                              \
	HOOK_EXPORT int sym(type_t *l)                                         \
	{                                                                      \
		tls_t *t = &shim_tls;                                          \
		if (unlikely(!hook_enter(t)))                                  \
			return PASS_OR_BOOT(real.sym(l));                      \
		int r = real.sym(l);                                           \
		if (r == 0)                                                    \
			lock_rec_destroy(t, (void *)l);                        \
		hook_leave(t);                                                 \
		return r;                                                      \
	}

INIT_HOOK(pthread_mutex_init, pthread_mutex_t, const pthread_mutexattr_t *,
          FMT_KIND_MUTEX)
INIT_HOOK(pthread_rwlock_init, pthread_rwlock_t, const pthread_rwlockattr_t *,
          FMT_KIND_RWLOCK)
INIT_HOOK(pthread_spin_init, pthread_spinlock_t, int, FMT_KIND_SPIN)
DESTROY_HOOK(pthread_mutex_destroy, pthread_mutex_t)
DESTROY_HOOK(pthread_rwlock_destroy, pthread_rwlock_t)
DESTROY_HOOK(pthread_spin_destroy, pthread_spinlock_t)
