/*
 * control.c - recording windows (control.h): start state, the control page
 * and signal, MALLOCK_DURATION and MALLOCK_MAX_BYTES.
 *
 * Invariants:
 * - The signal handler touches only atomics (async-signal-safe) and errno.
 * - Recording is switched by one thread at a time (ctl_serving), always at
 *   a hook entry of that thread (gate READY or UNINIT, never inside a hook),
 *   so the MARK record it writes is an ordinary event of its own buffer.
 * - Resume: the MARK's time is read before the pause bit is cleared, so
 *   every event of the window is later than its RESUME mark. Pause: events
 *   of threads already past their gate may still land after the PAUSE mark
 *   (a lock wait in progress); the analyzer forgets holds at both marks.
 * - The page's state fields are written only under ctl_serving or while
 *   the process is single-threaded (init, fork child, exit).
 * - Files: the directory is opened once (ctlp_dir_open: no symlink, ours,
 *   0700) and kept as a high fd, checked by device and inode before each
 *   use; files are created with openat/renameat relative to it. Only
 *   syscalls, no allocation.
 */
#include "control.h"

#include "attach.h"
#include "config.h"
#include "hook.h"
#include "note.h"
#include "prim.h"
#include "process.h"
#include "thread.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MALLOCK_VERSION
#define MALLOCK_VERSION "0"
#endif

/* The sigval `mallock ctl` sends with sigqueue: "look at your page". */
#define CTL_SIGVAL 0x6d6c6b01
/* How often a recording process looks at its page. */
#define CTL_POLL_MS 10

static ctl_page_t ctl_none; /* the page while there is none */
ctl_page_t *g_ctl_page = &ctl_none;
uint64_t g_ctl_seen;
_Atomic uint32_t g_flush_gen;

static _Atomic unsigned ctl_toggles;      /* plain signals not yet served */
static _Atomic int ctl_request;           /* a sigqueue'd request is pending */
static _Atomic int ctl_deadline_hit;      /* MALLOCK_DURATION elapsed */
static _Atomic int ctl_dirty;             /* the page's trace path changed */
static uint64_t ctl_end_tsc = UINT64_MAX; /* MALLOCK_DURATION's deadline */
static uint64_t ctl_poll_ticks;
static _Atomic uint32_t ctl_flush_req; /* the page's flush_req applied */
static atomic_flag ctl_flush_busy;     /* a thread applies flush_req */
static _Atomic int ctl_cap_pending;    /* the cap NOTE is not written yet */
static _Atomic int ctl_cap_warned;
static atomic_flag ctl_serving = ATOMIC_FLAG_INIT;
static _Atomic int ctl_signal_seen; /* a sigqueue'd wake-up arrived */
static int ctl_signal;              /* installed signal, 0: none */
/* The kernel's handler for ctl_signal is still ctl_handler: no sigaction,
 * signal or rt_sigaction call of the program's has named ctl_signal since
 * (ctl_signal_change). Mirrored in the page's wake_sig. */
static _Atomic int ctl_handler_mine;
static const char *ctl_last_why = "start";
static uint32_t ctl_start_uid;   /* euid at start */
static _Atomic int ctl_recorded; /* ctl_ever_recorded() */
/* The directory (fd, its owner, device and inode) and the page's fd. */
static int ctl_dir_fd = -1, ctl_page_fd = -1;
static uint32_t ctl_dir_uid;
static dev_t ctl_dir_dev;
static ino_t ctl_dir_ino;
/* The directory's path, and the page file's device and inode: the page is
 * removed at exit even after the host closed every fd of ours. */
static char ctl_dir_path[CONFIG_PATH_MAX];
static dev_t ctl_page_dev;
static ino_t ctl_page_ino;

/* ---- files ---- */

/* The control directory for uid (see control.h) opened as an fd kept high
 * (its path into path), or -1 after a warning (quiet: no warning). */
