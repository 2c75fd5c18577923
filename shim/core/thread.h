/*
 * thread.h - a thread's life in the shim: set-up at its first hook call,
 * THREAD_START from the pthread_create trampoline, and the finish
 * (THREAD_EXIT, flush, buffer returned) from a TSD destructor.
 *
 * Invariant: the TSD destructor re-arms itself until the last destructor
 * round (PTHREAD_DESTRUCTOR_ITERATIONS), so frees made by other destructors
 * of the exiting thread (C++ thread_local objects, other keys) are still
 * recorded; what glibc frees after that round is not.
 */
#ifndef MALLOCK_SHIM_THREAD_H
#define MALLOCK_SHIM_THREAD_H

#include "tls.h"

/* Creates the key whose destructor finishes threads. 0 or an errno. */
int thread_init(void);

/* Sets the calling thread up (tid, buffer, stack bounds, exit key).
 * Caller holds the gate. Returns 0, or an errno value. */
int thread_setup(tls_t *t);

/*
 * The calling thread's stack bounds (t->stack_lo, stack_hi; both 0 when
 * unknown), learned once, when the frame-pointer walk or the stack cache
 * needs them. A hook must not call pthread_getattr_np (hook.h), so:
 * thread_stack_start() at the start of a thread the shim created (the
 * pthread_create trampoline, where the thread holds no lock yet) uses it;
 * thread_stack_here() (init, and the first hook of any other thread: the
 * main thread, threads that existed before attach or were created
 * unhooked) reads /proc/self/maps with raw open/read, lock-free.
 */
void thread_stack_start(tls_t *t);
void thread_stack_here(tls_t *t);

/*
 * The calling thread, set up for a trace that ended at a detach, joins the
 * current one (tls_stale; attach.c): its buffer goes back unwritten, its
 * pending acquisition, held-lock count and call-site cache are cleared,
 * its sampling and hold countdowns drawn again as a new thread's
 * (sample_thread_init), and it gets a new buffer. Caller holds the
 * gate. Returns 0, or ENOMEM.
 */
int thread_regen(tls_t *t);

/* Finishes the calling thread now: THREAD_EXIT, flush, buffer returned,
 * gate DEAD. Idempotent. */
void thread_finish(tls_t *t);

#endif
