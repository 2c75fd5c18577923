/*
 * pollwait.c - a host that does not survive an interrupted poll(): its
 * main thread waits in poll() on a pipe nobody writes to, and exits with
 * status 3 when poll fails with EINTR (as varnish's CLI thread does).
 *
 * usage: pollwait DIR [cond]
 *   writes DIR/ready ("MAINTID [CONDTID]") once waiting; with `cond`, a
 *   second thread waits in pthread_cond_wait (a futex wait the kernel
 *   restarts after a SA_RESTART handler) for a signal nobody sends.
 * Exit: 3 poll failed with EINTR, 4 another poll error, 0 never (killed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go;
static long cond_tid;

static void *condwait(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	cond_tid = syscall(SYS_gettid);
	pthread_cond_broadcast(&cv);
	while (go != 2)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int fds[2];
	if (pipe(fds) != 0)
		return 2;
	free(malloc(64)); /* the shim is set up */
	if (argc > 2 && !strcmp(argv[2], "cond")) {
		pthread_t th;
		if (pthread_create(&th, NULL, condwait, NULL) != 0)
			return 2;
		pthread_mutex_lock(&mu);
		while (!cond_tid)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
	}
	char path[4096], tmp[4200];
	snprintf(path, sizeof path, "%s/ready", argv[1]);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return 2;
	if (cond_tid)
		fprintf(f, "%ld %ld\n", (long)syscall(SYS_gettid), cond_tid);
	else
		fprintf(f, "%ld\n", (long)syscall(SYS_gettid));
	fclose(f);
	rename(tmp, path);
	struct pollfd p = {.fd = fds[0], .events = POLLIN};
	for (;;) {
		int r = poll(&p, 1, -1);
		if (r < 0 && errno == EINTR)
			_exit(3);
		if (r < 0)
			_exit(4);
	}
}
