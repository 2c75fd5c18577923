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

#endif
