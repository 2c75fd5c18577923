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
 * Usage: futexlock [ROUNDS] (default 3000); futexlock none: the threads
 * only compute and allocate, taking no lock a preload tool can see (the
 * blind-spot header line). For test_futex.py.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define THREADS 4

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

__attribute__((noinline)) void futexlock_contend_here(void)
{
	lock();
	for (int i = 0; i < 2000; i++)
		sink += (unsigned long)i * 7;
	unlock();
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

static void *worker(void *arg)
{
	(void)arg;
	while (!atomic_load(&futexlock_ready))
		futex(&futexlock_ready, FUTEX_WAIT, 0);
	for (long i = 0; i < rounds; i++)
		futexlock_contend_here();
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
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			return 1;
	usleep(50000);
	atomic_store(&futexlock_ready, 1);
	futex(&futexlock_ready, FUTEX_WAKE, THREADS);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("futexlock: %d threads x %ld rounds\n", THREADS, rounds);
	return 0;
}
