/*
 * proc.c - reads /proc/PID for `mallock ctl` (proc.h): stat, status,
 * maps, environ, the tasks' signal masks, and the process walks.
 *
 * Invariants: every file is read into a bounded buffer (what does not fit
 * is cut, never overrun), and stat is parsed from its last ')', so a comm
 * holding spaces or parentheses cannot shift the fields.
 */
#define _GNU_SOURCE
#include "proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static ssize_t slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	ssize_t r;
	while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

int proc_stat(long pid, proc_t *p)
{
	char path[64], buf[2048];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if (slurp(path, buf, sizeof buf) <= 0)
		return -1;
	char *l = strchr(buf, '('), *r = strrchr(buf, ')');
	if (!l || !r)
		return -1;
	snprintf(p->comm, sizeof p->comm, "%.*s", (int)(r - l - 1), l + 1);
	char *f = r + 2; /* field 3 */
	int field = 3;
	for (char *s = strtok(f, " "); s; s = strtok(NULL, " "), field++) {
		if (field == 4)
			p->ppid = atol(s);
		if (field == 22) {
			p->start = strtoull(s, NULL, 10);
			return 0;
		}
	}
	return -1;
}

int proc_read(long pid, proc_t *p)
{
	memset(p, 0, sizeof *p);
	p->pid = pid;
	if (proc_stat(pid, p) != 0)
		return -1;
	char path[64], buf[8192];
	snprintf(path, sizeof path, "/proc/%ld/status", pid);
	if (slurp(path, buf, sizeof buf) > 0) {
		char *u = strstr(buf, "\nUid:");
		if (u)
			sscanf(u + 5, "%u %u %u %u", &p->uid[0], &p->uid[1],
			       &p->uid[2], &p->uid[3]);
		char *c = strstr(buf, "\nSigCgt:");
		if (c)
			p->sig_caught = strtoull(c + 8, NULL, 16);
	}
	snprintf(path, sizeof path, "/proc/%ld/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	char line[1400], suffix[48];
	snprintf(suffix, sizeof suffix, "/%ld.page", pid);
	while (fgets(line, sizeof line, f)) {
		p->maps_ok = 1;
		line[strcspn(line, "\n")] = 0;
		char *name = strchr(line, '/');
		if (!name)
			continue;
		const char *base = strrchr(name, '/') + 1;
		if (!strncmp(base, "libmallock.so", 13))
			p->shim = 1;
		char *del = strstr(name, " (deleted)");
		size_t n = del ? (size_t)(del - name) : strlen(name);
		size_t sl = strlen(suffix);
		if (n > sl && !memcmp(name + n - sl, suffix, sl) &&
		    !p->page[0]) {
			snprintf(p->page, sizeof p->page, "%.*s", (int)n, name);
			snprintf(p->page_range, sizeof p->page_range, "%.*s",
			         (int)strcspn(line, " "), line);
		}
	}
	fclose(f);
	return 0;
}

int proc_sig_deliverable(long pid, int sig)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int ok = 0;
	struct dirent *e;
	while (!ok && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char sp[400], buf[4096];
		snprintf(sp, sizeof sp, "%s/%s/status", path, e->d_name);
		if (slurp(sp, buf, sizeof buf) <= 0)
			continue;
		char *b = strstr(buf, "\nSigBlk:");
		if (b && !(strtoull(b + 8, NULL, 16) & (1ull << (sig - 1))))
			ok = 1;
	}
	closedir(d);
	return ok;
}

/* The name of system call nr: the calls a refusal of --wake names (the
 * ones man 7 signal says are never restarted) and the safe ones. */
