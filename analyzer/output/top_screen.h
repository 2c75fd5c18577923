/*
 * top_screen.h - `mallock top`'s full-screen form: one frame of a view
 * (pipeline/live.h) for a terminal of a given size, drawn with ANSI
 * (VT100/xterm) escapes from the rows of top_out.h. The terminal's modes
 * (raw keys, the alternate screen) are the caller's (cmd/top.c).
 */
#ifndef MALLOCK_TOP_SCREEN_H
#define MALLOCK_TOP_SCREEN_H

#include "live.h"

#include <stdbool.h>
#include <stdio.h>

#define TOP_MIN_COLS 80
#define TOP_MIN_ROWS 24

/* The screen's views, switched with the keys 1 to 4. */
enum top_view {
	TOP_VIEW_LOCKS = 1,
	TOP_VIEW_SITES,
	TOP_VIEW_FINDINGS,
	TOP_VIEW_THREADS
};

typedef struct top_screen {
	int cols, rows; /* the terminal's size */
	int view;       /* enum top_view */
	bool frozen;    /* space: the rows shown stay */
	bool help;      /* ?: the keys over the view */
	int n;          /* the interval the view is of (0: none yet) */
	const char *sort;
	char status[4200]; /* the bottom line ("" none) */
} top_screen_t;

/*
 * Writes one whole frame to out: cursor home, every line cleared to its
 * end, lines cut to s->cols, s->rows lines at most. v is NULL before the
 * first view. Under TOP_MIN_COLS x TOP_MIN_ROWS the frame is the one
 * line "terminal too small (WxH, needs 80x24)". Does not flush.
 */
void top_screen_draw(const live_view_t *v, const top_screen_t *s, FILE *out);

#endif
