/*
 * ctl.c - `mallock ctl start|stop|status`: switches the recording of
 * processes running under the shim (docs/server.md), one pid, a process
 * and its descendants (--tree), or every traced process of one program
 * (--exe).
 *
 * Protocol (format/ctl_page.h; shim/control/control.h is the other side): each
 * traced process maps <dir>/<pid>.page. `status` only reads the page (and
 * stats the trace it names). `start`/`stop` write a request word there and
 * wait up to 1 s (5 s when the process used CPU meanwhile) for the process
 * to copy it to `served`; the shim reads the
 * word at its hook calls (every call while paused, every 10 ms of events
 * while recording). A process that made no such call is left with its
 * request pending: it applies it at its next allocation or lock call, and
 * `ctl` says so (exit status 0). No command sends a signal unless --wake
 * is given, and then only to a process whose page says the kernel's
 * handler for its signal is still the shim's (wake_sig), whose SigCgt
 * agrees and one of whose threads does not block it; any other is refused
 * in one line and left pending.
 *
 * Nothing is signalled or written before the page is authenticated:
 * - root reaches it through /proc/PID/map_files (the very file the process
 *   maps now; root needs no directory); anyone else opens it in a 0700
 *   directory of its own uid, every component without following a symlink
 *   (ctlp_dir_open), and the file must be a regular file of that uid;
 * - the page names the pid and its start time (/proc/PID/stat field 22),
 *   so a page left by a dead process whose pid was reused is refused;
 * - the process maps libmallock (/proc/PID/maps) or, where its maps are
 *   unreadable (a process that dropped privileges), holds the page's lock;
 * - the signal is one MALLOCK_SIGNAL accepts (ctlp_signal_ok).
 * Pages of dead processes found in the directories looked at are removed.
 *
 * Exit status: 0 done or pending, 1 usage, a failure or a --wake refused
 * (one line on stderr per process saying what, which process, why and what
 * to do).
 */
#define _GNU_SOURCE
#include "cli.h"
#include "ctl_page.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CTL_SIGVAL 0x6d6c6b01 /* shim/control/control.c */
#define CTL_CMD_STATUS 3u     /* not written: status only reads the page */
#define CTL_WAIT_MS 1000      /* how long start/stop wait for an idle one */
#define CTL_BUSY_MS 5000      /* ... and for one that used CPU meanwhile */
#define CTL_WAKE_MS 300       /* --wake: when a silent process is woken */

static void usage(FILE *o)
{
	fputs(
	    "usage: mallock ctl start|stop|status [--wake] PID\n"
	    "       mallock ctl start|stop|status [--wake] --tree PID\n"
	    "       mallock ctl start|stop|status [--wake] --exe NAME\n"
	    "  start   switch recording on (MALLOCK_START=paused, or after "
	    "stop)\n"
	    "  stop    switch recording off; the trace is complete up to here\n"
	    "  status  print the recording state, the trace path and its size "
	    "(reads the\n          page only: never signals)\n"
	    "  --tree  PID and all its descendants that run under the shim\n"
	    "  --exe   every process of that executable running under the "
	    "shim\n"
	    "  --wake  start/stop: a process that has not answered within "
	    "300 ms gets its\n          MALLOCK_SIGNAL, only if its page "
	    "says the handler is still the shim's\n"
	    "A request no allocation or lock call has served within 1 s (5 s "
	    "if the process\nran meanwhile) stays pending: the process "
	    "applies it at its next such call.\n",
	    o);
}

/* ---- what /proc says about a process ---- */

typedef struct proc {
	long pid, ppid;
	uint64_t start;      /* stat field 22 */
	unsigned uid[4];     /* real, effective, saved, fs */
	int maps_ok;         /* /proc/PID/maps was readable */
	int shim;            /* it maps libmallock */
	char page[1100];     /* the page it maps ("" if none or unknown) */
	char page_range[64]; /* its map_files name */
	uint64_t sig_caught; /* SigCgt */
	char comm[32];
} proc_t;

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

