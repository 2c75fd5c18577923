/*
 * lock_names.h - names for the locks nobody named (a bare
 * `mutex@0x55fd196b8f30` told a MariaDB engineer nothing). In order:
 * mallock_lock_name (the user's, always wins); the ELF data symbol that
 * holds the lock (a global or static, as `nm` shows it); the heap block
 * that held it when the recorder first saw it ("mutex at +0x28 in a block
 * from Registry::Registry()": the block's allocation site); else the
 * function that initialised it, or that first took it.
 */
#ifndef MALLOCK_LOCK_NAMES_H
#define MALLOCK_LOCK_NAMES_H

#include "model.h"

/* At the lock's LOCK_NEW (its address is known; the thread's earlier
 * allocations are in the live map): remembers the live block holding it,
 * found among the large blocks of m->bigblk, else by looking back from its
 * address up to LOCK_BLOCK_REACH bytes (model.h). A lock deeper than that
 * in a block that is no longer among m->bigblk is in none. */
void lock_find_block(model_t *m, lock_t *l);

/* Sets l->label for every lock without a user name. Needs sym_open. */
void lock_names(model_t *m);

#endif
