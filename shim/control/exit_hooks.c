/*
 * exit_hooks.c - the ways out that run no destructor: _exit, _Exit,
 * quick_exit and syscall(SYS_exit_group) (futex_hook.c passes it here).
 * Without these the final flush never ran: every event still buffered by a
 * thread alive at that moment was lost, and the trace had no END.
 *
 * Each writes what exit() writes (shim_end: every thread's buffer, the
 * idle ones included, thread names, notes, a clean END), then calls the
 * real function. quick_exit's flush runs as an at_quick_exit handler
 * registered at start, so it runs after the program's own handlers (they
 * run in reverse order of registration) and their calls are recorded; the
 * hook flushes itself only when that registration failed.
 *
 * Invariants:
 * - A process that does not own the trace file does nothing here (a vfork
 *   child shares its parent's memory and TLS: its _exit must not touch the
 *   parent's buffers), nor a forked child that recorded nothing (it leaves
 *   no file, and only removes its control page); a forked child that
 *   recorded creates its file now.
 * - Async-signal-safe as far as the final flush is (writer_proc.c): these calls
 *   may come from a signal handler, and one that interrupted a hook of this
 *   thread gets the nested final flush, which skips what the thread holds.
 * - An exit of the real call's: the status is the program's.
 * - Not redirected by `mallock attach` (REAL_FUNCS_PROC): an attached
 *   process that ends this way keeps what was flushed (the deadline,
 *   MALLOCK_FLUSH_MS, bounds the rest).
 */
#include "exit_hooks.h"

#include "control.h"
#include "hook.h"
#include "init.h"
#include "real.h"
#include "writer.h"

#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static int quick_registered;

static void end_by(const char *how)
{
	if (atomic_load(&g_off) & SHIM_OFF_INIT)
		return;
	/* A forked child that recorded nothing writes no file, but its
	 * control page goes as at exit() (ctl_exit leaves a page that is
	 * not this pid's alone: a vfork child's is its parent's). */
	if (!writer_ends_here(&shim_tls)) {
		ctl_exit();
		return;
	}
	shim_end(how);
}

static void quick_end(void)
{
	end_by("quick_exit");
}

void exit_hooks_install(void)
{
	quick_registered = at_quick_exit(quick_end) == 0;
}

/* The process ends here even when the real function is missing. */
__attribute__((noreturn)) static void exit_group_now(int status)
{
	for (;;) {
		if (real.syscall)
			real.syscall(SYS_exit_group, status, 0, 0, 0, 0, 0);
		__builtin_trap();
	}
}

void exit_hooks_exit_group(void)
{
	end_by("exit_group");
}

HOOK_EXPORT void _exit(int status)
{
	if (real_usable()) {
		end_by("_exit");
		if (real._exit)
			real._exit(status);
	}
	exit_group_now(status);
}

HOOK_EXPORT void _Exit(int status)
{
	if (real_usable()) {
		end_by("_Exit");
		if (real._Exit)
			real._Exit(status);
	}
	exit_group_now(status);
}

HOOK_EXPORT void quick_exit(int status)
{
	if (real_usable()) {
		if (!quick_registered)
			end_by("quick_exit");
		if (real.quick_exit)
			real.quick_exit(status);
	}
	exit_group_now(status);
}
