/*
 * ctl_client.h - the client side of the control page (format/ctl_page.h;
 * shim/control/control.h is the other side), for `mallock ctl`: finding
 * and authenticating a traced process's page, writing a request to it,
 * seeing it served, and the --wake signal.
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
 * Errors are one line on stderr, "mallock ctl: ...", saying what, which
 * process, why and what to do.
 */
#ifndef MALLOCK_CTL_CLIENT_H
#define MALLOCK_CTL_CLIENT_H

#include "ctl_page.h"
#include "proc.h"

#include <stdint.h>

/* One process whose page is open. */
typedef struct ctl_target {
	proc_t p;
	int fd;
	ctl_page_t *pg;
	char where[1200];
	uint64_t req;
	uint64_t cpu; /* utime + stime when the request was written */
	int signalled, done;
	long wake_tid;      /* --wake: the thread signalled */
	char wake_call[40]; /* ... and what it was doing then */
	int wake_threads;   /* the process's threads then */
} ctl_target_t;

/* The command named in the messages below ("mallock ctl" unless the
 * command that uses them sets it: "mallock top"). */
extern const char *ctl_who;

/* Removes from the directory dfd the pages of dead processes (or of
 * earlier processes with the same pid). dfd stays open. */
void ctl_sweep_stale(int dfd);
/*
 * Finds and authenticates pid's page (see the file comment). Returns 0 with
 * t->pg mapped (close it with ctl_target_close), or -1 after printing why
 * (nothing was written or sent; t->p says what /proc said, t holds nothing
 * to close). quiet 1: say nothing about a process that does not run
 * under the shim; quiet 2: say nothing at all (a try that may come before
 * the shim made its page).
 */
int ctl_target_open(ctl_target_t *t, long pid, int quiet);
void ctl_target_close(ctl_target_t *t);
/* A consistent copy of the page (its seqlock), its strings NUL-ended. */
void ctl_page_copy(const ctl_page_t *pg, ctl_page_t *out);
/* The request on the page that the process has not served yet: its
 * command (CTLP_CMD_START or _STOP), or 0. */
unsigned ctl_pending_cmd(const ctl_page_t *pg);
/* Writes cmd (CTLP_CMD_START or _STOP) as the page's next request and
 * notes the process's CPU time (t->req, t->cpu). */
void ctl_request(ctl_target_t *t, unsigned cmd);
/* Nonzero once the process has served t's request. */
int ctl_answered(const ctl_target_t *t);
/*
 * --wake: sends the page's signal only when the shim can show the handler
 * is its own: the page's wake_sig names the signal (the shim installed its
 * handler and no sigaction/signal/rt_sigaction call of the program has
 * named that signal since), the kernel says it is caught (SigCgt), and some
 * thread does not block it; and then only to one thread that a handler
 * (the shim's has SA_RESTART) cannot make fail with EINTR: one blocked in a
 * call the kernel restarts, or running (proc_wake_pick). Otherwise prints
 * one line (which threads were in which calls) and returns -1 (with
 * t->signalled -1). 0: sent to that thread alone (t->signalled 1,
 * t->wake_tid, t->wake_call, t->wake_threads) or the send failed (-1).
 */
int ctl_wake(ctl_target_t *t);

#endif
