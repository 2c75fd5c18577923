/*
 * debugfile - a program for test_debugfile.py: two
 * threads allocate under one mutex in functions with distinctive names
 * (dbgf_fill_under_lock, dbgf_worker), none exported, so a stripped copy
 * names them only through its separate debug file.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *volatile sink[64];

__attribute__((noinline)) void dbgf_fill_under_lock(int i)
{
	pthread_mutex_lock(&mu);
	void *p = malloc(64 + (size_t)(i % 7) * 16);
	memset(p, i, 64);
	free(sink[i % 64]);
	sink[i % 64] = p;
	pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) void *dbgf_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++)
		dbgf_fill_under_lock(i);
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, dbgf_worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 64; i++)
		free(sink[i]);
	return 0;
}
