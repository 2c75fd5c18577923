/*
 * nopieapp.c - a non-PIE executable that takes realloc's address (as
 * Debian's node does): the loader then binds every module's realloc to a
 * stub in this executable's PLT, which `mallock attach` must see through
 * (attach.c: global_def).
 *
 * usage: nopieapp SECONDS
 * Prints "nopieapp: ready PID", then for SECONDS grows and frees blocks
 * with realloc, called through the taken address and directly, and prints
 * "nopieapp: reallocs N" at the end.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void *(*volatile realloc_ptr)(void *, size_t);

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	/* The address taken in code built without -fpie: an absolute
	 * relocation the linker resolves to a canonical PLT entry. */
	realloc_ptr = realloc;
	printf("nopieapp: ready %d\n", (int)getpid());
	fflush(stdout);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned long n = 0;
	do {
		void *p = NULL;
		for (size_t s = 16; s <= 4096; s *= 2) {
			void *q = (n & 1) ? realloc_ptr(p, s) : realloc(p, s);
			if (!q)
				break;
			p = q;
			n++;
		}
		free(p);
		usleep(1000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) +
	             (double)(t.tv_nsec - t0.tv_nsec) / 1e9 <
	         secs);
	printf("nopieapp: reallocs %lu\n", n);
	return 0;
}
