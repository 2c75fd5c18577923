/*
 * hook.h - what every hook file shares: the export macro, the caller's
 * return and frame addresses, and the record helpers for allocation events.
 *
 * Invariant: the helpers run inside a hook that passed hook_enter() (gate
 * BUSY); they encode into the thread's buffer and never allocate.
 *
 * THE RULE. A hook runs inside whatever the host is doing: inside glibc
 * with an internal lock held (pthread_getattr_np calls realloc under the
 * thread's own lock, the loader calls malloc and constructors under its
 * lock, stdio under the stream's), in a signal handler, in a fork child
 * whose other threads vanished holding locks. So a hook, and everything it
 * calls (thread set-up, stack capture, the writer's flush, notes), calls
 * only what cannot take a lock the host may hold at that moment:
 *
 *   - system calls through their libc wrappers: read, write, open, openat,
 *     close, fstat, fstatat, fcntl, ftruncate, readlink, mkdirat, renameat,
 *     renameat2 (the control directory), unlinkat, fchown (the control
 *     page, its directory, the trace), mmap, munmap, mprotect (attach's
 *     GOT slots), madvise, getrlimit, pthread_sigmask, sigaltstack,
 *     sigpending, sigtimedwait, raise (the fatal handler), clock_gettime,
 *     gettid, getpid, getppid, geteuid, sched_yield
 *   - instructions: rdtsc, rdtscp (the clock and the CPU a call ran on:
 *     prim_tsc, prim_tsc_cpu), pause; cpuid at init only (prim_cpu_init)
 *   - pure functions: string and memory functions, strto*, sig*set, log,
 *     strerrordesc_np (prim_strerror: strerror translates, and gettext
 *     takes a lock), zlib's crc32; snprintf/vsnprintf into a buffer (no
 *     stream lock, no allocation for the formats the shim uses)
 *   - the real pthread functions on the shim's own locks (their order is
 *     written once, in writer_int.h) and on the host's lock
 *     the hook was called for; pthread_self, pthread_setspecific
 *   - the real function a hook forwards the host's own call to (REAL_FUNCS
 *     in real.h: syscall for its futex wait or wake, exec*, sigaction,
 *     signal, sysv_signal, sigset, the setuid family, pthread_create,
 *     dlclose, pipe2, dl_iterate_phdr, closefrom and close_range, whose
 *     range the close_range system call closes in pieces around the
 *     shim's fds, _exit, _Exit, quick_exit): it is the call the host made,
 *     so whatever lock it takes, the host asked for
 *   - the real allocator only for the shim's own blocks (gate BUSY)
 *   - zstd compression with the shim's static contexts (compress.h: pure
 *     computation, no lock, no allocation)
 *   - lock-free lookups glibc keeps for this: _dl_find_object (libunwind's
 *     unwind-table lookup, stack.c), getauxval, sysconf(_SC_PAGESIZE)
 *     (attach_elf.c: the walk of late libraries)
 *
 * Never from a hook: pthread_getattr_np (stack bounds are learned at
 * thread start or lock-free: thread.h), stdio streams, strerror,
 * getenv/setenv/unsetenv, getcwd, gethostname (init only: prim.c),
 * pthread_atfork and at_quick_exit (registered once by shim_boot, init.c),
 * dlsym, dladdr, dlopen (resolved at init: real.c, cxx_init), and
 * dl_iterate_phdr (MODULE records are written at init, dlclose, thread exit
 * and the final flush, never from a flush inside a hook; libunwind's own
 * calls, made inside the gate, are answered lock-free: stack.c). libunwind
 * sets itself up (its lock, its validation pipe) at init, not in a hook.
 *
 * Known exceptions: _exit, _Exit, quick_exit and syscall(SYS_exit_group)
 * run the destructor's final flush (exit_hooks.c), dl_iterate_phdr
 * included, unless they interrupted a hook of this thread (then only the
 * nested flush, which skips what the thread holds); dlsym for a C++
 * operator whose library was loaded
 * after init (cxx_hooks.c); in a process the shim was attached to, a flush
 * by a thread that holds no lock of the host's walks the modules with
 * dl_iterate_phdr to redirect libraries loaded since (attach.c);
 * libunwind's objects without an .eh_frame_hdr are not unwound through
 * inside a hook; a fork child that may have lost
 * the loader's lock never calls dl_iterate_phdr (modules.h).
 * tests/reliability/libcholds.c runs every hook inside those libc calls.
 */
