/*
 * pool_bench - an allocation-heavy thread pool, like a managed runtime's
 * native side (an http server doing gzip and key
 * derivation wrote 35 MB/s of trace): a submitter thread builds each task
 * from several small blocks (a header, a key, a small body), hands it to a
 * pool of worker threads through one mutex-guarded queue; a worker makes a
 * few short-lived scratch blocks while it "runs" the task (a little hashing),
 * allocates a small result, and frees the task's blocks; the submitter frees
 * the result when it collects it. So most blocks live microseconds and half
 * are freed on a thread other than the one that allocated them.
 *
 *   pool_bench [SECONDS [WORKERS]]   (default 1 s, 2 workers)
 *
 * Prints "Tasks/sec: N" and "Blocks/sec: N" (allocations per second).
 * No checks of its own: it is a load, not a test.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TASK_BLOCKS 4 /* allocated by the submitter, freed by a worker */
#define SCRATCH 4     /* allocated and freed by the worker */
#define QUEUE_MAX 256 /* submitter waits above this many pending tasks */

struct task {
	struct task *next;
	void *blk[TASK_BLOCKS];
	size_t len[TASK_BLOCKS];
	uint64_t seed;
	uint64_t *result; /* set by the worker, freed by the submitter */
};

static pthread_mutex_t qmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcv = PTHREAD_COND_INITIALIZER; /* work or stop */
static pthread_cond_t dcv = PTHREAD_COND_INITIALIZER; /* room or done */
static struct task *qhead, *qtail, *done;
static int pending, stopping;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* FNV-1a over a block: the task's "work". */
static uint64_t hash(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ull;
	return h;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&qmu);
		while (!qhead && !stopping)
			pthread_cond_wait(&qcv, &qmu);
		struct task *t = qhead;
		if (!t) {
			pthread_mutex_unlock(&qmu);
			return NULL;
		}
		qhead = t->next;
		if (!qhead)
			qtail = NULL;
		pthread_mutex_unlock(&qmu);

		uint64_t h = 1469598103934665603ull, s = t->seed | 1;
		for (int i = 0; i < SCRATCH; i++) {
			size_t n = 16 + rnd(&s) % 240;
			char *tmp = malloc(n);
			if (!tmp)
				abort();
			memset(tmp, (int)i, n);
			h = hash(tmp, n, h);
			free(tmp);
		}
		for (int i = 0; i < TASK_BLOCKS; i++) {
			h = hash(t->blk[i], t->len[i], h);
			free(t->blk[i]);
		}
		t->result = malloc(sizeof *t->result * 4);
		if (!t->result)
			abort();
		t->result[0] = h;

		pthread_mutex_lock(&qmu);
		t->next = done;
		done = t;
		pthread_cond_signal(&dcv);
		pthread_mutex_unlock(&qmu);
	}
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	int nw = argc > 2 ? atoi(argv[2]) : 2;
	if (secs <= 0 || nw < 1 || nw > 64) {
		fprintf(stderr, "pool_bench: usage: pool_bench [SECONDS>0 "
		                "[WORKERS 1..64]]\n");
		return 2;
	}
	pthread_t th[64];
	for (int i = 0; i < nw; i++)
		if (pthread_create(&th[i], NULL, worker, NULL)) {
			fprintf(stderr, "pool_bench: pthread_create failed\n");
			return 1;
		}
	uint64_t s = 88172645463325252ull, tasks = 0, sink = 0;
	double t0 = now_s(), end = t0 + secs;
	while (now_s() < end) {
		for (int k = 0; k < 64; k++) {
			struct task *t = malloc(sizeof *t);
			if (!t)
				abort();
			t->next = NULL;
			t->seed = rnd(&s);
			for (int i = 0; i < TASK_BLOCKS; i++) {
				t->len[i] =
				    8 + rnd(&s) %
				            (i == TASK_BLOCKS - 1 ? 1000 : 120);
				t->blk[i] = malloc(t->len[i]);
				if (!t->blk[i])
					abort();
				memset(t->blk[i], (int)k, t->len[i]);
			}
			pthread_mutex_lock(&qmu);
			while (pending >= QUEUE_MAX && !done)
				pthread_cond_wait(&dcv, &qmu);
			if (qtail)
				qtail->next = t;
			else
				qhead = t;
			qtail = t;
			pending++;
			struct task *d = done;
			int got = 0;
			done = NULL;
			for (struct task *c = d; c; c = c->next)
				got++;
			pending -= got;
			pthread_cond_signal(&qcv);
			pthread_mutex_unlock(&qmu);
			tasks += (uint64_t)got;
			while (d) {
				struct task *n = d->next;
				sink += d->result[0];
				free(d->result);
				free(d);
				d = n;
			}
		}
	}
	double el = now_s() - t0;
	pthread_mutex_lock(&qmu);
	stopping = 1;
	pthread_cond_broadcast(&qcv);
	pthread_mutex_unlock(&qmu);
	for (int i = 0; i < nw; i++)
		pthread_join(th[i], NULL);
	/* Collect the tail so nothing leaks into the report. */
	while (done) {
		struct task *n = done->next;
		free(done->result);
		free(done);
		done = n;
	}
	printf("Tasks/sec: %.0f\n", (double)tasks / el);
	printf("Blocks/sec: %.0f\n",
	       (double)tasks * (TASK_BLOCKS + SCRATCH + 2) / el);
	printf("Checksum: %llu\n", (unsigned long long)(sink & 0xffff));
	return 0;
}
