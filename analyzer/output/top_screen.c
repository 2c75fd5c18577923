/*
 * top_screen.c - one frame of `mallock top`'s screen (see top_screen.h).
 * Every figure comes from a row of top_out.c, the same the batch block
 * prints; this file only lays the rows out for the terminal's size, in
 * an ncurses window (the library moves the cursor, sets the attributes
 * and sends only what changed). Each line is cut one column short of the
 * edge: a character in the bottom-right cell would scroll some terminals.
 */
#include "top_screen.h"

#include "top_out.h"

#include <stdlib.h>
#include <string.h>
/* Last: its capability macros (lines, columns, ...) would rename any
 * such name in the headers above. */
#include <term.h>

typedef struct frame {
	WINDOW *w;
	int cols, rows, y;
} frame_t;

/* Line y of the frame: text cut to the width, in attr (A_NORMAL, A_BOLD,
 * A_REVERSE). Lines past the last but one (the status line's) are
 * dropped. */
static void put(frame_t *f, attr_t attr, const char *text)
{
	if (f->y >= f->rows - 1)
		return;
	wattrset(f->w, attr);
	mvwaddnstr(f->w, f->y, 0, text, f->cols - 1);
	wattrset(f->w, A_NORMAL);
	f->y++;
}

/* The lines left for a view's body. */
static int room(const frame_t *f)
{
	return f->rows - 1 - f->y;
}

/* text wrapped at word boundaries to the width less indent, each line
 * indented; at most max lines. Returns the lines put. */
static int put_wrapped(frame_t *f, int indent, const char *text, int max)
{
	int w = f->cols - 1 - indent, k = 0;
	if (w < 10)
		w = 10;
	const char *p = text;
	while (*p && k < max && room(f) > 0) {
		int n = (int)strlen(p);
		if (n > w) {
			n = w;
			while (n > w / 2 && p[n] != ' ')
				n--;
			if (p[n] != ' ')
				n = w;
		}
		char line[TOP_LINE];
		snprintf(line, sizeof line, "%*s%.*s", indent, "", n, p);
		put(f, A_NORMAL, line);
		k++;
		p += n;
		while (*p == ' ')
			p++;
	}
	return k;
}

static const char *const view_name[] = {"", "locks", "sites", "findings",
                                        "threads"};

static void header(frame_t *f, const live_view_t *v, const top_screen_t *s)
{
	char line[TOP_LINE], t[TOP_LINE];
	if (v)
		top_title(t, sizeof t, v, s->n);
	else
		snprintf(t, sizeof t,
		         "mallock top - waiting for the first interval");
	int w = f->cols - 1 - 8;
	snprintf(line, sizeof line, "%-*.*s%s", w, w, t,
	         s->frozen    ? "  FROZEN"
	         : s->reading ? " reading"
	                      : "");
	put(f, A_BOLD, line);
	put(f, A_NORMAL, v ? top_counts(t, sizeof t, v) : "");
	put(f, A_NORMAL, v ? top_cost_line(t, sizeof t, &s->cost) : "");
	/* The views' tabs, the current one in reverse video. */
	wmove(f->w, f->y, 0);
	for (int i = TOP_VIEW_LOCKS; i <= TOP_VIEW_THREADS; i++) {
		snprintf(t, sizeof t, " %d %s ", i, view_name[i]);
		wattrset(f->w, i == s->view && !s->help ? A_REVERSE : A_NORMAL);
		waddstr(f->w, t);
		wattrset(f->w, A_NORMAL);
		waddch(f->w, ' ');
	}
	waddstr(f->w, "   ? help  space freeze  s report  q quit");
	f->y++;
	put(f, A_NORMAL, "");
}

/* A table of lock classes with the counters of cols, at most max rows. */
static void lock_table(frame_t *f, const live_view_t *v, int cols, int name_w,
                       int max)
{
	char line[TOP_LINE];
	put(f, A_REVERSE, top_lock_head(line, sizeof line, cols, name_w));
	for (size_t i = 0; i < v->nlock && (int)i < max; i++)
		put(f, A_NORMAL,
		    top_lock_row(line, sizeof line, &v->lock[i], cols, name_w));
	if (!v->nlock)
		put(f, A_NORMAL, "  (no lock taken in the window yet)");
}

