/*
 * lateapp.c - the target of the detach and late-dlopen tests
 * (detach_test.py) and of bench/detach_bench.py, started WITHOUT the shim.
 *
 *   lateapp          then commands on stdin, one per line, each answered
 *                    with one line on stdout:
 *   work N           N rounds of the allocating loop: ("done N SUM")
 *   dlopen PATH      dlopen(PATH) and look up late_work ("loaded" or
 *                    "error ...")
 *   late N           late_work(N) in the loaded library ("late N SUM")
 *   bench N          N malloc(64)+free pairs and N lock+unlock pairs, timed
 *                    ("bench NS_PER_PAIR")
 *   quiet            stops the background thread ("quiet")
 *   drop UID         setgroups, setgid(UID), setuid(UID) as a daemon started
 *                    by root drops to its user: the process is not dumpable
 *                    afterwards ("dropped" or "error ...")
 *   quit             exits 0
 *
 * A background thread allocates and locks all the time (so the shim's
 * buffers fill and flush). SUM is a checksum of the blocks' contents: equal
 * across runs with the same commands, whatever the shim did.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static void *volatile sink;

static void *background(void *arg)
{
	(void)arg;
	while (!stop) {
		for (int i = 0; i < 100; i++) {
			pthread_mutex_lock(&lock);
			void *p = malloc(48 + (size_t)i);
			sink = p;
			free(p);
			pthread_mutex_unlock(&lock);
		}
		usleep(1000);
	}
	return NULL;
}

static unsigned long work(unsigned long n)
{
	unsigned long sum = 0;
	for (unsigned long i = 0; i < n; i++) {
		pthread_mutex_lock(&lock);
		unsigned char *p = malloc(100 + i % 50);
		if (p) {
			memset(p, (int)(i & 0xff), 100);
			sum += p[i % 100];
		}
		free(p);
		pthread_mutex_unlock(&lock);
	}
	return sum;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(void)
{
	pthread_t bg;
	pthread_create(&bg, NULL, background, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("lateapp: ready %d\n", (int)getpid());
	unsigned long (*late)(unsigned long) = NULL;
	char line[4096];
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		unsigned long n = 0;
		if (sscanf(line, "work %lu", &n) == 1) {
			printf("done %lu %lu\n", n, work(n));
		} else if (!strncmp(line, "dlopen ", 7)) {
			void *h = dlopen(line + 7, RTLD_NOW);
			void *f = h ? dlsym(h, "late_work") : NULL;
			memcpy(&late, &f, sizeof f);
			if (late)
				puts("loaded");
			else
				printf("error %s\n", dlerror());
		} else if (sscanf(line, "late %lu", &n) == 1 && late) {
			printf("late %lu %lu\n", n, late(n));
		} else if (sscanf(line, "bench %lu", &n) == 1) {
			pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
			double t0 = now_ns();
			for (unsigned long i = 0; i < n; i++) {
				void *p = malloc(64);
				sink = p;
				free(p);
				pthread_mutex_lock(&m);
				pthread_mutex_unlock(&m);
			}
			printf("bench %.2f\n", (now_ns() - t0) / (double)n);
		} else if (sscanf(line, "drop %lu", &n) == 1) {
			if (setgroups(0, NULL) || setgid((gid_t)n) ||
			    setuid((uid_t)n))
				printf("error %s\n", strerror(errno));
			else
				puts("dropped");
		} else if (!strcmp(line, "quiet")) {
			if (!stop) {
				stop = 1;
				pthread_join(bg, NULL);
			}
			puts("quiet");
		} else if (!strcmp(line, "quit")) {
			break;
		} else {
			printf("error unknown command: %s\n", line);
		}
	}
	if (!stop) {
		stop = 1;
		pthread_join(bg, NULL);
	}
	return 0;
}
