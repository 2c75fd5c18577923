/*
 * modules.h - MODULE records: every loaded object's bias, address range,
 * path and GNU build-id, for offline symbolization.
 *
 * Written at init, after a fork, at dlclose (before the object goes away)
 * and at flushes when dl_iterate_phdr's load counter moved (a dlopen since
 * the last dump). dlopen itself is not hooked: glibc resolves a dlopen'ed
 * name against the RUNPATH of the *calling* object, so a wrapper would break
 * programs that rely on their own RUNPATH. Records may repeat; the reader
 * dedupes.
 */
#ifndef MALLOCK_SHIM_MODULES_H
#define MALLOCK_SHIM_MODULES_H

/* Writes MODULE records for all loaded objects into the process chunk
 * (caller holds writer_proc_begin()). Takes the loader's lock; may call
 * malloc only through libc internals (hold the gate). */
void modules_emit(void);

/* Emits the modules (in a process chunk of their own) if objects were
 * loaded since the last emission. Cheap when nothing changed (one
 * dl_iterate_phdr callback). */
void modules_check(void);

#endif
