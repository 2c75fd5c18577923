/*
 * fatal.h - the fatal-signal handler (SIGSEGV, SIGBUS, SIGABRT, SIGFPE,
 * SIGILL): writes the recorded events with async-signal-safe calls, restores
 * the default action and re-raises, so the host dies of the same signal and
 * leaves a readable trace (END without FMT_ENDF_CLEAN).
 */
#ifndef MALLOCK_SHIM_FATAL_H
#define MALLOCK_SHIM_FATAL_H

/* Installs the handler for each of those signals whose action is still the
 * default (SIG_DFL); a handler installed before is left alone. Called once
 * by the constructor once the trace is open. May not allocate. */
void fatal_install(void);

#endif
