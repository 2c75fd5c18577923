/*
 * nextalloc_test - two properties, with the allocator library nextalloc.c
 * linked into the program (it is the shim's "real" allocator):
 * 1. The shim's hooks allocate nothing themselves: in a measured window of
 *    a worker thread (after a warm-up, so libunwind's one-time set-up is
 *    done), the allocator sees exactly the program's own calls.
 * 2. A futex wait made through syscall() inside the real allocator call is
 *    recorded as ALLOC_LOCK_WAIT (lock kind ALLOC_INTERNAL), before the
 *    ALLOC it happened in: the path tcmalloc's SpinLock takes.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>

#define ITERS 1000
unsigned long nextalloc_calls(void);
static void *volatile sink;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker");
	for (int i = 0; i < 20; i++) { /* warm-up */
		sink = malloc(100);
		free(sink);
		pthread_mutex_lock(&mu);
		pthread_mutex_unlock(&mu);
	}
	unsigned long c0 = nextalloc_calls();
	for (int i = 0; i < ITERS; i++) {
		sink = malloc(100 + (size_t)i);
		pthread_mutex_lock(&mu);
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
		free(sink);
	}
	unsigned long c1 = nextalloc_calls();
	return c1 - c0 == 2 * ITERS ? NULL : (void *)1;
}

static int child(void)
{
	pthread_t t;
	void *r;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, &r);
	return r ? 1 : 0;
}

static struct {
	uint64_t waits, waits_then_alloc, internal_locks;
	unsigned last;
} seen;

static int cb(const fmt_chunk_header_t *h, const fmt_record_t *r, void *arg)
{
	tr_stats_t *s = arg;
	if (r->type == FMT_LOCK_NEW) {
		const uint8_t *p = r->body, *end = r->body + r->body_len;
		uint64_t v[4] = {0};
		for (int i = 0; i < 4; i++)
			fmt_get_u(&p, end, &v[i]);
		seen.internal_locks += v[2] == FMT_KIND_ALLOC_INTERNAL;
	}
	tr_thread_t *t = tr_thread(s, h->tid);
	if (!t || strcmp(t->name, "worker") || FMT_IS_META(r->type))
		return 0;
	if (r->type == FMT_ALLOC_LOCK_WAIT) {
		seen.waits++;
		check(r->f[1] > 0);
	}
	/* A timed call that moved to another CPU writes ALLOC_MIGRATED
	 * between its wait and its ALLOC: both belong to that ALLOC. */
	if (r->type == FMT_ALLOC_MIGRATED)
		return 0;
	if (r->type == FMT_ALLOC && seen.last == FMT_ALLOC_LOCK_WAIT)
		seen.waits_then_alloc++;
	seen.last = r->type;
	return 0;
}

static tr_stats_t s;

int main(int argc, char **argv)
{
	char file[800], err[256];
	/* property 1 is checked inside the child (its exit status) */
	if (st_run_one(argc, argv, child, &s, file) != 0)
		return test_done();
	check(tr_walk(file, cb, &s, err, sizeof err) == 0);
	/* Worker mallocs: 20 + ITERS, every 10th waits. */
	check_eq(seen.waits, (20 + ITERS) / 10);
	check_eq(seen.waits_then_alloc, seen.waits);
	check_eq(seen.internal_locks, 1);
	return test_done();
}
