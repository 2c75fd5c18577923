/*
 * migalloc.c - libmigalloc.so, the allocator of the migration test
 * (test_migrated.py): preloaded after the shim (LD_PRELOAD=libmallock.so:
 * libmigalloc.so), so the shim's "real" malloc is this one. A malloc of
 * MIGALLOC_SIZE bytes moves its thread to the next CPU it may run on
 * (sched_setaffinity on itself: the kernel moves it before the call
 * returns) and then forwards to glibc; every other call forwards at once.
 * The shim times that malloc from one CPU to another: the trace must mark
 * it ALLOC_MIGRATED, deterministically, on any machine with two CPUs.
 *
 * Invariant: no dlsym (it may call malloc): glibc's __libc_malloc is the
 * next allocator.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>

#define MIGALLOC_SIZE 777

extern void *__libc_malloc(size_t);

/* The CPUs the process may run on, read before main (migrate pins itself
 * to one of them before its calls). */
static cpu_set_t all;
static int have_all;

__attribute__((constructor)) static void migalloc_init(void)
{
	have_all = sched_getaffinity(0, sizeof all, &all) == 0;
}

__attribute__((visibility("default"))) void *malloc(size_t n)
{
	if (n == MIGALLOC_SIZE && have_all) {
		cpu_set_t one;
		int cur = sched_getcpu(), next = -1;
		for (int i = 1; i <= CPU_SETSIZE && next < 0; i++) {
			int c = (cur + i) % CPU_SETSIZE;
			if (c != cur && CPU_ISSET(c, &all))
				next = c;
		}
		/* Pinned to the next CPU, and left there: the calls that
		 * follow cannot move unless this one moves them. */
		if (next >= 0) {
			CPU_ZERO(&one);
			CPU_SET(next, &one);
			sched_setaffinity(0, sizeof one, &one);
		}
	}
	return __libc_malloc(n);
}
