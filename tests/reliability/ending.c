/*
 * ending.c - a 3-thread host that ends in a chosen way while its threads
 * hold buffered events (ending.py runs it).
 *
 *   ending WAY     main and 2 workers make ROUNDS malloc+free each
 *                  (3 * ROUNDS allocations in all); the workers then idle
 *                  in read() of a pipe (no hooked call), and main ends:
 *     exit         exit(0)
 *     quick_exit   quick_exit(0) (an at_quick_exit handler runs first)
 *     _exit        _exit(0)
 *     _Exit        _Exit(0)
 *     sigterm      kill(getpid(), SIGTERM) with SIGTERM's default action
 *     exit_group   main makes one malloc+free every TICK_MS for LINGER_MS,
 *                  prints "ticks N", then syscall(SYS_exit_group, 0)
 *     raw_exit_group  the same, but exit_group by the system call
 *                  instruction itself, as Go's runtime does (no libc call)
 *   wake           the workers make half their rounds, idle in nanosleep
 *                  while main makes one malloc+free every TICK_MS for
 *                  SWEPT_MS (their buffers are written by main's hooks:
 *                  the flush deadline), then make the other half; main
 *                  prints "ticks N" and calls exit(0)
 *   flicker        the workers make 80 bursts of 250 rounds with pauses of
 *                  0 to 9 ms while main makes one round every 1 ms (run with
 *                  a short MALLOCK_FLUSH_MS: sweeps meet the workers'
 *                  own writes); prints "made N" and calls exit(0)
 *   paused         as exit_group's first part, then main stops recording
 *                  (mallock_recording(0)), makes one malloc+free every
 *                  TICK_MS for 100 ms (not recorded), and ends by a raw
 *                  exit_group: the idle workers' tails are written by
 *                  main's calls after the stop
 *   children       1000 rounds; a vfork child _exits at once; a forked
 *                  child makes 500 rounds and _exits; another _exits at
 *                  once; 1000 rounds, exit(0)
 *   sigexit [US]   a SIGTERM handler calls exit(0); a second thread
 *                  allocates under a mutex forever; main prints "ready",
 *                  then loops malloc(200)/free forever (each thread
 *                  sleeping US microseconds between rounds, if given)
 *
 * Every way but sigexit prints "made N" (allocations of the three threads)
 * before it ends.
 */
#define _GNU_SOURCE
#include "mallock.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 20000
#define TICK_MS 5
#define LINGER_MS 1500
#define SWEPT_MS 600

static _Atomic int workers_done, go_on, workers_again;
static _Atomic long made; /* allocations of churn(), all threads */
static int idle_pipe[2];

static void say(const char *s)
{
	size_t n = strlen(s);
	if (write(1, s, n) != (ssize_t)n)
		_exit(90);
}

static void churn(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(32 + (size_t)(i % 64));
		if (!p)
			_exit(91);
		*(volatile char *)p = 1;
		free(p);
	}
	atomic_fetch_add(&made, n);
}

static void sleep_ms(long ms);

static void *flicker(void *arg)
{
	(void)arg;
	for (int k = 0; k < 80; k++) {
		churn(250);
		sleep_ms(k % 10);
	}
	atomic_fetch_add(&workers_done, 1);
	return NULL;
}

static void *worker(void *arg)
{
	int wake = arg != NULL;
	churn(wake ? ROUNDS / 2 : ROUNDS);
	atomic_fetch_add(&workers_done, 1);
	if (wake) {
		while (!atomic_load(&go_on))
			sleep_ms(1);
		churn(ROUNDS - ROUNDS / 2);
		atomic_fetch_add(&workers_again, 1);
	}
	char c;
	for (;;)
		if (read(idle_pipe[0], &c, 1) <= 0)
			pause();
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* exit_group(2) without libc: nothing of the shim's can run. */
__attribute__((noreturn)) static void raw_exit_group(int status)
{
	for (;;) {
#if defined(__x86_64__)
		long nr = SYS_exit_group, st = status;
		__asm__ volatile("syscall"
		                 : "+a"(nr)
		                 : "D"(st)
		                 : "rcx", "r11", "memory");
#elif defined(__aarch64__)
		register long x8 __asm__("x8") = SYS_exit_group;
		register long x0 __asm__("x0") = status;
		__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8) : "memory");
#else
#error "raw_exit_group: x86-64 or aarch64 only"
#endif
	}
}

static void on_quick(void)
{
	say("at_quick_exit ran\n");
}

