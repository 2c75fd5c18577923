/*
 * top.c - `mallock top`: a live view of a process's lock contention and
 * the allocator calls inside its locks, one block per interval
 * (docs/mallock-top.md).
 *
 * Three ways to a process, each left as it was found:
 * - PID, running under the shim (preloaded, paused or recording): a
 *   window is opened through its control page as `mallock ctl start`
 *   does (no signal, ever) and closed at the end when top opened it; a
 *   process that was recording already is left recording.
 * - --attach PID, a process without the shim: `mallock attach` injects it
 *   and `mallock detach` takes it out at the end (both run as this
 *   executable's subcommands, their reports on stderr).
 * - -- CMD: the program is run under the shim, as `record` runs it; top
 *   ends when it ends, or after --count intervals, when its recording is
 *   stopped through its page and it runs on unrecorded.
 * The window's trace stays (its path on stderr at the end); `-o` names it
 * (PID: a copy of the process's trace, taken when the window closed).
 *
 * Every interval the engine (pipeline/live.h) reads the window up to a
 * watermark, now minus the shim's flush deadline (the page's flush_ms:
 * top asks for TOP_FLUSH_MS while it reads, else MALLOCK_FLUSH_MS of the
 * process, 200 ms by default) and a quarter more plus its 10 ms poll and
 * a margin: before it, every thread's events are on disk. With
 * --pprof-dir, each look also writes the interval's pprof profile
 * (output/top_pprof.h), from the process that has the look's model.
 *
 * Exit status (cli.h): 0 the intervals were shown (or the program run
 * with -- CMD ended); 1 the process is gone, ended mid-view, cannot be
 * reached, or the terminal is too small; 2 a usage error. Each failure is
 * one line on stderr, "mallock top: ...".
 */
#define _GNU_SOURCE
#include "cli.h"
#include "ctl_client.h"
#include "live.h"
#include "proc.h"
#include "load.h"
#include "report.h"
#include "top_out.h"
#include "top_pprof.h"
#include "top_screen.h"
#include "util.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h> /* optarg, optind */
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOP_DEFAULT_OUTPUT "mallock.%e.%p.trace"
#define TOP_CTL_WAIT_MS 5000 /* how long a start/stop request is waited */
/* The flush deadline top asks of the shim while it reads, ms (the
 * process's own when that is shorter): an event reaches the screen at
 * most the interval, this deadline and a quarter, 60 ms and a look
 * after it was made. */
#define TOP_FLUSH_MS 100
/* Records a look applies between two turns of the keys (about 0.1 s). */
#define TOP_STEP_RECORDS 300000
/* How often the chunks are applied between looks. */
#define TOP_ADVANCE_NS 100000000ull
/* The longest the symbols are looked up ahead between two turns of the
 * keys (live_warm). */
#define TOP_WARM_NS 50000000ull

enum {
	OPT_INTERVAL = 256,
	OPT_BATCH,
	OPT_COUNT,
	OPT_FORMAT,
	OPT_SORT,
	OPT_ATTACH,
	OPT_PPROF_DIR
};

static const cli_opt_t top_opts[] = {
    {"interval", OPT_INTERVAL, 1, "S",
     "seconds between two views (0.2..3600,\ndefault 1)"},
    {"batch", OPT_BATCH, 0, NULL,
     "one plain-text block per interval on stdout\n(as top -b)"},
    {"count", OPT_COUNT, 1, "N",
     "stop after N intervals (default: until "
     "the\nprocess ends or ^C)"},
    {"format", OPT_FORMAT, 1, "text|json",
     "json: one JSON object per interval and line"},
    {"sort", OPT_SORT, 1, "wait|hold|alloc",
     "order the lock classes by wait (default),\nhold time or allocator "
     "time in holds"},
    {"pprof-dir", OPT_PPROF_DIR, 1, "DIR",
     "one pprof profile per interval in DIR\n(mallock-PID-MS.pb.gz, MS the "
     "Unix time of\nthe interval's end in ms; metric wait)"},
    {"output", 'o', 1, "TRACE",
     "keep the window's trace as TRACE (%p: pid,\n%e: program name)"},
    {"attach", OPT_ATTACH, 1, "PID",
     "a process without the shim: attach it (as\n`mallock attach`), "
     "detach at the end"},
    {"help", 'h', 0, NULL, "this help"},
    {0}};

static const cli_cmd_t top_cli = {
    .name = "top",
    .usage = "[options] PID\n"
             "[options] --attach PID\n"
             "[options] -- CMD [ARGS...]",
    .intro = "A live view of lock contention and the allocator calls "
             "inside locks: per\ninterval and since the window opened, "
             "the lock classes, the code that\nallocates or frees under "
             "them and the findings of `mallock report`.\n",
    .outro = "PID runs under the shim: a window is opened through its "
             "control page (no\nsignal) and closed at the end; its "
             "recording state is restored. The\nwindow's trace is kept; "
             "its path is printed at the end.\n",
    .opts = top_opts,
    .operands = "PID, --attach PID or -- CMD",
    .min_operands = 0,
    .max_operands = -1,
};

static volatile sig_atomic_t top_stop, top_tstp;

static void on_signal(int sig)
{
	if (sig == SIGTSTP)
		top_tstp = 1;
	else
		top_stop = 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !top_stop)
		;
}

