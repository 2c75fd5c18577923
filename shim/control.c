/*
 * control.c - recording windows (control.h): start state, the control
 * signal and file, the status file, MALLOCK_DURATION and MALLOCK_MAX_BYTES.
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
 * - Files are opened with O_NOFOLLOW in a directory checked to be the
 *   user's and mode 0700; the control file must belong to the user (or
 *   root). Only open/read/write/rename/unlink/mkdir/lstat are used: no
 *   allocation.
 */
#include "control.h"

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
#include <sys/stat.h>
#include <unistd.h>

/* The sigval `mallock ctl` sends with sigqueue: "read the control file". */
#define CTL_SIGVAL 0x6d6c6b01

uint64_t g_stop_tsc = UINT64_MAX;
_Atomic uint32_t g_epoch = 1;
_Atomic uint32_t g_flush_gen;

static _Atomic unsigned ctl_toggles; /* plain signals not yet served */
static _Atomic int ctl_request;      /* a sigqueue'd request is pending */
static _Atomic int ctl_deadline_hit; /* MALLOCK_DURATION elapsed */
static _Atomic int ctl_cap_pending;  /* the cap NOTE is not written yet */
static _Atomic int ctl_cap_warned;
static atomic_flag ctl_serving = ATOMIC_FLAG_INIT;
static uint64_t ctl_seq_done;     /* last control-file sequence applied */
static int ctl_signal;            /* installed signal, 0: none */
static char ctl_dir[CONFIG_PATH_MAX]; /* "" when the files are off */
static const char *ctl_last_why = "start";

/* ---- files ---- */

/* Checks that path is a directory of ours, mode 0700 at most, not a
 * symlink. 0 or -1 (why in *why). */
static int dir_private(const char *path, const char **why)
{
	struct stat st;
	if (lstat(path, &st) != 0) {
		*why = "cannot be created";
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		*why = "is not a directory (or is a symlink)";
		return -1;
	}
	if (st.st_uid != geteuid()) {
		*why = "belongs to another user";
		return -1;
	}
	if (st.st_mode & 077) {
		*why = "is open to other users (mode is not 0700)";
		return -1;
	}
	return 0;
}

/* Picks and creates the control directory (see control.h). */
static void dir_setup(void)
{
	char path[CONFIG_PATH_MAX];
	const char *xdg = prim_getenv("XDG_RUNTIME_DIR");
	if (g_cfg.ctl_dir[0])
		snprintf(path, sizeof path, "%s", g_cfg.ctl_dir);
	else if (xdg && xdg[0] == '/' && strlen(xdg) < sizeof path - 64)
		snprintf(path, sizeof path, "%s/mallock", xdg);
	else
		snprintf(path, sizeof path, "/tmp/mallock-%u",
		         (unsigned)geteuid());
	const char *why = "";
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		why = strerror(errno);
	if (dir_private(path, &why) != 0) {
		shim_warn("control directory %s %s: `mallock ctl` is off for "
		          "this process (the signal still works)",
		          path, why);
		return;
	}
	snprintf(ctl_dir, sizeof ctl_dir, "%s", path);
}

static void file_path(char *out, size_t cap, const char *suffix)
{
	snprintf(out, cap, "%s/%u.%s", ctl_dir, prim_getpid(), suffix);
}

static const char *state_name(unsigned off)
{
	if (off & SHIM_OFF_STOPPED)
		return "stopped";
	if (off & SHIM_OFF_CAPPED)
		return "capped";
	if (off & SHIM_OFF_PAUSED)
		return "paused";
	return "recording";
}

/* Rewrites <pid>.status (write to a temporary name, then rename). */
static void status_write(void)
{
	if (!ctl_dir[0])
		return;
	char path[CONFIG_PATH_MAX + 32], tmp[CONFIG_PATH_MAX + 64];
	char body[CONFIG_PATH_MAX + 512];
	file_path(path, sizeof path, "status");
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	unsigned off = atomic_load(&g_off);
	int n = snprintf(body, sizeof body,
	                 "pid %u\nsignal %d\nstate %s\nwhy %s\nseq %lu\n"
	                 "trace %s\nbytes %lu\nsample_bytes %ld\n"
	                 "max_bytes %ld\nduration %ld\n",
	                 prim_getpid(), ctl_signal, state_name(off),
	                 ctl_last_why, (unsigned long)ctl_seq_done,
	                 g_trace_path, (unsigned long)writer_bytes(),
	                 g_cfg.sample_bytes, g_cfg.max_bytes, g_cfg.duration);
	if (n < 0 || (size_t)n >= sizeof body)
		return;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	                       O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	int ok = prim_write_once(fd, body, (size_t)n) == 0;
	prim_close(fd);
	if (!ok || rename(tmp, path) != 0)
		unlink(tmp);
}

/* Reads <pid>.ctl: "start SEQ" or "stop SEQ". Returns 1 (start), 0 (stop)
 * with *seq set, or -1 when absent, not ours, or malformed. */
