/*
 * lockfold.h - folding destroyed lock instances into their tuple's
 * counters, so that the model's lock table is bounded by the live locks
 * and the classes, not by the instances (model.h; lockfold.c says which
 * locks and why every report figure stays the same).
 */
#ifndef MALLOCK_LOCKFOLD_H
#define MALLOCK_LOCKFOLD_H

#include "model.h"

/* Lock li was destroyed (LOCK_DESTROY): retires it when m->fold_locks
 * and nothing names it alone; may compact m->lock, renumbering every lock
 * index the model holds (callers keep none across the call). May
 * allocate. */
void lockfold_destroy(model_t *m, uint32_t li);
/* Drops the retired records no output names, summing their counters into
 * their tuples, and renumbers the lock indexes. May allocate. */
void lockfold_compact(model_t *m);
/* Once the trace is read: the last compaction, and each tuple's counters
 * attached to its first instance (lock_t.fold). May allocate. */
void lockfold_finish(model_t *m);

#endif
