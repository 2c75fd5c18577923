/*
 * exec_hooks.c - execve and its relatives: the trace is written before the
 * process image is replaced (an exec lost every thread's
 * buffered events, silently, and the trace had no END).
 *
 * Before the real call: every thread's committed events and drop counts, a
 * NOTE "exec of PATH" and an END without FMT_ENDF_CLEAN (writer_exec). If
 * the exec fails, the program goes on and so does the recording; the exit
 * writes a second END with the rest (END counts add up).
 *
 * glibc's exec functions call the system call through internal aliases, so
 * each one is hooked, not only execve; the execl forms build their argv and
 * go through the execv forms, as glibc's do.
 *
 * Invariants:
 * - A process that does not own the trace file writes nothing here: a
 *   vfork child shares its parent's memory (and its thread's TLS), and a
 *   forked child that has not written yet has no file (its exec leaves no
 *   empty trace, as before). Nothing is touched before that test but the
 *   control page's name, and only by the process the page names (never a
 *   vfork child).
 * - posix_spawn, system and popen are not hooked: they exec in a child and
 *   the caller goes on recording.
 * - The control page's name is removed before the real call (the next
 *   image makes its own, or has none: no stale page names this pid) and a
 *   new page is made if the exec fails.
 * - errno is the real call's.
 */
#include "control.h"
#include "event.h"
#include "hook.h"
#include "real.h"
#include "tls.h"
#include "writer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

/* The flush before an exec of what (a path, or "fd N"). Returns nonzero if
 * the control page was removed (exec_back makes a new one). */
static int exec_flush(const char *what)
{
	/* The image that follows makes its own page if it runs the shim; if
	 * it does not, no page may outlive this one (control.h). */
	int page = ctl_exec_begin();
	if (!writer_owner() ||
	    (atomic_load(&g_off) & (SHIM_OFF_STOPPED | SHIM_OFF_INIT)))
		return page;
	int saved = errno;
	tls_t *t = &shim_tls;
	uint8_t gate = gate_hold(t);
	/* Inside a hook (an exec from a signal handler), the thread's own
	 * buffer is written as another thread's: its records may be half
	 * encoded past the committed ones. */
	int own = gate == GATE_READY && t->wb;
	if (own)
		acq_pend_flush(t);
	char why[256];
	snprintf(why, sizeof why, "exec of %s: trace written before it", what);
	writer_exec(own ? t : NULL, why);
	gate_restore(t, gate);
	errno = saved;
	return page;
}

/* After an exec that failed (rc, errno its): the page comes back. */
static int exec_back(int page, int rc)
{
	if (page)
		ctl_exec_failed();
	return rc;
}

/* glibc declares the paths and arg nonnull, but a host built elsewhere may
 * pass NULL: tested out of line, where the compiler cannot drop the test. */
__attribute__((noinline)) static const char *or_null(const char *s)
{
	return s ? s : "(null)";
}

static int no_real(void)
{
	errno = ENOSYS;
	return -1;
}

HOOK_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (!real_usable() || !real.execve)
		return no_real();
	int page = exec_flush(or_null(path));
	return exec_back(page, real.execve(path, argv, envp));
}

HOOK_EXPORT int execv(const char *path, char *const argv[])
{
	if (!real_usable() || !real.execv)
		return no_real();
	int page = exec_flush(or_null(path));
	return exec_back(page, real.execv(path, argv));
}

HOOK_EXPORT int execvp(const char *file, char *const argv[])
{
	if (!real_usable() || !real.execvp)
		return no_real();
	int page = exec_flush(or_null(file));
	return exec_back(page, real.execvp(file, argv));
}

HOOK_EXPORT int execvpe(const char *file, char *const argv[],
                        char *const envp[])
{
	if (!real_usable() || !real.execvpe)
		return no_real();
	int page = exec_flush(or_null(file));
	return exec_back(page, real.execvpe(file, argv, envp));
}

HOOK_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (!real_usable() || !real.fexecve)
		return no_real();
	char what[32];
	snprintf(what, sizeof what, "fd %d", fd);
	int page = exec_flush(what);
	return exec_back(page, real.fexecve(fd, argv, envp));
}

HOOK_EXPORT int execveat(int dirfd, const char *path, char *const argv[],
                         char *const envp[], int flags)
{
	if (!real_usable() || !real.execveat)
		return no_real();
	int page = exec_flush(or_null(path));
	return exec_back(page, real.execveat(dirfd, path, argv, envp, flags));
}

/* The number of arguments of an execl call: arg and those in ap after it,
 * up to the NULL (which is not counted). */
__attribute__((noinline)) static size_t execl_argc(const char *arg, va_list ap)
{
	size_t argc = 0;
	if (arg)
		for (argc = 1; va_arg(ap, const char *); argc++)
			;
	return argc;
}

enum execl_form { EXECL_V, EXECL_VP, EXECL_VE };

/* The body of execl, execlp and execle: builds the call's argv from arg and
 * ap (just past arg) on this frame and calls execv, execvp or execve
 * (execle's envp follows the list's NULL). Returns what that call returns
 * (only on failure). ap is used up, as by va_arg. */
__attribute__((noinline)) static int
execl_run(enum execl_form form, const char *path, const char *arg, va_list ap)
{
	va_list count;
	va_copy(count, ap);
	size_t argc = execl_argc(arg, count);
	va_end(count);
	char *argv[argc + 1];
	argv[0] = (char *)arg;
	for (size_t i = 1; i <= argc; i++) /* the last read is the NULL */
		argv[i] = va_arg(ap, char *);
	argv[argc] = NULL;
	if (form == EXECL_VE)
		return execve(path, argv, va_arg(ap, char *const *));
	return form == EXECL_VP ? execvp(path, argv) : execv(path, argv);
}

HOOK_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = execl_run(EXECL_V, path, arg, ap);
	va_end(ap);
	return r;
}

HOOK_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = execl_run(EXECL_VP, file, arg, ap);
	va_end(ap);
	return r;
}

HOOK_EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = execl_run(EXECL_VE, path, arg, ap);
	va_end(ap);
	return r;
}
