/*
 * ctl_client.c - opens, authenticates and drives a traced process's
 * control page (ctl_client.h; the rules are in its file comment).
 *
 * Invariants: a page is mapped only after its file passed the owner, type,
 * link-count and size checks, and written only after its contents named
 * this pid and its start time; a stale page is removed only through a
 * directory that ctlp_dir_open checked (owner, mode, no symlink).
 */
#define _GNU_SOURCE
#include "ctl_client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CTL_SIGVAL 0x6d6c6b01 /* shim/control/control.c */

void ctl_sweep_stale(int dfd)
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
	ctl_sweep_stale(dfd);
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

const char *ctl_who = "mallock ctl";

int ctl_target_open(ctl_target_t *t, long pid, int quiet)
{
	memset(t, 0, sizeof *t);
	t->fd = -1;
	proc_t *p = &t->p;
	bool mute = quiet > 1;
	if (proc_read(pid, p) != 0) {
		if (!mute)
			fprintf(stderr, "%s: no process %ld\n", ctl_who, pid);
		return -1;
	}
	if (p->maps_ok && !p->shim) {
		if (!quiet)
			fprintf(stderr,
			        "%s: process %ld (%s) does not "
			        "run under libmallock.so (start it with "
			        "LD_PRELOAD, or use `mallock attach`)\n",
			        ctl_who, pid, p->comm);
		return -1;
	}
	uid_t me = geteuid();
	unsigned euid = p->uid[1];
	if (me != 0 && me != euid) {
		if (!mute)
			fprintf(stderr,
			        "%s: process %ld (%s) runs as uid %u, "
			        "not as you (uid %u): run `%s` as uid %u or as "
			        "root\n",
			        ctl_who, pid, p->comm, euid, (unsigned)me,
			        ctl_who, euid);
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
		proc_env(pid, "MALLOCK_CTL_DIR", dirs[nd], sizeof dirs[0]);
		if (dirs[nd][0] == '/')
			nd++;
		proc_env(pid, "XDG_RUNTIME_DIR", dirs[nd], sizeof dirs[0] - 9);
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
			         "run `%s` as root",
			         ctl_who);
	}
	if (t->fd < 0) {
		if (!mute && (!quiet || p->shim))
			fprintf(stderr,
			        "%s: process %ld (%s): no "
			        "usable control page: %s\n",
			        ctl_who, pid, p->comm, why);
		return -1;
	}
	t->pg =
	    mmap(NULL, CTLP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (t->pg == MAP_FAILED) {
		t->pg = NULL;
		if (!mute)
			fprintf(stderr, "%s: cannot map %s: %s\n", ctl_who,
			        t->where, strerror(errno));
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
	else if (pg->state == CTLP_DETACHED)
		bad = "says `mallock detach` ended its recording (the shim "
		      "stays loaded, unused: nothing is recorded)";
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
		if (!mute)
			fprintf(stderr,
			        "%s: process %ld (%s): refused: %s "
			        "%s%s; no signal sent\n",
			        ctl_who, pid, p->comm, t->where, bad,
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

void ctl_target_close(ctl_target_t *t)
{
	if (t->pg)
		munmap(t->pg, CTLP_SIZE);
	if (t->fd >= 0)
		close(t->fd);
}

void ctl_page_copy(const ctl_page_t *pg, ctl_page_t *out)
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

unsigned ctl_pending_cmd(const ctl_page_t *pg)
{
	uint64_t r = __atomic_load_n(&pg->request, __ATOMIC_ACQUIRE);
	uint64_t d = __atomic_load_n(&pg->served, __ATOMIC_ACQUIRE);
	unsigned cmd = (unsigned)(r & 3);
	return r != d && (cmd == CTLP_CMD_START || cmd == CTLP_CMD_STOP) ? cmd
	                                                                 : 0;
}

void ctl_request(ctl_target_t *t, unsigned cmd)
{
	t->cpu = proc_cpu(t->p.pid);
	uint64_t cur = __atomic_load_n(&t->pg->request, __ATOMIC_RELAXED);
	t->req = (((cur >> 2) + 1) << 2) | cmd;
	__atomic_store_n(&t->pg->request, t->req, __ATOMIC_RELEASE);
}

int ctl_answered(const ctl_target_t *t)
{
	return __atomic_load_n(&t->pg->served, __ATOMIC_ACQUIRE) == t->req;
}

int ctl_wake(ctl_target_t *t)
{
	int sig = __atomic_load_n(&t->pg->signal, __ATOMIC_RELAXED);
	const char *bad = NULL;
	char buf[900];
	proc_t now;
	proc_wake_t w = {0};
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
	} else if (!proc_sig_deliverable(t->p.pid, sig)) {
		snprintf(buf, sizeof buf,
		         "every thread blocks signal %d (it would wait, "
		         "pending, for a thread that unblocks it)",
		         sig);
		bad = buf;
	} else if (proc_wake_pick(t->p.pid, sig, &w) != 0) {
		snprintf(buf, sizeof buf,
		         "no thread may be interrupted safely (a signal makes "
		         "poll, epoll_wait, select, nanosleep, accept and the "
		         "like fail with EINTR, which a program may not "
		         "survive); its threads: %s",
		         w.threads);
		bad = buf;
	}
	/* The word again, as late as possible before the send. */
	if (!bad && __atomic_load_n(&t->pg->wake_sig, __ATOMIC_SEQ_CST) != sig)
		bad = "the program has just set its own handler";
	if (bad) {
		fprintf(stderr,
		        "%s: process %ld (%s): --wake refused: %s; "
		        "no signal sent, the request stays pending\n",
		        ctl_who, t->p.pid, t->p.comm, bad);
		return -1;
	}
	/* To that thread alone (sigqueue would let the kernel choose any
	 * thread that does not block it), with the value the shim's handler
	 * looks for. */
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = CTL_SIGVAL;
	t->wake_threads = w.nthreads;
	if (syscall(SYS_rt_tgsigqueueinfo, (pid_t)t->p.pid, (pid_t)w.tid, sig,
	            &si) == 0) {
		t->signalled = 1;
		t->wake_tid = w.tid;
		snprintf(t->wake_call, sizeof t->wake_call, "%s", w.call);
	}
	return 0;
}
