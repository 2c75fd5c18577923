/*
 * floodlocks - more distinct locks than the shim's lock table holds
 * (`floodlocks COUNT`): each of COUNT mutexes in one mmap'd array is locked
 * and unlocked once. The shim must warn once, count the lost events as
 * drops, and leave the host alone.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

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
	printf("locked %ld of %ld\n", ok, n);
	return 0;
}
