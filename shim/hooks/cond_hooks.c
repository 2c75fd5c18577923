/*
 * cond_hooks.c - condition variables. pthread_cond_wait releases and
 * re-acquires its mutex inside glibc, out of sight of the mutex hooks, so:
 * COND_WAIT(cond, mutex) just before the real wait (the mutex is released),
 * COND_WAKE(cond, mutex, flags) right after it (re-acquired; timed out or
 * failed in flags). COND_SIGNAL(cond, broadcast flag) before a signal or
 * broadcast. Condition variables get ids in the lock table (kind COND).
 *
 * The real functions are the GLIBC_2.3.2 versions (real.h): glibc still
 * exports the old 2.2.5 ones, which dlsym would otherwise return.
 *
 * A hold of the mutex during which another thread waited ends at COND_WAIT:
 * the waited flag is cleared there (the waiters' side still carries the
 * contention through their ACQ_WAIT records).
 *
 * The waits are cancellation points. A thread cancelled in one
 * is unwound through the hook (the shim is built with -fexceptions, and
 * linked so that libgcc_s's unwinder is the one used: shim/CMakeLists.txt):
 * a cleanup attribute (cond_wait_rec) then records COND_WAKE with the error
 * flag (glibc has re-acquired the mutex before it unwinds) and opens the
 * gate, so the program's cleanup handlers and TSD destructors that follow
 * are recorded. A signal handler that longjmps out of a wait skips that
 * cleanup: the wait leaves t->wait_sp set, and thread.c's gate_revalidate()
 * reopens the gate at the thread's next hook or at its exit (and counts the
 * loss as drops).
 */
#include "hook.h"

#include <errno.h>

/* Records COND_WAIT; returns the ids through cid/mid (0 when untracked). */
static void cond_before(tls_t *t, pthread_cond_t *c, pthread_mutex_t *m,
                        uint32_t *cid, uint32_t *mid)
{
	uint64_t tsc = prim_tsc();
	lock_ent_t *ce = lockmap_get(t, c, FMT_KIND_COND);
	lock_ent_t *me = lockmap_get(t, m, FMT_KIND_MUTEX);
	*cid = *mid = 0;
	if (!ce || !me) {
		t->drops++;
		return;
	}
	*cid = atomic_load(&ce->id);
	*mid = atomic_load(&me->id);
	lock_cont_t *mc = lockmap_cont(me);
	if (atomic_load_explicit(&mc->waited, memory_order_relaxed))
		atomic_store_explicit(&mc->waited, 0, memory_order_relaxed);
	rec_uu(t, FMT_COND_WAIT, tsc, *cid, *mid);
}

static void cond_after(tls_t *t, uint32_t cid, uint32_t mid, int r)
{
	uint64_t tsc = prim_tsc();
	/* The re-acquisition is timed (the thread slept: the clock costs
	 * nothing here), and so is the rest of its nest (lock_hooks.c). */
	t->hold_clock = HOLD_EXACT;
	if (!cid)
		return;
	unsigned flags = r == 0           ? 0
	                 : r == ETIMEDOUT ? FMT_WAKEF_TIMEDOUT
	                                  : FMT_WAKEF_ERROR;
	uint8_t *p = ev_head(t, FMT_COND_WAKE, tsc);
	p = fmt_put_u(p, cid);
	p = fmt_put_u(p, mid);
	p = fmt_put_u(p, flags);
	ev_commit(t, p, tsc);
}

#define PASS_OR_BOOT(call) (likely(real_usable()) ? (call) : 0)

/* The state of a wait in progress, for its cleanup. */
typedef struct cond_guard {
	tls_t *t;
	uint32_t cid, mid;
	uint8_t waiting; /* inside the real wait */
} cond_guard_t;

/* Runs when cond_wait_rec's frame is left: a no-op after a normal return
 * (waiting is 0 again), the end of the wait when the thread is unwound out
 * of it by cancellation. */
static void cond_unwound(cond_guard_t *g)
{
	if (!g->waiting)
		return;
	tls_t *t = g->t;
	t->wait_sp = 0;
	t->wait_passes = 0;
	atomic_thread_fence(memory_order_seq_cst); /* as cond_wait_rec */
	if (likely(!tls_stale(t))) {
		tls_held_inc(t);
		cond_after(t, g->cid, g->mid, ECANCELED);
	}
	hook_leave(t);
}

enum cond_how { CW_WAIT, CW_TIMED, CW_CLOCK };

