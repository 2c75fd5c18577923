/*
 * shim_bench - the shim's micro-benchmark: ns per malloc+free pair (sizes 16,
 * 64, 512, 4096) and per uncontended pthread_mutex_lock+unlock pair, measured
 * at a call depth of BENCH_DEPTH frames (so a 16-frame stack is really 16
 * frames deep). Run it bare and under LD_PRELOAD=libmallock.so: see
 * shim_bench.sh, which alternates the two and prints the added cost.
 *
 *   shim_bench [ITERATIONS [lock]]  prints "name ns_per_pair" lines
 *                                   ("lock": the lock figure only)
 *   shim_bench ITERATIONS threads N N threads (oversubscription is fine), each
 *                                   at the same depth doing ITERATIONS
 *                                   malloc(64)+free pairs, then ITERATIONS
 *                                   lock+unlock pairs on its own mutex;
 *                                   prints "threads_N_malloc_free_64 ns" and
 *                                   "threads_N_lock_unlock ns": CPU ns per
 *                                   pair (CLOCK_THREAD_CPUTIME_ID, summed over
 *                                   threads / pairs), so time spent waiting
 *                                   for a core does not count but a shared
 *                                   lock's spinning or futex calls do.
 *
 * Each single-thread figure is the best of 5 runs of ITERATIONS pairs
 * (default 1,000,000); each threads figure is the best of 3.
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
static int nthreads; /* threads mode when > 0 */
static pthread_barrier_t barrier;

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

static double thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Threads mode: per thread, the CPU ns its ITERATIONS pairs took. */
struct tres {
	double malloc_ns[3], lock_ns[3];
};

__attribute__((noinline)) static void thread_measure(struct tres *r)
{
	pthread_mutex_t m;
	pthread_mutex_init(&m, NULL);
	for (int rep = 0; rep < 3; rep++) {
		pthread_barrier_wait(&barrier);
		double t0 = thread_cpu_ns();
		for (long i = 0; i < iters; i++) {
			void *p = malloc(64); /* sink: shared by the threads */
			sink = p;
			free(p);
		}
		double t1 = thread_cpu_ns();
		for (long i = 0; i < iters; i++) {
			pthread_mutex_lock(&m);
			pthread_mutex_unlock(&m);
		}
		double t2 = thread_cpu_ns();
		r->malloc_ns[rep] = t1 - t0;
		r->lock_ns[rep] = t2 - t1;
	}
	pthread_mutex_destroy(&m);
}

__attribute__((noinline)) static int thread_deep(int d, struct tres *r)
{
	if (d > 1) {
		int x = thread_deep(d - 1, r);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return x + 1;
	}
	thread_measure(r);
	return 0;
}

static void *thread_main(void *arg)
{
	/* start_thread + thread_main + thread_deep*(BENCH_DEPTH-3) + measure */
	thread_deep(BENCH_DEPTH - 3, arg);
	return NULL;
}

static int run_threads(void)
{
	pthread_t tid[256];
	struct tres res[256];
	if (nthreads > 256)
		nthreads = 256;
	pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&tid[i], NULL, thread_main, &res[i]) != 0) {
			perror("shim_bench: pthread_create");
			return 1;
		}
	for (int i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	double best_m = 1e30, best_l = 1e30;
	for (int rep = 0; rep < 3; rep++) {
		double m = 0, l = 0;
		for (int i = 0; i < nthreads; i++) {
			m += res[i].malloc_ns[rep];
			l += res[i].lock_ns[rep];
		}
		m /= (double)iters * nthreads;
		l /= (double)iters * nthreads;
		if (m < best_m)
			best_m = m;
		if (l < best_l)
			best_l = l;
	}
	printf("threads_%d_malloc_free_64 %.1f\n", nthreads, best_m);
	printf("threads_%d_lock_unlock %.1f\n", nthreads, best_l);
	return 0;
}

/* Recurses to BENCH_DEPTH frames, then measures. */
__attribute__((noinline)) static int deep(int d)
{
	if (d > 1) {
		int r = deep(d - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return r + 1;
	}
	static const size_t sizes[] = {16, 64, 512, 4096};
	for (unsigned i = 0; !lock_only && i < sizeof sizes / sizeof sizes[0];
	     i++)
		printf("malloc_free_%zu %.1f\n", sizes[i],
		       run_malloc(sizes[i]));
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
	if (argc > 3 && argv[2][0] == 't') {
		nthreads = atoi(argv[3]);
		if (nthreads < 1)
			nthreads = 1;
		return run_threads();
	}
	/* main + deep*(BENCH_DEPTH-2) + run_* = BENCH_DEPTH frames above libc.
	 */
	deep(BENCH_DEPTH - 2); /* its value is the depth reached */
	return 0;
}
