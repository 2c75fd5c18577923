/*
 * holdrec.c - a known number of holds of each shape that trace format
 * 1.8's hold forms treat differently, for test_hold_records.py: two
 * threads named "holdrec" each take
 *   holdrec_plain  PLAIN times, nothing inside (shared by both threads, so
 *                  now and then contended);
 *   holdrec_rw     RD times for reading, nothing inside;
 *   holdrec_spin   SPIN times (a spinlock), nothing inside;
 *   holdrec_outer  NEST times around a hold of holdrec_inner;
 *   holdrec_a      CROSS times, holdrec_b taken inside it and released
 *                  after it (out of order);
 *   holdrec_alloc  ALLOC times around a malloc and a free;
 * and two threads, "holdrec_hold" and "holdrec_wait", take holdrec_cont
 * CONT times each: the holder releases it only once the waiter sleeps in
 * the kernel for it (glibc's lock word 2), so each of the holder's
 * releases is contended and each of the waiter's acquisitions waited.
 * A thread named "holdrec_flick" takes holdrec_flick FLICK times, nothing
 * inside, in bursts with FLICK_MS pauses while main allocates once a
 * millisecond (with a short MALLOCK_FLUSH_MS, main's hooks write the
 * idle thread's buffer, and its next flush writes what came after,
 * encoded again: shim/core/wbuf.c write_range). No lock is taken by this
 * program anywhere else.
 *
 * Usage: holdrec (no arguments).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PLAIN 20000
#define RD 5000
#define SPIN 2000
#define NEST 2000
#define CROSS 2000
#define ALLOC 2000
#define CONT 20
#define FLICK 5000 /* in 10 bursts */
#define FLICK_MS 25

pthread_mutex_t holdrec_plain = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t holdrec_rw = PTHREAD_RWLOCK_INITIALIZER;
pthread_spinlock_t holdrec_spin;
pthread_mutex_t holdrec_outer = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_inner = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_b = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_alloc = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_cont = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_flick = PTHREAD_MUTEX_INITIALIZER;

static void *volatile sink;
static int round_go, round_done; /* the contended rounds begun, ended */
static int flick_done;

static void sleep_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000};
	nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "holdrec");
	for (int i = 0; i < PLAIN; i++) {
		pthread_mutex_lock(&holdrec_plain);
		pthread_mutex_unlock(&holdrec_plain);
	}
	for (int i = 0; i < RD; i++) {
		pthread_rwlock_rdlock(&holdrec_rw);
		pthread_rwlock_unlock(&holdrec_rw);
	}
	for (int i = 0; i < SPIN; i++) {
		pthread_spin_lock(&holdrec_spin);
		pthread_spin_unlock(&holdrec_spin);
	}
	for (int i = 0; i < NEST; i++) {
		pthread_mutex_lock(&holdrec_outer);
		pthread_mutex_lock(&holdrec_inner);
		pthread_mutex_unlock(&holdrec_inner);
		pthread_mutex_unlock(&holdrec_outer);
	}
	for (int i = 0; i < CROSS; i++) {
		pthread_mutex_lock(&holdrec_a);
		pthread_mutex_lock(&holdrec_b);
		pthread_mutex_unlock(&holdrec_a);
		pthread_mutex_unlock(&holdrec_b);
	}
	for (int i = 0; i < ALLOC; i++) {
		pthread_mutex_lock(&holdrec_alloc);
		sink = malloc(32);
		free(sink);
		pthread_mutex_unlock(&holdrec_alloc);
	}
	return NULL;
}

/* Spins (yielding) until *v is at least want. */
static void wait_for(int *v, int want)
{
	while (__atomic_load_n(v, __ATOMIC_ACQUIRE) < want)
		sched_yield();
}

static void *holder(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "holdrec_hold");
	for (int k = 1; k <= CONT; k++) {
		pthread_mutex_lock(&holdrec_cont);
		__atomic_store_n(&round_go, k, __ATOMIC_RELEASE);
		/* The waiter sleeps on the lock: glibc set its word to 2
		 * (after the shim noted the waiter). */
		while (__atomic_load_n(&holdrec_cont.__data.__lock,
		                       __ATOMIC_ACQUIRE) != 2)
			sched_yield();
		pthread_mutex_unlock(&holdrec_cont);
		wait_for(&round_done, k);
	}
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "holdrec_wait");
	for (int k = 1; k <= CONT; k++) {
		wait_for(&round_go, k);
		pthread_mutex_lock(&holdrec_cont);
		pthread_mutex_unlock(&holdrec_cont);
		__atomic_store_n(&round_done, k, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *flick(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "holdrec_flick");
	for (int k = 0; k < 10; k++) {
		for (int i = 0; i < FLICK / 10; i++) {
			pthread_mutex_lock(&holdrec_flick);
			pthread_mutex_unlock(&holdrec_flick);
		}
		sleep_ms(FLICK_MS);
	}
	__atomic_store_n(&flick_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int main(void)
{
	pthread_t t[5];
	void *(*fn[5])(void *) = {worker, worker, holder, waiter, flick};
	pthread_spin_init(&holdrec_spin, 0);
	for (int i = 0; i < 5; i++)
		if (pthread_create(&t[i], NULL, fn[i], NULL)) {
			perror("pthread_create");
			return 1;
		}
	while (!__atomic_load_n(&flick_done, __ATOMIC_ACQUIRE)) {
		sink = malloc(16);
		free(sink);
		sleep_ms(1);
	}
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	return 0;
}
