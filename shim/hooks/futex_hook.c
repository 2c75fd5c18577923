/*
 * futex_hook.c - syscall(): futex waits and wakes made through libc's
 * syscall(), the locks that do not go through pthread.
 *
 * Inside the allocator. tcmalloc's SpinLock (central free lists, page heap)
 * sleeps with a raw syscall(SYS_futex, FUTEX_WAIT...) (gperftools
 * src/base/spinlock_linux-inl.h), out of sight of the pthread hooks.
 * Debian's libtcmalloc.so.4 imports `syscall` through its PLT, so this
 * definition sees those calls. A futex wait made while this thread is
 * inside a real allocator call of one of our hooks (t->in_alloc) is timed
 * and recorded as ALLOC_LOCK_WAIT(futex word's id, kind ALLOC_INTERNAL,
 * ticks), before the ALLOC/FREE it happened in. Wakes there are not
 * recorded.
 *
 * Everywhere else. Locks of their own that sleep with syscall(SYS_futex)
 * (InnoDB's srw_lock, Rust's std::sync::Mutex and Condvar, libstdc++'s
 * atomic waits and futures) are recorded as futex words (kind FUTEX):
 *   FUTEX_WAIT(word, waiter's stack, ticks asleep) for a FUTEX_WAIT or
 *     FUTEX_WAIT_BITSET that slept: returned 0 (woken), or failed with
 *     ETIMEDOUT or EINTR. EAGAIN (the word had changed: no sleep) is not
 *     recorded, and costs two clock reads: the stack (the same after the
 *     wait as before it) is taken only for a wait that slept, after it.
 *   FUTEX_WAKE(word, waker's stack, woken) for a FUTEX_WAKE or
 *     FUTEX_WAKE_BITSET that woke at least one waiter (returned > 0): the
 *     releasing side, "the holder's side" of a lock word. A wake that woke
 *     no one (returned 0: the common unlock of a lock nobody waits on)
 *     costs one compare after the real call: no clock, no gate.
 * A futex wait does not say the word was then acquired (the word may be a
 * condition, an event or a semaphore), so no hold is recorded; and an
 * acquisition that never waited never calls the kernel, so it is not seen
 * at all. The analyzer says both (docs/mallock-report.md).
 * Other futex operations (requeue, PI locks, WAKE_OP) pass through.
 *
 * Both go through the gate: a futex call made by the shim itself, or with
 * the gate busy (inside another hook, libunwind, the writer), passes
 * through unrecorded, as do calls while recording is off.
 *
 * syscall(SYS_exit_group, ...) first writes the trace as _exit does
 * (exit_hooks.c): a program that ends that way through libc keeps its tail.
 *
 * Every other syscall() passes straight through: the six argument registers
 * are read with va_arg and forwarded (the x86-64 and aarch64 ABIs make that
 * safe for calls with fewer arguments). The non-futex path costs a few
 * compares.
 */
#include "control.h"
#include "exit_hooks.h"
#include "hook.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/syscall.h>

#define FUTEX_CMD(op) ((int)(op) & ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME))

__attribute__((noinline)) static long futex_wait_timed(tls_t *t, long nr,
                                                       long a1, long a2,
                                                       long a3, long a4,
                                                       long a5, long a6)
{
	uint64_t t0 = prim_tsc();
	long r = real.syscall(nr, a1, a2, a3, a4, a5, a6);
	uint64_t t1 = prim_tsc();
	int saved = errno;
	lock_ent_t *e = lockmap_get(t, (void *)a1, FMT_KIND_ALLOC_INTERNAL);
	if (e)
		rec_uu(t, FMT_ALLOC_LOCK_WAIT, t1, atomic_load(&e->id),
		       t1 - t0);
	else
		t->drops++;
	errno = saved;
	return r;
}

/* FUTEX_WAIT(word, stack, wait) or FUTEX_WAKE(word, stack, woken) at tsc. */
static void rec_futex(tls_t *t, unsigned type, uint64_t tsc, void *word,
                      uint32_t stack, uint64_t v)
{
	lock_ent_t *e = lockmap_get(t, word, FMT_KIND_FUTEX);
	if (!e) {
		t->drops++;
		return;
	}
	uint8_t *p = ev_head(t, type, tsc);
	p = fmt_put_u(p, atomic_load_explicit(&e->id, memory_order_relaxed));
	p = fmt_put_u(p, stack);
	p = fmt_put_u(p, v);
	ev_commit(t, p, tsc);
}

/* A futex wait outside the allocator: the timed real call, then, when it
 * slept, the stack and the record. ra, fp: the hook's. */
__attribute__((noinline)) static long futex_wait_user(tls_t *t, long a1,
                                                      long a2, long a3, long a4,
                                                      long a5, long a6,
                                                      uintptr_t ra, void *fp)
{
	/* Not recording, or inside the shim: no clock either. */
	if (atomic_load_explicit(&g_off, memory_order_relaxed) ||
	    t->gate == GATE_BUSY || t->gate == GATE_DEAD)
		return real.syscall(SYS_futex, a1, a2, a3, a4, a5, a6);
	uint64_t t0 = prim_tsc();
	long r = real.syscall(SYS_futex, a1, a2, a3, a4, a5, a6);
	uint64_t t1 = prim_tsc();
	int saved = errno;
	if ((r == 0 || saved == ETIMEDOUT || saved == EINTR) && hook_enter(t)) {
		rec_futex(t, FMT_FUTEX_WAIT, t1, (void *)a1,
		          stack_here(t, ra, fp), t1 - t0);
		hook_leave(t);
	}
	errno = saved;
	return r;
}

/* A wake that woke r > 0 waiters: the waker's stack. */
__attribute__((noinline)) static void futex_woke(tls_t *t, long a1, long r,
                                                 uintptr_t ra, void *fp)
{
	int saved = errno;
	if (hook_enter(t)) {
		uint64_t tsc = prim_tsc();
		rec_futex(t, FMT_FUTEX_WAKE, tsc, (void *)a1,
		          stack_here(t, ra, fp), (uint64_t)r);
		hook_leave(t);
	}
	errno = saved;
}

HOOK_EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long),
	     a3 = va_arg(ap, long), a4 = va_arg(ap, long),
	     a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	if (unlikely(!real_usable() || !real.syscall)) {
		errno = ENOSYS;
		return -1;
	}
	if (unlikely(nr == SYS_futex)) {
		tls_t *t = &shim_tls;
		int cmd = FUTEX_CMD(a2);
		if (cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET) {
			if (t->in_alloc)
				return futex_wait_timed(t, nr, a1, a2, a3, a4,
				                        a5, a6);
			return futex_wait_user(t, a1, a2, a3, a4, a5, a6,
			                       HOOK_RA(), HOOK_FP());
		}
		if ((cmd == FUTEX_WAKE || cmd == FUTEX_WAKE_BITSET) &&
		    !t->in_alloc) {
			long r = real.syscall(nr, a1, a2, a3, a4, a5, a6);
			if (unlikely(r > 0))
				futex_woke(t, a1, r, HOOK_RA(), HOOK_FP());
			return r;
		}
	}
	if (unlikely(nr == SYS_rt_sigaction && a2))
		/* The kernel's struct sigaction starts with the handler. */
		ctl_signal_change((int)a1, *(const uintptr_t *)a2);
	if (unlikely(nr == SYS_close_range))
		return fd_close_range_syscall(a1, a2, a3);
	if (unlikely(nr == SYS_exit_group))
		exit_hooks_exit_group();
	return real.syscall(nr, a1, a2, a3, a4, a5, a6);
}