/* Expands %p, %e and %% of pattern into out: 0, or -1 if too long. */
static int expand(const char *pattern, long pid, const char *exe, char *out,
                  size_t n)
{
	size_t o = 0;
	for (const char *s = pattern; *s; s++) {
		char buf[32];
		const char *piece = buf;
		if (s[0] == '%' && s[1] == 'p') {
			snprintf(buf, sizeof buf, "%ld", pid);
			s++;
		} else if (s[0] == '%' && s[1] == 'e') {
			piece = exe;
			s++;
		} else if (s[0] == '%' && s[1] == '%') {
			buf[0] = '%', buf[1] = '\0';
			s++;
		} else {
			buf[0] = *s, buf[1] = '\0';
		}
		size_t k = strlen(piece);
		if (o + k >= n)
			return -1;
		memcpy(out + o, piece, k);
		o += k;
	}
	out[o] = '\0';
	return 0;
}

/* The watermark's lag behind now, in ns, for a flush deadline of ms: the
 * deadline, a quarter more, the 10 ms control poll and 50 ms of margin
 * (docs/configuration.md: what stays buffered at most). */
static uint64_t lag_of(uint64_t ms)
{
	return (ms + ms / 4 + 10 + 50) * 1000000ull;
}

/* The lag for pid's flush deadline as its environment says it
 * (MALLOCK_FLUSH_MS there, else ours, else 200 ms): for a shim whose page
 * does not say it. */
static uint64_t flush_lag_ns(long pid)
{
	char v[32] = "";
	if (pid > 0)
		proc_env(pid, "MALLOCK_FLUSH_MS", v, sizeof v);
	if (!v[0] && getenv("MALLOCK_FLUSH_MS"))
		snprintf(v, sizeof v, "%s", getenv("MALLOCK_FLUSH_MS"));
	char *end;
	long ms = v[0] ? strtol(v, &end, 10) : 200;
	if (!v[0] || *end || ms <= 0 || ms > 3600000)
		ms = 200;
	return lag_of((uint64_t)ms);
}

/* Runs this executable's subcommand argv (attach, detach) with its stdout
 * on our stderr; returns its exit status, or -1. */
static int run_self(char *const argv[])
{
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		dup2(2, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int st;
	while (waitpid(p, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Whether pid is still the process that started at start, and not a
 * zombie its parent has yet to reap (it has ended). */
static bool same_process(long pid, uint64_t start)
{
	proc_t p;
	if (proc_stat(pid, &p) != 0 || p.start != start)
		return false;
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* Writes cmd on t's page and waits for it to be served (up to
 * TOP_CTL_WAIT_MS). Returns 1 if it was. */
static int ctl_do(ctl_target_t *t, unsigned cmd)
{
	ctl_request(t, cmd);
	for (int i = 0; i < TOP_CTL_WAIT_MS / 10; i++) {
		if (ctl_answered(t))
			return 1;
		sleep_ms(10);
	}
	return ctl_answered(t);
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return -1;
	}
	char buf[65536];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n) {
			rc = -1;
			break;
		}
	if (n < 0)
		rc = -1;
	close(in);
	if (close(out) < 0)
		rc = -1;
	return rc;
}

/* What top watches and how it leaves it. */
typedef struct top_target {
	enum { TT_PID, TT_ATTACH, TT_CMD } how;
	long pid;
	uint64_t start;
	char comm[32];
	ctl_target_t ctl;
	bool ctl_open;
	bool opened; /* top opened the window (PID): close it at the end */
	bool asked;  /* top wrote flush_req on the page: withdraw it */
	pid_t child; /* -- CMD: the program, until it was waited for */
	int child_status;
	char trace[PATH_MAX];
} top_target_t;

/* Asks t's shim for a flush deadline of ms while top reads (0: none):
 * the page's flush_req, applied at its next control poll. */
static void flush_ask(top_target_t *t, uint32_t ms)
{
	if (!t->ctl_open)
		return;
	__atomic_store_n(&t->ctl.pg->flush_req, ms, __ATOMIC_RELEASE);
	t->asked = ms != 0;
}

/* The lag for the deadline in force on t's page, else for its
 * environment's (a shim from before the page said it: fallback). */
static uint64_t top_lag(const top_target_t *t, uint64_t fallback)
{
	if (!t->ctl_open)
		return fallback;
	uint32_t ms = __atomic_load_n(&t->ctl.pg->flush_ms, __ATOMIC_ACQUIRE);
	if (ms == 0 || ms == CTLP_FLUSH_NONE || ms > 3600000)
		return fallback;
	return lag_of(ms);
}

/* Opens pid's page (a line on stderr when it cannot be) and asks for
 * top's flush deadline. */
static int open_page(top_target_t *t)
{
	if (ctl_target_open(&t->ctl, t->pid, 0) != 0)
		return -1;
	t->ctl_open = true;
	flush_ask(t, TOP_FLUSH_MS);
	return 0;
}

static int start_pid(top_target_t *t)
{
	if (open_page(t) < 0)
		return -1;
	ctl_page_t c;
	ctl_page_copy(t->ctl.pg, &c);
	if (c.state == CTLP_RECORDING) {
		t->opened = false;
	} else if (c.state == CTLP_PAUSED) {
		if (!ctl_do(&t->ctl, CTLP_CMD_START)) {
			/* The process made no hook call: a window it never
			 * opened shows nothing; the request is withdrawn. */
			flush_ask(t, 0);
			ctl_request(&t->ctl, CTLP_CMD_STOP);
			fprintf(stderr,
			        "mallock top: pid %ld (%s) made no allocation "
			        "or lock call within %d s: no window opened "
			        "(the process is idle; try again under load)\n",
			        t->pid, t->comm, TOP_CTL_WAIT_MS / 1000);
			return -1;
		}
		t->opened = true;
	} else {
		flush_ask(t, 0);
		fprintf(stderr,
		        "mallock top: pid %ld (%s) is %s (%s): no window can "
		        "be opened\n",
		        t->pid, t->comm, ctlp_state_name(c.state), c.why);
		return -1;
	}
	ctl_page_copy(t->ctl.pg, &c);
	snprintf(t->trace, sizeof t->trace, "%s", c.trace);
	return 0;
}

static int start_attach(top_target_t *t, const char *output)
{
	char pid[24];
	snprintf(pid, sizeof pid, "%ld", t->pid);
	char *argv[] = {"mallock", "attach", "-o", (char *)output, pid, NULL};
	int rc = run_self(argv);
	if (rc != 0) {
		fprintf(stderr,
		        "mallock top: pid %ld (%s): `mallock attach` "
		        "failed (above): nothing to show\n",
		        t->pid, t->comm);
		return -1;
	}
	if (open_page(t) < 0)
		return -1;
	ctl_page_t c;
	ctl_page_copy(t->ctl.pg, &c);
	snprintf(t->trace, sizeof t->trace, "%s", c.trace);
	return 0;
}

static int set_preload(const char *shim)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old)
		return setenv("LD_PRELOAD", shim, 1);
	char *v = xmalloc(strlen(shim) + strlen(old) + 2);
	sprintf(v, "%s:%s", shim, old);
	int rc = setenv("LD_PRELOAD", v, 1);
	free(v);
	return rc;
}

