/*
 * floodlocks - more distinct locks than the shim's lock table holds
 * (`floodlocks COUNT`): each of COUNT mutexes in one mmap'd array is locked
 * and unlocked once; then, with the table full, a condition is waited on
 * (a wait that times out after 1 ms), its mutex and condition new to the
 * shim. Then a thread waits for a new mutex that main holds (a contended
 * acquisition with the table full), releases it, and is still blocked (in
 * read) when main returns: its two lost events are counted in a DROP that
 * main's exit writes for it. The shim must warn once, count the lost
 * events as drops, and leave the host alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t xm = PTHREAD_MUTEX_INITIALIZER;
static int through[2], never[2];

static void *contender(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&xm); /* main holds it */
	pthread_mutex_unlock(&xm);
	char c = 1;
	if (write(through[1], &c, 1) != 1)
		return NULL;
	(void)read(never[0], &c, 1); /* blocked until the process ends */
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1200000;
	size_t size = (size_t)n * sizeof(pthread_mutex_t);
	pthread_mutex_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
	                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 2;
	long ok = 0;
	for (long i = 0; i < n; i++) {
		/* zero-filled memory is PTHREAD_MUTEX_INITIALIZER */
		if (pthread_mutex_lock(&m[i]) == 0 &&
		    pthread_mutex_unlock(&m[i]) == 0)
			ok++;
	}
	pthread_mutex_t wm = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t wc = PTHREAD_COND_INITIALIZER;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&wm);
	int rc;
	while ((rc = pthread_cond_timedwait(&wc, &wm, &ts)) == 0)
		; /* a spurious wake: wait on to the deadline */
	pthread_mutex_unlock(&wm);

	pthread_t th;
	char c;
	if (pipe(through) || pipe(never))
		return 3;
	pthread_mutex_lock(&xm);
	if (pthread_create(&th, NULL, contender, NULL))
		return 4;
	/* glibc's lock word is 2 once a waiter sleeps on it: the thread is
	 * past its trylock, in the contended path. */
	while (__atomic_load_n(&xm.__data.__lock, __ATOMIC_ACQUIRE) != 2)
		usleep(1000);
	pthread_mutex_unlock(&xm);
	if (read(through[0], &c, 1) != 1)
		return 5;
	printf("locked %ld of %ld; the condition wait %s\n", ok, n,
	       rc == ETIMEDOUT ? "timed out" : "did not time out");
	return 0;
}
