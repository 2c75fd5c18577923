/*
 * thread_hooks.c - pthread_create (the new thread's first event is
 * THREAD_START with its creator's tid), pthread_setname_np (THREAD_NAME), and
 * dlclose (MODULE records of a dlopen'ed object are written before it goes).
 *
 * Thread exit needs no hook: a TSD destructor (thread.c) records THREAD_EXIT
 * and flushes, whether the thread returned, called pthread_exit or was
 * cancelled.
 */
#include "hook.h"
#include "modules.h"
#include "thread.h"

#include <errno.h>
#include <string.h>

typedef struct start {
	void *(*fn)(void *);
	void *arg;
	uint32_t parent;
} start_t;

static void *trampoline(void *arg)
{
	start_t s = *(start_t *)arg;
	real.free(arg);
	tls_t *t = &shim_tls;
	thread_stack_start(t);
	if (hook_enter(t)) {
		rec_u(t, FMT_THREAD_START, prim_tsc(), s.parent);
		hook_leave(t);
	}
	return s.fn(s.arg);
}

HOOK_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                               void *(*fn)(void *), void *arg)
{
	if (unlikely(!real_usable()))
		return EAGAIN;
	tls_t *t = &shim_tls;
	unsigned off = atomic_load_explicit(&g_off, memory_order_relaxed);
	if ((off & ~SHIM_OFF_PAUSED) || t->gate == GATE_BUSY)
		return real.pthread_create(th, attr, fn, arg);
	/* The trampoline's argument comes from the real allocator directly:
	 * it is the shim's, not the program's, and is not recorded. */
	start_t *s = real.malloc(sizeof *s);
	if (!s)
		return real.pthread_create(th, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	s->parent = t->tid ? t->tid : prim_gettid();
	int r = real.pthread_create(th, attr, trampoline, s);
	if (r)
		real.free(s);
	return r;
}

HOOK_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
	if (unlikely(!real_usable() || !real.pthread_setname_np))
		return ENOSYS;
	int r = real.pthread_setname_np(th, name);
	tls_t *t = &shim_tls;
	if (r != 0 || !hook_enter(t))
		return r;
	uint32_t tid = pthread_equal(th, pthread_self())
	                   ? t->tid
	                   : writer_tid_of((uintptr_t)th);
	if (tid) {
		uint8_t body[2 * FMT_VARINT_MAX + 64], *p = body;
		size_t n = strnlen(name, 63);
		p = fmt_put_u(p, tid);
		p = fmt_put_str(p, name, n);
		writer_meta(t, FMT_THREAD_NAME, body, (size_t)(p - body));
	}
	hook_leave(t);
	return r;
}

HOOK_EXPORT int dlclose(void *handle)
{
	if (unlikely(!real_usable()))
		return -1;
	tls_t *t = &shim_tls;
	stack_invalidate();
	if (hook_enter(t)) {
		modules_check();
		hook_leave(t);
	}
	int r = real.dlclose(handle);
	stack_invalidate(); /* and once more, for stacks learned meanwhile */
	return r;
}
