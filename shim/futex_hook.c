/*
 * futex_hook.c - syscall(): allocator-internal lock waits.
 *
 * tcmalloc's SpinLock (central free lists, page heap) sleeps with a raw
 * syscall(SYS_futex, FUTEX_WAIT...) (gperftools src/base/spinlock_linux-inl.h),
 * out of sight of the pthread hooks. Debian's libtcmalloc.so.4 imports
 * `syscall` through its PLT, so this definition sees those calls. A futex
 * wait made while this thread is inside a real allocator call of one of our
 * hooks (t->in_alloc) is timed and recorded as ALLOC_LOCK_WAIT(futex word's
 * id, kind ALLOC_INTERNAL, ticks), before the ALLOC/FREE it happened in.
 *
 * Every other syscall() passes straight through: the six argument registers
 * are read with va_arg and forwarded (the x86-64 and aarch64 ABIs make that
 * safe for calls with fewer arguments).
 */
#include "hook.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/syscall.h>

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
		rec_uu(t, FMT_ALLOC_LOCK_WAIT, t1, atomic_load(&e->id), t1 - t0);
	else
		t->drops++;
	errno = saved;
	return r;
}

HOOK_EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long),
	     a3 = va_arg(ap, long), a4 = va_arg(ap, long),
	     a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	tls_t *t = &shim_tls;
	if (unlikely(nr == SYS_futex && t->in_alloc)) {
		int cmd = (int)a2 & ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
		if (cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET)
			return futex_wait_timed(t, nr, a1, a2, a3, a4, a5, a6);
	}
	if (unlikely(!real_usable() || !real.syscall)) {
		errno = ENOSYS;
		return -1;
	}
	return real.syscall(nr, a1, a2, a3, a4, a5, a6);
}
