/*
 * life_dl - a library for life's dlopen_ctor scenario: its constructor
 * allocates and locks (while dlopen holds the loader's lock), its
 * destructor frees (inside dlclose).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t dl_mu = PTHREAD_MUTEX_INITIALIZER;
static char *blocks[16];

__attribute__((constructor)) static void dl_ctor(void)
{
	for (int i = 0; i < 16; i++) {
		pthread_mutex_lock(&dl_mu);
		blocks[i] = malloc(64 + (size_t)i);
		if (blocks[i])
			memset(blocks[i], i, 64);
		pthread_mutex_unlock(&dl_mu);
	}
}

__attribute__((destructor)) static void dl_dtor(void)
{
	for (int i = 0; i < 16; i++)
		free(blocks[i]);
}

__attribute__((visibility("default"))) int life_dl_value(void);
int life_dl_value(void)
{
	int n = 0;
	for (int i = 0; i < 16; i++)
		n += blocks[i] ? blocks[i][0] : 0;
	return n;
}
