/*
 * thread.c - thread set-up and finish (thread.h).
 */
#include "thread.h"

#include "config.h"
#include "event.h"
#include "modules.h"
#include "prim.h"
#include "sample.h"
#include "stack.h"
#include "writer.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

static pthread_key_t exit_key;
static int exit_key_ok;

/*
 * At a hook entry the gate is BUSY for one of two reasons: a hook of this
 * thread is running below (a signal handler interrupted it, or the real
 * function called back into a hook), or a hook was left without returning
 * (siglongjmp from a signal handler). Only a blocking wait (t->wait_sp set)
 * can be left that way in practice. A handler that interrupts the wait runs
 * below the wait's frame by at least the kernel's signal frame (over 1 KiB
 * on x86-64 and aarch64) on the same stack, or on its alternate signal
 * stack: so a hook entered less than GATE_SIGFRAME below the waiting hook's
 * frame, or above it, on the thread's own stack, can only be a later call
 * after the wait's frame was abandoned. Deeper calls are left alone (they
 * may be a handler's): their passes are counted, and become drops if the
 * gate turns out to be stuck (here later, or at the thread's exit).
 */
#define GATE_SIGFRAME 1024u

void gate_revalidate(tls_t *t)
{
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (here + GATE_SIGFRAME < t->wait_sp || prim_on_altstack()) {
		t->wait_passes++;
		return;
	}
	t->drops += 1 + t->wait_passes; /* the wait's end, and the passes */
	t->wait_passes = 0;
	t->wait_sp = 0;
	atomic_signal_fence(memory_order_seq_cst);
	t->gate = GATE_READY;
}

static void exit_dtor(void *v)
{
	tls_t *t = &shim_tls;
	/* No hook of this thread runs now: a BUSY gate is stuck (a hook was
	 * left by longjmp); reopen it for the TSD destructors that follow. */
	if (t->gate == GATE_BUSY) {
		t->drops += 1 + t->wait_passes;
		t->wait_passes = 0;
		t->wait_sp = 0;
		t->gate = GATE_READY;
	}
	if (t->exit_rounds + 1 < PTHREAD_DESTRUCTOR_ITERATIONS) {
		t->exit_rounds++;
		pthread_setspecific(exit_key, v);
		return;
	}
	thread_finish(t);
}

int thread_init(void)
{
	int r = pthread_key_create(&exit_key, exit_dtor);
	exit_key_ok = r == 0;
	return r;
}

int thread_setup(tls_t *t)
{
	t->tid = prim_gettid();
	t->drops = 0;
	sample_thread_init(t);
	if (!t->stack_hi)
		thread_stack_here(t);
	int r = writer_attach(t);
	if (r)
		return r;
	/* The main thread needs no key: exit() runs the final flush. */
	if (exit_key_ok && t->tid != prim_getpid())
		pthread_setspecific(exit_key, t);
	return 0;
}

int thread_regen(tls_t *t)
{
	t->pend_type = 0;
	t->nheld = 0;
	t->attach_due = 0;
	t->wait_passes = 0;
	t->hold_clock = HOLD_UNTIMED;
	t->time_left = 0;
	/* The countdowns of the new trace's settings; its first nest is
	 * not timed by the countdown, as a new thread's (its stacks and
	 * locks are interned again in the reset tables). */
	sample_thread_init(t);
	memset(t->site, 0, sizeof t->site);
	return writer_regen(t);
}

/* Who needs the bounds: the frame-pointer walk and the stack cache. */
static int bounds_needed(void)
{
	return g_cfg.unwind == CONFIG_UNWIND_FP ||
	       (g_cfg.unwind == CONFIG_UNWIND_LIBUNWIND && g_cfg.stack_cache);
}

void thread_stack_start(tls_t *t)
{
	if (!bounds_needed() || t->stack_hi)
		return;
	/* pthread_getattr_np's realloc passes through. */
	uint8_t gate = gate_hold(t);
	if (prim_stack_bounds(&t->stack_lo, &t->stack_hi) != 0 ||
	    t->stack_hi <= t->stack_lo)
		t->stack_lo = t->stack_hi = 0;
	gate_restore(t, gate);
}

void thread_stack_here(tls_t *t)
{
	if (!bounds_needed() || t->stack_hi)
		return;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (prim_stack_bounds_of(sp, &t->stack_lo, &t->stack_hi) != 0 ||
	    t->stack_hi <= t->stack_lo)
		t->stack_lo = t->stack_hi = 0;
}

void thread_finish(tls_t *t)
{
	if (!t->wb) {
		t->gate = GATE_DEAD;
		return;
	}
	gate_hold(t); /* never given back: the thread ends DEAD */
	if (!(atomic_load(&g_off) & ~(SHIM_OFF_PAUSED | SHIM_OFF_CTL))) {
		uint64_t tsc = prim_tsc();
		uint8_t *p = ev_head(t, FMT_THREAD_EXIT, tsc);
		t->chunk_events++;
		wbuf_publish(t, p);
	}
	if (!(atomic_load(&g_off) & ~(SHIM_OFF_PAUSED | SHIM_OFF_CTL))) {
		writer_thread_name_self(t->tid);
		/* A TSD destructor: no lock of the host's is held here. */
		modules_check();
	}
	writer_detach(t);
	stack_cache_free(t);
	t->gate = GATE_DEAD;
}
