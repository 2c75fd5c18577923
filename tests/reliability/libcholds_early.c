/*
 * libcholds_early - linked into libcholds (DT_NEEDED): its constructor runs
 * before the preloaded shim's and starts a thread then, which the shim's
 * pthread_create trampoline never sees. The thread waits until
 * libcholds_early_run() lets it go, then its first act is
 * pthread_getattr_np(pthread_self()) (realloc under the thread's own
 * lock): the shim must learn this thread's stack bounds lock-free, inside
 * that realloc (thread.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>

static sem_t go;
static pthread_t early;
static int started;
static void (*work)(void);

static void *early_thread(void *a)
{
	while (sem_wait(&go) != 0)
		;
	pthread_attr_t at;
	if (pthread_getattr_np(pthread_self(), &at) == 0)
		pthread_attr_destroy(&at);
	if (work)
		work();
	return a;
}

__attribute__((constructor(101))) static void early_ctor(void)
{
	sem_init(&go, 0, 0);
	started = pthread_create(&early, NULL, early_thread, NULL) == 0;
}

__attribute__((visibility("default"))) int
libcholds_early_run(void (*fn)(void));
int libcholds_early_run(void (*fn)(void))
{
	if (!started)
		return -1;
	work = fn;
	sem_post(&go);
	return pthread_join(early, NULL);
}
