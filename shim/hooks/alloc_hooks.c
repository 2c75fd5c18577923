/*
 * alloc_hooks.c - the malloc family: malloc, free, calloc, realloc,
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc.
 * malloc_usable_size is not interposed (it passes through).
 *
 * Each hook: one gate test, two TSC reads around the real call (the time
 * spent inside the allocator), a stack for allocations, one event encoded
 * into the thread's buffer. Failed allocations and free(NULL) are not
 * recorded. Before the real functions are known (dlsym bootstrap) the
 * allocation hooks serve the static pool and free ignores pool blocks.
 *
 * t->in_alloc is set around the real call so that the futex hook can tell
 * an allocator-internal lock wait (futex_hook.c).
 *
 * The shim's cost (cost.h): each hook's body is an always-inline function
 * of a cost_t pointer, instantiated twice: in the hook with NULL (every
 * cost_* helper folds away: the unsampled path is the body as it was),
 * and out of line (COST_SAMPLED, hook.h), when the countdown runs out,
 * with a sample that reads the clock at entry, around the real call and
 * at exit.
 */
#include "hook.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* ---- pass-through paths (not recording) ---- */

static void *pass_malloc(size_t n)
{
	if (unlikely(!real_usable()))
		return boot_alloc(n, 16);
	return real.malloc(n);
}

static void *pass_calloc(size_t n, size_t m)
{
	size_t total;
	if (unlikely(!real_usable())) {
		if (__builtin_mul_overflow(n, m, &total))
			return NULL;
		return boot_alloc(total, 16);
	}
	return real.calloc(n, m);
}

static void *pass_aligned(size_t align, size_t n)
{
	if (unlikely(!real_usable()))
		return boot_alloc(n, align);
	if (real.memalign)
		return real.memalign(align, n);
	void *p = NULL;
	return real.posix_memalign && real.posix_memalign(&p, align, n) == 0
	           ? p
	           : NULL;
}

/* realloc of a bootstrap block: copy it out to a real block. */
static void *realloc_boot(void *p, size_t n)
{
	void *q = pass_malloc(n);
	if (q) {
		size_t old = boot_size(p);
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}

/* ---- hooks ---- */

__attribute__((always_inline)) static inline void *
malloc_body(tls_t *t, size_t n, uintptr_t ra, void *fp, cost_t *c)
{
	int smp = SAMPLE_DECIDE(t, n);
	if (unlikely(smp == SAMPLE_SKIP)) {
		uint64_t r0 = cost_r0(c);
		void *p = real.malloc(n);
		cost_r1(c, r0);
		return p;
	}
	uint64_t t0 = call_t0(t), r0 = cost_r0u(c, t0);
	t->in_alloc = 1;
	void *p = real.malloc(n);
	t->in_alloc = 0;
	uint64_t t1 = call_t1(t, t0);
	cost_r1u(c, t0, r0, t1);
	if (likely(p != NULL))
		rec_alloc_s(t, smp, p, n, t0, t1, FMT_FN_MALLOC, ra, fp);
	return p;
}

COST_SAMPLED(malloc_sampled, void *, (tls_t * t, size_t n),
             malloc_body(t, n, ra, fp, c))

HOOK_EXPORT void *malloc(size_t n)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return pass_malloc(n);
	COST_RUN(t, void *, malloc_sampled(t, n),
	         malloc_body(t, n, HOOK_RA(), HOOK_FP(), c))
}

/* A free is stamped before its real call (hook.h): an untimed one
 * reads the clock before it, so the sample adds one read after it. */
__attribute__((always_inline)) static inline void free_body(tls_t *t, void *p,
                                                            cost_t *c)
{
	if (unlikely(g_sampling) && !sample_free(t, p)) {
		uint64_t r0 = cost_r0(c);
		real.free(p);
		cost_r1(c, r0);
		return;
	}
	uint64_t t0 = call_t0(t), t1 = t0 ? 0 : prim_tsc();
	t->in_alloc = 1;
	real.free(p);
	t->in_alloc = 0;
	if (t0)
		t1 = call_t1(t, t0);
	if (c) {
		c->real += t0 ? t1 - t0 : prim_tsc() - t1;
		c->extra += !t0;
	}
	rec_free(t, p, t0, t1);
}

/* free's sampled instance (COST_SAMPLED's, for a void body). */
__attribute__((noinline, cold)) static void free_sampled(tls_t *t, void *p)
{
	cost_t c = {.e0 = cost_begin(t)};
	free_body(t, p, &c);
	uint64_t x1 = prim_tsc();
	cost_end(t, &c, x1);
}

HOOK_EXPORT void free(void *p)
{
	if (unlikely(p == NULL || boot_owns(p)))
		return;
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t))) {
		if (likely(real_usable()))
			real.free(p);
		return;
	}
	if (unlikely(cost_due(t))) {
		free_sampled(t, p);
		hook_leave(t);
		return;
	}
	free_body(t, p, NULL);
	hook_leave(t);
}

