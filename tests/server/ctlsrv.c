/*
 * ctlsrv.c - a small server for the control tests (ctl_test.py): the set-ups
 * real daemons use, which `mallock ctl` must handle.
 *
 *   ctlsrv [--drop UID] [--block] [--workers N] SECONDS
 *
 *   --drop UID   become UID (setgid + setuid) after start, as a daemon
 *                started by root does (with --workers: each worker does)
 *   --block      block every signal in every thread (a server that leaves
 *                signals to nobody, or to a sigwait thread)
 *   --workers N  fork N worker processes (prefork); the master keeps a
 *                light periodic load and waits for them
 *
 * Each worker (or the process itself) runs 3 threads: lock, malloc, free,
 * unlock, in a loop, for SECONDS. At exit each process prints
 * "pid P pending N": the number of signals pending (all blocked with
 * --block, so every signal anybody sent is still there).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double stop_at;
static void *volatile sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *work(void *arg)
{
	(void)arg;
	struct timespec nap = {0, 50 * 1000};
	for (unsigned long i = 0; now() < stop_at; i++) {
		pthread_mutex_lock(&lock);
		void *p = malloc(64 + (i & 63));
		sink = p;
		free(p);
		pthread_mutex_unlock(&lock);
		if ((i & 255) == 0)
			nanosleep(&nap, NULL);
	}
	return NULL;
}

static void drop(long uid)
{
	if (uid < 0)
		return;
	if (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0) {
		perror("ctlsrv: setuid");
		exit(2);
	}
}

static int pending(void)
{
	sigset_t s;
	int n = 0;
	sigpending(&s);
	for (int sig = 1; sig < 65; sig++)
		n += sigismember(&s, sig) == 1;
	return n;
}

static void serve(void)
{
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, work, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
}

int main(int argc, char **argv)
{
	long uid = -1;
	int block = 0, workers = 0;
	int i = 1;
	for (; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--drop"))
			uid = atol(argv[++i]);
		else if (!strcmp(argv[i], "--block"))
			block = 1;
		else if (!strcmp(argv[i], "--workers"))
			workers = atoi(argv[++i]);
		else
			break;
	}
	if (i != argc - 1) {
		fputs("usage: ctlsrv [--drop UID] [--block] [--workers N] "
		      "SECONDS\n",
		      stderr);
		return 2;
	}
	if (block) {
		sigset_t all;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
	}
	stop_at = now() + atof(argv[i]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!workers) {
		drop(uid);
		printf("ready %d\n", (int)getpid());
		serve();
		printf("pid %d pending %d\n", (int)getpid(), pending());
		return 0;
	}
	for (int w = 0; w < workers; w++) {
		pid_t p = fork();
		if (p == 0) {
			drop(uid);
			serve();
			printf("pid %d pending %d\n", (int)getpid(), pending());
			fflush(stdout);
			_exit(0);
		}
	}
	printf("ready %d\n", (int)getpid());
	/* The master: a little work now and then, as a real one does. */
	struct timespec nap = {0, 20 * 1000 * 1000};
	while (now() < stop_at) {
		free(malloc(100));
		nanosleep(&nap, NULL);
	}
	int st, bad = 0;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	printf("pid %d pending %d\n", (int)getpid(), pending());
	return bad;
}
