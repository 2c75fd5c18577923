/*
 * pkgowner.c - `dpkg -S` for one path, bounded in time: the child is
 * spawned without a shell, its stderr goes to /dev/null, its stdout is
 * read until the deadline and it is killed then (a hung dpkg, or one
 * waiting on its lock, delays the report by the deadline at most).
 * Answers are kept for the process: a report of many traces (a build's
 * 55 processes map the same few binaries) asks dpkg once per path, not
 * once per path and trace (dpkg -S took 0.1 s a call, most of the
 * report's time).
 */
#define _GNU_SOURCE /* pipe2 */
#include "pkgowner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* dpkg's answer for path, as dpkg_owner's; *answered is 1 when dpkg said
 * it (not a timeout or a failure to run it). */
static int dpkg_ask(const char *path, char *pkg, size_t len, uint64_t deadline,
                    int *answered)
{
	*answered = 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	char *argv[] = {"dpkg", "-S", "--", (char *)path, NULL};
	pid_t pid;
	int rc = posix_spawnp(&pid, "dpkg", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		errno = rc; /* ENOENT: no dpkg here */
		return -1;
	}
	char buf[4096];
	size_t n = 0;
	for (;;) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t now =
		    (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		if (now >= deadline || n >= sizeof buf - 1)
			break;
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int wait_ms = (int)((deadline - now) / 1000000u) + 1;
		if (poll(&pf, 1, wait_ms) <= 0)
			break;
		ssize_t k = read(p[0], buf + n, sizeof buf - 1 - n);
		if (k == 0)
			*answered = 1; /* dpkg closed its output: done */
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(p[0]);
	kill(pid, SIGKILL); /* harmless when it has exited: not reaped yet */
	int st;
	waitpid(pid, &st, 0);
	buf[n] = 0;
	if (!*answered && !n) {
		errno = ETIMEDOUT; /* no answer by the deadline */
		return -1;
	}
	/* "pkg: /path", "pkg:amd64: /path", "pkg1, pkg2: /path"; lines
	 * about diversions come first. */
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "diversion ", 10) == 0)
			continue;
		size_t k = strcspn(line, ":, ");
		if (k == 0 || k >= len || !strstr(line, ": "))
			return -1;
		memcpy(pkg, line, k);
		pkg[k] = 0;
		return 0;
	}
	return -1;
}

/* The answers so far: path, and its package ("" when dpkg owns no such
 * file). A report names a few hundred modules at most; past PKG_CACHE
 * paths dpkg is asked every time. */
#define PKG_CACHE 1024
static struct {
	char *path;
	char pkg[200];
} cache[PKG_CACHE];
static size_t ncache;

/* Contract in pkgowner.h. */
int dpkg_owner(const char *path, char *pkg, size_t len, uint64_t deadline)
{
	for (size_t i = 0; i < ncache; i++) {
		if (strcmp(cache[i].path, path) != 0)
			continue;
		size_t k = strlen(cache[i].pkg);
		if (!k || k >= len) {
			errno = 0;
			return -1;
		}
		memcpy(pkg, cache[i].pkg, k + 1);
		return 0;
	}
	char got[sizeof cache[0].pkg];
	int answered;
	int rc = dpkg_ask(path, got, sizeof got, deadline, &answered);
	int saved = errno;
	if (answered && ncache < PKG_CACHE &&
	    (cache[ncache].path = strdup(path)) != NULL) {
		memcpy(cache[ncache].pkg, rc == 0 ? got : "",
		       rc == 0 ? strlen(got) + 1 : 1);
		ncache++;
	}
	errno = saved;
	if (rc != 0)
		return -1;
	size_t k = strlen(got);
	if (k >= len)
		return -1;
	memcpy(pkg, got, k + 1);
	return 0;
}
