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
 */
#include "config.h"
#include "lockmap.h"
#include "modules.h"
#include "note.h"
#include "process.h"
#include "real.h"
#include "stack.h"
#include "thread.h"
#include "tls.h"
#include "writer.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__thread tls_t shim_tls __attribute__((tls_model("initial-exec"))) = {
	.gate = GATE_UNINIT,
};
_Atomic unsigned g_off = SHIM_OFF_INIT;
uint64_t g_flush_ticks = UINT64_MAX;

int hook_enter_slow(tls_t *t)
{
	if (t->gate != GATE_UNINIT ||
	    atomic_load_explicit(&g_off, memory_order_relaxed))
		return 0;
	t->gate = GATE_BUSY;
	atomic_signal_fence(memory_order_seq_cst);
	if (thread_setup(t) != 0) {
		t->gate = GATE_DEAD;
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

void tcmalloc_check(void);

/* Everything but the final "recording on" store. Returns 0 or -1. */
static int shim_start(void)
{
	if (prim_secure())
		return -1; /* set-uid/set-gid: stay silent and inert */
	if (atomic_load(&real_state) == 3) {
		shim_warn("libc lacks %s; recording off", real_missing());
		return -1;
	}
	config_load();
	if (!g_cfg.follow_exec)
		strip_preload();
	g_tsc_hz = prim_tsc_hz();
	if (g_cfg.flush_ms) {
		uint64_t hz = g_tsc_hz ? g_tsc_hz : 1000000000u;
		g_flush_ticks = hz / 1000 * (uint64_t)g_cfg.flush_ms;
	}
	if (stack_init() != 0 || lockmap_init() != 0) {
		shim_warn("cannot map the shim's tables; recording off");
		return -1;
	}
	/* An exec'd descendant of a traced process names its file as a child
	 * (never its parent's file): MALLOCK_PARENT_PID, which this shim adds
	 * to its environment, says it has a traced ancestor. */
	int child = prim_getenv("MALLOCK_PARENT_PID") != NULL;
	if (process_open_output(child) != 0)
		return -1;
	char pid[16];
	snprintf(pid, sizeof pid, "%u", prim_getpid());
	prim_setenv("MALLOCK_PARENT_PID", pid);
	process_write_header();
	thread_init();
	tcmalloc_check();
	return 0;
}

/* ---- fork ---- */

static int fork_active;

static void fork_prepare(void)
{
	fork_active = writer_active() &&
	              !(atomic_load(&g_off) & (SHIM_OFF_STOPPED | SHIM_OFF_INIT));
	if (fork_active)
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
	process_write_header();
	return 0;
}

static void fork_child(void)
{
	if (!fork_active)
		return;
	tls_t *t = &shim_tls;
	uint8_t gate = t->gate;
	t->gate = GATE_BUSY;
	if (t->wb)
		t->tid = prim_gettid();
	writer_fork_child(t);
	stack_reset();
	lockmap_reset();
	memset(t->site, 0, sizeof t->site);
	note_reset();
	writer_open_lazily(child_open);
	t->gate = gate;
}

__attribute__((constructor)) static void shim_ctor(void)
{
	tls_t *t = &shim_tls;
	if (!real_usable()) {
		atomic_store(&g_off, SHIM_OFF_STOPPED);
		return;
	}
	uint8_t gate = t->gate;
	t->gate = GATE_BUSY;
	int ok = shim_start() == 0;
	if (ok)
		pthread_atfork(fork_prepare, fork_parent, fork_child);
	t->gate = gate;
	atomic_store(&g_off, ok ? 0u : SHIM_OFF_STOPPED);
}

__attribute__((destructor)) static void shim_dtor(void)
{
	if (!writer_active() || (atomic_load(&g_off) & SHIM_OFF_STOPPED))
		return;
	tls_t *t = &shim_tls;
	t->gate = GATE_BUSY;
	modules_check();
	writer_final();
	t->gate = GATE_DEAD;
}
