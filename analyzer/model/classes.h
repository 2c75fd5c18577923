/*
 * classes.h - the groupings the reports name: lock instances into lock
 * classes, as lockdep and lock_stat do (a thousand per-connection mutexes
 * initialised at one line are one class), and threads by what they do.
 */
#ifndef MALLOCK_CLASSES_H
#define MALLOCK_CLASSES_H

#include "model.h"
#include "symbols.h"

/*
 * Fills m->cls and each lock's cls. The class key is the first user frame
 * of the lock's init stack (LOCK_INIT), or, for a lock never initialised by
 * a call (static initializer), of its main acquisition site
 * (lock_main_site), with its
 * owner when that frame is an init wrapper (class_owner); a lock with
 * neither, and every allocator-internal lock, is a class of its own.
 * Conditions variables get no class (cls stays NONE32). Needs m->sym
 * (sym_open). Allocates.
 */
void classes_build(model_t *m);

/*
 * The acquisition site that keys and names lock l when the trace holds no
 * init of it (a static initializer, or an init before a ctl window): of
 * the acquisition sites of its instances' group (model.h: lock_group), the
 * one (its first user frame) with the most holds; of the sites with at
 * least 7/8 of the most holds (a tie: they swap ranks from one window to
 * the next), the lowest address; l->first_site when it has no completed
 * hold. The first site taken
 * differs between two windows of one process; this one does not while the
 * program does the same work. A stack index, or NONE32. Needs
 * model_index_pairs and m->sym. Allocates (once per group).
 */
uint32_t lock_main_site(model_t *m, const lock_t *l);

/*
 * The frame that owns the locks made at stack si, when its first user
 * frame is an init wrapper (init_wrapper: a lock word and a making word in
 * its name, or a lock class's constructor) or sits in a library that its
 * caller is not in: the first caller outside the wrapper (its module).
 * False when the first user frame owns them.
 */
bool stack_owner(model_t *m, uint32_t si, struct frame *out);

/* The frame that owns class c's locks when its site is an init wrapper
 * (apr_thread_mutex_create, mysql_mutex_init, Mutex::Mutex, or a library
 * function called from another module): the first caller outside it,
 * which is part of the class key, so locks made through one wrapper by
 * different owners are different classes. False when the site owns them. */
bool class_owner(model_t *m, uint32_t c, struct frame *out);

/* class_owner's frame as a label into buf ("fn (file:line)"); when one
 * factory made several classes (lockclass_t.by_maker) and the frame has
 * no line, with its module offset ("fn (module+0x1f2c)"). NULL without an
 * owner. */
const char *class_owner_label(model_t *m, uint32_t c, char *buf, size_t len);

/* Sets each thread's activity (thread_t.role, a static string): main,
 * consumer (waits on a condition), producer (signals one), worker (takes
 * locks, or only allocates), idle. Starvation's peer roles are another
 * grouping (find_starvation.c). */
void thread_activity(model_t *m);

#endif