static int dir_open(uint32_t uid, int quiet, char path[CONFIG_PATH_MAX])
{
	const char *xdg = prim_getenv("XDG_RUNTIME_DIR");
	const char *why = "";
	int fd = -1;
	if (g_cfg.ctl_dir[0]) {
		snprintf(path, CONFIG_PATH_MAX, "%s", g_cfg.ctl_dir);
		fd = ctlp_dir_open(path, uid, 1, &why);
		if (fd < 0 && uid == ctl_start_uid) {
			if (!quiet)
				shim_warn(
				    "control directory %s (MALLOCK_CTL_DIR) "
				    "%s: `mallock ctl` is off for this "
				    "process",
				    path, why);
			return -1;
		}
	}
	/* $XDG_RUNTIME_DIR is used only when it is the user's own (a root
	 * service started with a user's environment must not write there). */
	if (fd < 0 && uid == ctl_start_uid && xdg && xdg[0] == '/' &&
	    strlen(xdg) < CONFIG_PATH_MAX - 64) {
		snprintf(path, CONFIG_PATH_MAX, "%s/mallock", xdg);
		fd = ctlp_dir_open(path, uid, 1, &why);
	}
	if (fd < 0) {
		ctlp_default_dir(path, CONFIG_PATH_MAX, uid);
		fd = ctlp_dir_open(path, uid, uid == geteuid(), &why);
	}
	if (fd < 0) {
		if (!quiet)
			shim_warn(
			    "control directory %s %s: `mallock ctl` is off "
			    "for this process",
			    path, why);
		return -1;
	}
	return prim_fd_high(fd);
}

/* Adopts fd (at path) as the control directory of uid. */
static void dir_set(int fd, uint32_t uid, const char *path)
{
	struct stat st;
	snprintf(ctl_dir_path, sizeof ctl_dir_path, "%s", path);
	if (ctl_dir_fd >= 0 && ctl_dir_fd != fd)
		prim_close(ctl_dir_fd);
	ctl_dir_fd = fd;
	ctl_dir_uid = uid;
	prim_fd_keep(PRIM_KEEP_CTLDIR, fd);
	if (fd >= 0 && fstat(fd, &st) == 0) {
		ctl_dir_dev = st.st_dev;
		ctl_dir_ino = st.st_ino;
	}
}

/* Nonzero if ctl_dir_fd is still the directory we opened (a daemon may have
 * closed it and reused the number). */
static int dir_ok(void)
{
	struct stat st;
	return ctl_dir_fd >= 0 && fstat(ctl_dir_fd, &st) == 0 &&
	       S_ISDIR(st.st_mode) && st.st_dev == ctl_dir_dev &&
	       st.st_ino == ctl_dir_ino;
}

static uint32_t state_of(unsigned off)
{
	if (off & SHIM_OFF_STOPPED)
		return CTLP_STOPPED;
	if (off & SHIM_OFF_CAPPED)
		return CTLP_CAPPED;
	if (off & SHIM_OFF_PAUSED)
		return CTLP_PAUSED;
	return CTLP_RECORDING;
}

/* Rewrites the page's state under its seqlock (see the invariants). */
static void page_update(uint32_t state)
{
	ctl_page_t *pg = g_ctl_page;
	if (pg == &ctl_none)
		return;
	__atomic_fetch_add(&pg->gen, 1, __ATOMIC_ACQ_REL);
	pg->state = state;
	pg->signal = ctl_signal;
	pg->bytes = writer_bytes();
	const char *why = ctl_last_why;
	if (state == CTLP_STOPPED && writer_stop_why())
		why = writer_stop_why(); /* the real reason, not the request */
	snprintf(pg->why, sizeof pg->why, "%s", why);
	snprintf(pg->trace, sizeof pg->trace, "%s", g_trace_path);
	__atomic_fetch_add(&pg->gen, 1, __ATOMIC_RELEASE);
}

static void status_write(void)
{
	page_update(state_of(atomic_load(&g_off)));
}

/* The flush deadline in force: the process's own (MALLOCK_FLUSH_MS, 0:
 * none), or req ms (a reader's flush_req) when that is shorter; written
 * to pg's flush_ms. */
