/*
 * proc.h - what /proc says about a running process, for `mallock ctl`:
 * its stat, status and maps (whether it runs under the shim, the control
 * page it maps), its environment, its threads' signal masks, its CPU time,
 * and the walks over /proc for a process tree or an executable's name.
 *
 * Invariants: only reads; a pid is a moment's answer (it may exit or be
 * reused at any time), so callers that must know it is the same process
 * compare start times (proc_t.start). No call signals or writes anything.
 */
#ifndef MALLOCK_PROC_H
#define MALLOCK_PROC_H

#include <stddef.h>
#include <stdint.h>

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

/* /proc/PID/stat's ppid (field 4), start time (field 22) and comm into p
 * (its other fields untouched). 0, or -1 when there is no such process. */
int proc_stat(long pid, proc_t *p);
/* All of proc_t for pid (p zeroed first): stat, then status (Uid:, SigCgt:)
 * and maps (maps_ok, shim, page, page_range: the first mapping whose path,
 * " (deleted)" aside, ends in /PID.page). 0, or -1 when there is no such
 * process; an unreadable status or maps leaves its fields 0. */
int proc_read(long pid, proc_t *p);
/* Nonzero if some thread of pid does not block sig (the wake-up would then
 * reach a handler rather than sit pending or go to a sigwait); 0 also when
 * /proc/PID/task is unreadable. */
int proc_sig_deliverable(long pid, int sig);
/* The thread a control signal may be sent to without interrupting a call
 * its host may not survive being interrupted in (proc_wake_pick). */
typedef struct proc_wake {
	long tid;          /* the thread chosen; 0: none is safe */
	char call[40];     /* what it was doing: "futex", "running", ... */
	int nthreads;      /* the threads seen */
	char threads[600]; /* each thread seen and its call ("tid 7: poll") */
} proc_wake_t;
/*
 * Chooses a thread of pid that does not block sig and is safe to interrupt
 * with a handler installed with SA_RESTART (the shim's control handler is):
 * from /proc/PID/task/TID/syscall, one blocked in a call the kernel then
 * restarts (a futex wait without timeout, wait4/waitid, flock, fcntl
 * F_SETLKW, read/write/readv/writev on a descriptor that is not a socket),
 * else one running, or blocked outside any system call. Never one in a
 * call that fails with EINTR whatever SA_RESTART says (poll, epoll_wait,
 * select, nanosleep, accept, sigtimedwait, sigsuspend, pause, io_getevents,
 * msgrcv, semop, a timed futex wait, a socket call, ...: man 7 signal). A
 * thread may change what it does between this reading and the send: the
 * window is the few microseconds between the two. 0 with w->tid set, or
 * -1 with w->tid 0 and w->threads saying what each thread was doing.
 */
int proc_wake_pick(long pid, int sig, proc_wake_t *w);
/* The number of threads of pid (/proc/PID/task), -1 when it is gone. */
int proc_nthreads(long pid);
/* Nonzero while thread tid of pid exists. */
int proc_task_alive(long pid, long tid);
/* The value of NAME= in /proc/PID/environ into out (cap bytes; "" if absent
 * or unreadable). Reads through a static buffer: not thread-safe. */
void proc_env(long pid, const char *name, char *out, size_t cap);
/* utime + stime of pid (stat fields 14 and 15), 0 if unknown. */
uint64_t proc_cpu(long pid);
/* root and all its descendants, from every /proc/PID/stat's ppid, parents
 * before children; *n their number (root is always first, even when it
 * does not exist). The array is malloc'd: the caller frees it. */
long *proc_tree_pids(long root, size_t *n);
/* The processes, this one excepted, whose executable's base name is name
 * (or, when /proc/PID/exe is unreadable, whose comm is name, comm being
 * cut at 15 bytes); *n their number. malloc'd: the caller frees it. */
long *proc_exe_pids(const char *name, size_t *n);

#endif