__attribute__((always_inline)) static inline void *
calloc_body(tls_t *t, size_t n, size_t m, uintptr_t ra, void *fp, cost_t *c)
{
	int smp = SAMPLE_DECIDE(t, n * m);
	if (unlikely(smp == SAMPLE_SKIP)) {
		uint64_t r0 = cost_r0(c);
		void *p = real.calloc(n, m);
		cost_r1(c, r0);
		return p;
	}
	uint64_t t0 = call_t0(t), r0 = cost_r0u(c, t0);
	t->in_alloc = 1;
	void *p = real.calloc(n, m);
	t->in_alloc = 0;
	uint64_t t1 = call_t1(t, t0);
	cost_r1u(c, t0, r0, t1);
	if (likely(p != NULL))
		rec_alloc_s(t, smp, p, n * m, t0, t1, FMT_FN_CALLOC, ra, fp);
	return p;
}

COST_SAMPLED(calloc_sampled, void *, (tls_t * t, size_t n, size_t m),
             calloc_body(t, n, m, ra, fp, c))

HOOK_EXPORT void *calloc(size_t n, size_t m)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t)))
		return pass_calloc(n, m);
	COST_RUN(t, void *, calloc_sampled(t, n, m),
	         calloc_body(t, n, m, HOOK_RA(), HOOK_FP(), c))
}

/*
 * The shared body of realloc and reallocarray: realloc(NULL, n) is an ALLOC
 * (fn), realloc(p, 0) that returns NULL freed p (FREE), a failure records
 * nothing, a success is a REALLOC.
 */
static inline void realloc_record(tls_t *t, void *old, void *p, size_t n,
                                  uint64_t t0, uint64_t t1, unsigned fn,
                                  uintptr_t ra, void *fp, int smp,
                                  int was_tracked)
{
	if (unlikely(g_sampling)) {
		if (smp == SAMPLE_CALL) {
			/* Unsampled, under a lock: an allocator call only. */
			if (old == NULL) {
				if (p)
					rec_alloc_call(t, n, t0, t1, fn, ra);
			} else if (p == NULL) {
				if (n == 0)
					rec_free(t, old, t0, t1);
			} else {
				rec_realloc_call(t, old, n, t0, t1, ra);
			}
			return;
		}
		if (p)
			sample_track(p);
		else if (was_tracked && n)
			sample_track(old); /* failed: old is still live */
	}
	if (old == NULL) {
		if (p)
			rec_alloc(t, p, n, t0, t1, fn, ra, fp);
	} else if (p == NULL) {
		if (n == 0)
			rec_free(t, old, t0, t1);
	} else {
		rec_realloc(t, old, p, n, t0, t1, ra, fp);
	}
}

__attribute__((always_inline)) static inline void *
realloc_body(tls_t *t, void *old, size_t n, uintptr_t ra, void *fp, cost_t *c)
{
	int smp = SAMPLE_TRACK, was_tracked = 0;
	if (unlikely(g_sampling) &&
	    (smp = sample_realloc(t, old, n, &was_tracked)) == SAMPLE_SKIP) {
		uint64_t r0 = cost_r0(c);
		void *p = real.realloc(old, n);
		cost_r1(c, r0);
		return p;
	}
	uint64_t t0 = call_t0(t), r0 = cost_r0u(c, t0);
	t->in_alloc = 1;
	void *p = real.realloc(old, n);
	t->in_alloc = 0;
	uint64_t t1 = call_t1(t, t0);
	cost_r1u(c, t0, r0, t1);
	realloc_record(t, old, p, n, t0, t1, FMT_FN_MALLOC, ra, fp, smp,
	               was_tracked);
	return p;
}

COST_SAMPLED(realloc_sampled, void *, (tls_t * t, void *old, size_t n),
             realloc_body(t, old, n, ra, fp, c))

HOOK_EXPORT void *realloc(void *old, size_t n)
{
	if (unlikely(old && boot_owns(old)))
		return realloc_boot(old, n);
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t))) {
		if (unlikely(!real_usable()))
			return old ? NULL : boot_alloc(n, 16);
		return real.realloc(old, n);
	}
	COST_RUN(t, void *, realloc_sampled(t, old, n),
	         realloc_body(t, old, n, HOOK_RA(), HOOK_FP(), c))
}

static void *call_reallocarray(void *old, size_t n, size_t m)
{
	if (real.reallocarray)
		return real.reallocarray(old, n, m);
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return real.realloc(old, total);
}

__attribute__((always_inline)) static inline void *
reallocarray_body(tls_t *t, void *old, size_t n, size_t m, size_t total,
                  uintptr_t ra, void *fp, cost_t *c)
{
	int smp = SAMPLE_TRACK, was_tracked = 0;
	if (unlikely(g_sampling) &&
	    (smp = sample_realloc(t, old, total, &was_tracked)) ==
	        SAMPLE_SKIP) {
		uint64_t r0 = cost_r0(c);
		void *p = call_reallocarray(old, n, m);
		cost_r1(c, r0);
		return p;
	}
	uint64_t t0 = call_t0(t), r0 = cost_r0u(c, t0);
	t->in_alloc = 1;
	void *p = call_reallocarray(old, n, m);
	t->in_alloc = 0;
	uint64_t t1 = call_t1(t, t0);
	cost_r1u(c, t0, r0, t1);
	realloc_record(t, old, p, total, t0, t1, FMT_FN_REALLOCARRAY, ra, fp,
	               smp, was_tracked);
	return p;
}