static const char *call_name(long nr, char *buf, size_t cap)
{
#define WAKE_NAME_(c)                                                          \
	if (nr == SYS_##c)                                                     \
		return #c;
#ifdef SYS_read
	WAKE_NAME_(read)
#endif
#ifdef SYS_write
	WAKE_NAME_(write)
#endif
#ifdef SYS_readv
	WAKE_NAME_(readv)
#endif
#ifdef SYS_writev
	WAKE_NAME_(writev)
#endif
#ifdef SYS_futex
	WAKE_NAME_(futex)
#endif
#ifdef SYS_wait4
	WAKE_NAME_(wait4)
#endif
#ifdef SYS_waitid
	WAKE_NAME_(waitid)
#endif
#ifdef SYS_flock
	WAKE_NAME_(flock)
#endif
#ifdef SYS_fcntl
	WAKE_NAME_(fcntl)
#endif
#ifdef SYS_poll
	WAKE_NAME_(poll)
#endif
#ifdef SYS_ppoll
	WAKE_NAME_(ppoll)
#endif
#ifdef SYS_select
	WAKE_NAME_(select)
#endif
#ifdef SYS_pselect6
	WAKE_NAME_(pselect6)
#endif
#ifdef SYS_epoll_wait
	WAKE_NAME_(epoll_wait)
#endif
#ifdef SYS_epoll_pwait
	WAKE_NAME_(epoll_pwait)
#endif
#ifdef SYS_epoll_pwait2
	WAKE_NAME_(epoll_pwait2)
#endif
#ifdef SYS_nanosleep
	WAKE_NAME_(nanosleep)
#endif
#ifdef SYS_clock_nanosleep
	WAKE_NAME_(clock_nanosleep)
#endif
#ifdef SYS_accept
	WAKE_NAME_(accept)
#endif
#ifdef SYS_accept4
	WAKE_NAME_(accept4)
#endif
#ifdef SYS_recvfrom
	WAKE_NAME_(recvfrom)
#endif
#ifdef SYS_recvmsg
	WAKE_NAME_(recvmsg)
#endif
#ifdef SYS_recvmmsg
	WAKE_NAME_(recvmmsg)
#endif
#ifdef SYS_connect
	WAKE_NAME_(connect)
#endif
#ifdef SYS_sendto
	WAKE_NAME_(sendto)
#endif
#ifdef SYS_sendmsg
	WAKE_NAME_(sendmsg)
#endif
#ifdef SYS_rt_sigtimedwait
	WAKE_NAME_(rt_sigtimedwait)
#endif
#ifdef SYS_rt_sigsuspend
	WAKE_NAME_(rt_sigsuspend)
#endif
#ifdef SYS_pause
	WAKE_NAME_(pause)
#endif
#ifdef SYS_io_getevents
	WAKE_NAME_(io_getevents)
#endif
#ifdef SYS_io_pgetevents
	WAKE_NAME_(io_pgetevents)
#endif
#ifdef SYS_msgrcv
	WAKE_NAME_(msgrcv)
#endif
#ifdef SYS_msgsnd
	WAKE_NAME_(msgsnd)
#endif
#ifdef SYS_semop
	WAKE_NAME_(semop)
#endif
#ifdef SYS_semtimedop
	WAKE_NAME_(semtimedop)
#endif
#undef WAKE_NAME_
	snprintf(buf, cap, "system call %ld", nr);
	return buf;
}

/* Nonzero when descriptor fd of pid is not a socket (a socket call with
 * SO_RCVTIMEO or SO_SNDTIMEO fails with EINTR even under SA_RESTART). */
static int fd_not_socket(long pid, unsigned long fd)
{
	char path[96], link[128];
	snprintf(path, sizeof path, "/proc/%ld/fd/%lu", pid, fd);
	ssize_t n = readlink(path, link, sizeof link - 1);
	if (n <= 0)
		return 0;
	link[n] = 0;
	return strncmp(link, "socket:", 7) != 0;
}

/* 0: blocked in a call restarted after a SA_RESTART handler; 1: running,
 * or blocked outside a system call; -1: not safe (or unknown). The name of
 * what it does into call. */
static int call_safety(long pid, const char *line, char *call, size_t cap)
{
	if (!strncmp(line, "running", 7)) {
		snprintf(call, cap, "running");
		return 1;
	}
	char *end;
	long nr = strtol(line, &end, 10);
	if (end == line) {
		snprintf(call, cap, "unknown");
		return -1;
	}
	if (nr < 0) {
		snprintf(call, cap, "no system call");
		return 1;
	}
	unsigned long a[6] = {0};
	const char *q = end;
	for (int i = 0; i < 6 && *q; i++) {
		a[i] = strtoul(q, &end, 16);
		if (end == q)
			break;
		q = end;
	}
	char nbuf[40];
	snprintf(call, cap, "%s", call_name(nr, nbuf, sizeof nbuf));
	switch (nr) {
#ifdef SYS_futex
	case SYS_futex: {
		/* Without a timeout the wait is restarted (ERESTARTSYS); with
		 * one it returns EINTR to a handler's thread. */
		unsigned op = (unsigned)a[1] & FUTEX_CMD_MASK;
		return (op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET) &&
		               a[3] == 0
		           ? 0
		           : -1;
	}
#endif
#ifdef SYS_wait4
	case SYS_wait4:
#endif
#ifdef SYS_flock
	case SYS_flock:
#endif
	case SYS_waitid:
		return 0;
#ifdef SYS_fcntl
	case SYS_fcntl:
		return a[1] == F_SETLKW || a[1] == F_OFD_SETLKW ? 0 : -1;
#endif
	case SYS_read:
	case SYS_write:
	case SYS_readv:
	case SYS_writev:
		return fd_not_socket(pid, a[0]) ? 0 : -1;
	default:
		return -1;
	}
}

int proc_wake_pick(long pid, int sig, proc_wake_t *w)
{
	memset(w, 0, sizeof *w);
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/task", pid);
	DIR *d = opendir(path);
	if (!d) {
		snprintf(w->threads, sizeof w->threads,
		         "/proc/%ld/task is "
		         "unreadable",
		         pid);
		return -1;
	}
	int best = 2;
	size_t used = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		long tid = atol(e->d_name);
		w->nthreads++;
		char sp[400], buf[4096], call[40];
		snprintf(sp, sizeof sp, "%s/%s/status", path, e->d_name);
		int safety = -1;
		if (slurp(sp, buf, sizeof buf) <= 0)
			continue;
		char *b = strstr(buf, "\nSigBlk:");
		if (!b || (strtoull(b + 8, NULL, 16) & (1ull << (sig - 1)))) {
			snprintf(call, sizeof call, "blocks signal %d", sig);
		} else {
			snprintf(sp, sizeof sp, "%s/%s/syscall", path,
			         e->d_name);
			if (slurp(sp, buf, sizeof buf) <= 0)
				snprintf(call, sizeof call, "unknown");
			else
				safety =
				    call_safety(pid, buf, call, sizeof call);
		}
		if (safety >= 0 && safety < best) {
			best = safety;
			w->tid = tid;
			snprintf(w->call, sizeof w->call, "%s", call);
		}
		if (used < sizeof w->threads - 1) {
			int n = snprintf(w->threads + used,
			                 sizeof w->threads - used, "%s%ld: %s",
			                 used ? ", " : "", tid, call);
			used += n > 0 ? (size_t)n : 0;
			if (used >= sizeof w->threads - 1) {
				used = sizeof w->threads - 1;
				memcpy(w->threads + used - 3, "...", 3);
			}
		}
	}
	closedir(d);
	return w->tid ? 0 : -1;
}

