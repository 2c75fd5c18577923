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
 * No lock is taken by this program anywhere else.
 *
 * Usage: holdrec (no arguments).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define PLAIN 20000
#define RD 5000
#define SPIN 2000
#define NEST 2000
#define CROSS 2000
#define ALLOC 2000
#define CONT 20

pthread_mutex_t holdrec_plain = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t holdrec_rw = PTHREAD_RWLOCK_INITIALIZER;
pthread_spinlock_t holdrec_spin;
pthread_mutex_t holdrec_outer = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_inner = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_b = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_alloc = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t holdrec_cont = PTHREAD_MUTEX_INITIALIZER;

static void *volatile sink;
static int round_go, round_done; /* the contended rounds begun, ended */

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

int main(void)
{
	pthread_t t[4];
	void *(*fn[4])(void *) = {worker, worker, holder, waiter};
	pthread_spin_init(&holdrec_spin, 0);
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, fn[i], NULL)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}
