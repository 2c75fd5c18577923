/*
 * real.h - the table of the real functions the hooks forward to, one X-macro
 * list (REAL_FUNCS) so that the table, its resolution and its names cannot
 * drift apart. Each entry is marked required (the shim stays inert without
 * it) or optional (the hook falls back, see each hook).
 *
 * Invariants:
 * - real_ensure() runs once; until it has run, allocation hooks serve
 *   dlsym's own allocations from a static bootstrap pool (boot_*), whose
 *   blocks free() recognises and ignores, and realloc() copies out.
 * - Pointers are published with a release store of real_state; a hook that
 *   read real_state as 2 sees every pointer.
 * - C++ operators are resolved lazily (cxx_hooks.c): libstdc++ may be loaded
 *   after the shim starts.
 */
#ifndef MALLOCK_SHIM_REAL_H
#define MALLOCK_SHIM_REAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct dl_phdr_info;

#define REAL_REQ 1
#define REAL_OPT 0
#define REAL_COND_VERSION "GLIBC_2.3.2"

/* X(name, required, version or NULL, return type, parameter list).
 * REAL_FUNCS_MALLOC is the malloc family (attach.c adopts it as a whole). */
/* clang-format off */
#define REAL_FUNCS_MALLOC(X)                                                   \
	X(malloc, REAL_REQ, NULL, void *, (size_t))                            \
	X(free, REAL_REQ, NULL, void, (void *))                                \
	X(calloc, REAL_REQ, NULL, void *, (size_t, size_t))                    \
	X(realloc, REAL_REQ, NULL, void *, (void *, size_t))                   \
	X(reallocarray, REAL_OPT, NULL, void *, (void *, size_t, size_t))      \
	X(posix_memalign, REAL_OPT, NULL, int, (void **, size_t, size_t))      \
	X(aligned_alloc, REAL_OPT, NULL, void *, (size_t, size_t))             \
	X(memalign, REAL_OPT, NULL, void *, (size_t, size_t))                  \
	X(valloc, REAL_OPT, NULL, void *, (size_t))                            \
	X(pvalloc, REAL_OPT, NULL, void *, (size_t))

#define REAL_FUNCS(X)                                                          \
	REAL_FUNCS_MALLOC(X)                                                   \
	X(pthread_mutex_lock, REAL_REQ, NULL, int, (pthread_mutex_t *))        \
	X(pthread_mutex_trylock, REAL_REQ, NULL, int, (pthread_mutex_t *))     \
	X(pthread_mutex_timedlock, REAL_REQ, NULL, int,                        \
	  (pthread_mutex_t *, const struct timespec *))                        \
	X(pthread_mutex_clocklock, REAL_OPT, NULL, int,                        \
	  (pthread_mutex_t *, clockid_t, const struct timespec *))             \
	X(pthread_mutex_unlock, REAL_REQ, NULL, int, (pthread_mutex_t *))      \
	X(pthread_mutex_init, REAL_REQ, NULL, int,                             \
	  (pthread_mutex_t *, const pthread_mutexattr_t *))                    \
	X(pthread_mutex_destroy, REAL_REQ, NULL, int, (pthread_mutex_t *))     \
	X(pthread_cond_wait, REAL_REQ, REAL_COND_VERSION, int,                 \
	  (pthread_cond_t *, pthread_mutex_t *))                               \
	X(pthread_cond_timedwait, REAL_REQ, REAL_COND_VERSION, int,            \
	  (pthread_cond_t *, pthread_mutex_t *, const struct timespec *))      \
	X(pthread_cond_clockwait, REAL_OPT, NULL, int,                         \
	  (pthread_cond_t *, pthread_mutex_t *, clockid_t,                     \
	   const struct timespec *))                                           \
	X(pthread_cond_signal, REAL_REQ, REAL_COND_VERSION, int,               \
	  (pthread_cond_t *))                                                  \
	X(pthread_cond_broadcast, REAL_REQ, REAL_COND_VERSION, int,            \
	  (pthread_cond_t *))                                                  \
	X(pthread_cond_init, REAL_REQ, REAL_COND_VERSION, int,                 \
	  (pthread_cond_t *, const pthread_condattr_t *))                      \
	X(pthread_cond_destroy, REAL_REQ, REAL_COND_VERSION, int,              \
	  (pthread_cond_t *))                                                  \
	X(pthread_rwlock_rdlock, REAL_REQ, NULL, int, (pthread_rwlock_t *))    \
	X(pthread_rwlock_wrlock, REAL_REQ, NULL, int, (pthread_rwlock_t *))    \
	X(pthread_rwlock_tryrdlock, REAL_REQ, NULL, int, (pthread_rwlock_t *)) \
	X(pthread_rwlock_trywrlock, REAL_REQ, NULL, int, (pthread_rwlock_t *)) \
	X(pthread_rwlock_timedrdlock, REAL_REQ, NULL, int,                     \
	  (pthread_rwlock_t *, const struct timespec *))                       \
	X(pthread_rwlock_timedwrlock, REAL_REQ, NULL, int,                     \
	  (pthread_rwlock_t *, const struct timespec *))                       \
	X(pthread_rwlock_unlock, REAL_REQ, NULL, int, (pthread_rwlock_t *))    \
	X(pthread_rwlock_init, REAL_REQ, NULL, int,                            \
	  (pthread_rwlock_t *, const pthread_rwlockattr_t *))                  \
	X(pthread_rwlock_destroy, REAL_REQ, NULL, int, (pthread_rwlock_t *))   \
	X(pthread_spin_lock, REAL_REQ, NULL, int, (pthread_spinlock_t *))      \
	X(pthread_spin_trylock, REAL_REQ, NULL, int, (pthread_spinlock_t *))   \
	X(pthread_spin_unlock, REAL_REQ, NULL, int, (pthread_spinlock_t *))    \
	X(pthread_spin_init, REAL_REQ, NULL, int, (pthread_spinlock_t *, int)) \
	X(pthread_spin_destroy, REAL_REQ, NULL, int, (pthread_spinlock_t *))   \
	X(pthread_create, REAL_REQ, NULL, int,                                 \
	  (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))    \
	X(pthread_exit, REAL_REQ, NULL, void, (void *))                        \
	X(pthread_setname_np, REAL_OPT, NULL, int, (pthread_t, const char *))  \
	X(syscall, REAL_REQ, NULL, long,                                       \
	  (long, long, long, long, long, long, long))                          \
	X(dlclose, REAL_REQ, NULL, int, (void *))                              \
	X(pipe2, REAL_OPT, NULL, int, (int *, int))                            \
	X(dl_iterate_phdr, REAL_OPT, NULL, int,                                \
	  (int (*)(struct dl_phdr_info *, size_t, void *), void *)) \
	X(setuid, REAL_OPT, NULL, int, (uid_t))                                \
	X(setreuid, REAL_OPT, NULL, int, (uid_t, uid_t))                       \
	X(setresuid, REAL_OPT, NULL, int, (uid_t, uid_t, uid_t)) \
	X(closefrom, REAL_OPT, NULL, void, (int))                              \
	X(close_range, REAL_OPT, NULL, int, (unsigned, unsigned, int))         \
	REAL_FUNCS_CLOCK_RWLOCK(X)