#ifndef MALLOCK_SHIM_HOOK_H
#define MALLOCK_SHIM_HOOK_H

#include "cost.h"
#include "event.h"
#include "lockmap.h"
#include "real.h"
#include "sample.h"
#include "stack.h"
#include "tls.h"

/* Hooks are the only exported symbols besides mallock_* (see exports.map). */
#define HOOK_EXPORT __attribute__((visibility("default")))
/* Must be used in the hook's own body (not in a helper). */
#define HOOK_RA() ((uintptr_t)__builtin_return_address(0))
#define HOOK_FP() __builtin_frame_address(0)

/*
 * Timing of allocator calls. A call made while the thread holds a lock is
 * timed as its nest of holds is (lock_hooks.c): the TSC is read before and
 * after it in a timed nest, once (its stamp) in an untimed one, which
 * records 0 ticks. Of the other calls, one in
 * MALLOCK_TIME_EVERY is timed (on average: sample.h); the rest read the TSC
 * once for their stamp (the merge's order) and record 0 ticks: an allocation
 * after the call (its block exists from then), a free before it (the merge puts
 * a free at its start: its block may go to another thread before it returns).
 * A TSC read cost 11.5 ns on the AMD EPYC guest measured (bench/clock_bench.c,
 * docs/performance.md), most of what a recorded call cost. call_t0() returns
 * the start of a timed call, or 0; call_ticks() the ticks to record: 0 for an
 * untimed call, at least 1 for a timed one (TSCs of two CPUs may differ: a call
 * that migrated may end "before" it began).
 *
 * A timed call also notes the CPU it began on (t->cpu0) and call_t1(), its
 * end, the CPU it ended on (t->cpu1), both read with the TSC (prim_tsc_cpu:
 * a load of the rseq area, or rdtscp): a call that ended on another CPU was
 * descheduled inside the allocator, and its record is preceded by
 * ALLOC_MIGRATED (rec_migrated), so that the analyzer counts its time as
 * preemption, not allocator work.
 */
static inline uint64_t call_t0(tls_t *t)
{
	if (tls_holds_lock(t))
		return t->hold_clock != HOLD_UNTIMED ? prim_tsc_cpu(&t->cpu0)
		                                     : 0;
	if (likely(t->time_left > 1)) {
		t->time_left--;
		return 0;
	}
	t->time_left = sample_time_interval(t);
	return prim_tsc_cpu(&t->cpu0);
}

/* The end of an allocator call that began at t0 (call_t0): the TSC, and
 * for a timed call (t0 != 0) the CPU in t->cpu1. */
static inline uint64_t call_t1(tls_t *t, uint64_t t0)
{
	return t0 ? prim_tsc_cpu(&t->cpu1) : prim_tsc();
}

static inline uint64_t call_ticks(uint64_t t0, uint64_t t1)
{
	if (!t0)
		return 0;
	return t1 > t0 ? t1 - t0 : 1;
}

/*
 * The shim's cost (cost.h) in a hook whose body is an always-inline
 * function of a cost_t *c: COST_SAMPLED defines fn, the sampled instance
 * (c set: entry and exit reads, cost_end), out of line and cold, so that
 * the hook's own code (the unsampled instance, c NULL: every cost_*
 * helper folds away) keeps its registers; COST_RUN ends the hook: the
 * sampled call when the countdown ran out, else the body, then releases
 * the gate (held: hook_enter) and returns. fn finds the hook's HOOK_RA()
 * and HOOK_FP() (ra, fp in body_of) through the frame pointers, one frame
 * up (the shim is built with them): passed as arguments, the hook would
 * compute them before its fast path. A stack captured in the sampled
 * instance starts one frame deeper (stack.h: stack_here_slow finds it;
 * 1 call in 1024).
 */
