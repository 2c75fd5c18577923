/*
 * static_work - workload linked statically with tcmalloc_minimal (its malloc
 * is the executable's own, ahead of LD_PRELOAD) and exported with -rdynamic:
 * the shim must warn and record allocations through MallocHook.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *work(void *arg)
{
	pthread_setname_np(pthread_self(), "worker");
	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&mu);
		void *volatile p = malloc(100);
		pthread_mutex_unlock(&mu);
		free(p);
	}
	return arg;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, work, NULL);
	pthread_join(t, NULL);
	return 0;
}
