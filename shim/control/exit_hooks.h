/*
 * exit_hooks.h - _exit, _Exit, quick_exit and syscall(SYS_exit_group):
 * the final flush before a way out that runs no destructor
 * (exit_hooks.c).
 */
#ifndef MALLOCK_SHIM_EXIT_HOOKS_H
#define MALLOCK_SHIM_EXIT_HOOKS_H

/* Registers the at_quick_exit handler that writes the trace (once, at
 * start, not in an attached process). */
void exit_hooks_install(void);

/* The final flush before syscall(SYS_exit_group, ...) (futex_hook.c). */
void exit_hooks_exit_group(void);

#endif
