/*
 * stress - the shim under a randomized many-thread load, with exact totals:
 * each round starts WORKERS threads (named "stress") that run a random mix
 * of malloc, calloc, realloc and free, mutex holds (some allocating inside,
 * some on a condition variable, signalled or timed out) and exit; every
 * few rounds the main thread forks while they run, and the child allocates
 * and exits. The worker's choices come only from its seed, so the driver
 * counts what each worker did by replaying its generator (plan()), and the
 * trace must hold exactly that: every allocation, free, realloc, lock and
 * release of the "stress" threads, their starts and exits, no drop, a clean
 * END. Each fork child leaves its own trace with its own work and a clean
 * END, and none of the parent's workers.
 *
 * The second run (--toggle) adds a thread that pauses and resumes the
 * recording (mallock_recording) all the while: there the totals are
 * bounded (never more than was done), the trace is whole, and the process
 * neither hangs (CTest's timeout) nor crashes.
 *
 * usage: shim_stress SHIM TMPDIR [ROUNDS]   (default 30; the long form is
 * a larger ROUNDS)
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include "../../include/mallock.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define WORKERS 6
#define OPS 3000
#define SLOTS 64
#define LOCKS 4
#define FORK_EVERY 5 /* rounds */
#define CHILD_ALLOCS 50

typedef struct plan {
	uint64_t alloc, free, realloc, acq, rel;
} plan_t;

static pthread_mutex_t locks[LOCKS] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * The worker's program, from its seed. With run set it does it; either
 * way it counts what the shim must record into *p. Every choice depends on
 * the generator alone, never on an outcome (a timed wait that timed out or
 * was signalled counts the same).
 */
static void program(uint64_t seed, int run, plan_t *p)
{
	void *slot[SLOTS] = {0};
	uint64_t s = seed | 1;
	for (int i = 0; i < OPS; i++) {
		uint64_t r = next(&s);
		unsigned op = (unsigned)(r % 10),
		         k = (unsigned)(r >> 8) % SLOTS;
		size_t size = 8 + (size_t)((r >> 16) % 4096);
		pthread_mutex_t *m = &locks[(r >> 32) % LOCKS];
		switch (op) {
		case 0:
		case 1:
		case 2:
			if (slot[k]) {
				p->free++;
				if (run)
					free(slot[k]);
			}
			p->alloc++;
			slot[k] = run ? malloc(size) : (void *)1;
			break;
		case 3:
			if (slot[k]) {
				p->free++;
				if (run)
					free(slot[k]);
			}
			p->alloc++;
			slot[k] = run ? calloc(1, size) : (void *)1;
			break;
		case 4:
			if (!slot[k])
				break;
			p->realloc++;
			if (run)
				slot[k] = realloc(slot[k], size);
			break;
		case 5:
		case 6:
			p->acq++, p->rel++;
			if (run)
				pthread_mutex_lock(m);
			if (op == 6) { /* an allocation inside the hold */
				p->alloc++, p->free++;
				if (run) {
					/* A local: a shared one would let
					 * another worker free this block. */
					void *volatile b = malloc(size);
					free(b);
				}
			}
			if (run)
				pthread_mutex_unlock(m);
			break;
		case 7:
			p->acq++, p->rel++;
			if (run) {
				pthread_mutex_lock(&locks[0]);
				pthread_cond_signal(&cv);
				pthread_mutex_unlock(&locks[0]);
			}
			break;
		case 8:
			/* A short timed wait on the condition: ends by a
			 * signal or by its timeout, either way with the lock
			 * held again. */
			p->acq++, p->rel++;
			if (run) {
				struct timespec t;
				clock_gettime(CLOCK_REALTIME, &t);
				t.tv_nsec += 50000;
				if (t.tv_nsec >= 1000000000)
					t.tv_sec++, t.tv_nsec -= 1000000000;
				pthread_mutex_lock(&locks[0]);
				int rc =
				    pthread_cond_timedwait(&cv, &locks[0], &t);
				if (rc && rc != ETIMEDOUT)
					abort();
				pthread_mutex_unlock(&locks[0]);
			}
			break;
		default:
			break; /* no call: the gap between bursts */
		}
	}
	for (int k = 0; k < SLOTS; k++)
		if (slot[k]) {
			p->free++;
			if (run)
				free(slot[k]);
		}
}

static uint64_t seed_of(int round, int w)
{
	return 0x9e3779b97f4a7c15ull * (uint64_t)(round * WORKERS + w + 1);
}

static void *worker(void *arg)
{
	pthread_setname_np(pthread_self(), "stress");
	plan_t p = {0};
	program((uint64_t)(uintptr_t)arg, 1, &p);
	return NULL;
}

static atomic_int toggling = 1;

static void *toggler(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "toggler");
	struct timespec d = {0, 300000};
	for (int on = 0; atomic_load(&toggling); on ^= 1) {
		mallock_recording(on);
		nanosleep(&d, NULL);
	}
	mallock_recording(1);
	return NULL;
}