/* stat: ppid (field 4), start time (field 22), comm. -1 if no process. */
static int proc_stat(long pid, proc_t *p)
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

static int proc_read(long pid, proc_t *p)
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

/* Nonzero if some thread of pid does not block sig (the wake-up would then
 * reach a handler rather than sit pending or go to a sigwait). */
static int sig_deliverable(long pid, int sig)
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

/* The value of NAME= in /proc/PID/environ into out ("" if absent or
 * unreadable). */
static void target_env(long pid, const char *name, char *out, size_t cap)
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

/* ---- pages ---- */

/* Removes the pages of dead processes (or of earlier processes with the
 * same pid) from the directory dfd. */
static void sweep_stale(int dfd)
{
	int d2 = dup(dfd);
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	if (!d) {
		if (d2 >= 0)
			close(d2);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (pid <= 0 || strcmp(end, ".page"))
			continue;
		int fd =
		    openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		ctl_page_t pg;
		ssize_t n = pread(fd, &pg, sizeof pg, 0);
		close(fd);
		proc_t p;
		int alive = proc_stat(pid, &p) == 0;
		if (n == (ssize_t)sizeof pg &&
		    (!alive || (pg.magic == CTLP_MAGIC && pg.start_time &&
		                pg.start_time != p.start)))
			unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
}

typedef struct target {
	proc_t p;
	int fd;
	ctl_page_t *pg;
	char where[1200];
	uint64_t req;
	uint64_t cpu; /* utime + stime when the request was written */
	int signalled, done;
} target_t;

/* Opens <dir>/<pid>.page for a page owner uid; -1 with why. */
static int page_in_dir(const char *dir, unsigned uid, long pid, int *dfd_out,
                       char *why, size_t wcap)
{
	const char *dwhy = "";
	int dfd = ctlp_dir_open(dir, uid, 0, &dwhy);
	if (dfd < 0) {
		snprintf(why, wcap, "%.900s %s", dir, dwhy);
		return -1;
	}
	sweep_stale(dfd);
	char name[32];
	ctlp_name(name, sizeof name, (uint32_t)pid);
	int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		snprintf(why, wcap, "no %.900s/%s", dir, name);
		close(dfd);
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != uid ||
	    st.st_nlink != 1 || st.st_size != CTLP_SIZE) {
		snprintf(why, wcap,
		         "%.900s/%s is not a control page of uid %u "
		         "(wrong type, owner, links or size)",
		         dir, name, uid);
		close(fd);
		close(dfd);
		return -1;
	}
	*dfd_out = dfd;
	return fd;
}

/*
 * Finds and authenticates pid's page (see the file comment). Returns 0 with
 * t->pg mapped, or -1 after printing why (nothing was written or sent).
 * quiet: say nothing about a process that does not run under the shim.
 */
