/*
 * modules.h - MODULE records: every loaded object's bias, address range,
 * path and GNU build-id, for offline symbolization.
 *
 * Written at init, after a fork, and when dl_iterate_phdr's load counter
 * moved (a dlopen since the last dump) at dlclose (before the object goes
 * away), at a thread's exit and at the final flush: never from a flush
 * inside a hook (hook.h). dlopen itself is not hooked: glibc resolves a
 * dlopen'ed name against the RUNPATH of the *calling* object, so a wrapper
 * would break programs that rely on their own RUNPATH. Records may repeat; the
 * reader dedupes.
 */
#ifndef MALLOCK_SHIM_MODULES_H
#define MALLOCK_SHIM_MODULES_H

/* Writes MODULE records for all loaded objects into process chunks of
 * their own. The caller must not hold writer_proc_begin() (lock order:
 * the loader's lock, then proc_lock; see modules.c). May call malloc only
 * through libc internals (hold the gate). */
void modules_emit(void);

/* Emits the modules if objects were loaded since the last emission. Cheap
 * when nothing changed (one dl_iterate_phdr callback). Same locking rule. */
void modules_check(void);

/*
 * Fork child: safe = 0 when the loader's lock may have been held by
 * another parent thread at fork (glibc does not reset it in the child, and
 * a dl_iterate_phdr there never returns). Then the child never calls
 * dl_iterate_phdr: modules_emit writes the parent's last list, and
 * modules_check does nothing (objects the child loads are not recorded).
 */
void modules_fork_child(int safe);
/* 1 in such a child (the unwinder must not use dl_iterate_phdr either). */
int modules_loader_unsafe(void);

#endif