static int call_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                          const struct timespec *abs)
{
	return real.pthread_cond_clockwait
	           ? real.pthread_cond_clockwait(c, m, clk, abs)
	           : EINVAL;
}

/*
 * The recorded wait, for the three hooks: COND_WAIT, the real wait,
 * COND_WAKE. The caller holds the gate and opens it after a normal return;
 * on cancellation the cleanup ends the wait and opens the gate. fp is the
 * hook's frame (thread.c gate_revalidate).
 */
static int cond_wait_rec(tls_t *t, enum cond_how how, pthread_cond_t *c,
                         pthread_mutex_t *m, clockid_t clk,
                         const struct timespec *abs, void *fp)
{
	__attribute__((cleanup(cond_unwound))) cond_guard_t g = {.t = t};
	cond_before(t, c, m, &g.cid, &g.mid);
	tls_held_dec(t);
	t->wait_sp = (uintptr_t)fp;
	g.waiting = 1;
	atomic_signal_fence(memory_order_seq_cst);
	int r = how == CW_WAIT    ? real.pthread_cond_wait(c, m)
	        : how == CW_TIMED ? real.pthread_cond_timedwait(c, m, abs)
	                          : call_clockwait(c, m, clk, abs);
	atomic_signal_fence(memory_order_seq_cst);
	g.waiting = 0;
	t->wait_sp = 0;
	t->wait_passes = 0; /* a handler's calls, not a stuck gate's */
	/* A wait that outlived its trace (detached, attached again since):
	 * its ids are the ended trace's; nothing shared is touched. The
	 * fence pairs with writer_gen_next's: either the next attach saw
	 * wait_sp 0 (and waits for this hook to leave) or this sees the
	 * new generation. */
	atomic_thread_fence(memory_order_seq_cst);
	if (unlikely(tls_stale(t)))
		return r;
	tls_held_inc(t);
	cond_after(t, g.cid, g.mid, r);
	return r;
}

HOOK_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return PASS_OR_BOOT(real.pthread_cond_wait(c, m));
	int r = cond_wait_rec(t, CW_WAIT, c, m, 0, NULL, HOOK_FP());
	hook_leave(t);
	return r;
}

HOOK_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                       const struct timespec *abs)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return PASS_OR_BOOT(real.pthread_cond_timedwait(c, m, abs));
	int r = cond_wait_rec(t, CW_TIMED, c, m, 0, abs, HOOK_FP());
	hook_leave(t);
	return r;
}

HOOK_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
                                       clockid_t clk,
                                       const struct timespec *abs)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return PASS_OR_BOOT(call_clockwait(c, m, clk, abs));
	int r = cond_wait_rec(t, CW_CLOCK, c, m, clk, abs, HOOK_FP());
	hook_leave(t);
	return r;
}

static void cond_signal_rec(tls_t *t, pthread_cond_t *c, unsigned flags)
{
	uint64_t tsc = prim_tsc();
	lock_ent_t *ce = lockmap_get(t, c, FMT_KIND_COND);
	if (!ce) {
		t->drops++;
		return;
	}
	ev_pend(t);
	uint8_t *p =
	    fmt_put_signal(t->pos, &t->enc, tsc, atomic_load(&ce->id), flags);
	ev_commit(t, p, tsc);
}

HOOK_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return PASS_OR_BOOT(real.pthread_cond_signal(c));
	cond_signal_rec(t, c, 0);
	int r = real.pthread_cond_signal(c);
	hook_leave(t);
	return r;
}

HOOK_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return PASS_OR_BOOT(real.pthread_cond_broadcast(c));
	cond_signal_rec(t, c, FMT_SIGF_BROADCAST);
	int r = real.pthread_cond_broadcast(c);
	hook_leave(t);
	return r;
}

HOOK_EXPORT int pthread_cond_init(pthread_cond_t *c,
                                  const pthread_condattr_t *a)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return PASS_OR_BOOT(real.pthread_cond_init(c, a));
	int r = real.pthread_cond_init(c, a);
	if (r == 0)
		lock_rec_init(t, c, FMT_KIND_COND, HOOK_RA(), HOOK_FP());
	hook_leave(t);
	return r;
}

HOOK_EXPORT int pthread_cond_destroy(pthread_cond_t *c)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return PASS_OR_BOOT(real.pthread_cond_destroy(c));
	int r = real.pthread_cond_destroy(c);
	if (r == 0)
		lock_rec_destroy(t, c);
	hook_leave(t);
	return r;
}
