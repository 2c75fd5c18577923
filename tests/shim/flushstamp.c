/*
 * flushstamp - a record's stamp survives a flush made while it is encoded.
 *
 * A hook reads its clock when the real call returns, then encodes; the
 * pending acquisition it encodes first can flush the chunk. The main thread
 * fills its chunk, sleeps past MALLOCK_FLUSH_MS, takes a mutex (its ACQ is
 * pending) and frees P: the free's encoding flushes the chunk (a few MB,
 * uncompressed inside the hold). Meanwhile the taker thread, let go just
 * before the free (woken) and taking blocks of P's size in the one glibc arena,
 * is given P. The trace must say that the free began before the taker's malloc
 * of P returned: the analyzer merges by those stamps (a free at its start), and
 * a free stamped after the flush was merged after its block's reuse (an unknown
 * free, and the free charged to the taker's block).
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

#define PSIZE 8200  /* above tcache's sizes: a free goes to the arena */
#define FILL 800000 /* about 11 MB of records: a flush of some ms */
#define TAKES 20000 /* 160 MB at most */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *volatile sink;
static void *_Atomic target;
static atomic_int ready, got;
static sem_t go;

/* One block of P's size, from one call site: the warm-up's first call
 * unwinds and records its stack, so the loop's calls are quick. */
__attribute__((noinline)) static void *take(void)
{
	return malloc(PSIZE);
}

/* Takes PSIZE blocks, keeping them (a block it freed would be its next one,
 * ahead of P), until it is given P. */
static void *taker(void *arg)
{
	(void)arg;
	static void *kept[TAKES];
	long n = 0;
	free(take()); /* from the top chunk, back into it */
	atomic_store(&ready, 1);
	/* Asleep, not spinning: a thread that spun for the whole nap is
	 * behind on a busy machine, and was given P after the flush had
	 * ended; one that slept runs as soon as it is woken. */
	while (sem_wait(&go) != 0)
		;
	void *p = atomic_load(&target);
	while (n < TAKES && !atomic_load(&got)) {
		void *q = take();
		kept[n++] = q;
		if (q == p)
			atomic_store(&got, 1);
	}
	while (n > 0)
		free(kept[--n]);
	return NULL;
}

static int child(void)
{
	void *p = malloc(PSIZE);
	void *guard = malloc(64); /* P is not next to the top chunk */
	atomic_store(&target, p);
	for (int i = 0; i < FILL; i++) {
		sink = malloc(32);
		free(sink);
	}
	pthread_t th;
	sem_init(&go, 0, 0);
	if (pthread_create(&th, NULL, taker, NULL))
		return 3;
	while (!atomic_load(&ready))
		;
	struct timespec nap = {0, 700 * 1000 * 1000};
	nanosleep(&nap, NULL); /* past MALLOCK_FLUSH_MS=600 */
	pthread_mutex_lock(&mu);
	sem_post(&go);
	free(p);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	free(guard);
	if (!atomic_load(&got)) {
		fprintf(stderr, "flushstamp: the taker was never given P\n");
		return 4;
	}
	return 0;
}

typedef struct scan {
	uint32_t pid;
	uint64_t p;                  /* the main thread's PSIZE block */
	uint64_t free_start, free_n; /* its FREE by the main thread */
	uint64_t take_end, take_n;   /* the earliest ALLOC of it elsewhere */
} scan_t;

static int find_p(const fmt_chunk_header_t *h, const fmt_record_t *r, void *arg)
{
	scan_t *s = arg;
	if (h->tid == s->pid && r->type == FMT_ALLOC && !s->p &&
	    r->f[FMT_ALLOC_SIZE] == PSIZE)
		s->p = r->f[FMT_ALLOC_PTR];
	return 0;
}

static int find_uses(const fmt_chunk_header_t *h, const fmt_record_t *r,
                     void *arg)
{
	scan_t *s = arg;
	if (h->tid == s->pid && r->type == FMT_FREE &&
	    r->f[FMT_FREE_PTR] == s->p) {
		s->free_start = r->tsc - r->f[FMT_FREE_TICKS];
		s->free_n++;
	}
	if (h->tid != s->pid && r->type == FMT_ALLOC &&
	    r->f[FMT_ALLOC_PTR] == s->p) {
		if (!s->take_n || r->tsc < s->take_end)
			s->take_end = r->tsc;
		s->take_n++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		exit(child());
	st_setup(argc, argv);
	static const char *const env[] = {
	    "MALLOCK_FLUSH_MS=600", "MALLOCK_BUFFER_KB=16384",
	    "MALLOCK_COMPRESS=0", "GLIBC_TUNABLES=glibc.malloc.arena_max=1",
	    NULL};
	check_eq(st_run(NULL, env), 0);
	char files[2][800];
	int n = st_files(files, 2);
	check_eq(n, 1);
	if (n != 1)
		return test_done();
	static tr_stats_t st;
	check(tr_stats(files[0], &st) == 0);
	scan_t s = {.pid = st.pid};
	char err[256];
	check(tr_walk(files[0], find_p, &s, err, sizeof err) == 0);
	check(s.p != 0);
	check(tr_walk(files[0], find_uses, &s, err, sizeof err) == 0);
	check_eq(s.free_n, 1);
	check(s.take_n >= 1);
	if (s.free_start >= s.take_end)
		fprintf(stderr,
		        "the free of P began at tsc %llu, %llu ticks after "
		        "another thread's malloc returned P\n",
		        (unsigned long long)s.free_start,
		        (unsigned long long)(s.free_start - s.take_end));
	check(s.free_start < s.take_end);
	return test_done();
}
