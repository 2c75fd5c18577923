/*
 * plainlock.c - plain lock contention and nothing else: THREADS threads
 * take one global mutex, plainlock_mutex, in plainlock_critical() and hold
 * it for about 20 us of CPU work, with a little work outside it; no
 * allocation anywhere in the loop. More threads than a small machine's
 * cores, so the lock is waited on however the scheduler runs them.
 *
 * Usage: plainlock [ROUNDS] (default 2000 per thread). For
 * test_plainlock.py: the top finding must be lock_contention on
 * plainlock_mutex, naming plainlock_critical as the holders' code.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define WORK 20000 /* iterations: about 20 us of CPU work */

pthread_mutex_t plainlock_mutex = PTHREAD_MUTEX_INITIALIZER;
static long rounds = 2000;
static volatile unsigned long sink;

static void work(unsigned n)
{
	unsigned long x = sink;
	for (unsigned i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) void plainlock_critical(void)
{
	pthread_mutex_lock(&plainlock_mutex);
	work(WORK);
	pthread_mutex_unlock(&plainlock_mutex);
}

static void *worker(void *arg)
{
	(void)arg;
	for (long r = 0; r < rounds; r++) {
		plainlock_critical();
		work(WORK / 8);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atol(argv[1]);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("%lu\n", sink & 1);
	return 0;
}
