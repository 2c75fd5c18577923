/*
 * init.c - the shim's life: constructor (real functions, configuration,
 * tables, output file, opening records), the hook gate's slow path, fork
 * handling, and the destructor's final flush.
 *
 * Invariants:
 * - g_off has SHIM_OFF_INIT set until the constructor has finished: hooks
 *   called earlier (by other libraries' constructors) pass through.
 * - Any failure leaves the shim inert (SHIM_OFF_STOPPED) after one warning;
 *   the host never aborts because of the shim.
 * - A set-user-ID/set-group-ID process (AT_SECURE) is never recorded.
 * - Exec: with MALLOCK_FOLLOW_EXEC=1 (default) an exec'd program loads the
 *   shim again (LD_PRELOAD is inherited) and traces itself to its own file
 *   (MALLOCK_PARENT_PID, set by the shim in its environment, marks it as a
 *   descendant: ".<pid>" is appended when the pattern has no %p).
 *   With MALLOCK_FOLLOW_EXEC=0 the shim removes itself from LD_PRELOAD in
 *   its own environment, so programs it execs (with environ) run untraced.
 * - A shim dlopen'ed into a running process (loaded after libc: `mallock
 *   attach`) does not start from its constructor; mallock_attach_impl()
 *   calls shim_boot() later (attach.h).
 */
#include "attach.h"
#include "config.h"
#include "control.h"
#include "cost.h"
#include "cxx_hooks.h"
#include "event.h"
#include "exit_hooks.h"
#include "fatal.h"
#include "hook.h"
#include "init.h"
#include "lockmap.h"
#include "modules.h"
#include "note.h"
#include "process.h"
#include "real.h"
#include "sample.h"
#include "stack.h"
#include "thread.h"
#include "tls.h"
#include "writer.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A pause was requested since this thread last flushed: write what it
 * holds, so the file is complete up to the pause (control.h). */
__attribute__((noinline)) static void pause_flush(tls_t *t)
{
	t->flush_gen = atomic_load(&g_flush_gen);
	if (t->gate != GATE_READY || !t->wb)
		return;
	uint8_t gate = gate_hold(t);
	acq_pend_flush(t);
	if (t->pos != t->wb->chunk + FMT_CHUNK_HEADER_SIZE)
		writer_flush(t);
	gate_restore(t, gate);
}

int hook_enter_slow(tls_t *t)
{
	/* A gate left BUSY by a longjmp out of a wait is reopened here
	 * (thread.c); the call is then recorded below, as any other. */
	if (unlikely(t->gate == GATE_BUSY && t->wait_sp))
		gate_revalidate(t);
	unsigned off = atomic_load_explicit(&g_off, memory_order_relaxed);
	/* A request on the control page (control.h): while paused every hook
	 * comes here, so this one load is the whole poll. */
	if (unlikely(ctl_requested())) {
		ctl_poke();
		off |= SHIM_OFF_CTL;
	}
	/* Control requests (control.c) are served at a hook entry, never
	 * inside a hook (gate BUSY) nor in a finished thread. */
	if (unlikely(off & SHIM_OFF_CTL) && t->gate <= GATE_UNINIT) {
		ctl_serve(t);
		off = atomic_load_explicit(&g_off, memory_order_relaxed);
	}
	uint32_t gen = atomic_load_explicit(&g_flush_gen, memory_order_relaxed);
	if (unlikely(t->flush_gen != gen))
		pause_flush(t);
	if (unlikely(off & SHIM_OFF_PAUSED) && gen)
		writer_sweep_stopped(t, gen);
	/* A pending request alone (SHIM_OFF_CTL) does not stop recording: it
	 * is set again while another thread serves (that thread holds the
	 * serve, and answers the page last), so at a window's start the
	 * threads that came here passed their calls through, recording on,
	 * until the serve ended: an unlock lost there left its hold open for
	 * the whole window, and its thread's allocator calls counted twice. */
	if (off & ~SHIM_OFF_CTL)
		return 0;
	/* Recording, and this call served a request or a flush: record it
	 * as the fast path would (a call lost here could be the release of
	 * a hold, leaving the analyzer a hold that never ends). */
	return gate_take(t);
}

