/*
 * perobj_bench - a lock inside every object, as C servers make them (one
 * per message, connection or request: rsyslogd's msgConstruct puts a
 * mutex at +0x18 of each message): producers malloc a message, initialise
 * its mutex, fill it under that mutex and queue it (one queue mutex, a
 * condition variable for work and one for room: at most QUEUE_MAX
 * messages wait, so the live ones do not grow with the run); consumers take it
 * off the queue, read it under its mutex, destroy the mutex and free the
 * message. Each message's mutex is one lock instance taken on two threads; the
 * queue mutex is contended.
 *
 *   perobj_bench [MESSAGES [PAIRS]]   (default 1000000 messages, 2 pairs)
 *
 * Prints "Messages/sec: N". A load for the analyzer's memory benchmark
 * (bench/perobj_report.sh), not a test.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct msg {
	struct msg *next;
	uint64_t seq;
	uint32_t refs;
	pthread_mutex_t mu; /* at +0x18, as in rsyslogd's msg_t */
	char body[64];
};

static pthread_mutex_t qmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcv = PTHREAD_COND_INITIALIZER; /* work or end */
static pthread_cond_t rcv = PTHREAD_COND_INITIALIZER; /* room */
#define QUEUE_MAX 1024
static struct msg *qhead, *qtail;
static size_t qlen;
static long per_producer;
static int producers_left;

static void *producer(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg << 40;
	for (long i = 0; i < per_producer; i++) {
		struct msg *m = malloc(sizeof *m);
		if (!m)
			abort();
		m->next = NULL;
		pthread_mutex_init(&m->mu, NULL);
		pthread_mutex_lock(&m->mu);
		m->seq = base | (uint64_t)i;
		m->refs = 1;
		snprintf(m->body, sizeof m->body, "message %ld", i);
		pthread_mutex_unlock(&m->mu);
		pthread_mutex_lock(&qmu);
		while (qlen >= QUEUE_MAX)
			pthread_cond_wait(&rcv, &qmu);
		if (qtail)
			qtail->next = m;
		else
			qhead = m;
		qtail = m;
		qlen++;
		pthread_cond_signal(&qcv);
		pthread_mutex_unlock(&qmu);
	}
	pthread_mutex_lock(&qmu);
	producers_left--;
	pthread_cond_broadcast(&qcv);
	pthread_mutex_unlock(&qmu);
	return NULL;
}

static void *consumer(void *arg)
{
	uint64_t *sum = arg;
	for (;;) {
		pthread_mutex_lock(&qmu);
		while (!qhead && producers_left)
			pthread_cond_wait(&qcv, &qmu);
		struct msg *m = qhead;
		if (m) {
			qhead = m->next;
			if (!qhead)
				qtail = NULL;
			if (qlen-- == QUEUE_MAX)
				pthread_cond_broadcast(&rcv);
		}
		pthread_mutex_unlock(&qmu);
		if (!m)
			return NULL;
		pthread_mutex_lock(&m->mu);
		*sum += m->seq + strlen(m->body);
		m->refs--;
		pthread_mutex_unlock(&m->mu);
		pthread_mutex_destroy(&m->mu);
		free(m);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int pairs = argc > 2 ? atoi(argv[2]) : 2;
	if (n < 1 || pairs < 1 || pairs > 64) {
		fprintf(stderr, "usage: perobj_bench [MESSAGES [PAIRS]]\n");
		return 2;
	}
	per_producer = n / pairs;
	producers_left = pairs;
	pthread_t p[64], c[64];
	uint64_t sums[64] = {0};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < pairs; i++) {
		pthread_create(&c[i], NULL, consumer, &sums[i]);
		pthread_create(&p[i], NULL, producer, (void *)(uintptr_t)i);
	}
	for (int i = 0; i < pairs; i++) {
		pthread_join(p[i], NULL);
		pthread_join(c[i], NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) +
	           (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	uint64_t sum = 0;
	for (int i = 0; i < pairs; i++)
		sum += sums[i];
	printf("Messages/sec: %.0f (checksum %llu)\n",
	       (double)per_producer * pairs / s, (unsigned long long)sum);
	return 0;
}
