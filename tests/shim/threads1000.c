/*
 * threads1000 - 1,000 short-lived threads (8 alive at a time): each one's
 * THREAD_START, allocation, free and THREAD_EXIT reach the trace (threads
 * flush at exit), with no drop.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>

#define THREADS 1000
#define BATCH 8

static void *shortlived(void *a)
{
	void *volatile p = malloc(32);
	free(p);
	return a;
}

static int child(void)
{
	pthread_t t[BATCH];
	for (int i = 0; i < THREADS; i += BATCH) {
		for (int k = 0; k < BATCH; k++)
			if (pthread_create(&t[k], NULL, shortlived, NULL))
				return 1;
		for (int k = 0; k < BATCH; k++)
			pthread_join(t[k], NULL);
	}
	return 0;
}

static tr_stats_t s;

int main(int argc, char **argv)
{
	char file[800];
	if (st_run_one(argc, argv, child, &s, file) != 0)
		return test_done();
	check_eq(s.by_type[FMT_THREAD_START], THREADS);
	check_eq(s.by_type[FMT_THREAD_EXIT], THREADS);
	/* Allocations of the short threads: every chunk but the main's. */
	uint64_t allocs = 0, frees = 0;
	for (unsigned i = 0; i < s.nthreads; i++)
		if (s.threads[i].tid != s.pid) {
			allocs += s.threads[i].by_type[FMT_ALLOC];
			frees += s.threads[i].by_type[FMT_FREE];
		}
	check_eq(allocs, THREADS);
	check(frees >= THREADS);
	check_eq(s.by_type[FMT_DROP], 0);
	check_eq(s.end_dropped, 0);
	check_eq(s.end_events, st_core_events(&s));
	return test_done();
}
