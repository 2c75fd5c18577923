/*
 * cancel - a thread that leaves a hook without returning from it
 *.
 *
 * Cancellation, in each condition wait (wait, timedwait, clockwait): the
 * worker allocates two blocks, waits, and is cancelled; its cleanup handler
 * frees the first block and unlocks the mutex, a TSD destructor frees the
 * second. The trace must hold both FREEs, the REL and the COND_WAKE of the
 * cancelled wait, exactly, and no DROP.
 *
 * A host library's own cleanup attribute (cancel_lib.c) runs as it does
 * bare: the shim must not bring an unwinder that skips it.
 *
 * siglongjmp from a signal handler, out of a condition wait and out of a
 * contended mutex lock. Out of the lock the thread then makes LJ_DEEP
 * allocations and frees from a deep frame (let through, counted as drops)
 * and LJ_PAIRS from a shallow one (the gate is reopened at the first), out
 * of the condition wait it exits at once (reopened at its exit); in both a
 * TSD destructor frees a block. Every other one must be recorded, and the
 * drops must be exactly the abandoned waits' ends and the deep pairs.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <time.h>

#define LJ_PAIRS 10
#define LJ_DEEP 5 /* pairs made from a deep frame right after the jump */

extern int cancel_lib_cleanups;
void cancel_lib_wait(pthread_cond_t *c, pthread_mutex_t *m);

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_key_t key;
static _Atomic int waiting;
static _Atomic pid_t worker_tid;

static void cleanup(void *p)
{
	free(p);
	pthread_mutex_unlock(&m);
}

static void tsd_dtor(void *p)
{
	free(p);
}

enum variant { V_WAIT, V_TIMED, V_CLOCK, NV };
static const char *const vname[NV] = {"c_wait", "c_timedwait", "c_clockwait"};