static int rounds_of(int argc, char **argv, int first)
{
	int n = argc > first ? atoi(argv[first]) : 30;
	return n > 0 && n * WORKERS < TR_MAX_THREADS - 64 ? n : 30;
}

static int child_main(int argc, char **argv)
{
	/* --child ROUNDS [--toggle] */
	int rounds = rounds_of(argc, argv, 2);
	int toggle = argc > 3 && !strcmp(argv[3], "--toggle");
	pthread_t tg;
	if (toggle)
		pthread_create(&tg, NULL, toggler, NULL);
	for (int r = 0; r < rounds; r++) {
		pthread_t t[WORKERS];
		for (int w = 0; w < WORKERS; w++)
			pthread_create(&t[w], NULL, worker,
			               (void *)(uintptr_t)seed_of(r, w));
		if (r % FORK_EVERY == 0) {
			pid_t pid = fork();
			if (pid == 0) {
				for (int i = 0; i < CHILD_ALLOCS; i++) {
					void *volatile b =
					    malloc(100 + (size_t)i);
					free(b);
				}
				exit(0);
			}
			int st;
			if (pid < 0 || waitpid(pid, &st, 0) != pid ||
			    !WIFEXITED(st) || WEXITSTATUS(st))
				return 3;
		}
		for (int w = 0; w < WORKERS; w++)
			pthread_join(t[w], NULL);
	}
	if (toggle) {
		atomic_store(&toggling, 0);
		pthread_join(tg, NULL);
	}
	return 0;
}

static tr_stats_t s;

/* Runs the child for rounds (pausing and resuming all the while with
 * toggle) and checks every trace it and its fork children left. */
static void run_case(int rounds, int toggle)
{
	char arg[16];
	snprintf(arg, sizeof arg, "%d", rounds);
	const char *args[] = {arg, toggle ? "--toggle" : NULL, NULL};
	st_clean();
	check_eq(st_run(args, NULL), 0);
	plan_t want = {0};
	for (int r = 0; r < rounds; r++)
		for (int w = 0; w < WORKERS; w++)
			program(seed_of(r, w), 0, &want);
	static char files[TR_MAX_THREADS][800];
	int n = st_files(files, TR_MAX_THREADS);
	int forks = (rounds + FORK_EVERY - 1) / FORK_EVERY, parents = 0;
	/* Paused, a fork child may record nothing, and leave no trace. */
	if (!toggle)
		check_eq(n, 1 + forks);
	else
		check(n >= 1 && n <= 1 + forks);
	for (int i = 0; i < n; i++) {
		memset(&s, 0, sizeof s);
		if (tr_stats(files[i], &s) != 0) {
			fprintf(stderr, "%s: %s\n", files[i], s.error);
			check(0);
			continue;
		}
		check_eq(s.have_end, 1);
		check_eq(s.end_flags, FMT_ENDF_CLEAN);
		check_eq(s.end_dropped, 0);
		check_eq(s.by_type[FMT_DROP], 0);
		check_eq(s.end_events, st_core_events(&s));
		unsigned named = st_named_threads(&s, "stress");
		if (s.ppid == (uint32_t)getpid()) {
			/* The recording process, a child of this driver. */
			parents++;
			uint64_t acq = st_acq(&s, "stress", 0) +
			               st_named(&s, "stress", FMT_ACQ_WAIT);
			uint64_t rel =
			    st_named(&s, "stress", FMT_REL) +
			    st_named(&s, "stress", FMT_REL_CONTENDED);
			uint64_t al = st_named(&s, "stress", FMT_ALLOC);
			uint64_t fr = st_named(&s, "stress", FMT_FREE);
			uint64_t re = st_named(&s, "stress", FMT_REALLOC);
			if (!toggle) {
				check_eq(named, (uint64_t)rounds * WORKERS);
				check_eq(al, want.alloc);
				check_eq(fr, want.free);
				check_eq(re, want.realloc);
				check_eq(acq, want.acq);
				check_eq(rel, want.rel);
				check_eq(
				    st_named(&s, "stress", FMT_THREAD_EXIT),
				    (uint64_t)rounds * WORKERS);
			} else {
				/* Paused part of the time: never more
				 * than was done, and something was seen. */
				check(al <= want.alloc && fr <= want.free);
				check(re <= want.realloc && acq <= want.acq);
				check(rel <= want.rel && al > 0);
			}
		} else {
			/* A fork child: its own work, none of the
			 * parent's workers (their threads are gone). */
			check_eq(named, 0);
			if (!toggle)
				check(s.by_type[FMT_ALLOC] >= CHILD_ALLOCS);
		}
	}
	check_eq(parents, 1);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_main(argc, argv);
	st_setup(argc, argv);
	int rounds = rounds_of(argc, argv, 3);
	run_case(rounds, 0);
	run_case(rounds, 1);
	return test_done();
}