static void flush_set(ctl_page_t *pg, uint32_t req)
{
	uint64_t ms = (uint64_t)g_cfg.flush_ms;
	uint64_t want =
	    req < CTLP_FLUSH_MIN_MS && req ? CTLP_FLUSH_MIN_MS : req;
	if (want && (!ms || want < ms))
		ms = want;
	uint64_t hz = g_tsc_hz ? g_tsc_hz : 1000000000u;
	__atomic_store_n(&g_flush_ticks, ms ? hz / 1000 * ms : UINT64_MAX,
	                 __ATOMIC_RELAXED);
	atomic_store(&ctl_flush_req, req);
	__atomic_store_n(&pg->flush_ms, ms ? (uint32_t)ms : CTLP_FLUSH_NONE,
	                 __ATOMIC_RELEASE);
}

/* Applies the page's flush_req when it changed (a thread at a time: the
 * others see it at their next poll). */
static void flush_poll(void)
{
	ctl_page_t *pg = g_ctl_page;
	uint32_t req = __atomic_load_n(&pg->flush_req, __ATOMIC_RELAXED);
	if (req == atomic_load_explicit(&ctl_flush_req, memory_order_relaxed) ||
	    atomic_flag_test_and_set(&ctl_flush_busy))
		return;
	/* Read again under the flag: a later request than the one seen. */
	flush_set(pg, __atomic_load_n(&pg->flush_req, __ATOMIC_ACQUIRE));
	atomic_flag_clear(&ctl_flush_busy);
}

/*
 * Creates, maps and locks this process's page in the control directory of
 * the current euid (opened now if the one we have belongs to another
 * user). The identity fields are written before the file gets its name.
 * Returns 0 (g_ctl_page set, the previous page unmapped unless keep_old:
 * other threads may still be reading it) or -1 (g_ctl_page left as it was,
 * after a warning unless quiet).
 */
