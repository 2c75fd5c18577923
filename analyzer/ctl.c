/*
 * ctl.c - `mallock ctl start|stop|status PID`: switches the recording of a
 * process running under the shim (docs/server.md).
 *
 * Protocol (shim/control.h is the other side): the shim keeps
 * DIR/<pid>.status ("key value" lines: signal, state, seq, trace, bytes...)
 * in a private directory DIR. `start`/`stop` write "start SEQ" or "stop SEQ"
 * to DIR/<pid>.ctl (a temporary file renamed into place), send the status
 * file's signal with sigqueue (its value tells the shim to read the file),
 * and wait up to 5 s for the status file to show SEQ. The shim serves the
 * request at the process's next allocation or lock call.
 *
 * DIR is the target's MALLOCK_CTL_DIR, else its $XDG_RUNTIME_DIR/mallock,
 * else /tmp/mallock-<its uid>, read from /proc/PID/environ (so a server
 * started with another environment than the operator's shell is found).
 *
 * Exit status: 0 done, 1 usage or failure (one line on stderr saying why).
 */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CTL_SIGVAL 0x6d6c6b01 /* shim/control.c */

static void usage(FILE *o)
{
	fputs("usage: mallock ctl start|stop|status PID\n"
	      "  start   switch recording on (MALLOCK_START=paused, or after stop)\n"
	      "  stop    switch recording off; the trace is complete up to here\n"
	      "  status  print the recording state, the trace path and its size\n",
	      o);
}

/* The value of NAME= in /proc/PID/environ into out ("" if absent). */
static void target_env(long pid, const char *name, char *out, size_t cap)
{
	char path[64], buf[1 << 16];
	out[0] = 0;
	snprintf(path, sizeof path, "/proc/%ld/environ", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	size_t len = strlen(name);
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		if (!strncmp(p, name, len) && p[len] == '=') {
			snprintf(out, cap, "%s", p + len + 1);
			return;
		}
}

static int ctl_dir(long pid, char *out, size_t cap)
{
	char v[1024];
	struct stat st;
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/%ld", pid);
	if (stat(proc, &st) != 0) {
		fprintf(stderr, "mallock: ctl: no process %ld\n", pid);
		return -1;
	}
	target_env(pid, "MALLOCK_CTL_DIR", v, sizeof v);
	if (v[0] == '/') {
		snprintf(out, cap, "%s", v);
		return 0;
	}
	target_env(pid, "XDG_RUNTIME_DIR", v, sizeof v);
	if (v[0] == '/')
		snprintf(out, cap, "%s/mallock", v);
	else
		snprintf(out, cap, "/tmp/mallock-%u", (unsigned)st.st_uid);
	return 0;
}

typedef struct status {
	int signal;
	unsigned long seq;
	char state[32], why[128], trace[1100];
	unsigned long long bytes;
	char raw[4096];
} status_t;

static int status_read(const char *dir, long pid, status_t *s)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/%ld.status", dir, pid);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, s->raw, sizeof s->raw - 1);
	close(fd);
	if (n <= 0)
		return -1;
	s->raw[n] = 0;
	s->signal = 0;
	s->seq = 0;
	s->bytes = 0;
	s->state[0] = s->why[0] = s->trace[0] = 0;
	for (char *line = strtok(s->raw, "\n"); line; line = strtok(NULL, "\n")) {
		char *v = strchr(line, ' ');
		if (!v)
			continue;
		*v++ = 0;
		if (!strcmp(line, "signal"))
			s->signal = atoi(v);
		else if (!strcmp(line, "seq"))
			s->seq = strtoul(v, NULL, 10);
		else if (!strcmp(line, "state"))
			snprintf(s->state, sizeof s->state, "%s", v);
		else if (!strcmp(line, "why"))
			snprintf(s->why, sizeof s->why, "%s", v);
		else if (!strcmp(line, "trace"))
			snprintf(s->trace, sizeof s->trace, "%s", v);
		else if (!strcmp(line, "bytes"))
			s->bytes = strtoull(v, NULL, 10);
	}
	return 0;
}

static void status_print(long pid, const status_t *s)
{
	printf("pid %ld: %s (%s)\n  trace %s, %llu bytes\n", pid, s->state,
	       s->why, s->trace[0] ? s->trace : "(not yet created)",
	       s->bytes);
}

static int send_cmd(const char *dir, long pid, const char *cmd,
                    const status_t *st)
{
	char path[1200], tmp[1300], body[64];
	if (!st->signal) {
		fprintf(stderr,
		        "mallock: ctl: process %ld has no control signal (its "
		        "MALLOCK_SIGNAL was refused or set to none)\n",
		        pid);
		return 1;
	}
	unsigned long seq = st->seq + 1 + (unsigned long)(time(NULL) & 0xffff);
	snprintf(path, sizeof path, "%s/%ld.ctl", dir, pid);
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	int n = snprintf(body, sizeof body, "%s %lu\n", cmd, seq);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	              0600);
	if (fd < 0 || write(fd, body, (size_t)n) != n || close(fd) != 0 ||
	    rename(tmp, path) != 0) {
		fprintf(stderr, "mallock: ctl: cannot write %s: %s\n", path,
		        strerror(errno));
		unlink(tmp);
		return 1;
	}
	union sigval v = {.sival_int = CTL_SIGVAL};
	if (sigqueue((pid_t)pid, st->signal, v) != 0) {
		fprintf(stderr, "mallock: ctl: cannot signal %ld: %s\n", pid,
		        strerror(errno));
		return 1;
	}
	status_t now;
	for (int i = 0; i < 500; i++) {
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
		if (status_read(dir, pid, &now) == 0 && now.seq == seq) {
			status_print(pid, &now);
			return 0;
		}
	}
	fprintf(stderr,
	        "mallock: ctl: process %ld has not answered within 5 s: the "
	        "request is applied at its next allocation or lock call (an "
	        "idle process makes none), or the program replaced the shim's "
	        "handler of signal %d\n",
	        pid, st->signal);
	return 1;
}

int cmd_ctl(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 3) {
		usage(stderr);
		return 1;
	}
	const char *cmd = argv[1];
	char *end;
	long pid = strtol(argv[2], &end, 10);
	if (*end || pid <= 0) {
		fprintf(stderr, "mallock: ctl: '%s' is not a process id\n",
		        argv[2]);
		return 1;
	}
	if (strcmp(cmd, "start") && strcmp(cmd, "stop") && strcmp(cmd, "status")) {
		usage(stderr);
		return 1;
	}
	char dir[1100];
	if (ctl_dir(pid, dir, sizeof dir) != 0)
		return 1;
	status_t st;
	if (status_read(dir, pid, &st) != 0) {
		fprintf(stderr,
		        "mallock: ctl: no %s/%ld.status: process %ld does not "
		        "run under libmallock.so (or not with this user's "
		        "control directory)\n",
		        dir, pid, pid);
		return 1;
	}
	if (!strcmp(cmd, "status")) {
		status_print(pid, &st);
		return 0;
	}
	return send_cmd(dir, pid, cmd, &st);
}
