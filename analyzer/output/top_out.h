/*
 * top_out.h - `mallock top`'s batch forms of one view (pipeline/live.h):
 * a plain-text block (as `top -b` writes one per interval) and one JSON
 * object on one line (JSON lines). docs/mallock-top.md describes both.
 */
#ifndef MALLOCK_TOP_OUT_H
#define MALLOCK_TOP_OUT_H

#include "live.h"

#include <stdio.h>

/* How many rows of each table a block shows. */
#define TOP_LOCK_ROWS 10
#define TOP_SITE_ROWS 8
#define TOP_FIND_ROWS 5

/* The block of interval n (1-based) of v; sort names what the locks are
 * ordered by ("wait", "hold", "alloc"). Ends with a blank line. */
void top_text(const live_view_t *v, int n, const char *sort, FILE *out);
/* The same as one JSON object and a newline. */
void top_json(const live_view_t *v, int n, const char *sort, FILE *out);

#endif