#define COST_SAMPLED(fn, type, params, body_of)                                \
	__attribute__((noinline, cold)) static type fn params                  \
	{                                                                      \
		_Pragma("GCC diagnostic push");                                \
		_Pragma("GCC diagnostic ignored \"-Wframe-address\"");         \
		uintptr_t ra = (uintptr_t)__builtin_return_address(1);         \
		void *fp = __builtin_frame_address(1);                         \
		_Pragma("GCC diagnostic pop");                                 \
		(void)ra;                                                      \
		(void)fp;                                                      \
		cost_t c_ = {.e0 = cost_begin(t)};                             \
		cost_t *c = &c_;                                               \
		type r_ = body_of;                                             \
		uint64_t x1_ = prim_tsc();                                     \
		cost_end(t, c, x1_);                                           \
		return r_;                                                     \
	}

#define COST_RUN(t, type, sampled_call, body_of)                               \
	if (unlikely(cost_due(t))) {                                           \
		type r_ = sampled_call;                                        \
		hook_leave(t);                                                 \
		return r_;                                                     \
	}                                                                      \
	{                                                                      \
		cost_t *c = NULL;                                              \
		type r_ = body_of;                                             \
		hook_leave(t);                                                 \
		return r_;                                                     \
	}

/* ALLOC_MIGRATED(from, to) at t1 before a timed call's record (t0 != 0)
 * that began on one CPU and ended on another (call_t0, call_t1). */
static inline void rec_migrated(tls_t *t, uint64_t t0, uint64_t t1)
{
	if (t0 && unlikely(t->cpu0 != t->cpu1) && t->cpu0 != PRIM_CPU_NONE &&
	    t->cpu1 != PRIM_CPU_NONE) {
		uint8_t *p = ev_head(t, FMT_ALLOC_MIGRATED, t1);
		p = fmt_put_u(p, t->cpu0);
		p = fmt_put_u(p, t->cpu1);
		ev_commit(t, p, t1);
	}
}

/* ALLOC(ptr, size, stack, ticks, fn) at t1, in its shortest form
 * (fmt_put_alloc); ticks = call_ticks(t0, t1). */
__attribute__((always_inline)) static inline void
rec_alloc(tls_t *t, void *ptr, size_t size, uint64_t t0, uint64_t t1,
          unsigned fn, uintptr_t ra, void *fp)
{
	uint32_t stack = stack_here(t, ra, fp);
	rec_migrated(t, t0, t1);
	ev_pend(t);
	uint8_t *p = fmt_put_alloc(t->pos, &t->enc, t1, (uintptr_t)ptr, size,
	                           stack, call_ticks(t0, t1), fn);
	ev_commit(t, p, t1);
}

/* FREE(ptr, ticks) at t1; ticks as ALLOC's. */
static inline void rec_free(tls_t *t, void *ptr, uint64_t t0, uint64_t t1)
{
	rec_migrated(t, t0, t1);
	ev_pend(t);
	uint8_t *p = fmt_put_free(t->pos, &t->enc, t1, (uintptr_t)ptr,
	                          call_ticks(t0, t1));
	ev_commit(t, p, t1);
}

/* REALLOC(old, new, size, stack, ticks) at t1. */
__attribute__((always_inline)) static inline void
rec_realloc(tls_t *t, void *old, void *new, size_t size, uint64_t t0,
            uint64_t t1, uintptr_t ra, void *fp)
{
	uint32_t stack = stack_here(t, ra, fp);
	rec_migrated(t, t0, t1);
	uint8_t *p = ev_head(t, FMT_REALLOC, t1);
	p = fmt_put_ptr(p, &t->enc, (uintptr_t)old);
	p = fmt_put_s(p, (int64_t)((uintptr_t) new - (uintptr_t)old));
	t->enc.last_ptr = (uintptr_t) new;
	p = fmt_put_u(p, size);
	p = fmt_put_u(p, stack);
	p = fmt_put_u(p, call_ticks(t0, t1));
	ev_commit(t, p, t1);
}

/* Sampling (sample.h): an unsampled allocator call made under a lock is an
 * ALLOC (or REALLOC) whose new pointer is 0, with the one-frame call site. */
static inline void rec_alloc_call(tls_t *t, size_t size, uint64_t t0,
                                  uint64_t t1, unsigned fn, uintptr_t ra)
{
	uint32_t site = stack_site(t, ra);
	rec_migrated(t, t0, t1);
	ev_pend(t);
	uint8_t *p = fmt_put_alloc(t->pos, &t->enc, t1, 0, size, site,
	                           call_ticks(t0, t1), fn);
	ev_commit(t, p, t1);
}

