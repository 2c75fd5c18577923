/*
 * calib.c - the calibration program. Run under the shim
 * with libslowalloc.so after it, T threads each do R critical sections of
 * one mutex; each section busy-waits BUSY ns on the clock and calls malloc
 * N times and free N times. slowalloc.h fixes what each call costs, so the
 * share of hold time spent in the allocator is known by construction:
 *
 *   known = N (MALLOC_NS + FREE_NS) / (BUSY + N (MALLOC_NS + FREE_NS))
 *
 * Between sections a thread busy-waits GAP ns without the lock and without
 * allocating, so the other thread gets its turn (and waits: the lock is
 * contended). Everything is busy-waiting on CLOCK_MONOTONIC, never sleeping,
 * so the numbers hold on a loaded 2-core machine.
 *
 *   calib [--threads T] [--rounds R] [--busy NS] [--allocs N] [--gap NS]
 *         [--outside K]
 *
 * --outside K: after each section, without the lock, a thread also calls
 * malloc and free K times each ("known_outside_ns" is their fixed cost).
 *
 * Prints one JSON line: the parameters, the known share and the counts of
 * what was done, for tests/analyzer/test_calibration.py. It also times each
 * section and each allocator call itself ("observed_share"): on a quiet
 * machine that equals the known share; on a loaded one preemption moves
 * both it and the report's share, and the test compares the report with it.
 * "disturbed_share" is the hold time sections took beyond the median
 * section, as a share of all: near 0 on a quiet machine.
 */
#define _GNU_SOURCE
#include "slowalloc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ALLOCS 64
#define MAX_THREADS 8

static pthread_mutex_t lock;
static long rounds = 2000, busy_ns = 18000, allocs = 4, gap_ns = 4000;
static long outside;
static int threads = 2;
static void *volatile keep; /* so the compiler keeps malloc/free */
static pthread_mutex_t sum_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t obs_hold_ns, obs_alloc_ns; /* summed by the threads */
static uint64_t *sect_ns; /* each section's hold, [thread * rounds + r] */

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

/* One section; adds its hold time and its allocator calls' time (as this
 * program sees them) to *hold and *alloc. */
static void __attribute__((noinline))
critical_section(uint64_t *hold, uint64_t *alloc)
{
	void *p[MAX_ALLOCS];
	pthread_mutex_lock(&lock);
	uint64_t t0 = now_ns(), a = 0;
	spin((uint64_t)busy_ns);
	for (long i = 0; i < allocs; i++) {
		uint64_t c = now_ns();
		p[i] = malloc(64);
		a += now_ns() - c;
		keep = p[i];
	}
	for (long i = 0; i < allocs; i++) {
		uint64_t c = now_ns();
		free(p[i]);
		a += now_ns() - c;
	}
	*hold += now_ns() - t0;
	*alloc += a;
	pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
	uint64_t hold = 0, alloc = 0, *mine = arg;
	for (long r = 0; r < rounds; r++) {
		uint64_t before = hold;
		critical_section(&hold, &alloc);
		mine[r] = hold - before;
		/* A local: through the shared keep, two threads could free
		 * one block (A stores, B stores, both free B's). */
		for (long i = 0; i < outside; i++) {
			void *volatile q = malloc(32);
			free(q);
		}
		spin((uint64_t)gap_ns);
	}
	pthread_mutex_lock(&sum_lock);
	obs_hold_ns += hold;
	obs_alloc_ns += alloc;
	pthread_mutex_unlock(&sum_lock);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static long arg_long(int argc, char **argv, int *i, long lo, long hi)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "calib: %s needs a value\n", argv[*i]);
		exit(1);
	}
	char *end;
	long v = strtol(argv[++*i], &end, 10);
	if (*end || v < lo || v > hi) {
		fprintf(stderr, "calib: %s: %s not in %ld..%ld\n", argv[*i - 1],
		        argv[*i], lo, hi);
		exit(1);
	}
	return v;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads"))
			threads = (int)arg_long(argc, argv, &i, 1, MAX_THREADS);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = arg_long(argc, argv, &i, 1, 100000000);
		else if (!strcmp(argv[i], "--busy"))
			busy_ns = arg_long(argc, argv, &i, 0, 100000000);
		else if (!strcmp(argv[i], "--allocs"))
			allocs = arg_long(argc, argv, &i, 0, MAX_ALLOCS);
		else if (!strcmp(argv[i], "--gap"))
			gap_ns = arg_long(argc, argv, &i, 0, 100000000);
		else if (!strcmp(argv[i], "--outside"))
			outside = arg_long(argc, argv, &i, 0, 1000000);
		else {
			fprintf(stderr,
			        "usage: calib [--threads T] [--rounds R] "
			        "[--busy NS] [--allocs N] [--gap NS] "
			        "[--outside K]\n");
			return 1;
		}
	}
	pthread_mutex_init(&lock, NULL);
	pthread_t tid[MAX_THREADS];
	sect_ns = calloc((size_t)(rounds * threads), sizeof *sect_ns);
	if (!sect_ns) {
		fprintf(stderr, "calib: out of memory\n");
		return 1;
	}
	uint64_t t0 = now_ns();
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, worker,
		                   sect_ns + (size_t)i * (size_t)rounds) != 0) {
			fprintf(stderr, "calib: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	uint64_t wall = now_ns() - t0;
	/* Interference: the time sections took beyond the median section, as
	 * a share of all hold time (preemption, another process's cache
	 * traffic). A quiet run has almost none. */
	size_t ns_ = (size_t)(rounds * threads);
	qsort(sect_ns, ns_, sizeof *sect_ns, cmp_u64);
	uint64_t med = sect_ns[ns_ / 2], excess = 0, all = 0;
	for (size_t i = 0; i < ns_; i++) {
		all += sect_ns[i];
		excess += sect_ns[i] > med ? sect_ns[i] - med : 0;
	}
	double disturbed = all ? (double)excess / (double)all : 0;
	free(sect_ns);
	double alloc =
	    (double)allocs * (SLOWALLOC_MALLOC_NS + SLOWALLOC_FREE_NS);
	double known =
	    alloc + (double)busy_ns > 0 ? alloc / (alloc + (double)busy_ns) : 0;
	long sections = rounds * threads;
	printf("{\"threads\": %d, \"rounds\": %ld, \"busy_ns\": %ld, "
	       "\"allocs\": %ld, \"malloc_ns\": %d, \"free_ns\": %d, "
	       "\"sections\": %ld, \"known_share\": %.6f, "
	       "\"known_allocator_ns\": %.0f, \"known_hold_ns\": %.0f, "
	       "\"observed_share\": %.6f, \"observed_allocator_ns\": %llu, "
	       "\"observed_hold_ns\": %llu, \"disturbed_share\": %.6f, "
	       "\"outside\": %ld, \"known_outside_ns\": %.0f, "
	       "\"wall_ns\": %llu}\n",
	       threads, rounds, busy_ns, allocs, SLOWALLOC_MALLOC_NS,
	       SLOWALLOC_FREE_NS, sections, known, alloc * (double)sections,
	       (alloc + (double)busy_ns) * (double)sections,
	       obs_hold_ns ? (double)obs_alloc_ns / (double)obs_hold_ns : 0.0,
	       (unsigned long long)obs_alloc_ns,
	       (unsigned long long)obs_hold_ns, disturbed, outside,
	       (double)outside * (SLOWALLOC_MALLOC_NS + SLOWALLOC_FREE_NS) *
	           (double)sections,
	       (unsigned long long)wall);
	pthread_mutex_destroy(&lock);
	return 0;
}
