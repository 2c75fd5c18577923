/*
 * secure_host - linked with libmallock.so itself (not preloaded), so that
 * the loader keeps the shim in a set-user-ID or set-group-ID run: the
 * security test copies it, makes the copy set-ID and runs it as nobody.
 * Allocates and locks a little, prints one line.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *volatile sink;

int main(void)
{
	for (int i = 0; i < 100; i++) {
		pthread_mutex_lock(&mu);
		sink = malloc(32);
		free(sink);
		pthread_mutex_unlock(&mu);
	}
	printf("secure_host ok\n");
	return 3;
}
