/*
 * classes.h - groups lock instances into lock classes, as lockdep and
 * lock_stat do: a thousand per-connection mutexes initialised at one line
 * are one class.
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

#endif
