/*
 * new_bench - operator new + operator delete pairs (sizes 16, 64, 512, 4096)
 * at a call depth of 16 frames, linked with Debian's libtcmalloc (as the
 * Kudu seeds are): the C++ entry points of the shim (shim/hooks/cxx_hooks.c) in
 * front of tcmalloc's. Prints "new_delete_SIZE ns_per_pair" lines, each the
 * best of 5 runs of ITERATIONS pairs (default 1,000,000).
 *
 *   new_bench [ITERATIONS]
 */
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <new>

#define BENCH_DEPTH 16

static long iters = 1000000;
static void *volatile sink;

static double now_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Sized delete, as a C++14 compiler emits for `delete p` of a complete type. */
__attribute__((noinline)) static double run_new(size_t size)
{
	double best = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now_ns();
		for (long i = 0; i < iters; i++) {
			sink = ::operator new(size);
			::operator delete(sink, size);
		}
		double ns = (now_ns() - t0) / (double)iters;
		if (ns < best)
			best = ns;
	}
	return best;
}

__attribute__((noinline)) static int deep(int d)
{
	if (d > 1) {
		int r = deep(d - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return r + 1;
	}
	static const size_t sizes[] = {16, 64, 512, 4096};
	for (size_t s : sizes)
		std::printf("new_delete_%zu %.1f\n", s, run_new(s));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		iters = std::atol(argv[1]);
	if (iters <= 0)
		iters = 1000000;
	deep(BENCH_DEPTH - 2); /* its value is the depth reached */
	return 0;
}
