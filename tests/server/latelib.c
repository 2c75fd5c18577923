/*
 * latelib.c - a library lateapp dlopens after the attach: its allocations
 * (size LATE_SIZE, made under its own mutex) must reach the trace.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LATE_SIZE 777

static pthread_mutex_t late_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((visibility("default"))) unsigned long late_work(unsigned long n)
{
	unsigned long sum = 0;
	for (unsigned long i = 0; i < n; i++) {
		pthread_mutex_lock(&late_lock);
		unsigned char *p = malloc(LATE_SIZE);
		if (p) {
			memset(p, (int)(i & 0x7f), LATE_SIZE);
			sum += p[i % LATE_SIZE];
		}
		free(p);
		pthread_mutex_unlock(&late_lock);
	}
	return sum;
}
