/*
 * migrate.c - the migration test's program (test_migrated.py): makes
 * MIGRATE_N mallocs of 777 bytes (libmigalloc.so moves the thread to
 * another CPU inside each) and as many of 64 bytes (no move), no lock
 * held, and frees them, pinned to one CPU at a time. Prints the number
 * of CPUs it may run on and whether the shim can read the CPU a call ran
 * on (rdtscp, or glibc's rseq area): "cpus N readable R".
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define MIGRATE_N 40

int main(void)
{
	cpu_set_t all;
	int cpus = 0, readable = 0;
	if (sched_getaffinity(0, sizeof all, &all) == 0)
		cpus = CPU_COUNT(&all);
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000001u, &a, &b, &c, &d) && (d & (1u << 27)))
		readable = 1;
	const unsigned *size = dlsym(RTLD_DEFAULT, "__rseq_size");
	if (size && *size >= 8)
		readable = 1;
	/* Pinned from here on, so that a loaded machine's scheduler moves no
	 * call: only libmigalloc.so's moves do. */
	cpu_set_t one;
	int cur = sched_getcpu();
	if (cur >= 0) {
		CPU_ZERO(&one);
		CPU_SET(cur, &one);
		sched_setaffinity(0, sizeof one, &one);
	}
	for (int i = 0; i < MIGRATE_N; i++) {
		void *volatile p = malloc(777);
		void *volatile q = malloc(64);
		free(p);
		free(q);
	}
	printf("cpus %d readable %d\n", cpus, readable);
	return 0;
}
