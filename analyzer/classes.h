/*
 * classes.h - the groupings the reports name: lock instances into lock
 * classes, as lockdep and lock_stat do (a thousand per-connection mutexes
 * initialised at one line are one class), and threads by what they do.
 */
#ifndef MALLOCK_CLASSES_H
#define MALLOCK_CLASSES_H

#include "model.h"

/*
 * Fills m->cls and each lock's cls. The class key is the first user frame
 * of the lock's init stack (LOCK_INIT), or, for a lock never initialised by
 * a call (static initializer), of its first acquisition site; a lock with
 * neither, and every allocator-internal lock, is a class of its own.
 * Conditions variables get no class (cls stays NONE32). Needs m->sym
 * (sym_open). Allocates.
 */
void classes_build(model_t *m);

/* Sets each thread's activity (thread_t.role, a static string): main,
 * consumer (waits on a condition), producer (signals one), worker (takes
 * locks, or only allocates), idle. Starvation's peer roles are another
 * grouping (find_starvation.c). */
void thread_activity(model_t *m);

#endif