/* the clock rwlocks (glibc 2.30+), kept as one block. */
#define REAL_FUNCS_CLOCK_RWLOCK(X)                                             \
	X(pthread_rwlock_clockrdlock, REAL_OPT, NULL, int,                     \
	  (pthread_rwlock_t *, clockid_t, const struct timespec *))            \
	X(pthread_rwlock_clockwrlock, REAL_OPT, NULL, int,                     \
	  (pthread_rwlock_t *, clockid_t, const struct timespec *))

/* Process-level hooks (fatal.c, exec_hooks.c, exit_hooks.c): resolved with the table, but
 * not part of REAL_FUNCS, whose entries `mallock attach` patches into the
 * running program's GOT (attach.c): a late shim leaves the program's
 * signal and exec calls alone. */
#define REAL_FUNCS_PROC(X)                                                     \
	X(sigaction, REAL_OPT, NULL, int,                                      \
	  (int, const struct sigaction *, struct sigaction *))                 \
	X(signal, REAL_OPT, NULL, __sighandler_t, (int, __sighandler_t))       \
	X(sysv_signal, REAL_OPT, NULL, __sighandler_t,                         \
	  (int, __sighandler_t))                                               \
	X(sigset, REAL_OPT, NULL, __sighandler_t, (int, __sighandler_t))       \
	X(execve, REAL_OPT, NULL, int,                                         \
	  (const char *, char *const[], char *const[]))                        \
	X(execv, REAL_OPT, NULL, int, (const char *, char *const[]))           \
	X(execvp, REAL_OPT, NULL, int, (const char *, char *const[]))          \
	X(execvpe, REAL_OPT, NULL, int,                                        \
	  (const char *, char *const[], char *const[]))                        \
	X(fexecve, REAL_OPT, NULL, int, (int, char *const[], char *const[]))   \
	X(execveat, REAL_OPT, NULL, int,                                       \
	  (int, const char *, char *const[], char *const[], int))             \
	X(_exit, REAL_OPT, NULL, void, (int))                                  \
	X(_Exit, REAL_OPT, NULL, void, (int))                                  \
	X(quick_exit, REAL_OPT, NULL, void, (int))
/* clang-format on */

typedef struct real_table {
#define REAL_MEMBER_(name, req, ver, ret, params) ret(*name) params;
	REAL_FUNCS(REAL_MEMBER_)
	REAL_FUNCS_PROC(REAL_MEMBER_)
#undef REAL_MEMBER_
} real_table_t;

extern real_table_t real;

/* 0: not resolved, 1: being resolved, 2: resolved (all required found),
 * 3: resolved but a required function is missing (the shim stays inert). */
extern _Atomic int real_state;

/*
 * Resolves the table (dlsym/dlvsym RTLD_NEXT) if no thread has started to.
 * Returns 1 when the table is usable (state 2 or 3 with the allocation
 * functions present), 0 while it is being resolved (by this thread, inside
 * dlsym, or by another): the caller then uses the bootstrap pool or passes
 * through as its comment says. May allocate (dlsym): from the pool.
 */
int real_ensure(void);

static inline int real_usable(void)
{
	return atomic_load_explicit(&real_state, memory_order_acquire) >= 2 ||
	       real_ensure();
}

/* Names of required functions that were missing ("" if none). */
const char *real_missing(void);

/* ---- bootstrap pool: allocations made while dlsym resolves the table ---- */

/* Returns a zeroed block of n bytes aligned to align (a power of two, at most
 * 4096), or NULL when the 256 KiB pool is exhausted. Thread-safe, lock-free. */
void *boot_alloc(size_t n, size_t align);
/* Nonzero if p points into the pool. */
int boot_owns(const void *p);
/* The usable size of a pool block. */
size_t boot_size(const void *p);

#endif