static int target_open(target_t *t, long pid, int quiet)
{
	memset(t, 0, sizeof *t);
	t->fd = -1;
	proc_t *p = &t->p;
	if (proc_read(pid, p) != 0) {
		fprintf(stderr, "mallock ctl: no process %ld\n", pid);
		return -1;
	}
	if (p->maps_ok && !p->shim) {
		if (!quiet)
			fprintf(stderr,
			        "mallock ctl: process %ld (%s) does not "
			        "run under libmallock.so (start it with "
			        "LD_PRELOAD, or use `mallock attach`)\n",
			        pid, p->comm);
		return -1;
	}
	uid_t me = geteuid();
	unsigned euid = p->uid[1];
	if (me != 0 && me != euid) {
		fprintf(
		    stderr,
		    "mallock ctl: process %ld (%s) runs as uid %u, "
		    "not as you (uid %u): run `mallock ctl` as uid %u or as "
		    "root\n",
		    pid, p->comm, euid, (unsigned)me, euid);
		return -1;
	}
	int dfd = -1;
	char why[1400] = "";
	if (me == 0 && p->page[0]) {
		/* The file the process maps now, whatever its directory. */
		char mf[128];
		snprintf(mf, sizeof mf, "/proc/%ld/map_files/%s", pid,
		         p->page_range);
		t->fd = open(mf, O_RDWR | O_CLOEXEC);
		snprintf(t->where, sizeof t->where, "%s", p->page);
		if (t->fd < 0)
			snprintf(why, sizeof why, "cannot open %s: %s", mf,
			         strerror(errno));
	} else if (me == 0 && p->maps_ok) {
		snprintf(why, sizeof why,
		         "it maps no control page (its "
		         "stderr says why: a refused directory, or it started "
		         "before this mallock version)");
	} else {
		/* Where the shim puts it for this uid (shim/control/control.c).
		 */
		char dirs[3][1100];
		int nd = 0;
		target_env(pid, "MALLOCK_CTL_DIR", dirs[nd], sizeof dirs[0]);
		if (dirs[nd][0] == '/')
			nd++;
		target_env(pid, "XDG_RUNTIME_DIR", dirs[nd],
		           sizeof dirs[0] - 9);
		if (dirs[nd][0] == '/') {
			strcat(dirs[nd], "/mallock");
			nd++;
		}
		ctlp_default_dir(dirs[nd++], sizeof dirs[0], euid);
		for (int i = 0; i < nd && t->fd < 0; i++) {
			size_t l = strlen(why);
			if (l)
				l += (size_t)snprintf(why + l, sizeof why - l,
				                      "; ");
			t->fd = page_in_dir(dirs[i], euid, pid, &dfd, why + l,
			                    sizeof why - l);
			if (t->fd >= 0)
				snprintf(t->where, sizeof t->where,
				         "%.1100s/%ld.page", dirs[i], pid);
		}
		if (t->fd < 0 && !p->maps_ok && euid != 0 && me != 0)
			snprintf(why + strlen(why), sizeof why - strlen(why),
			         "; if it started as root and changed user by "
			         "other means than setuid/setreuid/setresuid, "
			         "run `mallock ctl` as root");
	}
	if (t->fd < 0) {
		if (!quiet || p->shim)
			fprintf(stderr,
			        "mallock ctl: process %ld (%s): no "
			        "usable control page: %s\n",
			        pid, p->comm, why);
		return -1;
	}
	t->pg =
	    mmap(NULL, CTLP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (t->pg == MAP_FAILED) {
		t->pg = NULL;
		fprintf(stderr, "mallock ctl: cannot map %s: %s\n", t->where,
		        strerror(errno));
		goto fail;
	}
	ctl_page_t *pg = t->pg;
	const char *bad = NULL;
	int stale = 0;
	if (pg->magic != CTLP_MAGIC || pg->layout != CTLP_LAYOUT)
		bad = "is not a control page of this mallock version";
	else if (pg->pid != (uint32_t)pid)
		bad = "names another process";
	else if (pg->start_time != p->start)
		bad = "was left by an earlier process with this pid", stale = 1;
	else if (pg->state == CTLP_EXITED)
		bad = "was left by a process that exited", stale = 1;
	else if (!p->maps_ok) {
		/* Liveness without /proc/PID/maps: its lock on the page. */
		struct flock lk = {.l_type = F_WRLCK,
		                   .l_whence = SEEK_SET,
		                   .l_start = 0,
		                   .l_len = 1};
		if (fcntl(t->fd, F_GETLK, &lk) != 0 || lk.l_type == F_UNLCK ||
		    lk.l_pid != (pid_t)pid)
			bad = "is not held open by the process (it exec'd "
			      "another program, or closed the shim's files)",
			stale = 1;
	}
	if (!bad && pg->signal && !ctlp_signal_ok(pg->signal))
		bad = "names a signal MALLOCK_SIGNAL never allows";
	if (bad) {
		fprintf(stderr,
		        "mallock ctl: process %ld (%s): refused: %s "
		        "%s%s; no signal sent\n",
		        pid, p->comm, t->where, bad,
		        stale && dfd >= 0 ? " (removed)" : "");
		if (stale && dfd >= 0) {
			char name[32];
			ctlp_name(name, sizeof name, (uint32_t)pid);
			unlinkat(dfd, name, 0);
		}
		goto fail;
	}
	if (dfd >= 0)
		close(dfd);
	return 0;
fail:
	if (t->pg)
		munmap(t->pg, CTLP_SIZE);
	t->pg = NULL;
	close(t->fd);
	if (dfd >= 0)
		close(dfd);
	return -1;
}

static void target_close(target_t *t)
{
	if (t->pg)
		munmap(t->pg, CTLP_SIZE);
	if (t->fd >= 0)
		close(t->fd);
}

/* A consistent copy of the page (its seqlock). */
static void page_copy(const ctl_page_t *pg, ctl_page_t *out)
{
	for (int i = 0; i < 1000; i++) {
		uint32_t g = __atomic_load_n(&pg->gen, __ATOMIC_ACQUIRE);
		if (g & 1)
			continue;
		memcpy(out, pg, sizeof *out);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&pg->gen, __ATOMIC_RELAXED) == g)
			break;
	}
	out->why[sizeof out->why - 1] = out->trace[sizeof out->trace - 1] = 0;
}

