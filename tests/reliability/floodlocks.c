/*
 * floodlocks - more distinct locks than the shim's lock table holds
 * (`floodlocks COUNT`): each of COUNT mutexes in one mmap'd array is locked
 * and unlocked once; then, with the table full, a condition is waited on
 * (a wait that times out after 1 ms), its mutex and condition new to the
 * shim. The shim must warn once, count the lost events as drops, and
 * leave the host alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

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
	printf("locked %ld of %ld; the condition wait %s\n", ok, n,
	       rc == ETIMEDOUT ? "timed out" : "did not time out");
	return 0;
}
