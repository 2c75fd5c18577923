/*
 * lockids - lock ids are numbered 1, 2, 3, ... in the order the shim
 * first sees the locks: small ids, one byte each in the trace up to 127.
 * A single thread (no race for an id) locks LOCKS mutexes; the trace's
 * LOCK_NEW ids must be exactly 1 to the number of LOCK_NEW records.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>

#define LOCKS 8

static pthread_mutex_t mu[LOCKS];

static int child(void)
{
	for (int i = 0; i < LOCKS; i++) {
		pthread_mutex_init(&mu[i], NULL);
		pthread_mutex_lock(&mu[i]);
		pthread_mutex_unlock(&mu[i]);
	}
	return 0;
}

typedef struct ids {
	unsigned n;
	uint64_t max;
	uint64_t seen; /* bit id - 1, for ids up to 64 */
} ids_t;

static int collect(const fmt_chunk_header_t *h, const fmt_record_t *r,
                   void *arg)
{
	(void)h;
	ids_t *x = arg;
	uint64_t id;
	const uint8_t *p = r->body, *end = r->body + r->body_len;
	if (r->type == FMT_LOCK_NEW && fmt_get_u(&p, end, &id) == 0) {
		x->n++;
		if (id > x->max)
			x->max = id;
		if (id >= 1 && id <= 64)
			x->seen |= 1ull << (id - 1);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child();
	st_setup(argc, argv);
	check_eq(st_run(NULL, NULL), 0);
	char files[2][800];
	check_eq(st_files(files, 2), 1);
	ids_t x = {0};
	char err[256];
	check(tr_walk(files[0], collect, &x, err, sizeof err) == 0);
	check(x.n >= LOCKS && x.n <= 64);
	check_eq(x.max, x.n);
	check_eq(x.seen, x.n >= 64 ? ~0ull : (1ull << x.n) - 1);
	printf("lockids: %u locks, ids 1 to %lu\n", x.n, (unsigned long)x.max);
	return test_done();
}