static int ctl_file_read(uint64_t *seq)
{
	if (!ctl_dir[0])
		return -1;
	char path[CONFIG_PATH_MAX + 32], buf[64];
	file_path(path, sizeof path, "ctl");
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	ssize_t n = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_uid == geteuid() || st.st_uid == 0))
		n = read(fd, buf, sizeof buf - 1);
	prim_close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	unsigned long s = 0;
	char word[8];
	if (sscanf(buf, "%7s %lu", word, &s) != 2)
		return -1;
	*seq = s;
	if (!strcmp(word, "start"))
		return 1;
	if (!strcmp(word, "stop"))
		return 0;
	return -1;
}

/* ---- signal ---- */

static void ctl_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si && si->si_code == SI_QUEUE && si->si_value.sival_int == CTL_SIGVAL)
		atomic_store(&ctl_request, 1);
	else
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
		          "ignored by this program: signal control and `mallock "
		          "ctl` are off (choose a free signal with MALLOCK_SIGNAL)",
		          sig);
		return;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = ctl_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) == 0)
		ctl_signal = sig;
}

/* ---- windows ---- */

static void window_deadline(uint64_t now)
{
	if (g_cfg.duration && g_tsc_hz)
		g_stop_tsc = now + (uint64_t)g_cfg.duration * g_tsc_hz;
	else
		g_stop_tsc = UINT64_MAX;
}

void ctl_window_started(uint64_t tsc)
{
	atomic_fetch_add(&g_epoch, 1);
	window_deadline(tsc);
}

void ctl_window_stopped(void)
{
	g_stop_tsc = UINT64_MAX;
	/* Threads flush what they hold at their next hook call, so the file
	 * is complete up to the pause while the program runs on. */
	atomic_fetch_add(&g_flush_gen, 1);
}

unsigned ctl_init(void)
{
	dir_setup();
	signal_setup();
	unsigned bits = 0;
	if (g_cfg.start_paused) {
		bits = SHIM_OFF_PAUSED;
		ctl_last_why = "MALLOCK_START=paused";
		shim_info("recording starts paused (MALLOCK_START=paused)");
		if (!ctl_signal)
			shim_warn("MALLOCK_START=paused without a control "
			          "signal: only mallock_recording(1) in the "
			          "program can start recording");
	} else {
		window_deadline(prim_tsc());
	}
	atomic_fetch_or(&g_off, bits); /* for the status file's state */
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
	uint8_t gate = t->gate;
	t->gate = GATE_BUSY;
	atomic_signal_fence(memory_order_seq_cst);
	if (gate == GATE_UNINIT && !(atomic_load(&g_off) &
	                             (SHIM_OFF_STOPPED | SHIM_OFF_INIT)))
		gate = thread_setup(t) == 0 ? GATE_READY : GATE_DEAD;
	/* A thread without a buffer switches without a MARK. */
	static tls_t none;
	tls_t *mt = gate == GATE_READY && t->wb ? t : &none;
	do {
		atomic_fetch_and(&g_off, ~SHIM_OFF_CTL);
		unsigned off = atomic_load(&g_off);
		if (off & (SHIM_OFF_STOPPED | SHIM_OFF_INIT))
			break;
		int cur = !(off & SHIM_OFF_PAUSED);
		int want = cur;
		const char *why = NULL;
		if (atomic_exchange(&ctl_request, 0)) {
			uint64_t seq = 0;
			int cmd = ctl_file_read(&seq);
			if (cmd >= 0 && seq != ctl_seq_done) {
				want = cmd;
				ctl_seq_done = seq;
				why = cmd ? "mallock ctl start" : "mallock ctl stop";
			}
		}
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
				ctl_last_why = "refused: MALLOCK_MAX_BYTES reached";
			want = 0;
		}
		if (why)
			ctl_switch(mt, want, why);
		if (atomic_exchange(&ctl_cap_pending, 0))
			writer_notes();
		status_write();
	} while (atomic_load(&g_off) & SHIM_OFF_CTL);
	atomic_signal_fence(memory_order_seq_cst);
	t->gate = gate;
	atomic_flag_clear(&ctl_serving);
}

void ctl_deadline(void)
{
	g_stop_tsc = UINT64_MAX;
	atomic_store(&ctl_deadline_hit, 1);
	atomic_fetch_or(&g_off, SHIM_OFF_CTL);
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
	status_write();
}

void ctl_exit(void)
{
	if (!ctl_dir[0])
		return;
	char path[CONFIG_PATH_MAX + 32];
	file_path(path, sizeof path, "status");
	unlink(path);
	file_path(path, sizeof path, "ctl");
	unlink(path);
}

void ctl_detach(void)
{
	if (ctl_signal) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = SIG_DFL;
		sigaction(ctl_signal, &sa, NULL);
		ctl_signal = 0;
	}
	ctl_exit();
}
