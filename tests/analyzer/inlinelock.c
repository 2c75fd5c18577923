/*
 * inlinelock.c - threads that contend for one mutex taken inside an
 * always-inlined helper, so that the waiter's stack has an inlined frame:
 * test_pprof.py checks that the pprof output keeps it as two lines of one
 * location, the inlined callee first.
 */
#include <pthread.h>
#include <stdlib.h>

#define THREADS 3
#define ROUNDS 100000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;

static inline __attribute__((always_inline)) void locked_add(unsigned n)
{
	pthread_mutex_lock(&mu);
	for (unsigned i = 0; i < n; i++)
		counter++;
	pthread_mutex_unlock(&mu);
}

static void *worker(void *arg)
{
	for (int i = 0; i < ROUNDS; i++)
		locked_add(200);
	return arg;
}

int main(void)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return counter == (unsigned long)THREADS * ROUNDS * 200 ? 0 : 1;
}
