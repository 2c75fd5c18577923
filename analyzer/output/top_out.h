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
 * ordered by ("wait", "hold", "alloc"). Ends with a blank line. */
void top_text(const live_view_t *v, int n, const char *sort, FILE *out);
/* The same as one JSON object and a newline. */
void top_json(const live_view_t *v, int n, const char *sort, FILE *out);

#endif