static void *cancelled(void *a)
{
	enum variant v = (enum variant)(intptr_t)a;
	pthread_setname_np(pthread_self(), vname[v]);
	void *volatile blk = malloc(1000);      /* freed by cleanup() */
	pthread_setspecific(key, malloc(2000)); /* freed by tsd_dtor() */
	pthread_mutex_lock(&m);
	pthread_cleanup_push(cleanup, blk);
	waiting = 1;
	for (;;) {
		struct timespec ts;
		clockid_t clk = v == V_CLOCK ? CLOCK_MONOTONIC : CLOCK_REALTIME;
		clock_gettime(clk, &ts);
		ts.tv_sec += 60;
		if (v == V_WAIT)
			pthread_cond_wait(&c, &m);
		else if (v == V_TIMED)
			pthread_cond_timedwait(&c, &m, &ts);
		else
			pthread_cond_clockwait(&c, &m, clk, &ts);
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static void unlock_m(void *a)
{
	(void)a;
	pthread_mutex_unlock(&m);
}

static void *in_lib(void *a)
{
	pthread_setname_np(pthread_self(), "c_lib");
	pthread_mutex_lock(&m);
	pthread_cleanup_push(unlock_m, a);
	waiting = 1;
	cancel_lib_wait(&c, &m);
	pthread_cleanup_pop(0);
	return NULL;
}

/* ---- siglongjmp out of a wait ---- */

static __thread sigjmp_buf jb;
static __thread volatile sig_atomic_t armed;
static pthread_mutex_t lm = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cc = PTHREAD_COND_INITIALIZER;

static void on_usr1(int s)
{
	(void)s;
	if (armed)
		siglongjmp(jb, 1);
}

/* K allocations and frees from a frame 8 KiB below the caller's: right
 * after the jump the shim cannot tell them from a signal handler's calls
 * inside the abandoned wait, so it lets them pass and counts them as drops
 * once the gate is found stuck (at the next shallower call). */
__attribute__((noinline)) static void deep_pairs(int k)
{
	volatile char pad[8192];
	pad[0] = 1;
	for (int i = 0; i < k; i++) {
		void *volatile p = malloc(200 + (size_t)pad[0]);
		free(p);
	}
}

static void *jumper(void *a)
{
	int in_lock = (int)(intptr_t)a;
	pthread_setname_np(pthread_self(), in_lock ? "lj_lock" : "lj_cond");
	pthread_setspecific(key, malloc(3000)); /* freed by tsd_dtor() */
	worker_tid = gettid();
	if (!sigsetjmp(jb, 1)) {
		armed = 1;
		if (in_lock) {
			pthread_mutex_lock(&lm); /* held by main: waits */
		} else {
			pthread_mutex_lock(&cm);
			for (;;)
				pthread_cond_wait(&cc, &cm);
		}
	}
	armed = 0;
	if (in_lock)
		deep_pairs(LJ_DEEP);
	for (int i = 0; in_lock && i < LJ_PAIRS; i++) {
		void *volatile p = malloc(100 + (size_t)i);
		free(p);
	}
	return NULL;
}

/* Waits until thread tid sleeps (state S in /proc). */
static void wait_asleep(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	for (int i = 0; i < 10000; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		if (f)
			fclose(f);
		buf[n] = 0;
		const char *p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'S')
			return;
		usleep(1000);
	}
}

static void jump_out(int in_lock)
{
	pthread_t th;
	worker_tid = 0;
	if (in_lock)
		pthread_mutex_lock(&lm);
	pthread_create(&th, NULL, jumper, (void *)(intptr_t)in_lock);
	while (!worker_tid)
		usleep(1000);
	wait_asleep(worker_tid);
	usleep(20000);
	pthread_kill(th, SIGUSR1);
	pthread_join(th, NULL);
	if (in_lock)
		pthread_mutex_unlock(&lm);
}

static int child(void)
{
	pthread_key_create(&key, tsd_dtor);
	for (int v = 0; v <= NV; v++) {
		pthread_t th;
		waiting = 0;
		pthread_create(&th, NULL, v < NV ? cancelled : in_lib,
		               (void *)(intptr_t)v);
		while (!waiting)
			usleep(1000);
		pthread_mutex_lock(&m); /* the worker is in its wait */
		pthread_mutex_unlock(&m);
		pthread_cancel(th);
		pthread_join(th, NULL);
	}
	if (cancel_lib_cleanups != 1) {
		printf("the library's cleanup ran %d times, not once\n",
		       cancel_lib_cleanups);
		return 3;
	}
	struct sigaction sa = {.sa_handler = on_usr1};
	sigaction(SIGUSR1, &sa, NULL);
	jump_out(0);
	jump_out(1);
	puts("ok");
	return 0;
}

static tr_stats_t s;

int main(int argc, char **argv)
{
	char file[800];
	if (st_run_one(argc, argv, child, &s, file) != 0)
		return test_done();
	for (int v = 0; v < NV; v++) {
		fprintf(stderr, "%s\n", vname[v]);
		check_eq(st_named_threads(&s, vname[v]), 1);
		check_eq(st_named(&s, vname[v], FMT_ALLOC), 2);
		check_eq(st_named(&s, vname[v], FMT_FREE), 2);
		check_eq(st_named(&s, vname[v], FMT_COND_WAIT), 1);
		check_eq(st_named(&s, vname[v], FMT_COND_WAKE), 1);
		check_eq(st_named(&s, vname[v], FMT_REL) +
		             st_named(&s, vname[v], FMT_REL_CONTENDED),
		         1);
		check_eq(st_named(&s, vname[v], FMT_DROP), 0);
		check_eq(st_named(&s, vname[v], FMT_THREAD_EXIT), 1);
	}
	check_eq(st_named(&s, "c_lib", FMT_COND_WAKE), 1);
	check_eq(st_named(&s, "c_lib", FMT_REL), 1);
	static const char *const lj[2] = {"lj_cond", "lj_lock"};
	for (int k = 0; k < 2; k++) {
		fprintf(stderr, "%s\n", lj[k]);
		check_eq(st_named_threads(&s, lj[k]), 1);
		check_eq(st_named(&s, lj[k], FMT_ALLOC), 1 + k * LJ_PAIRS);
		check_eq(st_named(&s, lj[k], FMT_FREE), 1 + k * LJ_PAIRS);
		check_eq(st_named(&s, lj[k], FMT_DROP), 1);
		check_eq(st_named(&s, lj[k], FMT_THREAD_EXIT), 1);
	}
	/* recorded + dropped = what the threads did */
	check_eq(s.drop_sum, 1 + 1 + 2 * LJ_DEEP);
	check_eq(s.have_end, 1);
	check_eq(s.end_events, st_core_events(&s));
	return test_done();
}
