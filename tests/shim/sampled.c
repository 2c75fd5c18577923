/*
 * sampled - allocator calls under a lock with allocation sampling on
 * (MALLOCK_SAMPLE_BYTES, as on a server): an unsampled call made while a
 * lock is held is still recorded, as a call (docs/configuration.md). A
 * thread named "worker" holds a mutex while it mallocs, reallocs and
 * frees CALLS blocks, with one sampled allocation in a MiB on average: the
 * trace must read cleanly (every record whole), with exactly CALLS
 * REALLOC records of the worker, each with the call's time, and at least
 * CALLS of its ALLOC records.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>

#define CALLS 2000

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

static int child(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
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
	const char *env[] = {"MALLOCK_SAMPLE_BYTES=1048576", NULL};
	check_eq(st_run(NULL, env), 0);
	char files[2][800];
	check_eq(st_files(files, 2), 1);
	check(tr_stats(files[0], &s) == 0);
	if (s.error[0])
		fprintf(stderr, "%s\n", s.error);
	check_eq(st_named_threads(&s, "worker"), 1);
	check_eq(st_named(&s, "worker", FMT_REALLOC), CALLS);
	check(st_named(&s, "worker", FMT_ALLOC) >= CALLS);
	reallocs_t x = {0};
	char err[256];
	check(tr_walk(files[0], collect, &x, err, sizeof err) == 0);
	check_eq(x.n, CALLS);
	check(x.untimed < CALLS / 10);
	printf("sampled: %lu reallocs under a lock, %lu with 0 ticks\n",
	       (unsigned long)x.n, (unsigned long)x.untimed);
	return test_done();
}
