/*
 * sampled - allocator calls under a lock with allocation sampling on
 * (MALLOCK_SAMPLE_BYTES, as on a server): an unsampled call made while a
 * lock is held is still recorded, as a call (docs/configuration.md). A
 * thread named "worker" holds a mutex while it mallocs, reallocs and
 * frees CALLS blocks, with one sampled allocation in a MiB on average: the
 * trace must read cleanly (every record whole), with exactly CALLS
 * REALLOC records of the worker, each with the call's time, and at least
 * CALLS of its ALLOC records. Then FRESH threads named "fresh" each make
 * one malloc(64) and free it, under no lock: each thread's countdown
 * starts at its own random draw (mean 1 MiB), so fewer than half of them
 * are sampled (each is with a chance of 64 in 2^20).
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>

#define CALLS 2000
#define FRESH 8

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *volatile sink;

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker");
	pthread_mutex_lock(&mu);
	for (int i = 0; i < CALLS; i++) {
		void *p = malloc(64);
		void *q = realloc(p, 128);
		sink = q;
		free(q);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void *fresh(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "fresh");
	sink = malloc(64);
	free(sink);
	return NULL;
}

static int child(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	for (int i = 0; i < FRESH; i++) {
		pthread_create(&t, NULL, fresh, NULL);
		pthread_join(t, NULL);
	}
	return 0;
}

typedef struct reallocs {
	uint64_t n, untimed;
} reallocs_t;

static int collect(const fmt_chunk_header_t *h, const fmt_record_t *r,
                   void *arg)
{
	(void)h;
	reallocs_t *x = arg;
	if (r->type == FMT_REALLOC) {
		x->n++;
		x->untimed += r->f[FMT_REALLOC_TICKS] == 0;
	}
	return 0;
}

static tr_stats_t s;

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child();
	st_setup(argc, argv);
	/* Every hold timed, so that each realloc under the lock is. */
	const char *env[] = {"MALLOCK_SAMPLE_BYTES=1048576",
	                     "MALLOCK_HOLD_EVERY=1", NULL};
	check_eq(st_run(NULL, env), 0);
	char files[2][800];
	check_eq(st_files(files, 2), 1);
	check(tr_stats(files[0], &s) == 0);
	if (s.error[0])
		fprintf(stderr, "%s\n", s.error);
	check_eq(st_named_threads(&s, "worker"), 1);
	check_eq(st_named(&s, "worker", FMT_REALLOC), CALLS);
	check(st_named(&s, "worker", FMT_ALLOC) >= CALLS);
	check_eq(st_named_threads(&s, "fresh"), FRESH);
	uint64_t fresh_allocs = st_named(&s, "fresh", FMT_ALLOC);
	check(fresh_allocs < FRESH / 2);
	reallocs_t x = {0};
	char err[256];
	check(tr_walk(files[0], collect, &x, err, sizeof err) == 0);
	check_eq(x.n, CALLS);
	check(x.untimed < CALLS / 10);
	printf("sampled: %lu reallocs under a lock, %lu with 0 ticks; %lu "
	       "of %d new threads' first malloc sampled\n",
	       (unsigned long)x.n, (unsigned long)x.untimed,
	       (unsigned long)fresh_allocs, FRESH);
	return test_done();
}
