/*
 * slowalloc.c - libslowalloc.so, the calibration test's allocator:
 * preloaded after the shim (LD_PRELOAD=libmallock.so:
 * libslowalloc.so), so the shim's "real" malloc is this one. Each malloc
 * busy-waits SLOWALLOC_MALLOC_NS and each free SLOWALLOC_FREE_NS on
 * CLOCK_MONOTONIC (never sleeps: a sleep's length depends on the
 * scheduler), then forwards to the next allocator (glibc), found with
 * dlsym(RTLD_NEXT).
 *
 * Invariants:
 * - The time is spent before forwarding, so the shim's two clock reads
 *   around the call see it whole.
 * - dlsym may itself call malloc/calloc (through the shim, back here): while
 *   the next functions are unknown, calls go to glibc's __libc_* entry
 *   points, which are the same allocator, so blocks may be freed by either.
 * - Only malloc and free are slow; calloc, realloc and the aligned forms
 *   forward at once (the calibration program's critical sections call only
 *   malloc and free).
 */
#define _GNU_SOURCE
#include "slowalloc.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

#define API __attribute__((visibility("default")))

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static int resolving;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin(uint64_t ns)
{
	uint64_t end = now_ns() + ns;
	while (now_ns() < end)
		;
}

/* Resolves the next malloc and free once. Not thread-safe by design: the
 * first call comes from the process's init, before any thread exists. */
static void resolve(void)
{
	if (next_malloc || resolving)
		return;
	resolving = 1;
	void *m = dlsym(RTLD_NEXT, "malloc");
	void *f = dlsym(RTLD_NEXT, "free");
	if (m && f) {
		memcpy(&next_free, &f, sizeof f);
		memcpy(&next_malloc, &m, sizeof m);
	}
	resolving = 0;
}

API void *malloc(size_t n)
{
	spin(SLOWALLOC_MALLOC_NS);
	resolve();
	return next_malloc ? next_malloc(n) : __libc_malloc(n);
}

API void free(void *p)
{
	if (!p)
		return;
	spin(SLOWALLOC_FREE_NS);
	resolve();
	if (next_free)
		next_free(p);
	else
		__libc_free(p);
}

API void *calloc(size_t n, size_t m)
{
	return __libc_calloc(n, m);
}

API void *realloc(void *p, size_t n)
{
	return __libc_realloc(p, n);
}
