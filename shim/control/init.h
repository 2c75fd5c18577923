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

/* The final flush on the way out (the destructor at exit, and _exit,
 * _Exit, quick_exit and syscall(SYS_exit_group): exit_hooks.c): every
 * thread's buffer, thread names, notes (an info one naming how, unless
 * how is NULL: exit) and a clean END; then the control page goes. Recording
 * stops. Does nothing when the shim is off or stopped. The caller has checked
 * that this process owns its trace (writer_owner; not a vfork child). */
void shim_end(const char *how);

#endif
