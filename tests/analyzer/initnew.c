/*
 * initnew.c - many per-object locks, each first seen at its init, as a
 * message-passing server makes them (rsyslogd: a mutex inside every
 * message), for test_init_new.py (trace format 1.9's LOCK_INIT_NEW).
 * Two threads named "initnew" each make MSGS messages: a malloc'd block
 * with a mutex at +24 (make_msg), locked and unlocked HOLDS times,
 * destroyed, freed; every RW_EVERY-th message also a rwlock at +24 of
 * another block (make_rw), read-locked once, destroyed, freed. Their
 * ids interleave, so a thread's new ids have gaps. A thread named
 * "initnew_flick" makes FLICK mutexes (make_flick, at +8 of a block) in
 * 10 bursts with FLICK_MS pauses while main allocates once a millisecond
 * (with a short MALLOCK_FLUSH_MS, main's hooks write the idle thread's
 * buffer, and its next flush writes what came after, the burst's first
 * init, encoded again: shim/core/wbuf.c write_range). One static mutex,
 * initnew_static, is taken STATIC times without an init (first seen at an
 * acquisition: a plain LOCK_NEW). No other lock is initialised or taken by this
 * program.
 *
 * Usage: initnew (no arguments).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define MSGS 6000
#define HOLDS 3
#define RW_EVERY 10
#define FLICK 2000 /* in 10 bursts */
#define FLICK_MS 25
#define STATIC 100

pthread_mutex_t initnew_static = PTHREAD_MUTEX_INITIALIZER;

static void *volatile sink;
static int flick_done;

static void sleep_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000};
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) static pthread_mutex_t *make_msg(char **blk)
{
	*blk = malloc(64);
	pthread_mutex_t *m = (pthread_mutex_t *)(void *)(*blk + 24);
	pthread_mutex_init(m, NULL);
	return m;
}

__attribute__((noinline)) static pthread_rwlock_t *make_rw(char **blk)
{
	*blk = malloc(96);
	pthread_rwlock_t *l = (pthread_rwlock_t *)(void *)(*blk + 24);
	pthread_rwlock_init(l, NULL);
	return l;
}

__attribute__((noinline)) static pthread_mutex_t *make_flick(char *blk)
{
	pthread_mutex_t *m = (pthread_mutex_t *)(void *)(blk + 8);
	pthread_mutex_init(m, NULL);
	return m;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "initnew");
	for (int i = 0; i < MSGS; i++) {
		char *b;
		pthread_mutex_t *m = make_msg(&b);
		for (int k = 0; k < HOLDS; k++) {
			pthread_mutex_lock(m);
			pthread_mutex_unlock(m);
		}
		pthread_mutex_destroy(m);
		free(b);
		if (i % RW_EVERY == 0) {
			pthread_rwlock_t *l = make_rw(&b);
			pthread_rwlock_rdlock(l);
			pthread_rwlock_unlock(l);
			pthread_rwlock_destroy(l);
			free(b);
		}
		if (i % (MSGS / STATIC * 2) == 0) {
			pthread_mutex_lock(&initnew_static);
			pthread_mutex_unlock(&initnew_static);
		}
	}
	return NULL;
}

static void *flick(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "initnew_flick");
	for (int burst = 0; burst < 10; burst++) {
		/* The burst's first block before the pause: its first record
		 * after it is an init, the one its flush encodes again. */
		char *b = malloc(48);
		sleep_ms(FLICK_MS);
		for (int i = 0; i < FLICK / 10; i++) {
			if (i)
				b = malloc(48);
			pthread_mutex_t *m = make_flick(b);
			pthread_mutex_lock(m);
			pthread_mutex_unlock(m);
			pthread_mutex_destroy(m);
			free(b);
		}
	}
	__atomic_store_n(&flick_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	pthread_create(&t[0], NULL, worker, NULL);
	pthread_create(&t[1], NULL, worker, NULL);
	pthread_create(&t[2], NULL, flick, NULL);
	while (!__atomic_load_n(&flick_done, __ATOMIC_ACQUIRE)) {
		sink = malloc(16);
		free(sink);
		sleep_ms(1);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
