/*
 * cxx_hooks.c - C++ operator new and delete in all their forms (plain,
 * array, nothrow, sized, aligned), defined in C under their mangled names and
 * forwarded to the next definition (dlsym RTLD_NEXT): libstdc++'s, or the
 * operators of an allocator linked into the program (tcmalloc defines its
 * own), so such programs are still seen.
 *
 * Throwing behaviour is kept: a failing `new` is the next operator's
 * failure (new_handler loop, std::bad_alloc). This file is built with
 * -fexceptions and the gate is released by a cleanup attribute, so an
 * exception unwinding through the hook leaves the thread recordable.
 * Without a next operator (no libstdc++ in the global scope) the hooks fall
 * back to the real malloc/free and throw through the next
 * std::__throw_bad_alloc().
 *
 * The next operators are resolved lazily (libstdc++ may be dlopen'ed after
 * the shim started), with the gate held so dlsym's allocations pass through.
 */
#include "cxx_hooks.h"
#include "cxx_ops.h"
#include "hook.h"

#include <stdlib.h>
#include <string.h>

/* Every next operator we may call: the hooked ones (cxx_ops.h) and the
 * thrower of the fallback. */
/* clang-format off */
#define CXX_NEXT(X)                                                            \
	CXX_OPS(X)                                                             \
	X(_ZSt17__throw_bad_allocv, throw_bad_alloc, )

enum cxx_idx {
#define CXX_ENUM_(sym, idx, ...) CXX_##idx,
	CXX_NEXT(CXX_ENUM_)
#undef CXX_ENUM_
	CXX_COUNT
};

static const char *const cxx_names[CXX_COUNT] = {
#define CXX_NAME_(sym, idx, ...) #sym,
	CXX_NEXT(CXX_NAME_)
#undef CXX_NAME_
};
/* clang-format on */

typedef void (*any_fn)(void);
static void *_Atomic cxx_ptr[CXX_COUNT];

/* The next definition of operator i, or NULL. Cached once found; looked up
 * again while absent (a libstdc++ dlopen'ed later is picked up). */
static any_fn as_fn(void *p)
{
	any_fn f;
	memcpy(&f, &p, sizeof f);
	return f;
}

static any_fn cxx_next(enum cxx_idx i)
{
	void *p = atomic_load_explicit(&cxx_ptr[i], memory_order_acquire);
	if (likely(p != NULL))
		return as_fn(p);
	if (!real_usable())
		return NULL;
	tls_t *t = &shim_tls;
	uint8_t gate = gate_hold(t);
	p = prim_dlsym_next(cxx_names[i]);
	gate_restore(t, gate);
	atomic_store_explicit(&cxx_ptr[i], p, memory_order_release);
	return p ? as_fn(p) : NULL;
}

void cxx_init(void)
{
	for (int i = 0; i < CXX_COUNT; i++)
		cxx_next((enum cxx_idx)i);
}

int cxx_next_bind(const char *sym, void *fn)
{
	for (int i = 0; i < CXX_COUNT; i++)
		if (!strcmp(cxx_names[i], sym)) {
			atomic_store_explicit(&cxx_ptr[i], fn,
			                      memory_order_release);
			return 0;
		}
	return -1;
}

typedef void *(*new_fn)(size_t);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_sz_fn)(void *, size_t);
typedef void (*del_al_fn)(void *, size_t);
typedef void (*del_sz_al_fn)(void *, size_t, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_al_nt_fn)(void *, size_t, const void *);

static void *fallback_alloc(size_t n, size_t align, int nothrow)
{
	void *p = NULL;
	if (n == 0)
		n = 1;
	if (align <= 16)
		p = real.malloc(n);
	else if (real.posix_memalign && real.posix_memalign(&p, align, n) != 0)
		p = NULL;
	if (!p && !nothrow) {
		any_fn thr = cxx_next(CXX_throw_bad_alloc);
		if (thr)
			thr();
		abort();
	}
	return p;
}

/* Calls next operator new #i (shape given by al/nt) or the fallback. */
static inline void *call_new(enum cxx_idx i, size_t n, size_t al, int has_al,
                             const void *nt, int has_nt)
{
	any_fn f = cxx_next(i);
	if (!f)
		return fallback_alloc(n, has_al ? al : 0, has_nt);
	if (has_al && has_nt)
		return ((new_al_nt_fn)f)(n, al, nt);
	if (has_al)
		return ((new_al_fn)f)(n, al);
	if (has_nt)
		return ((new_nt_fn)f)(n, nt);
	return ((new_fn)f)(n);
}

static void gate_cleanup(tls_t **tp)
{
	if (*tp) {
		(*tp)->in_alloc = 0;
		hook_leave(*tp);
	}
}

/* A new hook's body, unsampled (c NULL) or sampled (cost.h, as
 * alloc_hooks.c's); the gate is released by the hook's cleanup, also
 * when the next operator new throws. */
__attribute__((always_inline)) static inline void *
new_body(tls_t *t, enum cxx_idx i, unsigned fn_code, size_t n, size_t al,
         int has_al, const void *nt, int has_nt, uintptr_t ra, void *fp,
         cost_t *c)
{
	int smp = SAMPLE_DECIDE(t, n);
	if (unlikely(smp == SAMPLE_SKIP)) {
		uint64_t r0 = cost_r0(c);
		void *p = call_new(i, n, al, has_al, nt, has_nt);
		cost_r1(c, r0);
		return p;
	}
	uint64_t t0 = call_t0(t), r0 = cost_r0u(c, t0);
	t->in_alloc = 1;
	void *p = call_new(i, n, al, has_al, nt, has_nt);
	t->in_alloc = 0;
	uint64_t t1 = call_t1(t, t0);
	cost_r1u(c, t0, r0, t1);
	if (likely(p != NULL))
		rec_alloc_s(t, smp, p, n, t0, t1, fn_code, ra, fp);
	return p;
}

