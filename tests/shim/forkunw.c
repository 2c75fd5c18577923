/*
 * forkunw - a fork while another thread is inside libunwind. Debian's
 * libunwind 1.6 keeps its DWARF register-state cache global (built without
 * per-thread caches, it takes UNW_CACHE_PER_THREAD as UNW_CACHE_GLOBAL)
 * and locks it in every unw_step. A thread stepping when another forks
 * leaves that lock held in the child for good: the child's first walk
 * through libunwind (the shim's stack of its first allocation) hung,
 * 1 run of 15 of shim_stress under load.
 *
 * The workload: a thread ("walker") unwinds its own stack with unw_step in
 * a loop, as any program that prints or profiles its stacks does; the main
 * thread forks FORKS times, each child allocates from a call path the
 * parent never took and exits. The driver fails on a child that has not
 * exited within CHILD_SECONDS (it is killed), and checks each child's
 * trace: the child recorded its allocations and ended cleanly.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#define FORKS 500
#define CHILD_ALLOCS 20
#define CHILD_SECONDS 10

static atomic_int stop;
static atomic_ulong steps;

static __attribute__((noinline)) int walk(int depth)
{
	if (depth > 0)
		return walk(depth - 1) + 1;
	unw_context_t c;
	unw_cursor_t cur;
	int n = 0;
	unw_getcontext(&c);
	unw_init_local(&cur, &c);
	while (unw_step(&cur) > 0)
		n++;
	atomic_fetch_add(&steps, (unsigned long)n);
	return n;
}

static void *walker(void *a)
{
	pthread_setname_np(pthread_self(), "walker");
	while (!atomic_load(&stop))
		walk(8);
	return a;
}

/* The child's allocations: a call path of its own. */
static __attribute__((noinline)) void child_work(int i)
{
	for (int k = 0; k < CHILD_ALLOCS; k++) {
		void *volatile p = malloc(64 + (size_t)i);
		free(p);
	}
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int child(void)
{
	pthread_t w;
	pthread_create(&w, NULL, walker, NULL);
	while (atomic_load(&steps) < 1000)
		sched_yield();
	int hung = 0;
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			child_work(i);
			_exit(0);
		}
		if (pid < 0)
			return 3;
		int st = 0;
		double until = mono() + CHILD_SECONDS;
		while (waitpid(pid, &st, WNOHANG) == 0) {
			if (mono() > until) {
				fprintf(stderr,
				        "fork %d: child %d still "
				        "running after %d s (hung): killed\n",
				        i, (int)pid, CHILD_SECONDS);
				kill(pid, SIGKILL);
				waitpid(pid, &st, 0);
				hung++;
				break;
			}
			usleep(2000);
		}
		if (hung)
			break;
	}
	atomic_store(&stop, 1);
	pthread_join(w, NULL);
	return hung ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child();
	st_setup(argc, argv);
	check_eq(st_run(NULL, NULL), 0);
	static char files[FORKS + 2][800];
	int n = st_files(files, FORKS + 2);
	/* The parent's trace and one per child (each child recorded). */
	check_eq(n, FORKS + 1);
	unsigned children = 0;
	for (int i = 0; i < n; i++) {
		static tr_stats_t s;
		memset(&s, 0, sizeof s);
		check(tr_stats(files[i], &s) == 0);
		check_eq(s.have_end, 1);
		if (s.nthreads == 1 && s.ppid != (uint32_t)getpid()) {
			children++;
			check_eq(s.by_type[FMT_ALLOC], CHILD_ALLOCS);
			check_eq(s.by_type[FMT_FREE], CHILD_ALLOCS);
		}
	}
	check_eq(children, FORKS);
	return test_done();
}
