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
 * agrees and one of whose threads does not block it, and then to one
 * thread that the signal cannot make fail with EINTR (blocked in a call the
 * kernel restarts, or running: proc_wake_pick); any other is refused in one
 * line and left pending. A woken process is looked at again CTL_AFTER_MS
 * later: one that is gone, or whose woken thread is, is said so (exit 1).
 *
 * Nothing is signalled or written before the page is authenticated
 * (target/ctl_client.h says how); /proc is read by target/proc.c. This
 * file is the command: its options, the wait for the answers, the output.
 *
 * Exit status (cli.h): 0 done or pending; 1 a failure, a --wake refused
 * or a woken process or thread gone (one line on stderr per process
 * saying what, which process, why and what to do); 2 a usage error.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "ctl_client.h"
#include "proc.h"

#include <errno.h>
#include <getopt.h> /* optarg, optind */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CTL_CMD_STATUS 3u /* not written: status only reads the page */
#define CTL_WAIT_MS 1000  /* how long start/stop wait for an idle one */
#define CTL_BUSY_MS 5000  /* ... and for one that used CPU meanwhile */
#define CTL_WAKE_MS 300   /* --wake: when a silent process is woken */
#define CTL_AFTER_MS 500  /* ... and how long after the wake it is seen */

enum { OPT_WAKE = 256, OPT_TREE, OPT_EXE };

static const cli_opt_t ctl_opts[] = {
    {"tree", OPT_TREE, 0, NULL,
     "PID and all its descendants that run under\nthe shim"},
    {"exe", OPT_EXE, 1, "NAME",
     "every process of that executable running\nunder the shim (no PID)"},
    {"wake", OPT_WAKE, 0, NULL,
     "start/stop: a process that has not answered\nwithin 300 ms gets its "
     "MALLOCK_SIGNAL, only if\nits page says the handler is still the "
     "shim's,\nand only in one thread the signal cannot make\nfail with "
     "EINTR (not one in poll, epoll_wait,\nnanosleep...); refused "
     "otherwise"},
    {"help", 'h', 0, NULL, "this help"},
    {0}};

static const cli_cmd_t ctl_cli = {
    .name = "ctl",
    .usage = "start|stop|status [--wake] PID\n"
             "start|stop|status [--wake] --tree PID\n"
             "start|stop|status [--wake] --exe=NAME",
    .intro = "  start   switch recording on (MALLOCK_START=paused, or after "
             "stop)\n"
             "  stop    switch recording off; the trace is complete up to "
             "here\n"
             "  status  print the recording state, the trace path and its "
             "size (reads the\n          page only: never signals)\n",
    .outro = "A request no allocation or lock call has served within 1 s (5 "
             "s if the process\nran meanwhile) stays pending: the process "
             "applies it at its next such call.\n",
    .opts = ctl_opts,
    .operands = "request (start, stop or status)",
    .min_operands = 1,
    .max_operands = 2,
};

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

#define PENDING_TEXT "applied at the process's next allocation or lock call"

static void status_print(const ctl_target_t *t)
{
	ctl_page_t c;
	ctl_page_copy(t->pg, &c);
	printf("pid %ld: %s (%s)\n", t->p.pid, ctlp_state_name(c.state), c.why);
	unsigned cmd = ctl_pending_cmd(t->pg);
	if (cmd)
		printf("  pending: `mallock ctl %s`, " PENDING_TEXT "\n",
		       cmd == CTLP_CMD_START ? "start" : "stop");
	trace_print(&c);
	if (c.flush_req && c.flush_ms && c.flush_ms != CTLP_FLUSH_NONE)
		printf("  flush deadline %u ms: a reader of the trace asks for "
		       "%u ms (`mallock top`)\n",
		       c.flush_ms, c.flush_req);
	else if (c.flush_req)
		printf("  flush deadline: a reader of the trace asks for %u "
		       "ms (`mallock top`), %s\n",
		       c.flush_req, PENDING_TEXT);
}

/* start/stop not answered: the request stays on the page. */
static void pending_print(const ctl_target_t *t, unsigned cmd)
{
	ctl_page_t c;
	ctl_page_copy(t->pg, &c);
	printf("pid %ld: pending: " PENDING_TEXT " (`%s` written to its page; "
	       "%s)\n  until then: %s (%s)\n",
	       t->p.pid, cmd == CTLP_CMD_START ? "start" : "stop",
	       t->signalled == 1 ? "woken by its signal, it made no such call "
	                           "since"
	                         : "it made none while ctl waited",
	       ctlp_state_name(c.state), c.why);
	trace_print(&c);
}

/*
 * The processes woken (--wake), seen again CTL_AFTER_MS after the last
 * wake (waited_ms: when it was, in the wait loop's time; -1 none): each
 * still there with the same start time, its signalled thread too, and its
 * threads counted. One line each on stdout; one on stderr for a process or
 * thread that is gone (the signal may have ended it). Returns nonzero when
 * some is gone.
 */
