/*
 * fatal.h - the handler for the signals that kill the host: faults (SIGSEGV,
 * SIGBUS, SIGABRT, SIGFPE, SIGILL) and signals whose default action
 * terminates (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGXCPU, SIGXFSZ,
 * SIGUSR1/2, SIGALRM, SIGVTALRM, SIGPROF) while the program left them at
 * the default: writes the recorded events with async-signal-safe calls,
 * restores the default action and re-raises, so the host dies of the same
 * signal and leaves a readable trace (END without FMT_ENDF_CLEAN). The
 * sigaction() and signal() hooks (fatal.c) keep it invisible.
 */
#ifndef MALLOCK_SHIM_FATAL_H
#define MALLOCK_SHIM_FATAL_H

/* Installs the handler for each of those signals whose action is still the
 * default (SIG_DFL), except MALLOCK_SIGNAL's; a handler installed before,
 * or SIG_IGN, is left alone. Called once by the constructor once the trace
 * is open. May not allocate. */
void fatal_install(void);
/* `mallock detach`: gives each signal whose handler is still ours the
 * action it replaced (the program's since, if it set one, stays). */
void fatal_uninstall(void);

#endif