/* new_body sampled (hook.h COST_SAMPLED): out of line, cold. */
__attribute__((noinline, cold)) static void *
new_sampled(tls_t *t, enum cxx_idx i, unsigned fn_code, size_t n, size_t al,
            int has_al, const void *nt, int has_nt)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wframe-address"
	uintptr_t ra = (uintptr_t)__builtin_return_address(1);
	void *fp = __builtin_frame_address(1);
#pragma GCC diagnostic pop
	cost_t c = {.e0 = cost_begin(t)};
	void *p =
	    new_body(t, i, fn_code, n, al, has_al, nt, has_nt, ra, fp, &c);
	uint64_t x1 = prim_tsc();
	cost_end(t, &c, x1);
	return p;
}

#define NEW_HOOK(sym, idx, fn_code, has_al, has_nt, params, al_arg, nt_arg)    \
	HOOK_EXPORT void *sym params                                           \
	{                                                                      \
		tls_t *t = &shim_tls;                                          \
		if (unlikely(!hook_enter(t)))                                  \
			return call_new(CXX_##idx, n, al_arg, has_al, nt_arg,  \
			                has_nt);                               \
		__attribute__((cleanup(gate_cleanup))) tls_t *guard = t;       \
		(void)guard;                                                   \
		if (unlikely(cost_due(t)))                                     \
			return new_sampled(t, CXX_##idx, fn_code, n, al_arg,   \
			                   has_al, nt_arg, has_nt);            \
		return new_body(t, CXX_##idx, fn_code, n, al_arg, has_al,      \
		                nt_arg, has_nt, HOOK_RA(), HOOK_FP(), NULL);   \
	}

CXX_NEW_OPS(NEW_HOOK)

/*
 * Calls the next operator delete #i, falling back to the plain form of the
 * same family, then to the real free.
 */
static inline void call_del(enum cxx_idx i, enum cxx_idx plain, void *p,
                            size_t sz, int has_sz, size_t al, int has_al,
                            const void *nt, int has_nt)
{
	any_fn f = cxx_next(i);
	if (f) {
		if (has_sz && has_al)
			((del_sz_al_fn)f)(p, sz, al);
		else if (has_sz)
			((del_sz_fn)f)(p, sz);
		else if (has_al && has_nt)
			((del_al_nt_fn)f)(p, al, nt);
		else if (has_al)
			((del_al_fn)f)(p, al);
		else if (has_nt)
			((del_nt_fn)f)(p, nt);
		else
			((del_fn)f)(p);
		return;
	}
	f = i != plain ? cxx_next(plain) : NULL;
	if (f && has_al)
		((del_al_fn)f)(p, al);
	else if (f)
		((del_fn)f)(p);
	else if (real_usable())
		real.free(p);
}

/* A delete hook's body, as free's (alloc_hooks.c free_body). */
__attribute__((always_inline)) static inline void
del_body(tls_t *t, enum cxx_idx i, enum cxx_idx plain, void *p, size_t sz,
         int has_sz, size_t al, int has_al, const void *nt, int has_nt,
         cost_t *c)
{
	if (unlikely(g_sampling) && !sample_free(t, p)) {
		uint64_t r0 = cost_r0(c);
		call_del(i, plain, p, sz, has_sz, al, has_al, nt, has_nt);
		cost_r1(c, r0);
		return;
	}
	uint64_t t0 = call_t0(t), t1 = t0 ? 0 : prim_tsc();
	t->in_alloc = 1;
	call_del(i, plain, p, sz, has_sz, al, has_al, nt, has_nt);
	t->in_alloc = 0;
	if (t0)
		t1 = call_t1(t, t0);
	if (c) {
		c->real += t0 ? t1 - t0 : prim_tsc() - t1;
		c->extra += !t0;
	}
	rec_free(t, p, t0, t1);
}

/* del_body sampled (hook.h COST_SAMPLED): out of line, cold. */
__attribute__((noinline, cold)) static void
del_sampled(tls_t *t, enum cxx_idx i, enum cxx_idx plain, void *p, size_t sz,
            int has_sz, size_t al, int has_al, const void *nt, int has_nt)
{
	cost_t c = {.e0 = cost_begin(t)};
	del_body(t, i, plain, p, sz, has_sz, al, has_al, nt, has_nt, &c);
	uint64_t x1 = prim_tsc();
	cost_end(t, &c, x1);
}

#define DEL_HOOK(sym, idx, plain, has_sz, has_al, has_nt, params, sz_arg,      \
                 al_arg, nt_arg)                                               \
	HOOK_EXPORT void sym params                                            \
	{                                                                      \
		if (unlikely(p == NULL))                                       \
			return;                                                \
		tls_t *t = &shim_tls;                                          \
		if (unlikely(!hook_enter(t))) {                                \
			call_del(CXX_##idx, CXX_##plain, p, sz_arg, has_sz,    \
			         al_arg, has_al, nt_arg, has_nt);              \
			return;                                                \
		}                                                              \
		__attribute__((cleanup(gate_cleanup))) tls_t *guard = t;       \
		(void)guard;                                                   \
		if (unlikely(cost_due(t))) {                                   \
			del_sampled(t, CXX_##idx, CXX_##plain, p, sz_arg,      \
			            has_sz, al_arg, has_al, nt_arg, has_nt);   \
			return;                                                \
		}                                                              \
		del_body(t, CXX_##idx, CXX_##plain, p, sz_arg, has_sz, al_arg, \
		         has_al, nt_arg, has_nt, NULL);                        \
	}

CXX_DEL_OPS(DEL_HOOK)
