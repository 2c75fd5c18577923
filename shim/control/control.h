/*
 * control.h - recording windows: MALLOCK_START=paused, `mallock ctl`
 * requests through the process's control page (format/ctl_page.h), the
 * control signal (MALLOCK_SIGNAL), MALLOCK_DURATION and the
 * MALLOCK_MAX_BYTES cap. docs/server.md describes it for operators.
 *
 * Design: the shim has no thread of its own, and must not depend on the
 * host's signal mask or credentials. At start it creates <dir>/<pid>.page in
 * a private directory (opened once, fd kept high), maps it MAP_SHARED and
 * keeps a POSIX lock on it. `mallock ctl` writes a request word there; the
 * shim polls it:
 * - while paused, every hook call already takes the slow path
 *   (hook_enter_slow): one load of the request word there;
 * - while recording, at most every CTL_POLL_MS, through the deadline test
 *   ev_commit already makes (g_stop_tsc is the next poll time): no cost on
 *   the hot path.
 * A pending request sets SHIM_OFF_CTL in g_off; the next hook entry of any
 * thread serves it (ctl_serve): switches recording with a MARK record in
 * its own buffer and rewrites the page's state. No signal is needed, and
 * none is installed unless MALLOCK_SIGNAL names one: then a plain kill
 * toggles, and `mallock ctl --wake` may send it to wake an idle process up,
 * but only while the page's wake_sig says the kernel's handler for it is
 * still the shim's (the program never set its own since: fatal.c's
 * sigaction/signal hooks and the syscall hook clear it first).
 *
 * Privilege drops: a process that calls setuid()/setreuid()/setresuid()
 * as root to become another user moves its page, before the call, into
 * that user's directory (cred_hooks.c -> ctl_cred_drop), so the user can
 * control it too; the mapping and the lock stay valid whatever the
 * credentials. A missing directory gets its name only once it is the
 * user's (made under a temporary name, given away, renamed without
 * replacing): workers dropping to one user at once all find it whole. A
 * forked child gets a page of its own (ctl_fork_child).
 *
 * No page outlives its process image: it is removed at exit (any state of
 * recording), by the fatal-signal flush, and before an exec.
 */
#ifndef MALLOCK_SHIM_CONTROL_H
#define MALLOCK_SHIM_CONTROL_H

#include "ctl_page.h"
#include "tls.h"

#include <stdint.h>

/* g_stop_tsc, the next poll (tls.h), is kept by ctl_tick. */

/* The control page (a static empty page when there is none) and the last
 * request word the shim has seen: a request is pending when they differ. */
extern ctl_page_t *g_ctl_page;
extern uint64_t g_ctl_seen;

/* Nonzero when `mallock ctl` has written a request not yet seen. One load;
 * called from hook_enter_slow. */
static inline int ctl_requested(void)
{
	return __atomic_load_n(&g_ctl_page->request, __ATOMIC_RELAXED) !=
	       g_ctl_seen;
}

/* A request is pending: sets SHIM_OFF_CTL so the next hook entry serves
 * it. Any context. */
void ctl_poke(void);

/* A poll time or the window's end was passed by an event at tsc
 * (ev_commit_slow, gate BUSY): ends the window or pokes, and sets the
 * next poll time. */
void ctl_tick(uint64_t tsc);

/* The program is about to set signal sig's action to handler (its
 * sigaction, signal or rt_sigaction call, fatal.c and futex_hook.c, before
 * the real call): if sig is the control signal and handler is not the
 * shim's, the page stops saying the handler is the shim's (wake_sig 0), for
 * good. Any context (async-signal-safe: two atomic stores). */
void ctl_signal_change(int sig, uintptr_t handler);

/* setuid-family hook, before the real call: the process (euid 0) is about
 * to become uid for good; moves the page into uid's directory. */
void ctl_cred_drop(uint32_t uid);

/* The trace file was created (a forked child's, at its first write): the
 * page names it at the next serve. Any context. */
void ctl_trace_changed(void);
/* g_epoch, incremented at every resume (ctl_window_started), is declared
 * in tls.h beside the held-lock count it makes stale. */
/* Incremented at every pause: each thread flushes its buffer at its next
 * hook call (hook_enter_slow), so the file is complete up to the pause. */
extern _Atomic uint32_t g_flush_gen;

/* A window begins at tsc (epoch, deadline) / ends (deadline off, flush
 * generation). Used by ctl_serve and mallock_recording_impl (api.c). */
void ctl_window_started(uint64_t tsc);
void ctl_window_stopped(void);

/*
 * At init (constructor, gate held): installs the signal handler unless the
 * program already handles that signal (then warns), creates the status
 * file. Returns the initial g_off bits (SHIM_OFF_PAUSED for
 * MALLOCK_START=paused, else 0). Again at an attach after a detach
 * (init.c shim_rearm): the ended trace's requests are forgotten and a new
 * page is named (the old one stays mapped).
 */
unsigned ctl_init(void);

/* Serves pending requests; called by hook_enter_slow when SHIM_OFF_CTL is
 * set and the thread's gate is READY or UNINIT. Never blocks on a lock a
 * hook can hold; may allocate nothing. */
void ctl_serve(tls_t *t);

/* The size cap was reached (writer, any context): recording stops for good;
 * the warning is printed once, the NOTE written by the next serve or at
 * exit. */
void ctl_capped(uint64_t bytes);

/* Fork child: forgets the parent's pending requests and serving flag (the
 * forking thread alone survives), creates the child's own page (the
 * parent's mapping is left untouched), naming the child's trace. */
void ctl_fork_child(void);

/* Exit: marks the page exited and removes its file (whatever the state of
 * recording: a stopped shim's page goes too). */
void ctl_exit(void);

/* A fatal signal's flush (fatal.c): removes the page's name. Only
 * syscalls (fstat, fstatat, openat, unlinkat, close) and snprintf. */
void ctl_fatal(void);

/* Before an exec (exec_hooks.c): removes the page's name, so that no page
 * outlives this image (the next one makes its own if it runs the shim).
 * Returns nonzero if it did (not in a vfork child: the page is the
 * parent's). ctl_exec_failed: the exec failed and the program goes on with
 * a new page (the old mapping stays: other threads may be reading it). */
int ctl_exec_begin(void);
void ctl_exec_failed(void);

/* Nonzero once this process has had a recording window: from its start
 * unless it started paused, from its fork if the parent was recording
 * then, else since its first resume. A forked child that never had one
 * creates no trace file; an image that never had one removes its empty
 * trace at exit (writer.c, process.c). Any context. */
int ctl_ever_recorded(void);

/* Detach (attach.c): the control signal's handler goes back to SIG_DFL (it
 * was installed only over SIG_DFL); the page says "detached" and its name
 * goes (the process keeps it mapped: `mallock ctl` finds it there). */
void ctl_detach(void);

#endif