/* "" or " (N of M)" when only N of the M rows fit. */
static const char *of(char *buf, size_t len, size_t shown, size_t total)
{
	buf[0] = 0;
	if (shown < total)
		snprintf(buf, len, " (%zu of %zu)", shown, total);
	return buf;
}

static void view_locks(frame_t *f, const live_view_t *v, const top_screen_t *s)
{
	char line[TOP_LINE], n[48];
	int both = 2 + 28 + 1 + 56 + 3 + 56; /* the batch row */
	if (f->cols - 1 >= both) {
		int k = room(f) - 2;
		int name_w = f->cols - 1 - both + 28;
		size_t shown = v->nlock < (size_t)k ? v->nlock : (size_t)k;
		snprintf(line, sizeof line,
		         "Lock classes by %s (last interval | since the window "
		         "opened)%s:",
		         s->sort, of(n, sizeof n, shown, v->nlock));
		put(f, A_NORMAL, line);
		lock_table(f, v, TOP_BOTH, name_w > 60 ? 60 : name_w, k);
		return;
	}
	/* Narrower: the interval's table, then the window's, same rows. */
	int k = (room(f) - 5) / 2;
	int name_w = f->cols - 1 - 59;
	if (name_w > 60)
		name_w = 60;
	size_t shown = v->nlock < (size_t)k ? v->nlock : (size_t)k;
	snprintf(line, sizeof line,
	         "Lock classes by %s, last interval (%.1f s)%s:", s->sort,
	         v->ivl_s, of(n, sizeof n, shown, v->nlock));
	put(f, A_NORMAL, line);
	lock_table(f, v, TOP_IVL, name_w, k);
	put(f, A_NORMAL, "");
	snprintf(line, sizeof line,
	         "The same, since the window opened (%.1f s):", v->age_s);
	put(f, A_NORMAL, line);
	lock_table(f, v, TOP_WIN, name_w, k);
}

static void view_sites(frame_t *f, const live_view_t *v)
{
	char line[TOP_LINE], n[48];
	int avail = f->cols - 1 - 52;
	int lock_w = avail / 3, site_w = avail - lock_w;
	if (site_w > LIVE_NAME - 1)
		site_w = LIVE_NAME - 1;
	int k = room(f) - 2;
	size_t shown = v->nsite < (size_t)k ? v->nsite : (size_t)k;
	snprintf(line, sizeof line,
	         "Code that allocates or frees under the locks (by the blocks' "
	         "allocation site)%s:",
	         of(n, sizeof n, shown, v->nsite));
	put(f, A_NORMAL, line);
	snprintf(line, sizeof line, "  %-*s %-*s %9s %-26s | %9s", lock_w,
	         "lock", site_w, "allocation site", "in holds",
	         " in the last interval", "window");
	put(f, A_REVERSE, line);
	for (size_t i = 0; i < shown; i++)
		put(f, A_NORMAL,
		    top_site_row(line, sizeof line, &v->site[i], lock_w,
		                 site_w));
	if (!v->nsite)
		put(f, A_NORMAL, "  (no allocator call inside a hold yet)");
}

static void view_findings(frame_t *f, const live_view_t *v)
{
	char line[TOP_LINE];
	put(f, A_NORMAL,
	    "Findings of the window so far (as `mallock report`), worst "
	    "first:");
	size_t i = 0;
	for (; i < v->nfind && room(f) >= 3; i++) {
		put(f, A_BOLD, top_find_row(line, sizeof line, &v->find[i]));
		put_wrapped(f, 9, v->find[i].summary, room(f) - 1);
	}
	if (!v->nfind)
		put(f, A_NORMAL, "  (none yet)");
	else if (i < v->nfind) {
		snprintf(line, sizeof line, "  ... %zu more", v->nfind - i);
		put(f, A_NORMAL, line);
	}
}

