/*
 * fatal.c - the fatal-signal handler: when the host dies of SIGSEGV, SIGBUS,
 * SIGABRT, SIGFPE or SIGILL, the events recorded so far are written before
 * it goes (the exit-time flush never runs then), and the host still dies of
 * the same signal.
 *
 * Invariants:
 * - Installed once, by the constructor, and only for a signal whose action
 *   is still the default: a handler set earlier (a library constructor, a
 *   sanitizer runtime) is left alone; one the program sets later simply
 *   replaces ours (a program that chains to the old action reaches ours,
 *   which then does what the default would have done).
 * - The handler only calls async-signal-safe code: writer_fatal() (trylocks,
 *   write, clock reads), sigaction and raise. It restores the old (default)
 *   action first, so a second fault inside it kills the host as the first
 *   would have; it then re-raises the signal, which is blocked while the
 *   handler runs and is delivered with the default action when it returns
 *   (a hardware fault that re-executes the instruction faults again into
 *   the default action too).
 * - Only the first fatal signal flushes; a second one (another thread
 *   crashing at the same time) just restores and re-raises.
 */
#include "fatal.h"

#include "tls.h"
#include "writer.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#define FATAL_N 5
static const int fatal_sig[FATAL_N] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE,
                                       SIGILL};
static const char *const fatal_name[FATAL_N] = {"SIGSEGV", "SIGBUS",
                                                "SIGABRT", "SIGFPE", "SIGILL"};
static struct sigaction fatal_old[FATAL_N];
static _Atomic int fatal_seen;

static int fatal_index(int sig)
{
	for (int i = 0; i < FATAL_N; i++)
		if (fatal_sig[i] == sig)
			return i;
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
	sigaction(sig, &fatal_old[i], NULL);
	if (atomic_exchange(&fatal_seen, 1) == 0) {
		tls_t *t = &shim_tls;
		uint8_t gate = t->gate;
		t->gate = GATE_BUSY; /* nothing below is recorded */
		atomic_signal_fence(memory_order_seq_cst);
		char why[64] = "fatal signal ";
		strcat(why, fatal_name[i]);
		strcat(why, ": trace written by the signal handler");
		writer_fatal(t, why);
		t->gate = gate;
	}
	errno = saved_errno;
	raise(sig);
}

void fatal_install(void)
{
	for (int i = 0; i < FATAL_N; i++) {
		struct sigaction cur;
		if (sigaction(fatal_sig[i], NULL, &cur) != 0 ||
		    (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL)
			continue;
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = fatal_handler;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigfillset(&sa.sa_mask); /* no other handler runs mid-flush */
		fatal_old[i] = cur;
		sigaction(fatal_sig[i], &sa, NULL);
	}
}
