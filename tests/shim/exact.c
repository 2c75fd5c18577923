/*
 * exact - exactness: worker threads make a known number of allocations,
 * frees, reallocs, lock operations and condition waits (each timing out
 * at a deadline already past); the trace holds exactly those
 * numbers for the threads named "worker", no DROP, and a clean END whose
 * event count matches the file. Their uncontended acquisitions are all
 * timed with MALLOCK_HOLD_EVERY=1, and about one in N with N (16 by
 * default); then most untimed holds, which nothing comes between, are
 * written as hold forms (trace format 1.8), exclusive and shared, and
 * still count as an acquisition and a release each.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#define WORKERS 4
#define ITERS 5000
#define LOCKS 5000
#define RW 1000
#define CLK 1000 /* clock rwlocks (glibc 2.30+) */
#define SPINS 1000
#define TRIES 100
#define INITS 10
#define CONDS 100

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static void *volatile sink;

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker");
	for (int i = 0; i < ITERS; i++) {
		void *p = malloc(16 + (size_t)(i % 100));
		void *q = calloc(2, 8);
		void *r = realloc(p, 200);
		sink = r;
		free(q);
		free(r);
		if (i % 10 == 0) {
			void *a = NULL;
			if (posix_memalign(&a, 64, 100) == 0)
				free(a);
			void *volatile b = aligned_alloc(64, 128);
			free(b);
		}
	}
	for (int i = 0; i < LOCKS; i++) {
		pthread_mutex_lock(&shared);
		sink = &shared;
		pthread_mutex_unlock(&shared);
	}
	for (int i = 0; i < RW; i++) {
		pthread_rwlock_rdlock(&rw);
		pthread_rwlock_unlock(&rw);
		pthread_rwlock_wrlock(&rw);
		pthread_rwlock_unlock(&rw);
	}
	struct timespec far;
	clock_gettime(CLOCK_MONOTONIC, &far);
	far.tv_sec += 60;
	for (int i = 0; i < CLK; i++) {
		if (pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &far))
			abort();
		pthread_rwlock_unlock(&rw);
		if (pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &far))
			abort();
		pthread_rwlock_unlock(&rw);
	}
	for (int i = 0; i < SPINS; i++) {
		pthread_spin_lock(&spin);
		pthread_spin_unlock(&spin);
	}
	pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&own);
	for (int i = 0; i < TRIES; i++)
		if (pthread_mutex_trylock(&own) == 0)
			abort(); /* a normal mutex is not recursive */
	pthread_mutex_unlock(&own);
	struct timespec past = {0, 0};
	for (int i = 0; i < CONDS; i++) {
		pthread_mutex_lock(&own);
		if (pthread_cond_timedwait(&cond, &own, &past) != ETIMEDOUT)
			abort();
		pthread_mutex_unlock(&own);
	}
	for (int i = 0; i < INITS; i++) {
		pthread_mutex_t m;
		pthread_mutex_init(&m, NULL);
		pthread_mutex_destroy(&m);
	}
	return NULL;
}