/* The trace line: the file's size when it exists (the page's count is
 * rewritten only when the process serves a request), "not created yet"
 * when it does not. */
static void trace_print(const ctl_page_t *c)
{
	struct stat st;
	if (!c->trace[0]) {
		printf("  trace: none yet (created at the process's first "
		       "recorded event)\n");
	} else if (c->trace[0] != '/' || stat(c->trace, &st) != 0) {
		if (c->trace[0] == '/' && errno == ENOENT)
			printf("  trace %s: not created yet (at the process's "
			       "first recorded event)\n",
			       c->trace);
		else
			printf("  trace %s, %llu bytes (when last served)\n",
			       c->trace, (unsigned long long)c->bytes);
	} else {
		printf("  trace %s, %llu bytes\n", c->trace,
		       (unsigned long long)st.st_size);
	}
}

/* The request on the page that the process has not served yet: its
 * command (CTLP_CMD_START or _STOP), or 0. */
static unsigned pending_cmd(const ctl_page_t *pg)
{
	uint64_t r = __atomic_load_n(&pg->request, __ATOMIC_ACQUIRE);
	uint64_t d = __atomic_load_n(&pg->served, __ATOMIC_ACQUIRE);
	unsigned cmd = (unsigned)(r & 3);
	return r != d && (cmd == CTLP_CMD_START || cmd == CTLP_CMD_STOP) ? cmd
	                                                                 : 0;
}

#define PENDING_TEXT "applied at the process's next allocation or lock call"

static void status_print(const target_t *t)
{
	ctl_page_t c;
	page_copy(t->pg, &c);
	printf("pid %ld: %s (%s)\n", t->p.pid, ctlp_state_name(c.state), c.why);
	unsigned cmd = pending_cmd(t->pg);
	if (cmd)
		printf("  pending: `mallock ctl %s`, " PENDING_TEXT "\n",
		       cmd == CTLP_CMD_START ? "start" : "stop");
	trace_print(&c);
}

/* start/stop not answered: the request stays on the page. */
static void pending_print(const target_t *t, unsigned cmd)
{
	ctl_page_t c;
	page_copy(t->pg, &c);
	printf("pid %ld: pending: " PENDING_TEXT " (`%s` written to its page; "
	       "%s)\n  until then: %s (%s)\n",
	       t->p.pid, cmd == CTLP_CMD_START ? "start" : "stop",
	       t->signalled == 1 ? "woken by its signal, it made no such call "
	                           "since"
	                         : "it made none while ctl waited",
	       ctlp_state_name(c.state), c.why);
	trace_print(&c);
}

