/*
 * ctl.c - `mallock ctl start|stop|status`: switches the recording of
 * processes running under the shim (docs/server.md), one pid, a process
 * and its descendants (--tree), or every traced process of one program
 * (--exe).
 *
 * Protocol (format/ctl_page.h; shim/control/control.h is the other side): each
 * traced process maps <dir>/<pid>.page. `ctl` writes a request word there
 * and waits up to 5 s for the process to copy it to `served`; the shim
 * polls the word (every hook call while paused, every 10 ms while
 * recording), so no signal is needed. Only when a process has not answered
 * after 300 ms, and the signal would reach the shim's handler (caught, and
 * not blocked by some thread), is the page's signal sent as a wake-up.
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
 * Exit status: 0 done, 1 usage or failure (one line on stderr per process
 * saying what, which process, why and what to do).
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
#define CTL_CMD_STATUS 3u     /* a refresh: the shim rewrites its state */

static void usage(FILE *o)
{
	fputs(
	    "usage: mallock ctl start|stop|status PID\n"
	    "       mallock ctl start|stop|status --tree PID\n"
	    "       mallock ctl start|stop|status --exe NAME\n"
	    "  start   switch recording on (MALLOCK_START=paused, or after "
	    "stop)\n"
	    "  stop    switch recording off; the trace is complete up to here\n"
	    "  status  print the recording state, the trace path and its size\n"
	    "  --tree  PID and all its descendants that run under the shim\n"
	    "  --exe   every process of that executable running under the "
	    "shim\n",
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

static void status_print(const target_t *t)
{
	ctl_page_t c;
	page_copy(t->pg, &c);
	printf("pid %ld: %s (%s)\n  trace %s, %llu bytes\n", t->p.pid,
	       ctlp_state_name(c.state), c.why,
	       c.trace[0] ? c.trace : "(created at its first write)",
	       (unsigned long long)c.bytes);
}

static void request(target_t *t, unsigned cmd)
{
	uint64_t cur = __atomic_load_n(&t->pg->request, __ATOMIC_RELAXED);
	t->req = (((cur >> 2) + 1) << 2) | cmd;
	__atomic_store_n(&t->pg->request, t->req, __ATOMIC_RELEASE);
}

static int answered(const target_t *t)
{
	return __atomic_load_n(&t->pg->served, __ATOMIC_ACQUIRE) == t->req;
}

/* Sends the wake-up if it would reach the shim's handler. */
static void wake(target_t *t)
{
	int sig = t->pg->signal;
	t->signalled = -1;
	if (!sig || !ctlp_signal_ok(sig))
		return;
	proc_t now;
	if (proc_read(t->p.pid, &now) != 0 || now.start != t->p.start)
		return;
	if (!(now.sig_caught & (1ull << (sig - 1))) ||
	    !sig_deliverable(t->p.pid, sig))
		return;
	union sigval v = {.sival_int = CTL_SIGVAL};
	if (sigqueue((pid_t)t->p.pid, sig, v) == 0)
		t->signalled = 1;
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
		if (target_open(&ts[ok], pids[i], group) == 0)
			request(&ts[ok++], code);
		else if (!group || ts[ok].p.shim)
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
	/* Wait for every answer; wake up the slow ones after 300 ms. */
	size_t left = ok;
	for (int i = 0; i < 500 && left; i++) {
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
			} else if (i == 30 && !t->signalled) {
				wake(t);
			}
		}
	}
	for (size_t k = 0; k < ok; k++) {
		target_t *t = &ts[k];
		if (!t->done) {
			if (code == CTL_CMD_STATUS) {
				/* An idle process: its last state is still
				 * true (it changes only at a hook call). */
				status_print(t);
			} else {
				int sig = t->pg->signal;
				fprintf(
				    stderr,
				    "mallock ctl: process %ld (%s) has not "
				    "answered within 5 s: it made no "
				    "allocation or lock call (idle)%s; the "
				    "request stays on its page and applies at "
				    "its next call\n",
				    t->p.pid, t->p.comm,
				    t->signalled == 1
				        ? "; the wake-up signal was sent, "
				          "but no such call followed it (or "
				          "the program replaced the shim's "
				          "handler)"
				    : sig ? ", and its threads block the "
				            "wake-up signal"
				          : " (it has no wake-up signal)");
				failed = 1;
			}
		}
		target_close(t);
	}
	free(pids);
	free(ts);
	return failed;
}
