/*
 * allocmt - a multi-threaded workload with known counts, for the allocator,
 * resource and cut-short tests: `allocmt THREADS ITERS`. Each "worker"
 * thread does ITERS rounds of: lock the shared mutex, malloc, unlock,
 * calloc + realloc + free + free (outside the lock). Prints the shared
 * mutex's address on stderr ("mutex 0x...") and the totals on stdout.
 * ITERS 0: run until killed (rounds of 1000).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static long iters;
static void *volatile sink;

static void *worker(void *a)
{
	(void)a;
	pthread_setname_np(pthread_self(), "worker");
	for (long i = 0; iters == 0 || i < iters; i++) {
		pthread_mutex_lock(&shared);
		void *p = malloc(16 + (size_t)(i % 200));
		pthread_mutex_unlock(&shared);
		void *q = calloc(4, 8);
		void *r = realloc(p, 300);
		sink = r;
		free(q);
		free(r);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	iters = argc > 2 ? atol(argv[2]) : 10000;
	if (n < 1 || n > 64)
		return 2;
	fprintf(stderr, "mutex %p\n", (void *)&shared);
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("threads %d rounds %ld\n", n, iters);
	return 0;
}
