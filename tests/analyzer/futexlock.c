/*
 * futexlock.c - a program whose lock is its own: a three-state futex mutex
 * (0 free, 1 taken, 2 taken with waiters) that sleeps and wakes with
 * syscall(SYS_futex, ...) through libc, as InnoDB's srw_lock and Rust's
 * std::sync::Mutex do; no pthread lock is taken on the way. Four threads
 * take it in futexlock_contend_here() and hold it for a few microseconds,
 * so waits reach the kernel. A second word, futexlock_ready, is an event:
 * the workers wait on it once at start, the main thread wakes them all
 * (a futex word whose waiters never wake it: waiting for work).
 *
 * Contention that does not depend on the scheduler comes first: two
 * threads take turns, for FORCED rounds, holding the lock until the other
 * is asleep in the kernel on its word (/proc/self/task/TID/syscall names
 * the futex call on it: state S), then releasing it, which wakes the
 * sleeper. So every run has at least FORCED futex waits that slept and as
 * many wakes, however busy the machine. The free-for-all that follows
 * adds what the scheduler gives; main releases its workers once each is
 * asleep on the start event.
 *
 * Usage: futexlock [ROUNDS] (default 3000); futexlock none: the threads
 * only compute and allocate, taking no lock a preload tool can see (the
 * blind-spot header line). For test_futex.py.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define FORCED 16 /* above the futex_lock finding's 10 waits */

_Atomic int futexlock_word;  /* the mutex */
_Atomic int futexlock_ready; /* the start event: 0 until released */
static long rounds = 3000;
static volatile unsigned long sink;

static long futex(_Atomic int *w, int op, int val)
{
	return syscall(SYS_futex, (int *)w, op | FUTEX_PRIVATE_FLAG, val, NULL,
	               NULL, 0);
}

static void lock(void)
{
	int c = 0;
	if (atomic_compare_exchange_strong(&futexlock_word, &c, 1))
		return;
	if (c != 2)
		c = atomic_exchange(&futexlock_word, 2);
	while (c != 0) {
		futex(&futexlock_word, FUTEX_WAIT, 2);
		c = atomic_exchange(&futexlock_word, 2);
	}
}

static void unlock(void)
{
	if (atomic_fetch_sub(&futexlock_word, 1) != 1) {
		atomic_store(&futexlock_word, 0);
		futex(&futexlock_word, FUTEX_WAKE, 1);
	}
}

/* Takes the lock; while it is held, runs held (when not NULL), else
 * computes a few microseconds. */
__attribute__((noinline)) void futexlock_contend_here(void (*held)(void))
{
	lock();
	if (held)
		held();
	else
		for (int i = 0; i < 2000; i++)
			sink += (unsigned long)i * 7;
	unlock();
}

/* ---- the forced rounds ---- */

static _Atomic int turn;       /* the round being played */
static _Atomic int sleeper;    /* tid of the round's waiter */
static _Atomic int taken = -1; /* the round whose holder has the lock */

/* Whether thread tid is asleep in the kernel in a futex call on w:
 * /proc/self/task/TID/syscall reads "202 0xWORD ..." only while it is
 * blocked in that call (else "running", or another call). */
static int asleep_on(int tid, _Atomic int *w)
{
	char path[64], buf[256], want[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	snprintf(want, sizeof want, "%d %p ", SYS_futex, (void *)w);
	return strncmp(buf, want, strlen(want)) == 0;
}

/* Returns once thread tid sleeps on w (at most 60 s: then it exits,
 * saying so). */
static void until_asleep_on(int tid, _Atomic int *w)
{
	struct timespec nap = {0, 100000};
	for (long i = 0; i < 600000; i++) {
		int a = asleep_on(tid, w);
		if (a < 0) {
			fprintf(stderr,
			        "futexlock: cannot read "
			        "/proc/self/task/%d/syscall\n",
			        tid);
			exit(3);
		}
		if (a)
			return;
		nanosleep(&nap, NULL);
	}
	fprintf(stderr, "futexlock: thread %d never slept on its word\n", tid);
	exit(3);
}

/* The holder's wait, lock held: until the round's waiter sleeps on the
 * word. */
static void until_asleep(void)
{
	atomic_store(&taken, atomic_load(&turn));
	int tid;
	while (!(tid = atomic_load(&sleeper)))
		sched_yield();
	until_asleep_on(tid, &futexlock_word);
}

/* Thread me (0 or 1) of the forced rounds: holds in the rounds of its
 * parity, waits in the others. */
static void *forced(void *arg)
{
	int me = (int)(long)arg, tid = (int)syscall(SYS_gettid);
	for (int r = 0; r < FORCED; r++) {
		while (atomic_load(&turn) != r)
			sched_yield();
		if (r % 2 == me) {
			futexlock_contend_here(until_asleep);
			continue;
		}
		while (atomic_load(&taken) != r)
			sched_yield();
		atomic_store(&sleeper, tid);
		futexlock_contend_here(NULL); /* asleep until released */
		atomic_store(&sleeper, 0);
		atomic_store(&turn, r + 1);
	}
	return NULL;
}

static void *computer(void *arg)
{
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(64);
		if (!p)
			break;
		p[0] = (char)i;
		sink += (unsigned long)p[0];
		free(p);
	}
	return arg;
}

static _Atomic int worker_tid[THREADS];

static void *worker(void *arg)
{
	atomic_store(&worker_tid[(long)arg], (int)syscall(SYS_gettid));
	while (!atomic_load(&futexlock_ready))
		futex(&futexlock_ready, FUTEX_WAIT, 0);
	for (long i = 0; i < rounds; i++)
		futexlock_contend_here(NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	if (argc > 1 && strcmp(argv[1], "none") == 0) {
		for (int i = 0; i < THREADS; i++)
			if (pthread_create(&t[i], NULL, computer, NULL) != 0)
				return 1;
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	if (argc > 1)
		rounds = atol(argv[1]);
	for (long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, forced, (void *)i) != 0)
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			return 1;
	/* Every worker asleep on the start event before it is released. */
	for (int i = 0; i < THREADS; i++) {
		while (!atomic_load(&worker_tid[i]))
			sched_yield();
		until_asleep_on(atomic_load(&worker_tid[i]), &futexlock_ready);
	}
	atomic_store(&futexlock_ready, 1);
	/* Every worker is asleep on the word: the wake says it woke them all
	 * (the shim's hook returns what the kernel said). */
	long woke = futex(&futexlock_ready, FUTEX_WAKE, THREADS);
	if (woke != THREADS) {
		fprintf(stderr, "futexlock: FUTEX_WAKE returned %ld, not %d\n",
		        woke, THREADS);
		return 1;
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("futexlock: %d forced rounds, %d threads x %ld rounds\n", FORCED,
	       THREADS, rounds);
	return 0;
}
