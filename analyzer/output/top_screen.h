/*
 * top_screen.h - `mallock top`'s full-screen form: one frame of a view
 * (pipeline/live.h) for a terminal of a given size, drawn into an ncurses
 * window from the rows of top_out.h. The terminal itself (newterm, its
 * modes, the keys, refresh and endwin) is the caller's (cmd/top.c).
 * Linked into the mallock executable only: the analyzer library needs no
 * curses.
 */
#ifndef MALLOCK_TOP_SCREEN_H
#define MALLOCK_TOP_SCREEN_H

#include "live.h"
#include "top_out.h"

#include <curses.h>
#include <stdbool.h>

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
	bool reading;   /* a look is reading the window (the title says so) */
	bool help;      /* ?: the keys over the view */
	int n;          /* the interval the view is of (0: none yet) */
	const char *sort;
	top_cost_t cost;   /* the shim's cost in the view's interval */
	char status[4200]; /* the bottom line ("" none) */
} top_screen_t;

/* Whether terminfo describes the terminal TERM names, with cursor
 * addressing: 0, or -1 with why ("the terminal type 'X' is ...") in buf.
 * Touches neither the terminal nor ncurses' screen. */
int top_screen_usable(char *why, size_t len);

/*
 * Draws one whole frame into w (erased first): lines cut one column short
 * of s->cols, s->rows lines at most, the last the status line. v is NULL
 * before the first view. Under TOP_MIN_COLS x TOP_MIN_ROWS the frame is
 * the one line "terminal too small (WxH, needs 80x24)". Does not refresh:
 * the caller's wrefresh sends the difference to the terminal.
 */
void top_screen_draw(const live_view_t *v, const top_screen_t *s, WINDOW *w);

#endif
