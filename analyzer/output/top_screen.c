/*
 * top_screen.c - one frame of `mallock top`'s screen (see top_screen.h).
 * Every figure comes from a row of top_out.c, the same the batch block
 * prints; this file only lays the rows out for the terminal's size.
 * Each line is placed by cursor address and cleared to its end, and is
 * cut one column short of the edge: a character written in the last
 * column leaves the cursor there, where the clearing would erase it.
 */
#include "top_screen.h"

#include "top_out.h"

#include <string.h>

typedef struct frame {
	FILE *out;
	int cols, rows, y;
} frame_t;

/* Line y of the frame: text cut to the width, in attr (an SGR sequence,
 * or NULL). Lines past the last but one (the status line's) are dropped. */
static void put(frame_t *f, const char *attr, const char *text)
{
	if (f->y >= f->rows - 1)
		return;
	fprintf(f->out, "\033[%d;1H%s%.*s%s\033[K", f->y + 1, attr ? attr : "",
	        f->cols - 1, text, attr ? "\033[0m" : "");
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
		put(f, NULL, line);
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
	         s->frozen ? "  FROZEN" : "");
	put(f, "\033[1m", line);
	put(f, NULL, v ? top_counts(t, sizeof t, v) : "");
	/* The views' tabs, the current one in reverse video. */
	fprintf(f->out, "\033[%d;1H", f->y + 1);
	for (int i = TOP_VIEW_LOCKS; i <= TOP_VIEW_THREADS; i++)
		fprintf(f->out, "%s %d %s \033[0m ",
		        i == s->view && !s->help ? "\033[7m" : "", i,
		        view_name[i]);
	fprintf(f->out, "   ? help  space freeze  s report  q quit\033[K");
	f->y++;
	put(f, NULL, "");
}

/* A table of lock classes with the counters of cols, at most max rows. */
static void lock_table(frame_t *f, const live_view_t *v, int cols, int name_w,
                       int max)
{
	char line[TOP_LINE];
	put(f, "\033[7m", top_lock_head(line, sizeof line, cols, name_w));
	for (size_t i = 0; i < v->nlock && (int)i < max; i++)
		put(f, NULL,
		    top_lock_row(line, sizeof line, &v->lock[i], cols, name_w));
	if (!v->nlock)
		put(f, NULL, "  (no lock taken in the window yet)");
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
		put(f, NULL, line);
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
	put(f, NULL, line);
	lock_table(f, v, TOP_IVL, name_w, k);
	put(f, NULL, "");
	snprintf(line, sizeof line,
	         "The same, since the window opened (%.1f s):", v->age_s);
	put(f, NULL, line);
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
	put(f, NULL, line);
	snprintf(line, sizeof line, "  %-*s %-*s %9s %-26s | %9s", lock_w,
	         "lock", site_w, "allocation site", "in holds",
	         " in the last interval", "window");
	put(f, "\033[7m", line);
	for (size_t i = 0; i < shown; i++)
		put(f, NULL,
		    top_site_row(line, sizeof line, &v->site[i], lock_w,
		                 site_w));
	if (!v->nsite)
		put(f, NULL, "  (no allocator call inside a hold yet)");
}

static void view_findings(frame_t *f, const live_view_t *v)
{
	char line[TOP_LINE];
	put(f, NULL,
	    "Findings of the window so far (as `mallock report`), worst "
	    "first:");
	size_t i = 0;
	for (; i < v->nfind && room(f) >= 3; i++) {
		put(f, "\033[1m", top_find_row(line, sizeof line, &v->find[i]));
		put_wrapped(f, 9, v->find[i].summary, room(f) - 1);
	}
	if (!v->nfind)
		put(f, NULL, "  (none yet)");
	else if (i < v->nfind) {
		snprintf(line, sizeof line, "  ... %zu more", v->nfind - i);
		put(f, NULL, line);
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
	put(f, NULL, line);
	for (int pass = 0; pass < 2; pass++) {
		if (pass) {
			put(f, NULL, "");
			snprintf(line, sizeof line,
			         "The same, since the window opened (%.1f s):",
			         v->age_s);
			put(f, NULL, line);
		}
		put(f, "\033[7m", top_thread_head(line, sizeof line, name_w));
		for (size_t i = 0; i < shown; i++)
			put(f, NULL,
			    top_thread_row(line, sizeof line, &v->thr[i],
			                   pass ? TOP_WIN : TOP_IVL, name_w));
		if (!v->nthr)
			put(f, NULL, "  (no thread made an event yet)");
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
		put(f, NULL, keys[i]);
	put_wrapped(f, 2,
	            "Columns: wait, cont (contended acquisitions), max wait "
	            "(<X: bounded by the wait histogram), hold, alloc% (the "
	            "allocator's share of the hold time), alloc-lw (the "
	            "allocator calls inside the holds waiting on the "
	            "allocator's own lock). A * marks a queue-like lock.",
	            room(f));
}

void top_screen_draw(const live_view_t *v, const top_screen_t *s, FILE *out)
{
	if (s->cols < TOP_MIN_COLS || s->rows < TOP_MIN_ROWS) {
		fprintf(out,
		        "\033[H\033[2Jterminal too small (%dx%d, needs %dx%d)",
		        s->cols, s->rows, TOP_MIN_COLS, TOP_MIN_ROWS);
		return;
	}
	frame_t f = {out, s->cols, s->rows, 0};
	header(&f, v, s);
	if (s->help)
		view_help(&f);
	else if (!v)
		put(&f, NULL, "(the first interval is being read)");
	else if (s->view == TOP_VIEW_SITES)
		view_sites(&f, v);
	else if (s->view == TOP_VIEW_FINDINGS)
		view_findings(&f, v);
	else if (s->view == TOP_VIEW_THREADS)
		view_threads(&f, v);
	else
		view_locks(&f, v, s);
	while (f.y < f.rows - 1)
		put(&f, NULL, "");
	const char *st = s->status[0] ? s->status : v ? v->trunc : "";
	fprintf(out, "\033[%d;1H%.*s\033[K", f.rows, f.cols - 1, st);
}