static int page_create(int quiet, int keep_old)
{
	uint32_t euid = (uint32_t)geteuid();
	if (!dir_ok() || ctl_dir_uid != euid) {
		char path[CONFIG_PATH_MAX];
		int fd = dir_open(euid, quiet, path);
		if (fd < 0)
			return -1;
		dir_set(fd, euid, path);
	}
	uint32_t pid = prim_getpid();
	char name[32], tmp[48];
	ctlp_name(name, sizeof name, pid);
	snprintf(tmp, sizeof tmp, "%s.tmp", name);
	unlinkat(ctl_dir_fd, tmp, 0);
	int fd =
	    openat(ctl_dir_fd, tmp,
	           O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, CTLP_SIZE) != 0)
		goto fail;
	fd = prim_fd_high(fd);
	ctl_page_t *pg =
	    mmap(NULL, CTLP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (pg == MAP_FAILED)
		goto fail;
	/* The lock says "this pid has the page open" (ctl_page.h). */
	struct flock lk = {
	    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	fcntl(fd, F_SETLK, &lk);
	pg->magic = CTLP_MAGIC;
	pg->layout = CTLP_LAYOUT;
	pg->pid = pid;
	pg->uid = euid;
	pg->start_uid = ctl_start_uid;
	pg->start_time = prim_start_time();
	snprintf(pg->version, sizeof pg->version, "%s", MALLOCK_VERSION);
	char exe[512];
	if (prim_exe_path(exe, sizeof exe) > 0) {
		const char *b = strrchr(exe, '/');
		b = b ? b + 1 : exe;
		size_t n = strnlen(b, sizeof pg->exe - 1);
		memcpy(pg->exe, b, n);
		pg->exe[n] = 0;
	}
	pg->attached = g_attached ? 1u : 0u;
	pg->cost_every = COST_EVERY; /* the cost_* sums are kept (cost.h) */
	flush_set(pg, 0);            /* a new page asks for no deadline */
	__atomic_store_n(&pg->wake_sig,
	                 atomic_load(&ctl_handler_mine) ? ctl_signal : 0,
	                 __ATOMIC_RELEASE);
	/* A request written to an earlier page (of the parent) is not ours. */
	__atomic_store_n(&pg->served, 0, __ATOMIC_RELAXED);
	if (renameat(ctl_dir_fd, tmp, ctl_dir_fd, name) != 0) {
		munmap(pg, CTLP_SIZE);
		goto fail;
	}
	if (g_ctl_page != &ctl_none && !keep_old)
		munmap(g_ctl_page, CTLP_SIZE);
	if (ctl_page_fd >= 0)
		prim_close(ctl_page_fd);
	ctl_page_fd = fd;
	prim_fd_keep(PRIM_KEEP_PAGE, fd);
	struct stat st;
	if (fstat(fd, &st) == 0) {
		ctl_page_dev = st.st_dev;
		ctl_page_ino = st.st_ino;
	}
	g_ctl_seen = 0;
	g_ctl_page = pg;
	g_cost_page = pg;
	return 0;
fail:
	if (!quiet)
		shim_warn("cannot create the control page %s: %s; `mallock "
		          "ctl` is off for this process",
		          name, prim_strerror(errno));
	if (fd >= 0) {
		prim_close(fd);
		unlinkat(ctl_dir_fd, tmp, 0);
	}
	return -1;
}

/*
 * Makes /tmp/<base> for uid, or finds it made: the directory gets its name
 * only once it is uid's (made as "<base>.<pid>.tmp", given to uid, then
 * renamed without replacing), so a process looking at the name never sees
 * it half made. Workers that drop to the same user at the same moment race
 * here: the loser's rename fails with EEXIST and it uses the winner's.
 * Returns 0 when the name is there (whoever made it), -1 with errno.
 */
static int dir_make_for(const char *base, uint32_t uid)
{
	const char *why = "";
	char tmp[96];
	int tfd = ctlp_dir_open("/tmp", 0, 0, &why);
	if (tfd < 0)
		tfd = open("/tmp",
		           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0)
		return -1;
	snprintf(tmp, sizeof tmp, "%s.%u.tmp", base, (unsigned)prim_getpid());
	unlinkat(tfd, tmp, AT_REMOVEDIR); /* an earlier process's, empty */
	int rc = -1, err = 0;
	if (mkdirat(tfd, tmp, 0700) != 0) {
		err = errno;
		goto out;
	}
	int nfd =
	    openat(tfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (nfd >= 0 && fstat(nfd, &st) == 0 && st.st_uid == 0 &&
	    fchown(nfd, uid, (gid_t)-1) == 0 &&
	    renameat2(tfd, tmp, tfd, base, RENAME_NOREPLACE) == 0) {
		rc = 0;
	} else {
		err = errno;
		unlinkat(tfd, tmp, AT_REMOVEDIR);
		if (err == EEXIST)
			rc = 0; /* another process made it first */
	}
	if (nfd >= 0)
		prim_close(nfd);
out:
	prim_close(tfd);
	errno = err;
	return rc;
}

void ctl_cred_drop(uint32_t uid)
{
	if (g_ctl_page == &ctl_none || geteuid() != 0 || uid == 0 ||
	    ctl_dir_uid == uid || !dir_ok())
		return;
	/* The new user's directory: made for the user if missing
	 * (dir_make_for); an existing one must already be the user's. */
	char path[CONFIG_PATH_MAX], base[64];
	const char *why = "";
	int fd = -1;
	if (g_cfg.ctl_dir[0])
		fd = ctlp_dir_open(g_cfg.ctl_dir, uid, 0, &why);
	if (fd >= 0)
		snprintf(path, sizeof path, "%s", g_cfg.ctl_dir);
	if (fd < 0) {
		ctlp_default_dir(path, sizeof path, uid);
		fd = ctlp_dir_open(path, uid, 0, &why);
	}
	if (fd < 0 && !strcmp(why, "does not exist")) {
		/* ctlp_default_dir is /tmp/mallock-<uid>. */
		snprintf(base, sizeof base, "mallock-%u", (unsigned)uid);
		if (dir_make_for(base, uid) == 0)
			fd = ctlp_dir_open(path, uid, 0, &why);
	}
	if (fd < 0) {
		shim_warn(
		    "the process becomes uid %u but its control directory "
		    "%s %s: only root can use `mallock ctl` on it",
		    (unsigned)uid, path, why);
		return;
	}
	char name[32];
	ctlp_name(name, sizeof name, prim_getpid());
	if (fchown(ctl_page_fd, uid, (gid_t)-1) != 0 ||
	    renameat(ctl_dir_fd, name, fd, name) != 0) {
		shim_warn("cannot move the control page to uid %u's directory: "
		          "%s; only root can use `mallock ctl` on it",
		          (unsigned)uid, prim_strerror(errno));
		fchown(ctl_page_fd, 0, (gid_t)-1);
		prim_close(fd);
		return;
	}
	dir_set(prim_fd_high(fd), uid, path);
	g_ctl_page->uid = uid;
	shim_info("control page moved to uid %u's directory", (unsigned)uid);
}

/* ---- signal ---- */

static void ctl_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si && si->si_code == SI_QUEUE &&
	    si->si_value.sival_int == CTL_SIGVAL) {
		atomic_store(&ctl_request, 1);
		atomic_store(&ctl_signal_seen, 1);
	} else
		atomic_fetch_add(&ctl_toggles, 1);
	atomic_fetch_or(&g_off, SHIM_OFF_CTL);
}