int gate_take(tls_t *t)
{
	if (t->gate == GATE_READY) {
		t->gate = GATE_BUSY;
		atomic_signal_fence(memory_order_seq_cst);
		if (likely(!tls_stale(t)))
			return 1;
		/* Set up for a trace that ended at a detach: a new buffer
		 * and a clean state for this one (thread.c). */
		if (thread_regen(t) == 0)
			return 1;
		t->gate = GATE_DEAD;
		return 0;
	}
	if (t->gate != GATE_UNINIT)
		return 0;
	t->gate = GATE_BUSY;
	atomic_signal_fence(memory_order_seq_cst);
	if (thread_setup(t) != 0) {
		t->gate = GATE_DEAD;
		return 0;
	}
	/* A set-up that a detach (or the next attach's start) overtook:
	 * this call passes through; the thread's next one is seen as any
	 * other's (a new buffer if its generation is old by then). */
	if (unlikely(
	        (atomic_load(&g_off) & ~(SHIM_OFF_PAUSED | SHIM_OFF_CTL)) ||
	        tls_stale(t))) {
		hook_leave(t);
		return 0;
	}
	return 1;
}

/* Removes libmallock.so entries from LD_PRELOAD (MALLOCK_FOLLOW_EXEC=0). */
static void strip_preload(void)
{
	const char *v = prim_getenv("LD_PRELOAD");
	char out[4096];
	size_t n = 0;
	if (!v || strlen(v) >= sizeof out)
		return;
	char buf[4096];
	strcpy(buf, v);
	char *save = NULL;
	for (char *tok = strtok_r(buf, " :", &save); tok;
	     tok = strtok_r(NULL, " :", &save)) {
		const char *base = strrchr(tok, '/');
		base = base ? base + 1 : tok;
		if (!strncmp(base, "libmallock.so", 13))
			continue;
		if (n)
			out[n++] = ':';
		memcpy(out + n, tok, strlen(tok));
		n += strlen(tok);
	}
	out[n] = 0;
	if (n)
		prim_setenv("LD_PRELOAD", out);
	else
		unsetenv("LD_PRELOAD");
}

/* Nonzero if this process's executable is named name (MALLOCK_EXE). */
static int exe_is(const char *name)
{
	char exe[1024];
	if (prim_exe_path(exe, sizeof exe) <= 0)
		return 0;
	const char *b = strrchr(exe, '/');
	return !strcmp(b ? b + 1 : exe, name);
}