static int child(void)
{
	pthread_t t[WORKERS];
	pthread_spin_init(&spin, 0);
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static tr_stats_t s;

int main(int argc, char **argv)
{
	char file[800];
	if (st_run_one(argc, argv, child, &s, file) != 0)
		return test_done();
	const uint64_t per_alloc = 2 * ITERS + 2 * (ITERS / 10);
	check_eq(st_named_threads(&s, "worker"), WORKERS);
	check_eq(st_named(&s, "worker", FMT_ALLOC), WORKERS * per_alloc);
	check_eq(st_named(&s, "worker", FMT_FREE), WORKERS * per_alloc);
	check_eq(st_named(&s, "worker", FMT_REALLOC), WORKERS * ITERS);
	const uint64_t excl = LOCKS + RW + CLK + SPINS + 1 + CONDS;
	check_eq(st_acq(&s, "worker", 0) + st_named(&s, "worker", FMT_ACQ_WAIT),
	         WORKERS * excl);
	check_eq(st_acq(&s, "worker", 1) +
	             st_named(&s, "worker", FMT_ACQ_SHARED_WAIT),
	         WORKERS * (RW + CLK));
	check_eq(st_named(&s, "worker", FMT_REL) +
	             st_named(&s, "worker", FMT_REL_CONTENDED),
	         WORKERS * (excl + RW + CLK));
	check_eq(st_named(&s, "worker", FMT_TRY_FAIL), WORKERS * TRIES);
	/* How the uncontended nests were timed: every one with
	 * MALLOCK_HOLD_EVERY=1; about one in N with N, by default one in
	 * MALLOCK_TIME_EVERY's default 16 (each gap drawn from 1 to 2N-1): the
	 * share of timed ones then within a factor of 2. */
	uint64_t untimed = st_named(&s, "worker", FMT_ACQ_UNTIMED) +
	                   st_named(&s, "worker", FMT_ACQ_SHARED_UNTIMED);
	uint64_t acqs = st_acq(&s, "worker", 0) + st_acq(&s, "worker", 1);
	const char *every = getenv("MALLOCK_HOLD_EVERY");
	uint64_t holds = s.by_wire[FMT_HOLD_UNTIMED] +
	                 s.by_wire[FMT_HOLD_UNTIMED_LAST],
	         holds_shared = s.by_wire[FMT_HOLD_SHARED_UNTIMED] +
	                        s.by_wire[FMT_HOLD_SHARED_UNTIMED_LAST];
	if (every && !strcmp(every, "1")) {
		check_eq(untimed, 0);
		check_eq(holds + holds_shared, 0);
	} else {
		/* The loops' holds have nothing between acquisition and
		 * release: most untimed ones are hold forms (all but a
		 * lock's first, whose entry the acquisition's record makes,
		 * and those with a condition wait or a failed trylock in
		 * them). */
		check(holds * 2 > st_named(&s, "worker", FMT_ACQ_UNTIMED));
		check(holds_shared * 2 >
		      st_named(&s, "worker", FMT_ACQ_SHARED_UNTIMED));
		printf("exact: %lu and %lu shared untimed holds stored as "
		       "one record\n",
		       (unsigned long)holds, (unsigned long)holds_shared);
		uint64_t n = every ? strtoull(every, NULL, 10) : 16,
		         timed = acqs - untimed;
		check(n > 1 && timed * n * 2 >= acqs && timed * n <= acqs * 2);
		printf("exact: %lu of %lu uncontended acquisitions timed "
		       "(MALLOCK_HOLD_EVERY=%lu)\n",
		       (unsigned long)timed, (unsigned long)acqs,
		       (unsigned long)n);
	}
	check_eq(st_named(&s, "worker", FMT_COND_WAIT), WORKERS * CONDS);
	check_eq(st_named(&s, "worker", FMT_COND_WAKE), WORKERS * CONDS);
	check_eq(st_named(&s, "worker", FMT_LOCK_INIT), WORKERS * INITS);
	check_eq(st_named(&s, "worker", FMT_LOCK_DESTROY), WORKERS * INITS);
	check_eq(st_named(&s, "worker", FMT_THREAD_START), WORKERS);
	check_eq(st_named(&s, "worker", FMT_THREAD_EXIT), WORKERS);
	check_eq(s.by_type[FMT_DROP], 0);
	check_eq(s.by_type[FMT_PROCESS], 1);
	check(s.by_type[FMT_MODULE] >= 3);
	check_eq(s.have_end, 1);
	check_eq(s.end_dropped, 0);
	check_eq(s.end_flags, FMT_ENDF_CLEAN);
	check_eq(s.end_events, st_core_events(&s));
	check(s.stack_frames_max >= 3);
	return test_done();
}