/* utime + stime of pid (stat fields 14 and 15), 0 if unknown. */
static uint64_t proc_cpu(long pid)
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

static void request(target_t *t, unsigned cmd)
{
	t->cpu = proc_cpu(t->p.pid);
	uint64_t cur = __atomic_load_n(&t->pg->request, __ATOMIC_RELAXED);
	t->req = (((cur >> 2) + 1) << 2) | cmd;
	__atomic_store_n(&t->pg->request, t->req, __ATOMIC_RELEASE);
}

static int answered(const target_t *t)
{
	return __atomic_load_n(&t->pg->served, __ATOMIC_ACQUIRE) == t->req;
}

/*
 * --wake: sends the page's signal only when the shim can show the handler
 * is its own: the page's wake_sig names the signal (the shim installed its
 * handler and no sigaction/signal/rt_sigaction call of the program has
 * named that signal since), the kernel says it is caught (SigCgt), and some
 * thread does not block it. Otherwise prints one line and returns -1.
 */
static int wake(target_t *t)
{
	int sig = __atomic_load_n(&t->pg->signal, __ATOMIC_RELAXED);
	const char *bad = NULL;
	char buf[200];
	proc_t now;
	t->signalled = -1;
	if (!sig)
		bad = "it has no control signal (it was started without "
		      "MALLOCK_SIGNAL, or the program handled that signal "
		      "first)";
	else if (!ctlp_signal_ok(sig))
		bad = "its page names a signal MALLOCK_SIGNAL never allows";
	else if (t->pg->attached)
		bad = "the shim was attached: it does not see the program's "
		      "sigaction calls, so it cannot show the handler is its "
		      "own";
	else if (__atomic_load_n(&t->pg->wake_sig, __ATOMIC_ACQUIRE) != sig) {
		snprintf(buf, sizeof buf,
		         "the handler of signal %d is not the shim's (the "
		         "program set its own since the shim started)",
		         sig);
		bad = buf;
	} else if (proc_read(t->p.pid, &now) != 0 || now.start != t->p.start)
		bad = "the process is gone";
	else if (!(now.sig_caught & (1ull << (sig - 1)))) {
		snprintf(buf, sizeof buf,
		         "the kernel says signal %d is not caught "
		         "(/proc/%ld/status SigCgt)",
		         sig, t->p.pid);
		bad = buf;
	} else if (!sig_deliverable(t->p.pid, sig)) {
		snprintf(buf, sizeof buf,
		         "every thread blocks signal %d (it would wait, "
		         "pending, for a thread that unblocks it)",
		         sig);
		bad = buf;
	}
	/* The word again, as late as possible before the send. */
	if (!bad && __atomic_load_n(&t->pg->wake_sig, __ATOMIC_SEQ_CST) != sig)
		bad = "the program has just set its own handler";
	if (bad) {
		fprintf(stderr,
		        "mallock ctl: process %ld (%s): --wake refused: %s; "
		        "no signal sent, the request stays pending\n",
		        t->p.pid, t->p.comm, bad);
		return -1;
	}
	union sigval v = {.sival_int = CTL_SIGVAL};
	if (sigqueue((pid_t)t->p.pid, sig, v) == 0)
		t->signalled = 1;
	return 0;
}

/* Children of each pid, from /proc. Returns the pids of root's tree. */
static long *tree_pids(long root, size_t *n)
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

/* Processes whose executable (or comm) is name. */
static long *exe_pids(const char *name, size_t *n)
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