static void signal_setup(void)
{
	int sig = g_cfg.signal;
	if (!sig)
		return;
	struct sigaction old, sa;
	if (sigaction(sig, NULL, &old) != 0)
		return;
	int has = (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL
	                                      : old.sa_handler != SIG_DFL;
	if (has) {
		shim_warn("signal %d (MALLOCK_SIGNAL) is already handled or "
		          "ignored by this program: the signal toggle and "
		          "`mallock ctl --wake` are off for it (`mallock ctl` "
		          "works without a signal)",
		          sig);
		return;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = ctl_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0)
		return;
	ctl_signal = sig;
	/* A shim loaded by `mallock attach` does not see the program's
	 * sigaction calls (attach.c leaves them alone): it never claims the
	 * handler, so `mallock ctl --wake` never signals it. */
	if (!g_attached) {
		atomic_store(&ctl_handler_mine, 1);
		if (g_ctl_page != &ctl_none)
			__atomic_store_n(&g_ctl_page->wake_sig, sig,
			                 __ATOMIC_RELEASE);
	}
}

void ctl_signal_change(int sig, uintptr_t handler)
{
	if (!ctl_signal || sig != ctl_signal ||
	    handler == (uintptr_t)ctl_handler)
		return;
	/* Before the program's call: no moment where the kernel has the
	 * program's handler while the page still says it is the shim's. */
	atomic_store(&ctl_handler_mine, 0);
	__atomic_store_n(&g_ctl_page->wake_sig, 0, __ATOMIC_SEQ_CST);
}

/* ---- windows ---- */

/* Sets the window's end (MALLOCK_DURATION) from now, and the next poll. */
static void window_deadline(uint64_t now)
{
	if (g_cfg.duration && g_tsc_hz)
		ctl_end_tsc = now + (uint64_t)g_cfg.duration * g_tsc_hz;
	else
		ctl_end_tsc = UINT64_MAX;
	uint64_t poll = now + ctl_poll_ticks;
	g_stop_tsc = poll < ctl_end_tsc ? poll : ctl_end_tsc;
}

void ctl_window_started(uint64_t tsc)
{
	atomic_store(&ctl_recorded, 1);
	atomic_fetch_add(&g_epoch, 1);
	window_deadline(tsc);
}

void ctl_window_stopped(void)
{
	ctl_end_tsc = UINT64_MAX;
	g_stop_tsc = UINT64_MAX;
	/* Threads flush what they hold at their next hook call, so the file
	 * is complete up to the pause while the program runs on. */
	atomic_fetch_add(&g_flush_gen, 1);
}

void ctl_poke(void)
{
	atomic_fetch_or(&g_off, SHIM_OFF_CTL);
}

void ctl_tick(uint64_t tsc)
{
	uint64_t end = ctl_end_tsc;
	if (tsc > end) {
		ctl_end_tsc = UINT64_MAX;
		atomic_store(&ctl_deadline_hit, 1);
		ctl_poke();
		g_stop_tsc = UINT64_MAX;
		return;
	}
	if (ctl_requested())
		ctl_poke();
	flush_poll();
	uint64_t poll = tsc + ctl_poll_ticks;
	g_stop_tsc = poll < end ? poll : end;
}

void ctl_trace_changed(void)
{
	atomic_store(&ctl_dirty, 1);
	ctl_poke();
}

unsigned ctl_init(void)
{
	uint64_t hz = g_tsc_hz ? g_tsc_hz : 1000000000u;
	ctl_poll_ticks = hz / 1000 * CTL_POLL_MS;
	ctl_start_uid = (uint32_t)geteuid();
	/* An attach after a detach: the requests and the cap of the ended
	 * trace are not this one's; its page (named no more) stays mapped,
	 * as a hook called through a pointer taken while attached may still
	 * read it. */
	atomic_store(&ctl_toggles, 0);
	atomic_store(&ctl_request, 0);
	atomic_store(&ctl_deadline_hit, 0);
	atomic_store(&ctl_signal_seen, 0);
	atomic_store(&ctl_cap_pending, 0);
	atomic_store(&ctl_cap_warned, 0);
	atomic_store(&ctl_dirty, 0);
	ctl_last_why = "start";
	page_create(0, 1);
	signal_setup();
	unsigned bits = 0;
	if (g_cfg.start_paused) {
		bits = SHIM_OFF_PAUSED;
		ctl_last_why = "MALLOCK_START=paused";
		shim_info("recording starts paused (MALLOCK_START=paused)");
		if (!ctl_signal && g_ctl_page == &ctl_none)
			shim_warn("MALLOCK_START=paused without a control page "
			          "or signal: only mallock_recording(1) in the "
			          "program can start recording");
	} else {
		if (g_attached)
			ctl_last_why = "mallock attach";
		atomic_store(&ctl_recorded, 1);
		window_deadline(prim_tsc());
	}
	atomic_fetch_or(&g_off, bits); /* for the page's state */
	status_write();
	return bits;
}

/* Switches recording to `on` (t's gate is BUSY, t set up or t->wb NULL). */
static void ctl_switch(tls_t *t, int on, const char *why)
{
	unsigned off = atomic_load(&g_off);
	int cur = !(off & SHIM_OFF_PAUSED);
	ctl_last_why = why;
	if (on == cur)
		return;
	uint64_t tsc = prim_tsc();
	if (on) {
		ctl_window_started(tsc);
		atomic_fetch_and(&g_off, ~SHIM_OFF_PAUSED);
		if (t->wb)
			rec_u(t, FMT_MARK, tsc, FMT_MARK_RESUME);
		shim_info("recording on (%s)", why);
	} else {
		atomic_fetch_or(&g_off, SHIM_OFF_PAUSED);
		if (t->wb) {
			rec_u(t, FMT_MARK, prim_tsc(), FMT_MARK_PAUSE);
			writer_flush(t);
		}
		ctl_window_stopped();
		shim_info("recording off (%s)", why);
	}
}

void ctl_serve(tls_t *t)
{
	if (atomic_flag_test_and_set(&ctl_serving))
		return;
	uint8_t gate = gate_hold(t);
	if (gate == GATE_UNINIT &&
	    !(atomic_load(&g_off) & (SHIM_OFF_STOPPED | SHIM_OFF_INIT)))
		gate = thread_setup(t) == 0 ? GATE_READY : GATE_DEAD;
	/* A thread without a buffer switches without a MARK. */
	static tls_t none;
	tls_t *mt = gate == GATE_READY && t->wb && !tls_stale(t) ? t : &none;
	ctl_page_t *pg = g_ctl_page;
	do {
		atomic_fetch_and(&g_off, ~SHIM_OFF_CTL);
		unsigned off = atomic_load(&g_off);
		if (off & SHIM_OFF_STOPPED) {
			/* Inert for good: answer, so the poll stops poking. */
			uint64_t r =
			    __atomic_load_n(&pg->request, __ATOMIC_ACQUIRE);
			g_ctl_seen = r;
			page_update(CTLP_STOPPED);
			__atomic_store_n(&pg->served, r, __ATOMIC_RELEASE);
			break;
		}
		if (off & SHIM_OFF_INIT)
			break;
		int cur = !(off & SHIM_OFF_PAUSED);
		int want = cur;
		const char *why = NULL;
		/* The signal's value only woke us up: the page says what. */
		atomic_store(&ctl_request, 0);
		uint64_t req = __atomic_load_n(&pg->request, __ATOMIC_ACQUIRE);
		flush_poll(); /* written before the request (a reader's) */
		int answer = 0;
		if (req != g_ctl_seen) {
			g_ctl_seen = req;
			answer = 1;
			if (!(atomic_load(&ctl_toggles) & 1) &&
			    !ctl_signal_seen)
				pg->polls++;
			unsigned cmd = (unsigned)(req & 3);
			if (cmd == CTLP_CMD_START || cmd == CTLP_CMD_STOP) {
				want = cmd == CTLP_CMD_START;
				why = want ? "mallock ctl start"
				           : "mallock ctl stop";
			}
		}
		ctl_signal_seen = 0;
		if (atomic_exchange(&ctl_toggles, 0) & 1) {
			want = !want;
			why = "signal";
		}
		if (atomic_exchange(&ctl_deadline_hit, 0) && cur && want) {
			want = 0;
			why = "MALLOCK_DURATION";
		}
		if (off & SHIM_OFF_CAPPED) {
			if (want && why)
				ctl_last_why =
				    "refused: MALLOCK_MAX_BYTES reached";
			want = 0;
		}
		if (why)
			ctl_switch(mt, want, why);
		/* The notes reach the file now, not at exit: a report read
		 * while the server runs must see the attach notes and the
		 * window's "recording off". */
		if ((atomic_exchange(&ctl_cap_pending, 0) | (why != NULL)))
			writer_notes();
		atomic_store(&ctl_dirty, 0);
		status_write();
		if (answer) /* after the state: ctl reads it once served */
			__atomic_store_n(&pg->served, req, __ATOMIC_RELEASE);
	} while (atomic_load(&g_off) & SHIM_OFF_CTL);
	gate_restore(t, gate);
	atomic_flag_clear(&ctl_serving);
}

int ctl_ever_recorded(void)
{
	return atomic_load(&ctl_recorded);
}

void ctl_capped(uint64_t bytes)
{
	atomic_fetch_or(&g_off, SHIM_OFF_CAPPED);
	int expect = 0;
	if (!atomic_compare_exchange_strong(&ctl_cap_warned, &expect, 1))
		return;
	shim_warn("the trace reached MALLOCK_MAX_BYTES=%ld (%lu bytes "
	          "written): recording stopped; the trace is complete up to "
	          "this point",
	          g_cfg.max_bytes, (unsigned long)bytes);
	ctl_last_why = "MALLOCK_MAX_BYTES reached";
	atomic_store(&ctl_cap_pending, 1);
	atomic_fetch_or(&g_off, SHIM_OFF_CTL);
}

void ctl_fork_child(void)
{
	/* The forking thread alone survives; a serve another
	 * thread was running, and the parent's requests, are not ours. */
	atomic_flag_clear(&ctl_serving);
	atomic_flag_clear(&ctl_flush_busy);
	atomic_store(&ctl_request, 0);
	atomic_store(&ctl_toggles, 0);
	atomic_store(&ctl_dirty, 0);
	atomic_store(&ctl_recorded,
	             !(atomic_load(&g_off) &
	               (SHIM_OFF_PAUSED | SHIM_OFF_STOPPED | SHIM_OFF_CAPPED)));
	if (g_ctl_page == &ctl_none)
		return;
	/* The parent's page stays the parent's: never write to it here. */
	ctl_page_t *parent = g_ctl_page;
	if (page_create(1, 0) != 0) {
		munmap(parent, CTLP_SIZE);
		g_ctl_page = &ctl_none;
		g_cost_page = &ctl_none;
		flush_set(&ctl_none, 0); /* no page: no reader asks */
		if (ctl_page_fd >= 0)
			prim_close(ctl_page_fd);
		ctl_page_fd = -1;
		prim_fd_keep(PRIM_KEEP_PAGE, -1);
		g_ctl_seen = 0;
		return;
	}
	/* The child's own trace (created at its first write). */
	char exe[512], path[CONFIG_PATH_MAX];
	const char *b = exe;
	if (prim_exe_path(exe, sizeof exe) > 0 && strrchr(exe, '/'))
		b = strrchr(exe, '/') + 1;
	if (config_output_path(path, sizeof path, prim_getpid(), b, 1) == 0)
		snprintf(g_trace_path, sizeof g_trace_path, "%s", path);
	status_write();
}

/* Removes the page's name if it is still our page (an exec'd image of
 * ours may have replaced it), through the directory fd, or, when the host
 * closed it, the directory reopened by its path and checked by device and
 * inode. */
static void page_unlink(void)
{
	char name[32];
	ctlp_name(name, sizeof name, prim_getpid());
	int dfd = ctl_dir_fd, reopened = 0;
	struct stat st;
	if (!dir_ok()) {
		const char *why = "";
		dfd = ctl_dir_path[0]
		          ? ctlp_dir_open(ctl_dir_path, ctl_dir_uid, 0, &why)
		          : -1;
		if (dfd < 0)
			return;
		reopened = 1;
		if (fstat(dfd, &st) != 0 || st.st_dev != ctl_dir_dev ||
		    st.st_ino != ctl_dir_ino)
			goto out;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && st.st_ino == ctl_page_ino &&
	    st.st_dev == ctl_page_dev)
		unlinkat(dfd, name, 0);
out:
	if (reopened)
		prim_close(dfd);
}

void ctl_exit(void)
{
	if (g_ctl_page == &ctl_none || g_ctl_page->pid != prim_getpid())
		return;
	page_update(CTLP_EXITED);
	page_unlink();
}

void ctl_fatal(void)
{
	if (g_ctl_page != &ctl_none && g_ctl_page->pid == prim_getpid())
		page_unlink();
}

int ctl_exec_begin(void)
{
	/* A vfork child shares the parent's page: it is not ours. */
	if (g_ctl_page == &ctl_none || g_ctl_page->pid != prim_getpid())
		return 0;
	int saved = errno;
	page_unlink();
	errno = saved;
	return 1;
}

void ctl_exec_failed(void)
{
	int saved = errno;
	/* Another thread may be serving (a signal handler's exec may have
	 * interrupted this one's serve: then the page stays gone). */
	int n = 0;
	while (atomic_flag_test_and_set(&ctl_serving)) {
		if (++n > 10000) {
			errno = saved;
			return;
		}
		prim_yield();
	}
	if (page_create(1, 1) == 0)
		status_write();
	atomic_flag_clear(&ctl_serving);
	errno = saved;
}

void ctl_detach(void)
{
	if (ctl_signal) {
		ctl_signal_change(ctl_signal, 0);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = SIG_DFL;
		sigaction(ctl_signal, &sa, NULL);
		ctl_signal = 0;
	}
	/* The process lives on: its page says so (`mallock ctl status`
	 * reads it through /proc/PID/map_files), its name goes. */
	if (g_ctl_page == &ctl_none || g_ctl_page->pid != prim_getpid())
		return;
	page_update(CTLP_DETACHED);
	page_unlink();
}
