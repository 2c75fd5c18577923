/*
 * attachapp.c - the target of the attach test (attach_test.py), started
 * WITHOUT the shim: `mallock attach` injects it while this runs.
 *
 *   attachapp SECONDS [THREADS]
 *
 * THREADS workers (default 4) loop for SECONDS: under one mutex each takes
 * the oldest block of a shared ring (allocated by any worker, maybe before
 * the attach), frees it and puts a new malloc'ed block in its place; a
 * condition variable wakes a waiter thread now and then. Blocks allocated
 * before the attach are freed after it on another thread: the analyzer must
 * count them as unknown frees, not cross-thread ones. The mutex is held at
 * the moment of the attach more often than not (its release is unmatched).
 *
 * Prints "attachapp: ready PID" when the workers run and "attachapp: ops N"
 * at the end; exits 0 (3 when a check of its own fails).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING 256
#define MAX_THREADS 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static unsigned char *ring[RING];
static unsigned long head, ops, wakes;
static double end_time;
static int bad;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	while (now() < end_time) {
		for (int i = 0; i < 200; i++) {
			size_t n = 16 + (rand_r(&seed) % 512);
			pthread_mutex_lock(&lock);
			unsigned char *old = ring[head % RING];
			if (old && old[0] != (unsigned char)(old[1] ^ 0x5a))
				bad = 1; /* a block's contents changed */
			free(old);
			unsigned char *p = malloc(n);
			if (p) {
				p[1] = (unsigned char)seed;
				p[0] = (unsigned char)(p[1] ^ 0x5a);
			}
			ring[head % RING] = p;
			head++;
			ops++;
			if (ops % 1000 == 0)
				pthread_cond_signal(&cond);
			pthread_mutex_unlock(&lock);
		}
		usleep(100);
	}
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	while (now() < end_time) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&cond, &lock, &ts);
		wakes++;
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	int nthreads = argc > 2 ? atoi(argv[2]) : 4;
	if (nthreads < 1 || nthreads > MAX_THREADS)
		nthreads = 4;
	end_time = now() + seconds;
	pthread_t th[MAX_THREADS + 1];
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker,
		               (void *)(uintptr_t)(i + 1));
	pthread_create(&th[nthreads], NULL, waiter, NULL);
	printf("attachapp: ready %d\n", (int)getpid());
	fflush(stdout);
	for (int i = 0; i <= nthreads; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	printf("attachapp: ops %lu wakes %lu\n", ops, wakes);
	return bad ? 3 : 0;
}