/* Everything but the final "recording on" store. Returns 0 or -1. */
static int shim_start(void)
{
	if (prim_secure()) {
		/* set-uid/set-gid: inert, and silent unless asked to be
		 * verbose (the environment is not parsed further here). */
		const char *v = prim_getenv("MALLOCK_VERBOSE");
		static const char msg[] =
		    "mallock: set-user-ID or set-group-ID "
		    "program; not recording\n";
		if (v && (!strcmp(v, "1") || !strcmp(v, "2")))
			prim_stderr(msg, sizeof msg - 1);
		return -1;
	}
	if (atomic_load(&real_state) == 3) {
		shim_warn("libc lacks %s; recording off", real_missing());
		return -1;
	}
	config_load();
	attach_config(); /* mallock attach: its -o and --duration (attach.h) */
	if (g_cfg.exe[0] && !exe_is(g_cfg.exe)) {
		/* A wrapper in the launch chain (sh, env, setpriv, ...): no
		 * trace, no control page; LD_PRELOAD stays for the program
		 * it runs. */
		shim_info("not %s (MALLOCK_EXE): not recording", g_cfg.exe);
		return -1;
	}
	if (!g_cfg.follow_exec)
		strip_preload();
	g_tsc_hz = prim_tsc_hz();
	prim_cpu_init();
	cost_init();
	g_spin_ticks = (g_tsc_hz ? g_tsc_hz : 1000000000u) / 1000000 *
	               (uint64_t)g_cfg.spin_ns / 1000;
	if (g_cfg.flush_ms) {
		uint64_t hz = g_tsc_hz ? g_tsc_hz : 1000000000u;
		g_flush_ticks = hz / 1000 * (uint64_t)g_cfg.flush_ms;
	}
	/* The exit key before libunwind's (stack_init sets libunwind up):
	 * in the last destructor round, ours runs first and the thread's
	 * gate is DEAD when libunwind frees its per-thread cache. */
	/* Once: a failed attach (the trace could not be created) comes back
	 * here at the next attach with its tables already made. */
	static int tables_ready;
	if (!tables_ready) {
		thread_init();
		if (stack_init() != 0 || lockmap_init() != 0) {
			shim_warn(
			    "cannot map the shim's tables; recording off");
			return -1;
		}
		tables_ready = 1;
	}
	/* An exec'd descendant of a traced process names its file as a child
	 * (never its parent's file): MALLOCK_PARENT_PID, which this shim adds
	 * to its environment, says it has a traced ancestor. */
	int child = prim_getenv("MALLOCK_PARENT_PID") != NULL;
	if (process_open_output(child) != 0)
		return -1;
	char pid[16];
	snprintf(pid, sizeof pid, "%u", prim_getpid());
	if (!g_attached) /* attach.h: no setenv in a running process */
		prim_setenv("MALLOCK_PARENT_PID", pid);
	process_write_header();
	thread_stack_here(&shim_tls); /* the main thread (or attach's) */
	if (!g_attached)
		tcmalloc_check();
	if (!g_attached) /* attach binds them itself (cxx_next_bind) */
		cxx_init();
	sample_init();
	return 0;
}

/* ---- fork ---- */

/*
 * The loader's lock at fork. glibc (2.36) does not reset the lock
 * dl_iterate_phdr takes in the child: if another parent thread held it at
 * fork (its own dl_iterate_phdr, or libunwind's FDE lookup in a hook), the
 * child's first dl_iterate_phdr waits forever, with libunwind's signals
 * masked. It cannot be held across fork by
 * the forking thread either: it is a recursive mutex owned by a kernel
 * tid, which the child does not have. So a child is known safe only when
 * the parent had one thread at fork; any other child never calls
 * dl_iterate_phdr (modules.h): its stacks are by frame pointers, its
 * modules are the parent's list.
 */
static int fork_active, fork_safe;

static void fork_prepare(void)
{
	fork_active = writer_active() && !(atomic_load(&g_off) &
	                                   (SHIM_OFF_STOPPED | SHIM_OFF_INIT));
	if (!fork_active)
		return;
	fork_safe = prim_thread_count() == 1;
	writer_fork_prepare();
}

static void fork_parent(void)
{
	if (fork_active)
		writer_fork_parent();
}

/* The forked child's file, created at its first write (writer.c). */
static int child_open(void)
{
	if (process_open_output(1) != 0)
		return -1;
	ctl_trace_changed(); /* the page names the child's own trace */
	process_write_header();
	return 0;
}

static void fork_child(void)
{
	ctl_fork_child();
	if (!fork_active)
		return;
	tls_t *t = &shim_tls;
	uint8_t gate = gate_hold(t);
	if (t->wb)
		t->tid = prim_gettid();
	writer_fork_child(t);
	stack_reset();
	lockmap_reset();
	memset(t->site, 0, sizeof t->site);
	note_reset();
	modules_fork_child(fork_safe);
	if (!fork_safe && g_cfg.unwind == CONFIG_UNWIND_LIBUNWIND) {
		/* Another thread may have been inside unw_step at the fork:
		 * libunwind's register-state cache lock (stack.c) stays held
		 * here for good, and the first walk would hang the child.
		 * The child is single-threaded: g_cfg may change here. */
		g_cfg.unwind = CONFIG_UNWIND_FP;
		thread_stack_here(t);
		shim_info("forked while other threads ran: the child's "
		          "stacks are by frame pointers");
	}
	writer_open_lazily(child_open);
	gate_restore(t, gate);
}