int cmd_ctl(int argc, char **argv)
{
	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	int do_wake = 0;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--wake")) {
			do_wake = 1;
			memmove(argv + i, argv + i + 1,
			        (size_t)(argc - i) * sizeof *argv);
			argc--;
			break;
		}
	if (argc != 3 && argc != 4) {
		usage(stderr);
		return 1;
	}
	const char *cmd = argv[1];
	unsigned code = !strcmp(cmd, "start")    ? CTLP_CMD_START
	                : !strcmp(cmd, "stop")   ? CTLP_CMD_STOP
	                : !strcmp(cmd, "status") ? CTL_CMD_STATUS
	                                         : 0;
	if (!code) {
		usage(stderr);
		return 1;
	}
	if (do_wake && code == CTL_CMD_STATUS) {
		fprintf(stderr, "mallock ctl: status never signals: --wake is "
		                "for start and stop\n");
		return 1;
	}
	const char *mode = argc == 4 ? argv[2] : "";
	const char *arg = argv[argc - 1];
	long *pids = NULL;
	size_t n = 0;
	int group = 1;
	if (!strcmp(mode, "--exe")) {
		pids = exe_pids(arg, &n);
	} else if (!*mode || !strcmp(mode, "--tree")) {
		long pid;
		if (cli_number("ctl", "process id", arg, 1, CLI_PID_MAX, &pid))
			return 1;
		if (*mode) {
			pids = tree_pids(pid, &n);
		} else {
			pids = malloc(sizeof *pids);
			pids[0] = pid;
			n = 1;
			group = 0;
		}
	} else {
		usage(stderr);
		return 1;
	}
	/* The operator's own directory: pages of dead processes go. */
	char own[64];
	const char *why;
	ctlp_default_dir(own, sizeof own, (uint32_t)geteuid());
	int ofd = ctlp_dir_open(own, (uint32_t)geteuid(), 0, &why);
	if (ofd >= 0) {
		sweep_stale(ofd);
		close(ofd);
	}
	target_t *ts = calloc(n ? n : 1, sizeof *ts);
	size_t ok = 0;
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		if (target_open(&ts[ok], pids[i], group) == 0) {
			if (code != CTL_CMD_STATUS)
				request(&ts[ok], code);
			ok++;
		} else if (!group || ts[ok].p.shim)
			failed = 1;
	}
	if (!ok) {
		if (group)
			fprintf(stderr,
			        "mallock ctl: no process %s %s runs "
			        "under libmallock.so with a usable control "
			        "page\n",
			        !strcmp(mode, "--exe") ? "named"
			                               : "in the tree of",
			        arg);
		free(pids);
		free(ts);
		return 1;
	}
	if (code == CTL_CMD_STATUS) {
		/* Read-only: the page's state is true until the process's next
		 * hook call changes it. */
		for (size_t k = 0; k < ok; k++) {
			status_print(&ts[k]);
			target_close(&ts[k]);
		}
		free(pids);
		free(ts);
		return failed;
	}
	/* Wait for every answer; with --wake, wake the silent ones (whose
	 * handler is the shim's) after CTL_WAKE_MS and give them as long
	 * again. */
	size_t left = ok;
	int limit = CTL_WAIT_MS / 10;
	for (int i = 0; i < limit && left; i++) {
		struct timespec tsl = {0, 10 * 1000 * 1000};
		nanosleep(&tsl, NULL);
		for (size_t k = 0; k < ok; k++) {
			target_t *t = &ts[k];
			if (t->done)
				continue;
			if (answered(t)) {
				t->done = 1;
				left--;
				status_print(t);
			} else if (i == CTL_WAIT_MS / 10 - 1 &&
			           proc_cpu(t->p.pid) != t->cpu) {
				/* Not idle (it ran meanwhile: a loaded
				 * machine): worth the longer wait. */
				if (limit < CTL_BUSY_MS / 10)
					limit = CTL_BUSY_MS / 10;
			} else if (do_wake && i == CTL_WAKE_MS / 10 &&
			           !t->signalled) {
				if (wake(t) != 0)
					failed = 1;
				else
					limit = i + CTL_WAIT_MS / 10;
			}
		}
	}
	for (size_t k = 0; k < ok; k++) {
		target_t *t = &ts[k];
		if (!t->done)
			pending_print(t, code);
		target_close(t);
	}
	free(pids);
	free(ts);
	return failed;
}