int proc_nthreads(long pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int proc_task_alive(long pid, long tid)
{
	char path[96], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/task/%ld/stat", pid, tid);
	if (slurp(path, buf, sizeof buf) <= 0)
		return 0;
	char *r = strrchr(buf, ')');
	return r && r[1] == ' ' && r[2] != 'Z' && r[2] != 'X';
}

void proc_env(long pid, const char *name, char *out, size_t cap)
{
	char path[64];
	static char buf[1 << 16];
	out[0] = 0;
	snprintf(path, sizeof path, "/proc/%ld/environ", pid);
	ssize_t n = slurp(path, buf, sizeof buf);
	if (n <= 0)
		return;
	size_t len = strlen(name);
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		if (!strncmp(p, name, len) && p[len] == '=') {
			snprintf(out, cap, "%s", p + len + 1);
			return;
		}
}

uint64_t proc_cpu(long pid)
{
	char path[64], buf[2048];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if (slurp(path, buf, sizeof buf) <= 0)
		return 0;
	char *r = strrchr(buf, ')');
	if (!r)
		return 0;
	unsigned long long ut = 0, st = 0;
	if (sscanf(r + 2,
	           "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	           &st) != 2)
		return 0;
	return ut + st;
}

long *proc_tree_pids(long root, size_t *n)
{
	size_t cap = 64, len = 0, all_n = 0, all_cap = 256;
	long *out = malloc(cap * sizeof *out);
	long(*all)[2] = malloc(all_cap * sizeof *all);
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		proc_t p;
		if (*end || pid <= 0 || proc_stat(pid, &p) != 0)
			continue;
		if (all_n == all_cap)
			all = realloc(all, (all_cap *= 2) * sizeof *all);
		all[all_n][0] = pid;
		all[all_n++][1] = p.ppid;
	}
	if (d)
		closedir(d);
	out[len++] = root;
	for (size_t i = 0; i < len; i++)
		for (size_t j = 0; j < all_n; j++)
			if (all[j][1] == out[i]) {
				if (len == cap)
					out = realloc(out,
					              (cap *= 2) * sizeof *out);
				out[len++] = all[j][0];
			}
	free(all);
	*n = len;
	return out;
}

long *proc_exe_pids(const char *name, size_t *n)
{
	size_t cap = 64, len = 0;
	long *out = malloc(cap * sizeof *out);
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end, path[64], exe[1024];
		long pid = strtol(e->d_name, &end, 10);
		proc_t p;
		if (*end || pid <= 0 || pid == getpid() ||
		    proc_stat(pid, &p) != 0)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/exe", pid);
		ssize_t l = readlink(path, exe, sizeof exe - 1);
		int match = 0;
		if (l > 0) {
			exe[l] = 0;
			char *del = strstr(exe, " (deleted)");
			if (del)
				*del = 0;
			const char *b = strrchr(exe, '/');
			match = !strcmp(b ? b + 1 : exe, name);
		} else {
			match = !strncmp(p.comm, name, 15) && strlen(name) >= 15
			            ? 1
			            : !strcmp(p.comm, name);
		}
		if (!match)
			continue;
		if (len == cap)
			out = realloc(out, (cap *= 2) * sizeof *out);
		out[len++] = pid;
	}
	if (d)
		closedir(d);
	*n = len;
	return out;
}
