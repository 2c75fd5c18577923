/*
 * shim_bench - the shim's micro-benchmark: ns per malloc+free pair (sizes 16,
 * 64, 512, 4096) and per uncontended pthread_mutex_lock+unlock pair, measured
 * at a call depth of BENCH_DEPTH frames (so a 16-frame stack is really 16
 * frames deep). Run it bare and under LD_PRELOAD=libmallock.so: see
 * shim_bench.sh, which alternates the two and prints the added cost.
 *
 *   shim_bench [ITERATIONS [lock]]  prints "name ns_per_pair" lines
 *                                   ("lock": the lock figure only)
 *
 * Each figure is the best of 5 runs of ITERATIONS pairs (default 1,000,000).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BENCH_DEPTH 16

static long iters = 1000000;
static int lock_only;
static void *volatile sink;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static double run_malloc(size_t size)
{
	double best = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now_ns();
		for (long i = 0; i < iters; i++) {
			sink = malloc(size);
			free(sink);
		}
		double ns = (now_ns() - t0) / (double)iters;
		if (ns < best)
			best = ns;
	}
	return best;
}

__attribute__((noinline)) static double run_lock(void)
{
	double best = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now_ns();
		for (long i = 0; i < iters; i++) {
			pthread_mutex_lock(&mu);
			pthread_mutex_unlock(&mu);
		}
		double ns = (now_ns() - t0) / (double)iters;
		if (ns < best)
			best = ns;
	}
	return best;
}

/* Recurses to BENCH_DEPTH frames, then measures. */
__attribute__((noinline)) static int deep(int d)
{
	if (d > 1) {
		int r = deep(d - 1);
		sink = &r; /* not a tail call */
		return r + 1;
	}
	static const size_t sizes[] = {16, 64, 512, 4096};
	for (unsigned i = 0; !lock_only && i < sizeof sizes / sizeof sizes[0];
	     i++)
		printf("malloc_free_%zu %.1f\n", sizes[i], run_malloc(sizes[i]));
	printf("lock_unlock %.1f\n", run_lock());
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		iters = atol(argv[1]);
	if (iters <= 0)
		iters = 1000000;
	lock_only = argc > 2 && argv[2][0] == 'l';
	/* main + deep*(BENCH_DEPTH-2) + run_* = BENCH_DEPTH frames above libc. */
	return deep(BENCH_DEPTH - 2);
}
