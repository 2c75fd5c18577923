/*
 * fatal.c - the flush on the way out by a signal: when the host dies of a
 * fault (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) or of a signal whose
 * default action terminates it (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE,
 * SIGXCPU, SIGXFSZ, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF: review
 * #14, a server stopped by SIGTERM lost every buffered event), the events
 * recorded so far are written before it goes (the exit-time flush never
 * runs then), and the host still dies of the same signal.
 *
 * Invariants:
 * - Installed once, by the constructor, and only for a signal whose action
 *   is still the default: a handler set earlier (a library constructor, a
 *   sanitizer runtime) or an ignored signal is left alone, and so is the
 *   control signal (MALLOCK_SIGNAL). One the program sets later (a handler
 *   or SIG_IGN) simply replaces ours: the kernel then never runs ours, so
 *   an ignored signal stays ignored.
 * - The program cannot tell: sigaction() and signal() report SIG_DFL (with
 *   the flags and mask the default had) where ours is installed, and a
 *   program that sets SIG_DFL again for one of these signals gets ours back
 *   (it behaves as the default). A signal blocked by the program (sigwait,
 *   signalfd) is never delivered to a handler, ours included.
 * - The handler only calls async-signal-safe code: writer_fatal() (trylocks,
 *   write, clock reads), ctl_fatal() (removes the control page: fstatat,
 *   unlinkat), sigaction and raise. It restores the default action
 *   first, so a second fault inside it kills the host as the first would
 *   have; it then re-raises the signal, which is blocked while the handler
 *   runs and is delivered with the default action when it returns (a
 *   hardware fault that re-executes the instruction faults again into the
 *   default action too).
 * - Only the first such signal flushes; a second one (another thread
 *   crashing at the same time) just restores and re-raises.
 */
#include "fatal.h"

#include "config.h"
#include "control.h"
#include "hook.h"
#include "real.h"
#include "tls.h"
#include "writer.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

/* clang-format off */
#define FATAL_SIGNALS(X)                                                       \
	X(SIGSEGV, "fatal signal SIGSEGV")                                     \
	X(SIGBUS, "fatal signal SIGBUS")                                       \
	X(SIGABRT, "fatal signal SIGABRT")                                     \
	X(SIGFPE, "fatal signal SIGFPE")                                       \
	X(SIGILL, "fatal signal SIGILL")                                       \
	X(SIGTERM, "signal SIGTERM (default action)")                          \
	X(SIGINT, "signal SIGINT (default action)")                            \
	X(SIGHUP, "signal SIGHUP (default action)")                            \
	X(SIGQUIT, "signal SIGQUIT (default action)")                          \
	X(SIGPIPE, "signal SIGPIPE (default action)")                          \
	X(SIGXCPU, "signal SIGXCPU (default action)")                          \
	X(SIGXFSZ, "signal SIGXFSZ (default action)")                          \
	X(SIGUSR1, "signal SIGUSR1 (default action)")                          \
	X(SIGUSR2, "signal SIGUSR2 (default action)")                          \
	X(SIGALRM, "signal SIGALRM (default action)")                          \
	X(SIGVTALRM, "signal SIGVTALRM (default action)")                      \
	X(SIGPROF, "signal SIGPROF (default action)")
/* clang-format on */

#define FATAL_SIG_(sig, why) sig,
#define FATAL_WHY_(sig, why) why ": trace written by the signal handler",
static const int fatal_sig[] = {FATAL_SIGNALS(FATAL_SIG_)};
static const char *const fatal_why[] = {FATAL_SIGNALS(FATAL_WHY_)};
#define FATAL_N (sizeof fatal_sig / sizeof fatal_sig[0])
static struct sigaction fatal_old[FATAL_N]; /* the default it replaced */
static _Atomic int fatal_mine[FATAL_N];     /* installed by us */
static struct sigaction fatal_sa;           /* our action */
static _Atomic int fatal_seen;

static int fatal_index(int sig)
{
	for (unsigned i = 0; i < FATAL_N; i++)
		if (fatal_sig[i] == sig)
			return (int)i;
	return -1;
}

static void fatal_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	int saved_errno = errno;
	int i = fatal_index(sig);
	if (i < 0)
		return;
	real.sigaction(sig, &fatal_old[i], NULL);
	if (atomic_exchange(&fatal_seen, 1) == 0) {
		tls_t *t = &shim_tls;
		uint8_t gate = gate_hold(t); /* nothing below is recorded */
		writer_fatal(t, fatal_why[i]);
		ctl_fatal(); /* the process ends: its page goes */
		gate_restore(t, gate);
	}
	errno = saved_errno;
	raise(sig);
}

static int is_default(const struct sigaction *a)
{
	return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL;
}