static int woken_check(const ctl_target_t *ts, size_t n, int waited_ms)
{
	if (waited_ms < 0)
		return 0;
	struct timespec tsl = {0, (long)CTL_AFTER_MS * 1000 * 1000};
	nanosleep(&tsl, NULL);
	int gone = 0;
	for (size_t k = 0; k < n; k++) {
		const ctl_target_t *t = &ts[k];
		if (t->signalled != 1)
			continue;
		proc_t now;
		int same =
		    proc_stat(t->p.pid, &now) == 0 && now.start == t->p.start;
		int threads = same ? proc_nthreads(t->p.pid) : -1;
		if (!same) {
			fprintf(stderr,
			        "mallock ctl: process %ld (%s) is gone %d ms "
			        "after --wake signalled its thread %ld (in "
			        "%s): the signal may have ended it\n",
			        t->p.pid, t->p.comm, CTL_AFTER_MS, t->wake_tid,
			        t->wake_call);
			gone = 1;
		} else if (!proc_task_alive(t->p.pid, t->wake_tid)) {
			fprintf(
			    stderr,
			    "mallock ctl: process %ld (%s): its thread %ld, "
			    "signalled by --wake (in %s), is gone %d ms "
			    "later (threads: %d then, %d now)\n",
			    t->p.pid, t->p.comm, t->wake_tid, t->wake_call,
			    CTL_AFTER_MS, t->wake_threads, threads);
			gone = 1;
		} else {
			printf(
			    "pid %ld: woken: thread %ld (in %s); %d ms later "
			    "the process and that thread are there, threads: "
			    "%d then, %d now\n",
			    t->p.pid, t->wake_tid, t->wake_call, CTL_AFTER_MS,
			    t->wake_threads, threads);
		}
	}
	return gone;
}

int cmd_ctl(int argc, char **argv)
{
	int do_wake = 0, tree = 0, c;
	const char *exe = NULL;
	cli_t cli = {.cmd = &ctl_cli};
	while ((c = cli_next(&cli, argc, argv)) != -1) {
		if (c == CLI_DONE)
			return cli.status;
		if (c == OPT_WAKE)
			do_wake = 1;
		else if (c == OPT_TREE)
			tree = 1;
		else if (c == OPT_EXE)
			exe = optarg;
	}
	const char *cmd = argv[optind];
	unsigned code = !strcmp(cmd, "start")    ? CTLP_CMD_START
	                : !strcmp(cmd, "stop")   ? CTLP_CMD_STOP
	                : !strcmp(cmd, "status") ? CTL_CMD_STATUS
	                                         : 0;
	if (!code)
		return cli_usage_error("ctl",
		                       "unknown request '%s' (start, stop or "
		                       "status)",
		                       cmd);
	if (do_wake && code == CTL_CMD_STATUS)
		return cli_usage_error("ctl", "status never signals: --wake is "
		                              "for start and stop");
	if (exe && tree)
		return cli_usage_error("ctl", "--tree and --exe exclude each "
		                              "other");
	if (exe && optind + 1 < argc)
		return cli_usage_error("ctl",
		                       "extra operand '%s' (--exe names "
		                       "the processes)",
		                       argv[optind + 1]);
	if (!exe && optind + 1 >= argc)
		return cli_usage_error("ctl", "missing PID (or --exe=NAME)");
	const char *mode = exe ? "--exe" : tree ? "--tree" : "";
	const char *arg = exe ? exe : argv[optind + 1];
	long *pids = NULL;
	size_t n = 0;
	int group = 1;
	if (!strcmp(mode, "--exe")) {
		pids = proc_exe_pids(arg, &n);
	} else {
		long pid;
		if (cli_number("ctl", "process id", arg, 1, CLI_PID_MAX, &pid))
			return CLI_EXIT_USAGE;
		if (*mode) {
			pids = proc_tree_pids(pid, &n);
		} else {
			pids = malloc(sizeof *pids);
			pids[0] = pid;
			n = 1;
			group = 0;
		}
	}
	/* The operator's own directory: pages of dead processes go. */
	char own[64];
	const char *why;
	ctlp_default_dir(own, sizeof own, (uint32_t)geteuid());
	int ofd = ctlp_dir_open(own, (uint32_t)geteuid(), 0, &why);
	if (ofd >= 0) {
		ctl_sweep_stale(ofd);
		close(ofd);
	}
	ctl_target_t *ts = calloc(n ? n : 1, sizeof *ts);
	size_t ok = 0;
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		if (ctl_target_open(&ts[ok], pids[i], group) == 0) {
			/* A stop ends any reader's flush request too (one
			 * left by a `mallock top` that was killed). */
			if (code == CTLP_CMD_STOP)
				__atomic_store_n(&ts[ok].pg->flush_req, 0,
				                 __ATOMIC_RELEASE);
			if (code != CTL_CMD_STATUS)
				ctl_request(&ts[ok], code);
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
			ctl_target_close(&ts[k]);
		}
		free(pids);
		free(ts);
		return failed;
	}
	/* Wait for every answer; with --wake, wake the silent ones (whose
	 * handler is the shim's) after CTL_WAKE_MS and give them as long
	 * again. */
	size_t left = ok;
	int limit = CTL_WAIT_MS / 10, wake_ms = -1;
	for (int i = 0; i < limit && left; i++) {
		struct timespec tsl = {0, 10 * 1000 * 1000};
		nanosleep(&tsl, NULL);
		for (size_t k = 0; k < ok; k++) {
			ctl_target_t *t = &ts[k];
			if (t->done)
				continue;
			if (ctl_answered(t)) {
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
				if (ctl_wake(t) != 0)
					failed = 1;
				else
					limit = i + CTL_WAIT_MS / 10;
				if (t->signalled == 1)
					wake_ms = i * 10;
			}
		}
	}
	for (size_t k = 0; k < ok; k++) {
		ctl_target_t *t = &ts[k];
		if (!t->done)
			pending_print(t, code);
	}
	if (woken_check(ts, ok, wake_ms))
		failed = 1;
	for (size_t k = 0; k < ok; k++)
		ctl_target_close(&ts[k]);
	free(pids);
	free(ts);
	return failed;
}
