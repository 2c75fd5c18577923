/*
 * control.h - recording windows: MALLOCK_START=paused, the control signal
 * (MALLOCK_SIGNAL), `mallock ctl` requests through a per-process control
 * file, MALLOCK_DURATION and the MALLOCK_MAX_BYTES cap. docs/server.md
 * describes the protocol for operators.
 *
 * Design: the shim has no thread of its own. The signal handler only sets
 * bits (async-signal-safe): it counts a plain signal (kill -USR2: toggle) or
 * flags a request (sigqueue from `mallock ctl`, whose command is in the
 * control file), and sets SHIM_OFF_CTL in g_off. That bit sends the next
 * hook call of any thread to the slow path, which serves the request
 * (ctl_serve): reads the control file, switches recording on or off with a
 * MARK record in its own buffer, and rewrites the status file. The duration
 * and the cap use the same path.
 *
 * Files, in a private directory (MALLOCK_CTL_DIR, else
 * $XDG_RUNTIME_DIR/mallock, else /tmp/mallock-<uid>; mode 0700, owned by
 * the user, never followed through a symlink):
 *   <pid>.ctl     written by `mallock ctl`: "start SEQ" or "stop SEQ"
 *   <pid>.status  written by the shim: "key value" lines (pid, signal,
 *                 state, seq, trace, bytes); removed at exit
 */
#ifndef MALLOCK_SHIM_CONTROL_H
#define MALLOCK_SHIM_CONTROL_H

#include "tls.h"

#include <stdint.h>

/* TSC at which the current window ends (MALLOCK_DURATION); UINT64_MAX when
 * none. Read on the hot path by ev_commit. */
extern uint64_t g_stop_tsc;
/* Incremented at every resume: per-thread lock counts older than this are
 * stale (sample.h). */
extern _Atomic uint32_t g_epoch;
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
 * MALLOCK_START=paused, else 0).
 */
unsigned ctl_init(void);

/* Serves pending requests; called by hook_enter_slow when SHIM_OFF_CTL is
 * set and the thread's gate is READY or UNINIT. Never blocks on a lock a
 * hook can hold; may allocate nothing. */
void ctl_serve(tls_t *t);

/* The window's end was seen by an event at tsc (ev_commit, gate BUSY):
 * schedules the stop. */
void ctl_deadline(void);

/* The size cap was reached (writer, any context): recording stops for good;
 * the warning is printed once, the NOTE written by the next serve or at
 * exit. */
void ctl_capped(uint64_t bytes);

/* Fork child: new pid, new status file, same state. */
void ctl_fork_child(void);

/* Exit: removes the status and control files. */
void ctl_exit(void);

/* Detach (attach.c): the control signal's handler goes back to SIG_DFL (it
 * was installed only over SIG_DFL), then as ctl_exit. */
void ctl_detach(void);

#endif