COST_SAMPLED(reallocarray_sampled, void *,
             (tls_t * t, void *old, size_t n, size_t m, size_t total),
             reallocarray_body(t, old, n, m, total, ra, fp, c))

HOOK_EXPORT void *reallocarray(void *old, size_t n, size_t m)
{
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(old && boot_owns(old)))
		return realloc_boot(old, total);
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t))) {
		if (unlikely(!real_usable()))
			return old ? NULL : boot_alloc(total, 16);
		return call_reallocarray(old, n, m);
	}
	COST_RUN(
	    t, void *, reallocarray_sampled(t, old, n, m, total),
	    reallocarray_body(t, old, n, m, total, HOOK_RA(), HOOK_FP(), c))
}

__attribute__((always_inline)) static inline int
posix_memalign_body(tls_t *t, void **out, size_t align, size_t n, uintptr_t ra,
                    void *fp, cost_t *c)
{
	int smp = SAMPLE_DECIDE(t, n);
	if (unlikely(smp == SAMPLE_SKIP)) {
		uint64_t r0 = cost_r0(c);
		int r = real.posix_memalign ? real.posix_memalign(out, align, n)
		                            : ENOMEM;
		cost_r1(c, r0);
		return r;
	}
	uint64_t t0 = call_t0(t), r0 = cost_r0u(c, t0);
	t->in_alloc = 1;
	int r =
	    real.posix_memalign ? real.posix_memalign(out, align, n) : ENOMEM;
	t->in_alloc = 0;
	uint64_t t1 = call_t1(t, t0);
	cost_r1u(c, t0, r0, t1);
	if (r == 0)
		rec_alloc_s(t, smp, *out, n, t0, t1, FMT_FN_POSIX_MEMALIGN, ra,
		            fp);
	return r;
}

COST_SAMPLED(posix_memalign_sampled, int,
             (tls_t * t, void **out, size_t align, size_t n),
             posix_memalign_body(t, out, align, n, ra, fp, c))

HOOK_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	tls_t *t = &shim_tls;
	if (unlikely(!hook_enter(t))) {
		if (unlikely(!real_usable())) {
			*out = boot_alloc(n, align);
			return *out ? 0 : ENOMEM;
		}
		return real.posix_memalign ? real.posix_memalign(out, align, n)
		                           : ENOMEM;
	}
	COST_RUN(t, int, posix_memalign_sampled(t, out, align, n),
	         posix_memalign_body(t, out, align, n, HOOK_RA(), HOOK_FP(), c))
}

/* The aligned family: fn picks the real function and the fn code. */
#define ALIGNED_HOOK(name, fn_code, params, call_args, pass_expr)              \
	HOOK_EXPORT void *name params                                          \
	{                                                                      \
		tls_t *t = &shim_tls;                                          \
		if (unlikely(!hook_enter(t)))                                  \
			return pass_expr;                                      \
		int smp = SAMPLE_DECIDE(t, n);                                 \
		if (unlikely(smp == SAMPLE_SKIP)) {                            \
			void *q = real.name ? real.name call_args : NULL;      \
			hook_leave(t);                                         \
			return q;                                              \
		}                                                              \
		uint64_t t0 = call_t0(t);                                      \
		t->in_alloc = 1;                                               \
		void *p = real.name ? real.name call_args : NULL;              \
		t->in_alloc = 0;                                               \
		uint64_t t1 = call_t1(t, t0);                                  \
		if (likely(p != NULL))                                         \
			rec_alloc_s(t, smp, p, n, t0, t1, fn_code, HOOK_RA(),  \
			            HOOK_FP());                                \
		hook_leave(t);                                                 \
		return p;                                                      \
	}

ALIGNED_HOOK(aligned_alloc, FMT_FN_ALIGNED_ALLOC, (size_t align, size_t n),
             (align, n), pass_aligned(align, n))
ALIGNED_HOOK(memalign, FMT_FN_MEMALIGN, (size_t align, size_t n), (align, n),
             pass_aligned(align, n))
ALIGNED_HOOK(valloc, FMT_FN_VALLOC, (size_t n), (n),
             real_usable() && real.valloc ? real.valloc(n)
                                          : pass_aligned(4096, n))
ALIGNED_HOOK(pvalloc, FMT_FN_PVALLOC, (size_t n), (n),
             real_usable() && real.pvalloc ? real.pvalloc(n)
                                           : pass_aligned(4096, n))

/* The shim's own malloc, bound locally (taking &malloc inside the library
 * would give the first definition in the global scope): tcmalloc_hooks.c
 * compares it with dlsym(RTLD_DEFAULT, "malloc"). */
void *shim_own_malloc(size_t n)
    __attribute__((alias("malloc"), visibility("hidden"), copy(malloc)));