void fatal_install(void)
{
	memset(&fatal_sa, 0, sizeof fatal_sa);
	fatal_sa.sa_sigaction = fatal_handler;
	fatal_sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigfillset(&fatal_sa.sa_mask); /* no other handler runs mid-flush */
	for (unsigned i = 0; i < FATAL_N; i++) {
		struct sigaction cur;
		if (fatal_sig[i] == g_cfg.signal ||
		    real.sigaction(fatal_sig[i], NULL, &cur) != 0 ||
		    !is_default(&cur))
			continue;
		fatal_old[i] = cur;
		if (real.sigaction(fatal_sig[i], &fatal_sa, NULL) == 0)
			atomic_store(&fatal_mine[i], 1);
	}
}

void fatal_uninstall(void)
{
	for (unsigned i = 0; i < FATAL_N; i++) {
		struct sigaction cur;
		if (!atomic_exchange(&fatal_mine[i], 0) ||
		    real.sigaction(fatal_sig[i], NULL, &cur) != 0)
			continue;
		/* One the program replaced since is the program's. */
		if ((cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_sigaction == fatal_handler)
			real.sigaction(fatal_sig[i], &fatal_old[i], NULL);
	}
}

/* ---- what the program sees ---- */

/* real.sigaction, once the table is resolved (a constructor that runs
 * before ours may call sigaction; dlsym does not). */
static int real_ready(void)
{
	for (int n = 0; n < 100000; n++) {
		if (real_usable() && real.sigaction)
			return 1;
		prim_yield();
	}
	return 0;
}

HOOK_EXPORT int sigaction(int sig, const struct sigaction *act,
                          struct sigaction *old)
{
	if (!real_ready()) {
		errno = ENOSYS;
		return -1;
	}
	if (act)
		ctl_signal_change(sig, (uintptr_t)act->sa_handler);
	int i = fatal_index(sig);
	if (i < 0 || !atomic_load(&fatal_mine[i]))
		return real.sigaction(sig, act, old);
	struct sigaction prev;
	int r;
	if (act && is_default(act)) {
		/* SIG_DFL again: ours does what the default does. */
		r = real.sigaction(sig, &fatal_sa, &prev);
		if (r == 0)
			fatal_old[i] = *act;
	} else {
		r = real.sigaction(sig, act, &prev);
	}
	if (r == 0 && old) {
		*old = prev;
		if ((prev.sa_flags & SA_SIGINFO) &&
		    prev.sa_sigaction == fatal_handler)
			*old = fatal_old[i];
	}
	return r;
}

/* glibc's signal() sets its action with an internal call, so it is
 * hooked too: the same two rules, the rest is glibc's own (BSD semantics,
 * siginterrupt). */
HOOK_EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	if (!real_ready() || !real.signal) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	ctl_signal_change(sig, (uintptr_t)handler);
	int i = fatal_index(sig);
	if (i < 0 || !atomic_load(&fatal_mine[i]))
		return real.signal(sig, handler);
	if (handler == SIG_DFL) {
		struct sigaction sa, old;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = SIG_DFL;
		if (sigaction(sig, &sa, &old) != 0)
			return SIG_ERR;
		return (old.sa_flags & SA_SIGINFO)
		           ? (__sighandler_t)(void (*)(void))old.sa_sigaction
		           : old.sa_handler;
	}
	__sighandler_t prev = real.signal(sig, handler);
	if (prev == (__sighandler_t)(void (*)(void))fatal_handler)
		return SIG_DFL;
	return prev;
}

/* The other names glibc gives to setting a handler, each a call that would
 * not pass through the two hooks above (glibc calls its internal
 * __sigaction): bsd_signal and ssignal are signal(), __sigaction is
 * sigaction(); sysv_signal and sigset only tell the control page
 * (ctl_signal_change) and forward. */
HOOK_EXPORT int __sigaction(int sig, const struct sigaction *act,
                            struct sigaction *old)
{
	return sigaction(sig, act, old);
}

HOOK_EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t handler)
{
	return signal(sig, handler);
}

HOOK_EXPORT __sighandler_t ssignal(int sig, __sighandler_t handler)
{
	return signal(sig, handler);
}

HOOK_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t handler)
{
	if (!real_ready() || !real.sysv_signal) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	ctl_signal_change(sig, (uintptr_t)handler);
	return real.sysv_signal(sig, handler);
}

HOOK_EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t handler)
{
	return sysv_signal(sig, handler);
}

HOOK_EXPORT __sighandler_t sigset(int sig, __sighandler_t handler)
{
	if (!real_ready() || !real.sigset) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	/* SIG_HOLD blocks the signal and keeps the handler. */
	if (handler != SIG_HOLD)
		ctl_signal_change(sig, (uintptr_t)handler);
	return real.sigset(sig, handler);
}
