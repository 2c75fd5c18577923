/*
 * top_out.h - `mallock top`'s forms of one view (pipeline/live.h): its
 * rows, one line of text each (what the batch block and the screen,
 * top_screen.h, both print: a figure is formatted once, here), the
 * plain-text block of batch mode (as `top -b` writes one per interval)
 * and one JSON object on one line (JSON lines). docs/mallock-top.md
 * describes them.
 */
#ifndef MALLOCK_TOP_OUT_H
#define MALLOCK_TOP_OUT_H

#include "live.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* How many rows of each table a block shows. */
#define TOP_LOCK_ROWS 10
#define TOP_SITE_ROWS 8
#define TOP_FIND_ROWS 5

/* Room for any row below. */
#define TOP_LINE 512

/* Which counters a row shows: the last interval's, the window's, both
 * (interval | window). */
enum top_cols { TOP_IVL = 1, TOP_WIN = 2, TOP_BOTH = 3 };

/*
 * The shim's cost in an interval, estimated from the control page's
 * sampled counters (format/ctl_page.h cost_*): one reading at each look,
 * and the difference of two. The shim's CPU time = the interval's hook
 * calls x the mean shim time of its sampled calls; its share = that / the
 * process's CPU time (utime + stime) between the two readings, at most
 * 100% (an estimate never exceeds what was counted).
 */
typedef struct top_cost_read {
	bool page;      /* the page has the counters (cost_every != 0) */
	uint64_t calls; /* cost_calls, cost_sampled, cost_ns, cost_over */
	uint64_t sampled, ns, over;
	bool cpu_ok;     /* /proc/PID/stat was read */
	uint64_t cpu_ns; /* the process's utime + stime */
} top_cost_read_t;

/* Sampled calls an estimate needs in its interval. */
#define TOP_COST_MIN_SAMPLES 10

typedef struct top_cost {
	bool ok;        /* share is an estimate; else why says why not */
	char why[160];  /* "no control page", "3 calls sampled", ... */
	uint64_t calls; /* the interval's hook calls (the samples' gaps) */
	uint64_t sampled, over;
	double mean_ns; /* shim ns per sampled call */
	double shim_ns; /* calls x mean_ns */
	double cpu_ns;  /* the process's CPU time in the interval */
	double share;   /* shim_ns / cpu_ns, 0..1 */
} top_cost_t;

/* The estimate between the readings a (earlier) and b. */
void top_cost_of(top_cost_t *c, const top_cost_read_t *a,
                 const top_cost_read_t *b);
/* "shim ~12% of the process's CPU (est., 41 calls sampled)", or
 * "shim cost: - (why)". */
const char *top_cost_line(char *buf, size_t len, const top_cost_t *c);

/* Each writes one line (no newline) into buf and returns buf. A name
 * longer than its width keeps its head and tail joined by "...".
 * The header: process, pid, interval n (1-based), its length, the
 * window's age. */
const char *top_title(char *buf, size_t len, const live_view_t *v, int n);
/* Threads, events/s, events and dropped events. */
const char *top_counts(char *buf, size_t len, const live_view_t *v);
/* A lock class: wait, contended, max wait, hold, alloc%, alloc-lw. */
const char *top_lock_head(char *buf, size_t len, int cols, int name_w);
const char *top_lock_row(char *buf, size_t len, const live_lock_t *l, int cols,
                         int name_w);
/* A site under a class: lock, site, the interval's allocator time in
 * holds, allocations and frees | the window's allocator time. */
const char *top_site_row(char *buf, size_t len, const live_site_t *s,
                         int lock_w, int site_w);
/* A finding's first line: severity, kind, lock @ site. */
const char *top_find_row(char *buf, size_t len, const live_find_t *f);
/* A thread: tid, name, wait, contended, acquisitions, allocations,
 * frees, allocator time; cols TOP_IVL or TOP_WIN. */
const char *top_thread_head(char *buf, size_t len, int name_w);
const char *top_thread_row(char *buf, size_t len, const live_thread_t *t,
                           int cols, int name_w);

/* The block of interval n (1-based) of v; sort names what the locks are
 * ordered by ("wait", "hold", "alloc"); cost is the shim's in the
 * interval (NULL: not shown). Ends with a blank line. */
void top_text(const live_view_t *v, int n, const char *sort,
              const top_cost_t *cost, FILE *out);
/* The same as one JSON object and a newline. */
void top_json(const live_view_t *v, int n, const char *sort,
              const top_cost_t *cost, FILE *out);

#endif