static void view_threads(frame_t *f, const live_view_t *v)
{
	char line[TOP_LINE], n[48];
	int name_w = f->cols - 1 - 62;
	if (name_w > 32)
		name_w = 32;
	int k = (room(f) - 5) / 2;
	size_t shown = v->nthr < (size_t)k ? v->nthr : (size_t)k;
	snprintf(line, sizeof line,
	         "Threads by wait, last interval (%.1f s)%s:", v->ivl_s,
	         of(n, sizeof n, shown, v->nthr));
	put(f, A_NORMAL, line);
	for (int pass = 0; pass < 2; pass++) {
		if (pass) {
			put(f, A_NORMAL, "");
			snprintf(line, sizeof line,
			         "The same, since the window opened (%.1f s):",
			         v->age_s);
			put(f, A_NORMAL, line);
		}
		put(f, A_REVERSE, top_thread_head(line, sizeof line, name_w));
		for (size_t i = 0; i < shown; i++)
			put(f, A_NORMAL,
			    top_thread_row(line, sizeof line, &v->thr[i],
			                   pass ? TOP_WIN : TOP_IVL, name_w));
		if (!v->nthr)
			put(f, A_NORMAL, "  (no thread made an event yet)");
	}
}

static void view_help(frame_t *f)
{
	static const char *const keys[] = {
	    "Help: keys",
	    "  1        lock classes by wait: the last interval, then the "
	    "window",
	    "  2        the code that allocates or frees under the locks",
	    "  3        the findings of the window so far",
	    "  4        threads by wait",
	    "  space    freeze the display (the rows stay) / thaw it",
	    "  s        write a report of the window so far (`mallock "
	    "report`'s text) to a file",
	    "  ?        this help (any key closes it)",
	    "  q        quit: the process is left as top found it",
	    ""};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		put(f, A_NORMAL, keys[i]);
	put_wrapped(f, 2,
	            "Columns: wait, cont (contended acquisitions), max wait "
	            "(<X: bounded by the wait histogram), hold, alloc% (the "
	            "allocator's share of the hold time), alloc-lw (the "
	            "allocator calls inside the holds waiting on the "
	            "allocator's own lock); hold and alloc% say - where "
	            "none of the holds was timed. A * marks a queue-like "
	            "lock.",
	            room(f));
}

void top_screen_draw(const live_view_t *v, const top_screen_t *s, WINDOW *w)
{
	werase(w);
	if (s->cols < TOP_MIN_COLS || s->rows < TOP_MIN_ROWS) {
		char line[96];
		snprintf(line, sizeof line,
		         "terminal too small (%dx%d, needs %dx%d)", s->cols,
		         s->rows, TOP_MIN_COLS, TOP_MIN_ROWS);
		mvwaddnstr(w, 0, 0, line, s->cols > 1 ? s->cols - 1 : 1);
		return;
	}
	frame_t f = {w, s->cols, s->rows, 0};
	header(&f, v, s);
	if (s->help)
		view_help(&f);
	else if (!v)
		put(&f, A_NORMAL, "(the first interval is being read)");
	else if (s->view == TOP_VIEW_SITES)
		view_sites(&f, v);
	else if (s->view == TOP_VIEW_FINDINGS)
		view_findings(&f, v);
	else if (s->view == TOP_VIEW_THREADS)
		view_threads(&f, v);
	else
		view_locks(&f, v, s);
	const char *st = s->status[0] ? s->status : v ? v->trunc : "";
	mvwaddnstr(w, f.rows - 1, 0, st, f.cols - 1);
}

int top_screen_usable(char *why, size_t len)
{
	const char *term = getenv("TERM");
	int err = 0;
	if (!term || !*term) {
		snprintf(why, len, "TERM is not set");
		return -1;
	}
	if (setupterm(NULL, 1, &err) != OK) {
		snprintf(why, len,
		         "the terminal type '%.100s' is not in terminfo", term);
		return -1;
	}
	const char *cup = tigetstr("cup");
	bool ok = cup && cup != (const char *)-1;
	del_curterm(cur_term);
	if (!ok)
		snprintf(why, len,
		         "the terminal type '%.100s' has no cursor addressing",
		         term);
	return ok ? 0 : -1;
}