static int start_cmd(top_target_t *t, char **argv, const char *output,
                     bool output_given)
{
	char shim[PATH_MAX];
	if (find_shim(shim, sizeof shim) < 0) {
		fprintf(stderr, "mallock top: libmallock.so not found beside "
		                "this program\n");
		return -1;
	}
	int efd[2];
	if (pipe2(efd, O_CLOEXEC) < 0)
		return -1;
	const char *exe = path_base(argv[0]);
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		char path[PATH_MAX];
		close(efd[0]);
		if (expand(output, getpid(), exe, path, sizeof path) < 0)
			_exit(125);
		struct stat old;
		if (output_given && lstat(path, &old) == 0 &&
		    S_ISREG(old.st_mode))
			unlink(path);
		setenv("MALLOCK_OUTPUT", path, 1);
		set_preload(shim);
		execvp(argv[0], argv);
		int e = errno;
		if (write(efd[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(127);
	}
	close(efd[1]);
	int e = 0;
	ssize_t r;
	while ((r = read(efd[0], &e, sizeof e)) < 0 && errno == EINTR)
		;
	close(efd[0]);
	if (r == (ssize_t)sizeof e) {
		waitpid(p, NULL, 0);
		fprintf(stderr, "mallock top: cannot run %s: %s\n", argv[0],
		        strerror(e));
		return -1;
	}
	t->child = p;
	t->pid = p;
	proc_t pr;
	if (proc_stat(p, &pr) == 0)
		t->start = pr.start;
	snprintf(t->comm, sizeof t->comm, "%s", exe);
	if (expand(output, p, exe, t->trace, sizeof t->trace) < 0)
		return -1;
	return 0;
}

/* Whether the process watched is still there (-- CMD: reaps it). */
static bool target_alive(top_target_t *t)
{
	if (t->child) {
		int st;
		pid_t w = waitpid(t->child, &st, WNOHANG);
		if (w == t->child) {
			t->child = 0;
			t->child_status = st;
			return false;
		}
		return true;
	}
	return same_process(t->pid, t->start);
}

/* The shim's cost counters on the page and the process's CPU time, for
 * the header's estimate (top_out.h top_cost_of). -- CMD: the page is
 * looked for, silently, at each reading after the program made its trace
 * until it is found: the shim makes its page just after the trace, so the
 * first look may come between the two. */
static void cost_read(top_target_t *t, top_cost_read_t *r)
{
	memset(r, 0, sizeof *r);
	if (t->how == TT_CMD && !t->ctl_open && access(t->trace, F_OK) == 0) {
		if (ctl_target_open(&t->ctl, t->pid, 2) == 0) {
			t->ctl_open = true;
			flush_ask(t, TOP_FLUSH_MS);
		}
	}
	ctl_page_t *pg = t->ctl_open ? t->ctl.pg : NULL;
	if (pg && __atomic_load_n(&pg->cost_every, __ATOMIC_ACQUIRE)) {
		r->page = true;
		r->calls = __atomic_load_n(&pg->cost_calls, __ATOMIC_RELAXED);
		r->sampled =
		    __atomic_load_n(&pg->cost_sampled, __ATOMIC_RELAXED);
		r->ns = __atomic_load_n(&pg->cost_ns, __ATOMIC_RELAXED);
		r->over = __atomic_load_n(&pg->cost_over, __ATOMIC_RELAXED);
	}
	uint64_t ticks = proc_cpu(t->pid);
	long hz = sysconf(_SC_CLK_TCK);
	r->cpu_ok = ticks && hz > 0;
	r->cpu_ns = r->cpu_ok ? ticks * (1000000000ull / (uint64_t)hz) : 0;
}

/* Leaves the process as top found it (see the file comment). */
static void finish(top_target_t *t, bool alive)
{
	if (t->how == TT_CMD && alive && !t->ctl_open &&
	    ctl_target_open(&t->ctl, t->pid, 1) == 0)
		t->ctl_open = true;
	if (t->asked)
		flush_ask(t, 0); /* applied by the stop, else at a poll */
	if (alive && t->ctl_open && (t->opened || t->how == TT_CMD) &&
	    !ctl_do(&t->ctl, CTLP_CMD_STOP))
		fprintf(stderr,
		        "mallock top: pid %ld made no call since: its window "
		        "closes at its next allocation or lock call\n",
		        t->pid);
	if (t->ctl_open)
		ctl_target_close(&t->ctl);
	t->ctl_open = false;
	if (t->how == TT_ATTACH && alive) {
		char pid[24];
		snprintf(pid, sizeof pid, "%ld", t->pid);
		char *argv[] = {"mallock", "detach", pid, NULL};
		if (run_self(argv) != 0)
			fprintf(stderr,
			        "mallock top: pid %ld: `mallock detach` failed "
			        "(above)\n",
			        t->pid);
	}
}

/* The TTY form needs TOP_MIN_COLS x TOP_MIN_ROWS and a terminal that
 * terminfo describes: 0, or -1 after a line saying what is wrong. */
static int tty_check(void)
{
	struct winsize ws;
	if (ioctl(1, TIOCGWINSZ, &ws) == 0 &&
	    (ws.ws_col < TOP_MIN_COLS || ws.ws_row < TOP_MIN_ROWS)) {
		fprintf(stderr,
		        "mallock top: the terminal is %ux%u, the screen needs "
		        "%dx%d or more (or use --batch)\n",
		        ws.ws_col, ws.ws_row, TOP_MIN_COLS, TOP_MIN_ROWS);
		return -1;
	}
	char why[200];
	if (top_screen_usable(why, sizeof why) < 0) {
		fprintf(stderr, "mallock top: %s (use --batch)\n", why);
		return -1;
	}
	return 0;
}

/* The terminal while the screen is up, through ncurses: newterm on
 * stdout with the keys from stdin or else /dev/tty, cbreak and noecho (^C
 * still a signal), the keys read without waiting, the cursor hidden,
 * the terminfo's alternate screen; stderr held in a file and replayed
 * once the terminal is back. tty_leave (endwin) restores the terminal,
 * once, on every way out: the end of the loop, q, SIGINT, SIGTERM, SIGHUP
 * (the loop ends), exit() (atexit); ^Z leaves it and the continued
 * process takes it again. SIGWINCH is ncurses' own: wgetch returns
 * KEY_RESIZE with LINES and COLS updated. */
typedef struct tty {
	SCREEN *scr;   /* newterm's, NULL before */
	FILE *in;      /* the keys */
	bool own_in;   /* in was opened here (/dev/tty) */
	bool up;       /* curses mode is on: endwin is due */
	int err_saved; /* the real stderr while held, -1 */
	FILE *err;     /* what was written to stderr meanwhile */
} tty_t;

static tty_t tty = {.err_saved = -1};

static void tty_leave(void)
{
	if (tty.up)
		endwin();
	tty.up = false;
	if (tty.err_saved >= 0) {
		fflush(stderr);
		dup2(tty.err_saved, 2);
		close(tty.err_saved);
		tty.err_saved = -1;
		char buf[4096];
		size_t n;
		rewind(tty.err);
		while ((n = fread(buf, 1, sizeof buf, tty.err)) > 0)
			if (write(2, buf, n) < 0)
				break;
		fclose(tty.err);
		tty.err = NULL;
	}
}

/* After tty_leave at the end: the screen's memory and /dev/tty. */
static void tty_close(void)
{
	tty_leave();
	if (tty.scr)
		delscreen(tty.scr);
	tty.scr = NULL;
	if (tty.own_in)
		fclose(tty.in);
	tty.in = NULL;
	tty.own_in = false;
}

static void tty_hold_stderr(void)
{
	if (!isatty(2) || (tty.err = tmpfile()) == NULL)
		return;
	fflush(stderr);
	tty.err_saved = dup(2);
	if (tty.err_saved < 0 || dup2(fileno(tty.err), 2) < 0) {
		if (tty.err_saved >= 0)
			close(tty.err_saved);
		tty.err_saved = -1;
		fclose(tty.err);
		tty.err = NULL;
	}
}

/* Puts the terminal in the screen's modes: 0, or -1 when ncurses cannot
 * (a line on stderr). */
static int tty_enter(void)
{
	static bool registered;
	if (!registered)
		atexit(tty_leave);
	registered = true;
	if (!tty.scr) {
		if (isatty(0)) {
			tty.in = stdin;
		} else {
			tty.in = fopen("/dev/tty", "re");
			tty.own_in = tty.in != NULL;
			if (!tty.in)
				tty.in = stdin; /* no keys: ^C still ends */
		}
		setlocale(LC_CTYPE, "");
		tty.scr = newterm(NULL, stdout, tty.in);
		if (!tty.scr) {
			fprintf(stderr, "mallock top: ncurses cannot use this "
			                "terminal (use --batch)\n");
			return -1;
		}
		cbreak();
		noecho();
		nonl();
		nodelay(stdscr, TRUE);
		keypad(stdscr, TRUE);
		set_escdelay(25);
		curs_set(0);
	}
	tty_hold_stderr();
	tty.up = true;
	return 0;
}

/* The screen's size into s, the terminal's own (read again after ^Z,
 * when a resize may have passed unseen). */
static void tty_size(top_screen_t *s)
{
	struct winsize ws;
	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row &&
	    (ws.ws_col != COLS || ws.ws_row != LINES))
		resize_term(ws.ws_row, ws.ws_col);
	s->cols = COLS;
	s->rows = LINES;
}

/* Draws one frame of v (NULL: none yet); ncurses sends what changed. */
static void screen_draw(const live_view_t *v, const top_screen_t *s)
{
	top_screen_draw(v, s, stdscr);
	wrefresh(stdscr);
}

/* `mallock report`'s text of trace's window (from_mono, until_mono) into
 * path: 0, or -1 with why in buf. */
static int save_report(const char *trace, uint64_t from_mono,
                       uint64_t until_mono, const char *path, char *why,
                       size_t n)
{
	model_t m;
	load_opts_t o = {.symbols = true,
	                 .quiet = true,
	                 .fold_locks = true,
	                 .from_mono_ns = from_mono,
	                 .until_mono_ns = until_mono};
	report_t r = {.m = &m, .nm = 1, .top = 10, .metric = METRIC_WAIT};
	if (load_trace(trace, &m, &r.f, &o) != 0) {
		snprintf(why, n, "cannot read %.4000s", trace);
		free(r.f.v);
		return -1;
	}
	findings_sort(&r.f);
	FILE *out = fopen(path, "we");
	int rc = -1;
	if (out) {
		report_text(&r, out);
		rc = fclose(out) == 0 ? 0 : -1;
	}
	if (rc)
		snprintf(why, n, "cannot write %.3900s: %.80s", path,
		         strerror(errno));
	free(r.f.v);
	load_free(&m);
	return rc;
}

/* A child process doing a look or a report while the screen serves the
 * keys: the analysis of a long window takes seconds, and q must not wait
 * for it (SIGKILL ends it at once; it touches neither the process watched
 * nor the terminal). */
typedef struct job {
	pid_t pid; /* 0: none */
	int fd;    /* the read end of what it sends */
	char *buf; /* what it has sent so far */
	size_t len, cap;
} job_t;

/* Forks a job: in the child (return 0) ^C, SIGTERM and SIGHUP end it,
 * and it dies with top; in the parent, 1; -1 when it cannot be started
 * (errno). The child ends with _exit: top's atexit work is not its. */
static int job_fork(job_t *j)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t parent = getpid();
	pid_t c = fork();
	if (c < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (c == 0) {
		close(p[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGTSTP, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		j->fd = p[1];
		return 0;
	}
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	*j = (job_t){.pid = c, .fd = p[0]};
	return 1;
}

/* Reads what j has sent: 1 at its end (EOF), 0 while more may come. */
static int job_read(job_t *j)
{
	for (;;) {
		if (j->cap - j->len < 65536) {
			j->cap = j->cap ? 2 * j->cap : 262144;
			j->buf = xrealloc(j->buf, j->cap);
		}
		ssize_t n = read(j->fd, j->buf + j->len, j->cap - j->len);
		if (n > 0) {
			j->len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n == 0 || errno != EAGAIN;
	}
}

/* Ends j (SIGKILL first when kill_it) and waits for it: its wait
 * status. */
static int job_end(job_t *j, bool kill_it)
{
	int st = 0;
	if (kill_it)
		kill(j->pid, SIGKILL);
	while (waitpid(j->pid, &st, 0) < 0 && errno == EINTR)
		;
	close(j->fd);
	free(j->buf);
	*j = (job_t){0};
	return st;
}

/* The screen's state between two frames. */
typedef struct top_ui {
	top_screen_t s;
	const top_target_t *t;
	const live_t *lv;
	uint64_t lag;
	int saved;    /* reports written */
	job_t report; /* s: the report being written */
	char rpath[PATH_MAX];
} top_ui_t;

static void screen_redraw(top_ui_t *u)
{
	screen_draw(u->lv->polls ? &u->lv->cur : NULL, &u->s);
}

/* s: writes `mallock report`'s text of the window so far in a job; its
 * end is read by report_done. */
static void report_start(top_ui_t *u)
{
	if (u->report.pid) {
		snprintf(u->s.status, sizeof u->s.status,
		         "a report is being written already: %.4000s",
		         u->rpath);
		return;
	}
	char cwd[PATH_MAX], why[4096];
	if (!getcwd(cwd, sizeof cwd))
		snprintf(cwd, sizeof cwd, ".");
	snprintf(u->rpath, sizeof u->rpath,
	         "%.3800s/mallock-top.%.32s.%ld.%d.txt", cwd, u->t->comm,
	         u->t->pid, ++u->saved);
	uint64_t until = mono_ns() - u->lag;
	int f = job_fork(&u->report);
	if (f < 0) {
		snprintf(u->s.status, sizeof u->s.status,
		         "no report: cannot start it: %.200s", strerror(errno));
		return;
	}
	if (f == 0) {
		int rc = save_report(u->t->trace, u->lv->from_mono_ns, until,
		                     u->rpath, why, sizeof why);
		if (rc && write(u->report.fd, why, strlen(why)) < 0)
			_exit(2);
		_exit(rc ? 1 : 0);
	}
	snprintf(u->s.status, sizeof u->s.status,
	         "writing the report of the window so far: %.4000s", u->rpath);
}

/* Whether the report's job ended (its line then on the status line). */
static bool report_done(top_ui_t *u)
{
	if (!u->report.pid || !job_read(&u->report))
		return false;
	char why[4096];
	snprintf(why, sizeof why, "%.*s", (int)u->report.len,
	         u->report.buf ? u->report.buf : "");
	int st = job_end(&u->report, false);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		snprintf(u->s.status, sizeof u->s.status,
		         "report written: %.4000s", u->rpath);
	else
		snprintf(u->s.status, sizeof u->s.status, "no report: %.4000s",
		         why[0] ? why : "its process failed");
	return true;
}

/* Serves the keys waiting on the terminal; returns whether the frame
 * changed. q ends the loop as a signal would. */
static bool screen_keys(top_ui_t *u)
{
	bool redraw = false;
	int k;
	while ((k = wgetch(stdscr)) != ERR) {
		if (k == KEY_RESIZE) {
			tty_size(&u->s);
			redraw = true;
			continue;
		}
		if (u->s.help && k != 'q') {
			u->s.help = false; /* any key closes the help */
			redraw = true;
			continue;
		}
		if (k == 'q' || k == 'Q') {
			top_stop = 1;
			return false;
		} else if (k == ' ') {
			u->s.frozen = !u->s.frozen;
			snprintf(u->s.status, sizeof u->s.status, "%s",
			         u->s.frozen ? "frozen: space thaws" : "");
		} else if (k >= '1' && k <= '4') {
			u->s.view = k - '0';
		} else if (k == '?' || k == 'h') {
			u->s.help = true;
		} else if (k == 's') {
			report_start(u);
		} else {
			continue;
		}
		redraw = true;
	}
	return redraw;
}

/* Waits up to ms for a key, a signal or fd (-1: none) to be readable,
 * serving the keys and the report's end: the screen's sleep. Returns
 * whether fd is readable (or at its end). */
static bool screen_wait(top_ui_t *u, long ms, int fd)
{
	struct pollfd p[3] = {
	    {.fd = fileno(tty.in), .events = POLLIN},
	    {.fd = fd, .events = POLLIN},
	    {.fd = u->report.pid ? u->report.fd : -1, .events = POLLIN}};
	int r = poll(p, 3, (int)ms);
	if (r > 0 && (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)))
		top_stop = 1; /* the terminal is gone */
	/* ncurses may hold keys read already: asked every time. */
	bool redraw = screen_keys(u);
	if (top_stop)
		return false;
	redraw |= report_done(u);
	if (top_tstp) {
		top_tstp = 0;
		tty_leave();
		raise(SIGSTOP);
		tty_enter();
		clearok(curscr, TRUE);
		tty_size(&u->s);
		redraw = true;
	}
	if (redraw)
		screen_redraw(u);
	return r > 0 && fd >= 0 && (p[1].revents & (POLLIN | POLLHUP));
}

/* Between looks the chunks already written are applied up to now less
 * the lag (a step at most, the keys served around it), so that a look
 * applies only the last moments' (its time is then mostly the model's
 * end). The view is the same: a look's watermark is never behind the
 * steps'. Only once a look has made the running model: the model converts
 * ticks with the clock pairs written when it is made, and a model made a
 * moment after the window opened would be off by parts in 10^5 from the
 * report's conversion, where the first look's is within a millionth. A
 * read error is left for the look to report. Returns when it ran. */
static uint64_t advance_between(live_t *lv, const top_target_t *t, uint64_t lag)
{
	struct stat st;
	uint64_t now = mono_ns();
	if (lv->m && stat(t->trace, &st) == 0 &&
	    live_advance(lv, now - lag, TOP_STEP_RECORDS) == 0)
		live_warm(lv, TOP_WARM_NS);
	return now;
}

/* One look: the new chunks applied here (live_advance, in steps with the
 * keys served between), the model ended and its view made (live_finish)
 * in a job while the keys are served: 0 with the view made lv's current
 * one, 1 or 2 as live_poll (its line on stderr), -1 when top is to stop
 * first (the job killed). */
static int screen_look(top_ui_t *u, live_t *lv, uint64_t until, int sort)
{
	job_t j;
	u->s.reading = true;
	screen_redraw(u);
	int rc;
	do {
		rc = live_advance(lv, until, TOP_STEP_RECORDS);
		if (!rc && lv->behind)
			screen_wait(u, 0, -1);
		if (top_stop) {
			u->s.reading = false;
			return -1;
		}
	} while (!rc && lv->behind);
	if (!rc)
		live_warm(lv, TOP_WARM_NS);
	int f = rc ? -1 : job_fork(&j);
	if (rc || f < 0) {
		u->s.reading = false;
		return rc ? rc : live_poll(lv, until, sort);
	}
	if (f == 0) {
		rc = live_finish(lv, until, sort);
		if (!rc && live_pack(&lv->cur, j.fd) != 0)
			rc = 1;
		_exit(rc);
	}
	bool end = false;
	while (!top_stop && !end)
		end = screen_wait(u, 50, j.fd) && job_read(&j);
	u->s.reading = false;
	if (top_stop) {
		job_end(&j, true);
		return -1;
	}
	live_view_t v;
	int bad = live_unpack(&v, j.buf, j.len);
	size_t len = j.len;
	int st = job_end(&j, false);
	if (!bad && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		live_push(lv, &v);
		return 0;
	}
	live_view_free(&v);
	if (WIFEXITED(st) && WEXITSTATUS(st))
		return WEXITSTATUS(st); /* live_poll's line is on stderr */
	if (WIFSIGNALED(st))
		fprintf(stderr, "mallock top: a look was ended by signal %d\n",
		        WTERMSIG(st));
	else
		fprintf(stderr,
		        "mallock top: a look sent %zu bytes that are no view\n",
		        len);
	return 1;
}

int cmd_top(int argc, char **argv)
{
	double interval = 1;
	long count = 0, apid = 0;
	bool batch = false, json = false, output_given = false;
	int sort = LIVE_SORT_WAIT;
	const char *sort_name = "wait", *output = NULL, *pprof_dir = NULL;
	cli_t cli = {.cmd = &top_cli};
	ctl_who = "mallock top"; /* in the page's messages */
	int c;
	while ((c = cli_next(&cli, argc, argv)) != -1) {
		char *end;
		switch (c) {
		case CLI_DONE:
			return cli.status;
		case OPT_INTERVAL:
			interval = strtod(optarg, &end);
			if (end == optarg || *end || !(interval >= 0.2) ||
			    interval > 3600)
				return cli_bad_value("top", "--interval",
				                     optarg,
				                     "not seconds from 0.2 to "
				                     "3600");
			break;
		case OPT_BATCH:
			batch = true;
			break;
		case OPT_COUNT:
			if (cli_number("top", "--count", optarg, 1, 100000000,
			               &count))
				return CLI_EXIT_USAGE;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json"))
				return cli_bad_value("top", "--format", optarg,
				                     "not text or json");
			json = !strcmp(optarg, "json");
			break;
		case OPT_SORT:
			sort = !strcmp(optarg, "wait")    ? LIVE_SORT_WAIT
			       : !strcmp(optarg, "hold")  ? LIVE_SORT_HOLD
			       : !strcmp(optarg, "alloc") ? LIVE_SORT_ALLOC
			                                  : -1;
			if (sort < 0)
				return cli_bad_value("top", "--sort", optarg,
				                     "not wait, hold or alloc");
			sort_name = optarg;
			break;
		case 'o':
			output = optarg;
			output_given = true;
			break;
		case OPT_PPROF_DIR:
			pprof_dir = optarg;
			break;
		case OPT_ATTACH:
			if (cli_number("top", "--attach", optarg, 1,
			               CLI_PID_MAX, &apid))
				return CLI_EXIT_USAGE;
			break;
		}
	}
	top_target_t t = {0};
	int nops = argc - optind;
	bool dashdash = optind > 1 && !strcmp(argv[optind - 1], "--");
	if (apid) {
		if (nops)
			return cli_usage_error("top",
			                       "extra operand '%s' (--attach "
			                       "names the process)",
			                       argv[optind]);
		t.how = TT_ATTACH;
		t.pid = apid;
	} else if (dashdash && nops) {
		t.how = TT_CMD;
	} else if (nops == 1) {
		t.how = TT_PID;
		if (cli_number("top", "process id", argv[optind], 1,
		               CLI_PID_MAX, &t.pid))
			return CLI_EXIT_USAGE;
	} else if (!nops) {
		return cli_usage_error("top", "missing PID, --attach PID or -- "
		                              "CMD");
	} else {
		return cli_usage_error("top",
		                       "extra operand '%s' (a command to run "
		                       "follows --)",
		                       argv[optind + 1]);
	}
	/* The screen on a terminal; refused before the process is touched
	 * when the terminal is too small. */
	bool screen = !batch && !json && isatty(1);
	if (screen && tty_check() < 0)
		return 1;
	if (t.how != TT_CMD) {
		proc_t p;
		if (proc_stat(t.pid, &p) != 0) {
			fprintf(stderr, "mallock top: no process %ld\n", t.pid);
			return 1;
		}
		t.start = p.start;
		snprintf(t.comm, sizeof t.comm, "%s", p.comm);
	}
	/* A directory that cannot take the profiles is said before the
	 * process is touched. */
	top_pprof_t *pp = NULL;
	if (pprof_dir) {
		char why[PATH_MAX + 200];
		pp = top_pprof_open(pprof_dir, (long)getpid(), why, sizeof why);
		if (!pp) {
			fprintf(stderr, "mallock top: %s\n", why);
			return 1;
		}
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	uint64_t from = mono_ns();
	char out_abs[PATH_MAX + 64] = "";
	if (!output)
		output = TOP_DEFAULT_OUTPUT;
	if (output[0] != '/') {
		char cwd[PATH_MAX];
		if (getcwd(cwd, sizeof cwd))
			snprintf(out_abs, sizeof out_abs, "%s/%s", cwd, output);
	}
	const char *out_path = out_abs[0] ? out_abs : output;
	int rc = t.how == TT_PID ? start_pid(&t)
	         : t.how == TT_ATTACH
	             ? start_attach(&t, out_path)
	             : start_cmd(&t, argv + optind, out_path, output_given);
	if (rc < 0) {
		if (t.ctl_open)
			ctl_target_close(&t.ctl);
		top_pprof_close(pp);
		return 1;
	}
	if (t.how != TT_PID)
		from = 0; /* the trace holds this window only */

	live_t lv = {.path = t.trace,
	             .from_mono_ns = from,
	             .symbols = true,
	             .on_model = pp ? top_pprof_look : NULL,
	             .on_model_ctx = pp};
	uint64_t lag_env = flush_lag_ns(t.pid), lag = top_lag(&t, lag_env);
	top_ui_t ui = {.s = {.view = TOP_VIEW_LOCKS, .sort = sort_name},
	               .t = &t,
	               .lv = &lv,
	               .lag = lag};
	if (screen) {
		/* ^Z is top's (the terminal first); SIGWINCH is left to
		 * ncurses (KEY_RESIZE). */
		sigaction(SIGTSTP, &sa, NULL);
		if (tty_enter() < 0) {
			finish(&t, target_alive(&t));
			tty_close();
			top_pprof_close(pp);
			return 1;
		}
		tty_size(&ui.s);
		screen_draw(NULL, &ui.s);
	}
	int shown = 0, status = 0;
	bool alive = true;
	top_cost_read_t cost_prev, cost_now;
	cost_read(&t, &cost_prev);
	long step_ms = (long)llround(interval * 1000);
	/* The screen's first look comes after half a second (or the
	 * interval, if shorter), not a whole interval: a person waits for
	 * it. The blocks of --batch and JSON come each interval. */
	long first_ms = screen && step_ms > 500 ? 500 : step_ms;
	uint64_t next = mono_ns() + (uint64_t)first_ms * 1000000ull;
	while (!top_stop && (!count || shown < count)) {
		uint64_t adv = 0;
		while (!top_stop && mono_ns() < next && alive) {
			uint64_t left = (next - mono_ns()) / 1000000ull;
			long ms = left > 50 ? 50 : (long)left + 1;
			if (screen)
				screen_wait(&ui, ms, -1);
			else
				sleep_ms(ms);
			alive = target_alive(&t);
			lag = ui.lag = top_lag(&t, lag_env);
			if (alive && mono_ns() - adv >= TOP_ADVANCE_NS)
				adv = advance_between(&lv, &t, lag);
		}
		if (top_stop)
			break;
		alive = target_alive(&t);
		next += (uint64_t)step_ms * 1000000ull;
		struct stat st;
		if (stat(t.trace, &st) != 0) {
			/* -- CMD: created at the program's start. */
			if (!alive)
				break;
			continue;
		}
		/* Frozen, the screen keeps the rows it shows: the next look
		 * after the thaw spans the frozen time (its length says so). */
		if (screen && ui.s.frozen && alive)
			continue;
		/* Once the process has ended its trace is whole: every event
		 * is before now. */
		lag = ui.lag = top_lag(&t, lag_env);
		uint64_t until = alive ? mono_ns() - lag : mono_ns();
		int lr = screen ? screen_look(&ui, &lv, until, sort)
		                : live_poll(&lv, until, sort);
		if (lr < 0)
			break; /* q or a signal during the look */
		if (lr) {
			status = 1;
			break;
		}
		shown++;
		ui.s.n = shown;
		cost_read(&t, &cost_now);
		top_cost_of(&ui.s.cost, &cost_prev, &cost_now);
		cost_prev = cost_now;
		if (screen)
			screen_draw(&lv.cur, &ui.s);
		else if (json)
			top_json(&lv.cur, shown, sort_name, &ui.s.cost, stdout);
		else
			top_text(&lv.cur, shown, sort_name, &ui.s.cost, stdout);
		if (!alive)
			break;
		/* A look that took longer than the interval delays the next
		 * one: top takes at most half of a core, and says so in the
		 * interval's length. */
		if (next < mono_ns())
			next = mono_ns() + (uint64_t)step_ms * 1000000ull;
	}
	if (ui.report.pid) {
		job_end(&ui.report, true);
		unlink(ui.rpath);
		fprintf(stderr,
		        "mallock top: the report %s was not finished before "
		        "the end: none written\n",
		        ui.rpath);
	}
	tty_close();
	if (!status && !alive && t.how != TT_CMD && (!count || shown < count)) {
		fprintf(stderr,
		        "mallock top: pid %ld (%s) ended after %d interval%s\n",
		        t.pid, t.comm, shown, shown == 1 ? "" : "s");
		status = 1;
	}
	finish(&t, alive);
	live_free(&lv);
	top_pprof_close(pp);
	if (t.how == TT_PID && output_given) {
		char dst[PATH_MAX];
		if (expand(output, t.pid, t.comm, dst, sizeof dst) == 0 &&
		    copy_file(t.trace, dst) == 0)
			snprintf(t.trace, sizeof t.trace, "%s", dst);
		else
			fprintf(stderr,
			        "mallock top: cannot copy %s to %s: %s\n",
			        t.trace, output, strerror(errno));
	}
	fprintf(stderr, "mallock top: the window's trace: %s\n", t.trace);
	if (t.how == TT_CMD && !t.child && !status &&
	    WIFEXITED(t.child_status) && WEXITSTATUS(t.child_status))
		status = WEXITSTATUS(t.child_status);
	return status;
}
