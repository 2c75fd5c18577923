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
	if (!cid)
		return;
	unsigned flags = r == 0 ? 0 : r == ETIMEDOUT ? FMT_WAKEF_TIMEDOUT
	                                             : FMT_WAKEF_ERROR;
	uint8_t *p = ev_head(t, FMT_COND_WAKE, tsc);
	p = fmt_put_u(p, cid);
	p = fmt_put_u(p, mid);
	p = fmt_put_u(p, flags);
	ev_commit(t, p, tsc);
}

#define PASS_OR_BOOT(call) (likely(real_usable()) ? (call) : 0)

HOOK_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return PASS_OR_BOOT(real.pthread_cond_wait(c, m));
	uint32_t cid, mid;
	cond_before(t, c, m, &cid, &mid);
	held_dec(t);
	int r = real.pthread_cond_wait(c, m);
	held_inc(t);
	cond_after(t, cid, mid, r);
	hook_leave(t);
	return r;
}

HOOK_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                       const struct timespec *abs)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return PASS_OR_BOOT(real.pthread_cond_timedwait(c, m, abs));
	uint32_t cid, mid;
	cond_before(t, c, m, &cid, &mid);
	held_dec(t);
	int r = real.pthread_cond_timedwait(c, m, abs);
	held_inc(t);
	cond_after(t, cid, mid, r);
	hook_leave(t);
	return r;
}

static int call_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                          const struct timespec *abs)
{
	return real.pthread_cond_clockwait
	           ? real.pthread_cond_clockwait(c, m, clk, abs)
	           : EINVAL;
}

HOOK_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
                                       clockid_t clk,
                                       const struct timespec *abs)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return PASS_OR_BOOT(call_clockwait(c, m, clk, abs));
	uint32_t cid, mid;
	cond_before(t, c, m, &cid, &mid);
	held_dec(t);
	int r = call_clockwait(c, m, clk, abs);
	held_inc(t);
	cond_after(t, cid, mid, r);
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
	rec_uu(t, FMT_COND_SIGNAL, tsc, atomic_load(&ce->id), flags);
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
