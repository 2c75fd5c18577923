/*
 * fork - a forked child writes its own, self-contained trace (its own
 * PROCESS, modules, stacks, locks and END), with and without %p in
 * MALLOCK_OUTPUT (without: the child's file is "<path>.<pid>"); the
 * parent's trace does not contain the child's events. With
 * MALLOCK_BUFFER_KB set, the child also starts a thread, which must take
 * the buffer of a parent's thread (free in the child) instead of mapping
 * one more.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>
#include <stdatomic.h>

#define PARENT_ALLOCS 300
#define CHILD_ALLOCS 200
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int helper_ready;

static void *helper(void *a)
{
	/* A thread that is running (and has a buffer) at fork time. */
	pthread_setname_np(pthread_self(), "helper");
	for (int i = 0; i < 50; i++) {
		void *volatile p = malloc(8);
		free(p);
	}
	atomic_store(&helper_ready, 1);
	usleep(100000);
	return a;
}

static void *locker(void *a)
{
	pthread_mutex_lock(&mu);
	pthread_mutex_unlock(&mu);
	return a;
}

static long vm_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmSize: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* 1 when a new thread (64 KiB of stack, one lock, no allocation) grows
 * the process by buffer_kb or more. */
static int thread_maps_buffer(long buffer_kb)
{
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 65536);
	long v0 = vm_kb();
	if (pthread_create(&t, &a, locker, NULL) || pthread_join(t, NULL))
		return 1;
	long v1 = vm_kb();
	pthread_attr_destroy(&a);
	if (v0 < 0 || v1 - v0 >= buffer_kb) {
		fprintf(stderr, "fork child: a thread grew VmSize by %ld kB\n",
		        v1 - v0);
		return 1;
	}
	return 0;
}

static int child(void)
{
	pthread_t h;
	pthread_create(&h, NULL, helper, NULL);
	pthread_setname_np(pthread_self(), "forker");
	for (int i = 0; i < PARENT_ALLOCS; i++) {
		pthread_mutex_lock(&mu);
		void *volatile p = malloc(24);
		free(p);
		pthread_mutex_unlock(&mu);
	}
	while (!atomic_load(&helper_ready))
		usleep(1000);
	pid_t pid = fork();
	if (pid == 0) {
		pthread_setname_np(pthread_self(), "forkchild");
		for (int i = 0; i < CHILD_ALLOCS; i++) {
			pthread_mutex_lock(&mu);
			void *volatile p = malloc(40);
			free(p);
			pthread_mutex_unlock(&mu);
		}
		const char *kb = getenv("MALLOCK_BUFFER_KB");
		exit(kb && thread_maps_buffer(atol(kb)) ? 3 : 0);
	}
	int status;
	waitpid(pid, &status, 0);
	pthread_join(h, NULL);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

static tr_stats_t s;

static void check_pair(void)
{
	char files[4][800];
	int n = st_files(files, 4);
	check_eq(n, 2);
	int seen_parent = 0, seen_child = 0;
	for (int i = 0; i < n; i++) {
		check(tr_stats(files[i], &s) == 0);
		check_eq(s.by_type[FMT_PROCESS], 1);
		check_eq(s.have_end, 1);
		check_eq(s.end_dropped, 0);
		check_eq(s.end_events, st_core_events(&s));
		check(s.by_type[FMT_MODULE] >= 3);
		if (st_named_threads(&s, "forkchild")) {
			seen_child++;
			check_eq(st_named(&s, "forkchild", FMT_ALLOC),
			         CHILD_ALLOCS);
			check_eq(st_named(&s, "forkchild", FMT_FREE),
			         CHILD_ALLOCS);
			check_eq(st_acq(&s, "forkchild", 0), CHILD_ALLOCS);
			/* Self-contained: the mutex and stacks are defined
			 * in the child's own file. */
			check(s.by_type[FMT_LOCK_NEW] >= 1);
			check(s.by_type[FMT_STACK] >= 2);
			check_eq(s.by_type[FMT_ALLOC], CHILD_ALLOCS);
			check(st_named_threads(&s, "helper") == 0);
		} else {
			seen_parent++;
			check_eq(st_named(&s, "helper", FMT_ALLOC), 50);
			check(st_named(&s, "forker", FMT_ALLOC) >=
			      PARENT_ALLOCS);
			check(st_acq(&s, "forker", 0) >= PARENT_ALLOCS);
		}
	}
	check_eq(seen_parent, 1);
	check_eq(seen_child, 1);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child();
	st_setup(argc, argv);
	check_eq(st_run(NULL, NULL), 0);
	check_pair();

	/* Without %p: the parent writes PATH, the child PATH.<pid>. */
	st_setup(argc, argv);
	char out[700], env[720];
	snprintf(out, sizeof out, "%s/fixed.trace", st_dir);
	snprintf(env, sizeof env, "MALLOCK_OUTPUT=%s", out);
	const char *e[] = {env, NULL};
	check_eq(st_run(NULL, e), 0);
	check_pair();
	check(access(out, F_OK) == 0);

	/* 16 MiB buffers: the child's new thread reuses the helper's. */
	st_setup(argc, argv);
	const char *big[] = {"MALLOCK_BUFFER_KB=16384", NULL};
	check_eq(st_run(NULL, big), 0);
	return test_done();
}
