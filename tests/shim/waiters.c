/*
 * waiters - an ACQ_WAIT's waiters counts the threads waiting for the lock
 * when this one began to wait, itself included (docs/trace-format.md), the
 * figure the report's max_waiters is made of. The main thread holds a
 * mutex while WAITERS threads, one after another, begin to wait for it:
 * each is seen asleep in the kernel (its /proc state S, twice in a row)
 * before the next starts, so the k-th began with k - 1 others waiting.
 * Then main unlocks. The trace must hold exactly WAITERS ACQ_WAIT records,
 * whose waiters are 1, 2, ... WAITERS, each once.
 *
 * Then a reader waits for a rwlock main holds for writing: it must sleep
 * until main unlocks (a read lock returned while the write lock is held
 * fails the child), and the trace holds one ACQ_SHARED_WAIT, of 1 waiter.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>

#define WAITERS 3

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static _Atomic long tids[WAITERS + 1]; /* the last: the reader */
static _Atomic int read_locked;

static void *waiter(void *arg)
{
	long k = (long)arg;
	atomic_store(&tids[k], (long)syscall(SYS_gettid));
	pthread_mutex_lock(&mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	atomic_store(&tids[WAITERS], (long)syscall(SYS_gettid));
	pthread_rwlock_rdlock(&rw);
	atomic_store(&read_locked, 1);
	pthread_rwlock_unlock(&rw);
	return NULL;
}

/* Whether thread tid of this process is asleep (state S). */
static int asleep(long tid)
{
	char p[64], b[256];
	snprintf(p, sizeof p, "/proc/self/task/%ld/stat", tid);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	size_t n = fread(b, 1, sizeof b - 1, f);
	fclose(f);
	b[n] = 0;
	const char *s = strrchr(b, ')'); /* the name may hold spaces */
	return s && s[1] == ' ' && s[2] == 'S';
}

/* Waits until thread k (tids[k]) is seen asleep twice in a row, 1 ms
 * apart. 0, or -1 after 20 s or when the reader got its lock. */
static int wait_asleep(long k)
{
	const struct timespec ms = {0, 1000000};
	int seen = 0;
	for (int i = 0; seen < 2; i++) {
		if (i == 20000 || atomic_load(&read_locked)) {
			fprintf(stderr,
			        "waiters: thread %ld never slept on its "
			        "lock\n",
			        k + 1);
			return -1;
		}
		nanosleep(&ms, NULL);
		long tid = atomic_load(&tids[k]);
		seen = tid && asleep(tid) ? seen + 1 : 0;
	}
	return 0;
}

static int child(void)
{
	pthread_t t[WAITERS + 1];
	pthread_mutex_lock(&mu);
	for (long k = 0; k < WAITERS; k++) {
		pthread_create(&t[k], NULL, waiter, (void *)k);
		if (wait_asleep(k))
			return 3;
	}
	pthread_mutex_unlock(&mu);
	for (int k = 0; k < WAITERS; k++)
		pthread_join(t[k], NULL);
	pthread_rwlock_wrlock(&rw);
	pthread_create(&t[WAITERS], NULL, reader, NULL);
	if (wait_asleep(WAITERS))
		return 4;
	pthread_rwlock_unlock(&rw);
	pthread_join(t[WAITERS], NULL);
	return 0;
}

typedef struct waits {
	unsigned n;
	unsigned by[WAITERS + 2];    /* records by waiters, the last: more */
	unsigned shared, shared_one; /* ACQ_SHARED_WAITs, of 1 waiter */
} waits_t;

static int collect(const fmt_chunk_header_t *h, const fmt_record_t *r,
                   void *arg)
{
	(void)h;
	waits_t *x = arg;
	if (r->type == FMT_ACQ_WAIT) {
		uint64_t w = r->f[FMT_ACQ_WAIT_WAITERS];
		x->n++;
		x->by[w <= WAITERS ? w : WAITERS + 1]++;
	} else if (r->type == FMT_ACQ_SHARED_WAIT) {
		x->shared++;
		x->shared_one += r->f[FMT_ACQ_SHARED_WAIT_WAITERS] == 1;
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
	waits_t x = {0};
	char err[256];
	check(tr_walk(files[0], collect, &x, err, sizeof err) == 0);
	check_eq(x.n, WAITERS);
	for (unsigned w = 0; w <= WAITERS + 1; w++)
		check_eq(x.by[w], w >= 1 && w <= WAITERS ? 1 : 0);
	check_eq(x.shared, 1);
	check_eq(x.shared_one, 1);
	printf("waiters: %u waits, waiters 1 to %d once each\n", x.n, WAITERS);
	return test_done();
}
