/*
 * mallock.h - the annotation API a program may call to help mallock's report.
 *
 * Every call is a no-op when the program does not run under libmallock.so:
 * the functions are weak references, resolved only when the shim is
 * preloaded, so a program built with this header needs no link flag and
 * runs unchanged without mallock.
 *
 * Calls are cheap and never allocate through the program's allocator.
 */
#ifndef MALLOCK_H
#define MALLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by libmallock.so; absent (NULL) otherwise. */
extern void mallock_lock_name_impl(const void *lock, const char *name,
                                   int queue_like) __attribute__((weak));
extern int mallock_recording_impl(int on) __attribute__((weak));

/*
 * Names a lock (a pthread_mutex_t, pthread_rwlock_t or pthread_spinlock_t)
 * in the report, and marks it as a queue's lock: findings on queue-like locks
 * rank first, since every producer and consumer waits on them. The name is
 * copied (at most 63 bytes). Call it once, after the lock is initialised.
 */
static inline void mallock_lock_name(const void *lock, const char *name)
{
	if (mallock_lock_name_impl)
		mallock_lock_name_impl(lock, name, 1);
}

/* Names a lock without marking it queue-like. */
static inline void mallock_lock_label(const void *lock, const char *name)
{
	if (mallock_lock_name_impl)
		mallock_lock_name_impl(lock, name, 0);
}

/*
 * Switches recording on (on != 0) or off. Returns the previous state (1 on,
 * 0 off), or -1 without the shim.
 */
static inline int mallock_recording(int on)
{
	return mallock_recording_impl ? mallock_recording_impl(on) : -1;
}

#ifdef __cplusplus
}
#endif
#endif /* MALLOCK_H */