/* ---- sigexit ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned pause_us;

static void on_term_exit(int s)
{
	(void)s;
	exit(0);
}

static void *locked_allocator(void *arg)
{
	(void)arg;
	for (unsigned i = 0;; i++) {
		pthread_mutex_lock(&mu);
		void *p = malloc(64 + i % 512);
		*(volatile char *)p = 1;
		free(p);
		pthread_mutex_unlock(&mu);
		if (pause_us)
			usleep(pause_us);
	}
	return NULL;
}

static int sc_sigexit(const char *us)
{
	pause_us = us ? (unsigned)atoi(us) : 0;
	signal(SIGTERM, on_term_exit);
	pthread_t th;
	if (pthread_create(&th, NULL, locked_allocator, NULL) != 0)
		return 92;
	say("ready\n");
	for (;;) {
		void *p = malloc(200);
		*(volatile char *)p = 1;
		free(p);
		if (pause_us)
			usleep(pause_us);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *way = argv[1];
	if (!strcmp(way, "sigexit"))
		return sc_sigexit(argv[2]);
	if (!strcmp(way, "children")) {
		int st;
		churn(1000);
		pid_t c = vfork();
		if (c == 0)
			_exit(3);
		if (c < 0 || waitpid(c, &st, 0) != c || WEXITSTATUS(st) != 3)
			return 95;
		c = fork();
		if (c == 0) {
			churn(500);
			_exit(4);
		}
		if (c < 0 || waitpid(c, &st, 0) != c || WEXITSTATUS(st) != 4)
			return 96;
		c = fork();
		if (c == 0)
			_exit(5);
		if (c < 0 || waitpid(c, &st, 0) != c || WEXITSTATUS(st) != 5)
			return 97;
		churn(1000);
		return 0;
	}
	if (pipe(idle_pipe) != 0)
		return 93;
	char line[64];
	if (!strcmp(way, "flicker")) {
		pthread_t th[2];
		for (int i = 0; i < 2; i++)
			if (pthread_create(&th[i], NULL, flicker, NULL) != 0)
				return 94;
		while (atomic_load(&workers_done) < 2) {
			sleep_ms(1);
			churn(1);
		}
		snprintf(line, sizeof line, "made %ld\n", atomic_load(&made));
		say(line);
		exit(0);
	}
	at_quick_exit(on_quick);
	int wake = !strcmp(way, "wake");
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, worker,
		                   wake ? &th[i] : NULL) != 0)
			return 94;
	churn(ROUNDS);
	while (atomic_load(&workers_done) < 2)
		sleep_ms(1);
	sleep_ms(20); /* the workers are in read() or nanosleep() */
	if (wake) {
		int ticks = 0;
		for (int ms = 0; ms < SWEPT_MS; ms += TICK_MS, ticks++) {
			sleep_ms(TICK_MS);
			churn(1);
		}
		atomic_store(&go_on, 1);
		while (atomic_load(&workers_again) < 2)
			sleep_ms(1);
		snprintf(line, sizeof line, "made %d\nticks %d\n", 3 * ROUNDS,
		         ticks);
		say(line);
		exit(0);
	}
	snprintf(line, sizeof line, "made %d\n", 3 * ROUNDS);
	say(line);
	if (!strcmp(way, "exit"))
		exit(0);
	if (!strcmp(way, "quick_exit"))
		quick_exit(0);
	if (!strcmp(way, "_exit"))
		_exit(0);
	if (!strcmp(way, "_Exit"))
		_Exit(0);
	if (!strcmp(way, "sigterm")) {
		kill(getpid(), SIGTERM);
		for (;;)
			pause();
	}
	if (!strcmp(way, "paused")) {
		if (mallock_recording(0) == 0) /* -1 without the shim */
			return 98;
		for (int ms = 0; ms < 100; ms += TICK_MS) {
			sleep_ms(TICK_MS);
			churn(1);
		}
		raw_exit_group(0);
	}
	if (!strcmp(way, "exit_group") || !strcmp(way, "raw_exit_group")) {
		int ticks = 0;
		for (int ms = 0; ms < LINGER_MS; ms += TICK_MS, ticks++) {
			sleep_ms(TICK_MS);
			churn(1);
		}
		snprintf(line, sizeof line, "ticks %d\n", ticks);
		say(line);
		if (way[0] == 'r')
			raw_exit_group(0);
		syscall(SYS_exit_group, 0);
	}
	return 2;
}