int shim_boot(void)
{
	tls_t *t = &shim_tls;
	/* Warnings go only to this stderr (prim.h); an attached shim's go to
	 * `mallock attach` in its answer, never to the host's fd 2 (a
	 * daemon's fd 2 is often its own log). */
	if (!g_attached)
		prim_stderr_init();
	if (!real_usable()) {
		atomic_store(&g_off, SHIM_OFF_STOPPED);
		return -1;
	}
	uint8_t gate = gate_hold(t);
	int ok = shim_start() == 0;
	unsigned bits = 0;
	if (ok) {
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		fatal_install();
		if (!g_attached)
			exit_hooks_install();
		/* MALLOCK_START=paused; the control signal from here on only
		 * sets SHIM_OFF_CTL, which the stores below keep. */
		bits = ctl_init();
	}
	gate_restore(t, gate);
	if (ok) {
		atomic_fetch_or(&g_off, bits);
		atomic_fetch_and(&g_off, ~SHIM_OFF_INIT);
	} else {
		atomic_store(&g_off, SHIM_OFF_STOPPED);
	}
	return ok ? 0 : -1;
}

int shim_rearm(void)
{
	tls_t *t = &shim_tls;
	uint8_t gate = gate_hold(t);
	/* No hook records while this runs: recording is stopped since the
	 * detach, every buffer of the ended trace is closed, and no thread
	 * is inside a hook outside a blocking wait (attach.c). */
	atomic_store(&g_off, SHIM_OFF_INIT | SHIM_OFF_STOPPED);
	note_reset();
	config_load();
	attach_config();
	stack_reset();
	lockmap_reset();
	sample_forget_all();
	writer_rearm();
	int ok = process_open_output(0) == 0;
	if (ok) {
		process_write_header();
		sample_init();
		fatal_install();
		/* Every thread's held-lock count is of the ended trace. */
		atomic_fetch_add(&g_epoch, 1);
	}
	unsigned bits = 0;
	if (ok) {
		/* The page's state is read from g_off (INIT: recording). */
		atomic_store(&g_off, SHIM_OFF_INIT);
		bits = ctl_init();
	}
	gate_restore(t, gate);
	atomic_store(&g_off, ok ? bits : SHIM_OFF_STOPPED);
	return ok ? 0 : -1;
}

__attribute__((constructor)) static void shim_ctor(void)
{
	/* dlopen'ed into a running process (mallock attach): stay inert
	 * until mallock_attach_impl() starts the shim with its output path
	 * (attach.h); no hook of ours is called before it. */
	if (attach_loaded_late())
		return;
	shim_boot();
}

void shim_end(const char *how)
{
	if (!writer_active() || (atomic_load(&g_off) & SHIM_OFF_STOPPED)) {
		ctl_exit(); /* a stopped shim's page goes too */
		return;
	}
	tls_t *t = &shim_tls;
	/* exit() from a signal handler that interrupted a hook of this
	 * thread (a server's SIGTERM handler hung in the final
	 * flush): the interrupted code may hold the writer's, the loader's or
	 * the stack cache's locks. Only the final flush runs, and it skips
	 * what this thread holds (wbuf.c, writer_proc.c). */
	int nested = gate_hold(t) == GATE_BUSY;
	if (!nested) {
		modules_check();
		stack_cache_note(t);
		if (t->wb)
			acq_pend_flush(t);
	}
	if (how)
		shim_info("%s: the trace was written before it", how);
	writer_final();
	process_drop_unrecorded();
	ctl_exit();
	t->gate = GATE_DEAD;
}

__attribute__((destructor)) static void shim_dtor(void)
{
	shim_end(NULL);
}
