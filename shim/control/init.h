/*
 * init.h - the shim's start (init.c): the constructor's work, also run once
 * later by a shim loaded late (attach.c).
 */
#ifndef MALLOCK_SHIM_INIT_H
#define MALLOCK_SHIM_INIT_H

/* The constructor's work (real functions, configuration, tables,
 * output file, opening records, control signal), callable once later for a
 * shim loaded late. Caller holds the gate. Returns 0, or -1 when the shim
 * stays inert (the reason was given by shim_warn). */
int shim_boot(void);

/*
 * The start of a new trace in a process the shim was attached to and
 * detached from (attach.c, after writer_gen_next and the wait for quiet
 * threads): the shared tables (stacks, locks, sampled blocks), the notes,
 * the END counters and the control requests as new, a new trace file with
 * its opening records, the fatal-signal handlers and a control page again.
 * What shim_boot does once (fork handlers, the thread-exit key, libunwind's
 * set-up, the tables' mappings) is not done again. Returns 0 (recording),
 * or -1 (the file could not be created; still detached).
 */
int shim_rearm(void);

/* The final flush on the way out (the destructor at exit, and _exit,
 * _Exit, quick_exit and syscall(SYS_exit_group): exit_hooks.c): every
 * thread's buffer, thread names, notes (an info one naming how, unless
 * how is NULL: exit) and a clean END; then the control page goes. Recording
 * stops. Does nothing when the shim is off or stopped. The caller has checked
 * that this process owns its trace (writer_owner; not a vfork child). */
void shim_end(const char *how);

#endif