static inline void rec_realloc_call(tls_t *t, void *old, size_t size,
                                    uint64_t t0, uint64_t t1, uintptr_t ra)
{
	uint32_t site = stack_site(t, ra);
	rec_migrated(t, t0, t1);
	uint8_t *p = ev_head(t, FMT_REALLOC, t1);
	p = fmt_put_ptr(p, &t->enc, (uintptr_t)old);
	p = fmt_put_s(p, -(int64_t)(uintptr_t)old);
	t->enc.last_ptr = 0;
	p = fmt_put_u(p, size);
	p = fmt_put_u(p, site);
	p = fmt_put_u(p, call_ticks(t0, t1));
	ev_commit(t, p, t1);
}

/* ALLOC as the sampling decision smp says (SAMPLE_TRACK when not
 * sampling). */
__attribute__((always_inline)) static inline void
rec_alloc_s(tls_t *t, int smp, void *ptr, size_t size, uint64_t t0, uint64_t t1,
            unsigned fn, uintptr_t ra, void *fp)
{
	if (likely(smp == SAMPLE_TRACK)) {
		rec_alloc(t, ptr, size, t0, t1, fn, ra, fp);
		if (unlikely(g_sampling))
			sample_track(ptr);
	} else {
		rec_alloc_call(t, size, t0, t1, fn, ra);
	}
}

/* The sampling decision at an allocation hook's entry: returns
 * SAMPLE_TRACK when not sampling. */
#define SAMPLE_DECIDE(t, n)                                                    \
	(likely(!g_sampling) ? SAMPLE_TRACK : sample_alloc((t), (n)))

/* A core event with two unsigned fields (TRY_FAIL, COND_WAIT, ...; not a
 * FMT_LOCK_RECORD type: those go through rec_lock, which keeps the
 * chunk's last lock). */
static inline void rec_uu(tls_t *t, unsigned type, uint64_t tsc, uint64_t a,
                          uint64_t b)
{
	uint8_t *p = ev_head(t, type, tsc);
	p = fmt_put_u(p, a);
	p = fmt_put_u(p, b);
	ev_commit(t, p, tsc);
}

static inline void rec_u(tls_t *t, unsigned type, uint64_t tsc, uint64_t a)
{
	uint8_t *p = ev_head(t, type, tsc);
	p = fmt_put_u(p, a);
	ev_commit(t, p, tsc);
}

/* A FMT_LOCK_RECORD event (ACQ and its forms, REL, LOCK_INIT,
 * LOCK_DESTROY) of lock and, when nb is 1, one more field b: its _LAST
 * form when lock is the chunk's last lock (fmt_put_lockrec). */
static inline void rec_lock(tls_t *t, unsigned type, uint64_t tsc,
                            uint64_t lock, int nb, uint64_t b)
{
	ev_pend(t);
	uint8_t *p = fmt_put_lockrec(t->pos, &t->enc, type, tsc, lock, nb, b);
	ev_commit(t, p, tsc);
}

/* LOCK_NEW(fresh id, FMT_LOCKF_INIT) + LOCK_INIT(lock, init stack) as one
 * LOCK_INIT_NEW, and LOCK_DESTROY (lock_hooks.c; shared with cond_hooks.c). */
void lock_rec_init(tls_t *t, void *l, unsigned kind, uintptr_t ra, void *fp);
void lock_rec_destroy(tls_t *t, void *l);

/* The shim's own malloc, bound locally (alloc_hooks.c), which
 * tcmalloc_check compares with the program's malloc. */
void *shim_own_malloc(size_t n);
/* tcmalloc_hooks.c: called once by the constructor (gate held): registers
 * the hooks with a tcmalloc linked into the program (whose malloc is then
 * not ours). */
void tcmalloc_check(void);

/* syscall(SYS_close_range, first, last, flags), from the syscall hook:
 * as the close_range hook (fd_hooks.c), the shim's own fds left open. */
long fd_close_range_syscall(long first, long last, long flags);

#endif
