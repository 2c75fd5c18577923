/*
 * ctl_page.h - the control page: what the shim (shim/control/control.c) and
 * `mallock ctl` (analyzer/cmd/ctl.c) share about a running process.
 *
 * Each traced process maps one small file, <dir>/<pid>.page, MAP_SHARED.
 * The shim writes its identity and state there; `mallock ctl` writes one
 * request word, which the shim reads at its next hook call (no signal;
 * `mallock ctl --wake` may add one, only to a handler the page says is the
 * shim's). docs/server.md describes it for operators.
 *
 * Invariants:
 * - The page is written by the process it names, except `request`, which
 *   only `mallock ctl` writes (one 64-bit atomic store).
 * - Identity (magic..start_time) is written once before the file gets its
 *   final name; the state fields are rewritten under the seqlock `gen`
 *   (odd while being written): a reader retries until it reads an even,
 *   unchanged gen.
 * - <dir> is private: a directory of the process's user, mode 0700,
 *   reached without following a symlink (ctlp_dir_open).
 * - A process holds a POSIX write lock on byte 0 of its page for as long
 *   as it keeps the file open (F_GETLK names it): a page whose pid holds
 *   no lock and does not map libmallock is stale.
 */
#ifndef MALLOCK_FORMAT_CTL_PAGE_H
#define MALLOCK_FORMAT_CTL_PAGE_H

#include <stddef.h>
#include <stdint.h>

#define CTLP_MAGIC 0x65676170u /* "page" */
#define CTLP_LAYOUT 1u
#define CTLP_SIZE 4096u

/* flush_req's floor, ms (the control poll's period is 10 ms) */
#define CTLP_FLUSH_MIN_MS 20u
/* flush_ms: no flush deadline in force */
#define CTLP_FLUSH_NONE UINT32_MAX
/* request/served: seq << 2 | command */
#define CTLP_CMD_START 1u
#define CTLP_CMD_STOP 2u

/* state */
/* clang-format off */
#define CTLP_STATES(X)                                                         \
	X(RECORDING, "recording")                                              \
	X(PAUSED, "paused")                                                    \
	X(CAPPED, "capped")                                                    \
	X(STOPPED, "stopped")                                                  \
	X(EXITED, "exited")                                                    \
	X(DETACHED, "detached")
/* clang-format on */

enum ctlp_state {
#define CTLP_ENUM_(n, s) CTLP_##n,
	CTLP_STATES(CTLP_ENUM_)
#undef CTLP_ENUM_
};

typedef struct ctl_page {
	uint32_t magic, layout;
	uint32_t pid;
	uint32_t uid;        /* the page file's owner (the process's euid) */
	uint64_t start_time; /* /proc/PID/stat field 22, clock ticks */
	int32_t signal;      /* the installed control signal; 0: none */
	uint32_t start_uid;  /* euid when the shim started */
	uint64_t request;    /* written by mallock ctl (atomic) */
	uint64_t served;     /* the last request applied (atomic) */
	uint32_t gen;        /* seqlock of the fields below (atomic) */
	uint32_t state;      /* enum ctlp_state */
	uint64_t bytes;      /* trace bytes written so far */
	uint64_t polls;      /* requests seen by polling (no signal) */
	char version[32];    /* the shim's version */
	char why[128];       /* what changed the state last */
	char trace[1100];    /* the trace file ("" before it exists) */
	char exe[256];       /* executable name (the `mallock ctl --exe` key) */
	/* The control signal whose handler is the shim's, 0 when none is
	 * (atomic): set when the shim installs its handler, cleared by the
	 * shim's sigaction/signal/syscall hooks before the program's own
	 * handler for that signal is installed. `mallock ctl --wake` signals
	 * only a process whose page names its signal here. An attached shim
	 * does not see the program's sigaction calls: always 0 there. */
	int32_t wake_sig;
	uint32_t attached; /* 1: the shim was loaded by `mallock attach` */
	/*
	 * The shim's own cost, sampled (shim/core/cost.h): of the hook calls
	 * that make nearly all events (the malloc family, operator new and
	 * delete, lock, trylock and unlock of mutexes, rwlocks and spinlocks),
	 * one in cost_every on average (a per-thread countdown of random
	 * gaps) reads the clock at its entry and exit and around its real
	 * call. Cumulative since the page was made; each a relaxed atomic add
	 * made by the sampled calls only (read each with an atomic load; the
	 * three are not a snapshot). cost_every 0: the shim keeps no such
	 * counters (the page of a shim from before they were added: the file
	 * is made of zeros before the shim writes it). Appended without a
	 * new layout: a reader of layout 1 that does not know them reads the
	 * rest of the page as before.
	 */
	uint32_t cost_every; /* mean gap between sampled calls (1024) */
	uint32_t cost_pad;
	uint64_t cost_calls;   /* hook calls the samples stand for: the sum of
	                          the gaps that ended at a sampled call */
	uint64_t cost_sampled; /* sampled calls */
	uint64_t cost_ns;      /* their shim time summed, ns: (exit - entry)
	                          - the real call's time, less the clock
	                          reads the sample added */
	uint64_t cost_over;    /* sampled calls left out of the sums: their
	                          shim time passed 1 ms (descheduled) */
	/*
	 * The flush deadline (MALLOCK_FLUSH_MS), appended as the cost_* were.
	 * flush_req is written by a reader that shows the trace as it grows
	 * (`mallock top`): ms, the deadline it asks for while it reads, 0
	 * when it asks none (atomic). The shim applies it at its next control
	 * poll or served request when it is shorter than the process's own
	 * (and at least CTLP_FLUSH_MIN_MS), and writes the deadline in force
	 * in flush_ms (atomic): ms, CTLP_FLUSH_NONE when there is none
	 * (MALLOCK_FLUSH_MS=0 and no request), 0 on the page of a shim from
	 * before these fields.
	 */
	uint32_t flush_req;
	uint32_t flush_ms;
} ctl_page_t;

_Static_assert(sizeof(ctl_page_t) <= CTLP_SIZE, "page fits");

/* The name of a state ("?" when out of range). */
const char *ctlp_state_name(uint32_t state);

/* Nonzero if sig is one MALLOCK_SIGNAL accepts (USR1, USR2, HUP, URG,
 * WINCH, PWR, RTMIN..RTMAX): never a signal that stops or kills by
 * design. */
int ctlp_signal_ok(int sig);

/*
 * Opens the directory path without following any symlink (each component
 * openat'ed with O_NOFOLLOW): returns an O_DIRECTORY|O_CLOEXEC fd, or -1
 * with *why set. With create, a missing last component is created 0700.
 * The last component must belong to uid with no access for others (mode &
 * 077 == 0); each component before it must belong to root or uid and, if
 * writable by others, be sticky (like /tmp). No allocation; only open,
 * openat, mkdirat, fstat, close.
 */
int ctlp_dir_open(const char *path, uint32_t uid, int create, const char **why);

/* The default directory for uid: "/tmp/mallock-<uid>" into out. */
void ctlp_default_dir(char *out, size_t cap, uint32_t uid);

/* "<pid>.page" into out. */
void ctlp_name(char *out, size_t cap, uint32_t pid);

#endif
