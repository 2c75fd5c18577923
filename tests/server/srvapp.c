/*
 * srvapp.c - the workloads of the server tests (server_test.py), run under
 * libmallock.so:
 *
 *   srvapp loop SECONDS     allocate and lock in a loop (a server at work)
 *   srvapp toggle           the toggle-consistency scenario: a lock taken
 *                           before recording starts and released during it,
 *                           a lock taken during recording and released
 *                           while paused; prints the holds it expects
 *   srvapp sample N         N allocations of 128 bytes on one thread, all
 *                           freed by another; 10000 allocations under a
 *                           mutex
 *
 * Recording is switched by raise(SIGUSR2), run with MALLOCK_SIGNAL=USR2
 * (the toggle is off by default): the shim serves the request at this
 * thread's next hook call (a malloc).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static void *volatile sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Toggles recording and lets the shim serve it (a malloc is a hook call). */
static void toggle(void)
{
	raise(SIGUSR2);
	free(malloc(8));
}

static int loop(double seconds)
{
	double end = now() + seconds;
	while (now() < end) {
		for (int i = 0; i < 1000; i++) {
			pthread_mutex_lock(&lock_a);
			sink = malloc(64);
			pthread_mutex_unlock(&lock_a);
			free(sink);
		}
		usleep(1000);
	}
	return 0;
}

#define HOLDS_A 100
#define HOLDS_B 50

static int toggle_case(void)
{
	/* Started paused. lock_a taken before recording starts ... */
	pthread_mutex_lock(&lock_a);
	toggle(); /* on */
	sink = malloc(16);
	free(sink);
	pthread_mutex_unlock(&lock_a); /* ... released during it */
	for (int i = 0; i < HOLDS_A; i++) {
		pthread_mutex_lock(&lock_a);
		sink = malloc(32);
		free(sink);
		pthread_mutex_unlock(&lock_a);
	}
	/* lock_b taken during recording, released while paused */
	pthread_mutex_lock(&lock_b);
	toggle(); /* off */
	pthread_mutex_unlock(&lock_b);
	/* lock_a (known to the shim) taken while paused, released while
	 * recording: a release without a recorded acquisition */
	pthread_mutex_lock(&lock_a);
	usleep(20000);
	toggle(); /* on */
	pthread_mutex_unlock(&lock_a);
	for (int i = 0; i < HOLDS_B; i++) {
		pthread_mutex_lock(&lock_b);
		sink = malloc(32);
		free(sink);
		pthread_mutex_unlock(&lock_b);
	}
	/* Allocations after the holds: a phantom holder of lock_b would be
	 * charged with them. */
	for (int i = 0; i < 1000; i++)
		free(malloc(48));
	printf("holds_a %d holds_b %d\n", HOLDS_A, HOLDS_B);
	return 0;
}

static void **blocks;
static long nblocks;

static void *freer(void *arg)
{
	(void)arg;
	for (long i = 0; i < nblocks; i++)
		free(blocks[i]);
	return NULL;
}

static int sample_case(long n)
{
	nblocks = n;
	blocks = calloc((size_t)n, sizeof *blocks);
	for (long i = 0; i < n; i++)
		blocks[i] = malloc(128);
	pthread_t th;
	pthread_create(&th, NULL, freer, NULL);
	pthread_join(th, NULL);
	free(blocks);
	for (int i = 0; i < 10000; i++) {
		pthread_mutex_lock(&lock_a);
		sink = malloc(64);
		pthread_mutex_unlock(&lock_a);
		free(sink);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "loop"))
		return loop(atof(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "toggle"))
		return toggle_case();
	if (argc >= 3 && !strcmp(argv[1], "sample"))
		return sample_case(atol(argv[2]));
	fprintf(stderr, "usage: srvapp loop S | toggle | sample N\n");
	return 2;
}
