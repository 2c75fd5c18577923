/*
 * top_out.c - `mallock top`'s text block and JSON line (see top_out.h).
 * Every figure is one the view counted: the interval's are differences of
 * the window's, a share is a part of the hold it is a share of (never
 * above 100%), and an interval's longest wait that only a histogram
 * bucket bounds is printed as "<" that bound.
 */
#include "top_out.h"

#include "json.h"

#include <string.h>

/* alloc_ns of hold_ns in percent: the allocator calls are made inside the
 * holds, so the share is at most 100 (clamped when rounding says more). */
static double alloc_share(const lockstat_t *s)
{
	if (!s->hold_ns)
		return 0;
	double p = 100.0 * (double)s->alloc_ns / (double)s->hold_ns;
	return p > 100 ? 100 : p;
}

/* The columns of one lockstat into buf: wait, contended, max wait, hold,
 * alloc%, allocator-lock wait (56 characters). */
static void lock_cols(char *buf, size_t len, const lockstat_t *s, bool bound)
{
	char a[32], b[32], c[40], d[32], e[32], f[16];
	human_ns(c + 1, sizeof c - 1, (double)s->wait_max);
	c[0] = bound ? '<' : ' ';
	bool timed = lockstat_hold_known(s);
	snprintf(f, sizeof f, "%5.1f%%", alloc_share(s));
	snprintf(buf, len, "%9s %7s %9s %9s %6s %9s",
	         human_ns(a, sizeof a, (double)s->wait_ns),
	         human_count(b, sizeof b, (double)s->contended),
	         s->wait_max || bound ? c : "        -",
	         timed ? human_ns(d, sizeof d, (double)s->hold_ns) : "-",
	         timed ? f : "-",
	         human_ns(e, sizeof e, (double)s->alloc_lw_ns));
}

/* A name cut to width keeps its head and its tail, joined by "...":
 * names of one kind share their head ("mutex taken in memcached+0x")
 * and differ at the end. The tail is the last word whole when it fits,
 * and the head then the words before it that fit ("mutex...
 * memcached+0x13062", not "mutex ta...memcached+0x13062"). */
static void name_col(char *buf, size_t len, const char *name, size_t width)
{
	size_t n = strlen(name);
	if (width >= len)
		width = len - 1;
	if (n <= width || width <= 3) {
		snprintf(buf, len, "%.*s", (int)width, name);
		return;
	}
	size_t head = (width - 3) / 3, tail = width - 3 - head;
	const char *sp = strrchr(name, ' ');
	size_t last = sp ? n - (size_t)(sp + 1 - name) : n;
	if (sp && last + 4 <= width) {
		tail = last;
		head = width - 3 - tail;
		for (size_t i = head; i > 0; i--)
			if (name[i] == ' ') { /* the words before it */
				head = i;
				break;
			}
	}
	snprintf(buf, len, "%.*s...%s", (int)head, name, name + n - tail);
}

const char *top_title(char *buf, size_t len, const live_view_t *v, int n)
{
	snprintf(buf, len,
	         "mallock top - %s (pid %llu) - interval %d (%.1f s) - window "
	         "age %.1f s",
	         v->exe, (unsigned long long)v->pid, n, v->ivl_s, v->age_s);
	return buf;
}

const char *top_counts(char *buf, size_t len, const live_view_t *v)
{
	char a[32], b[32], c[32], d[32];
	double eps = v->ivl_s > 0 ? (double)v->ievents / v->ivl_s : 0;
	snprintf(buf, len,
	         "threads %u   events/s %s   events %s   dropped %s (%s in the "
	         "interval)%s",
	         v->threads, human_count(a, sizeof a, eps),
	         human_count(b, sizeof b, (double)v->events),
	         human_count(c, sizeof c, (double)v->dropped),
	         human_count(d, sizeof d, (double)v->idropped),
	         v->have_end ? "   process ended" : "");
	return buf;
}

void top_cost_of(top_cost_t *c, const top_cost_read_t *a,
                 const top_cost_read_t *b)
{
	memset(c, 0, sizeof *c);
	if (!b->page) {
		snprintf(c->why, sizeof c->why,
		         "no control page with cost counters");
		return;
	}
	if (!a->page) {
		snprintf(c->why, sizeof c->why,
		         "the counters' first reading: from the next interval");
		return;
	}
	if (b->calls < a->calls || b->sampled < a->sampled || b->ns < a->ns) {
		/* A new page (a fork child's, an attach after a detach). */
		snprintf(c->why, sizeof c->why, "the counters restarted");
		return;
	}
	c->calls = b->calls - a->calls;
	c->sampled = b->sampled - a->sampled;
	c->over = b->over >= a->over ? b->over - a->over : 0;
	if (c->sampled < TOP_COST_MIN_SAMPLES) {
		snprintf(c->why, sizeof c->why,
		         "%llu call%s sampled, too few to estimate",
		         (unsigned long long)c->sampled,
		         c->sampled == 1 ? "" : "s");
		return;
	}
	if (!a->cpu_ok || !b->cpu_ok || b->cpu_ns <= a->cpu_ns) {
		snprintf(c->why, sizeof c->why,
		         "no CPU time of the process in the interval");
		return;
	}
	c->mean_ns = (double)(b->ns - a->ns) / (double)c->sampled;
	c->shim_ns = c->mean_ns * (double)c->calls;
	c->cpu_ns = (double)(b->cpu_ns - a->cpu_ns);
	if (c->shim_ns >= c->cpu_ns) {
		/* The samples time wall clock: a call descheduled for under
		 * 1 ms (the shim's COST_MAX_NS) counts its wait, which a busy
		 * machine makes larger than all the process ran. */
		snprintf(c->why, sizeof c->why,
		         "the estimate, %.0f ms, is more than the process's "
		         "CPU time, %.0f ms: sampled calls were descheduled",
		         c->shim_ns / 1e6, c->cpu_ns / 1e6);
		return;
	}
	c->share = c->shim_ns / c->cpu_ns;
	c->ok = true;
}

const char *top_cost_line(char *buf, size_t len, const top_cost_t *c)
{
	if (!c->ok)
		snprintf(buf, len, "shim cost: - (%s)", c->why);
	else
		snprintf(buf, len,
		         "shim ~%.*f%% of the process's CPU (est., %llu calls "
		         "sampled, %.0f ns each)",
		         c->share < 0.1 ? 1 : 0, 100 * c->share,
		         (unsigned long long)c->sampled, c->mean_ns);
	return buf;
}

const char *top_lock_head(char *buf, size_t len, int cols, int name_w)
{
	static const char one[] = "%9s %7s %9s %9s %6s %9s";
	char a[80];
	snprintf(a, sizeof a, one, "wait", "cont", "max wait", "hold", "alloc%",
	         "alloc-lw");
	snprintf(buf, len, "  %-*s %s%s%s", name_w, "lock", a,
	         cols == TOP_BOTH ? " | " : "", cols == TOP_BOTH ? a : "");
	return buf;
}

const char *top_lock_row(char *buf, size_t len, const live_lock_t *l, int cols,
                         int name_w)
{
	char nm[LIVE_NAME + 8], col[LIVE_NAME + 8], a[80], b[80];
	snprintf(nm, sizeof nm, "%s%s", l->queue ? "*" : "", l->name);
	name_col(col, sizeof col, nm, (size_t)name_w);
	lock_cols(a, sizeof a, cols == TOP_WIN ? &l->win : &l->ivl,
	          cols != TOP_WIN && l->ivl_max_bound);
	if (cols == TOP_BOTH)
		lock_cols(b, sizeof b, &l->win, false);
	snprintf(buf, len, "  %-*s %s%s%s", name_w, col, a,
	         cols == TOP_BOTH ? " | " : "", cols == TOP_BOTH ? b : "");
	return buf;
}

const char *top_site_row(char *buf, size_t len, const live_site_t *s,
                         int lock_w, int site_w)
{
	char a[32], b[32], c[32], d[32], lk[LIVE_NAME], st[LIVE_NAME];
	name_col(lk, sizeof lk, s->lock, (size_t)lock_w);
	name_col(st, sizeof st, s->site, (size_t)site_w);
	snprintf(buf, len, "  %-*s %-*s %9s %6s allocs %6s frees | %9s", lock_w,
	         lk, site_w, st, human_ns(a, sizeof a, (double)s->ins),
	         human_count(b, sizeof b, (double)s->iallocs),
	         human_count(c, sizeof c, (double)(s->icalls - s->iallocs)),
	         human_ns(d, sizeof d, (double)s->ns));
	return buf;
}

const char *top_find_row(char *buf, size_t len, const live_find_t *f)
{
	snprintf(buf, len, "  %-6s %-17s %s%s%s", f->severity, f->kind,
	         f->lock[0] ? f->lock : "",
	         f->lock[0] && f->site[0] ? " @ " : "", f->site);
	return buf;
}

const char *top_thread_head(char *buf, size_t len, int name_w)
{
	snprintf(buf, len, "  %7s %-*s %9s %7s %7s %7s %7s %9s", "tid", name_w,
	         "name", "wait", "cont", "acq", "allocs", "frees", "alloc");
	return buf;
}

const char *top_thread_row(char *buf, size_t len, const live_thread_t *t,
                           int cols, int name_w)
{
	char a[32], b[32], c[32], d[32], e[32], f[32], g[48], nm[48];
	bool w = cols == TOP_WIN;
	snprintf(nm, sizeof nm, "%s%s", t->name[0] ? t->name : "-",
	         t->exited ? " (exited)" : "");
	name_col(g, sizeof g, nm, (size_t)name_w);
	snprintf(
	    buf, len, "  %7u %-*s %9s %7s %7s %7s %7s %9s", t->tid, name_w, g,
	    human_ns(a, sizeof a, (double)(w ? t->wait_ns : t->iwait_ns)),
	    human_count(b, sizeof b,
	                (double)(w ? t->contended : t->icontended)),
	    human_count(c, sizeof c, (double)(w ? t->acq : t->iacq)),
	    human_count(d, sizeof d, (double)(w ? t->allocs : t->iallocs)),
	    human_count(e, sizeof e, (double)(w ? t->frees : t->ifrees)),
	    human_ns(f, sizeof f, (double)(w ? t->alloc_ns : t->ialloc_ns)));
	return buf;
}

void top_text(const live_view_t *v, int n, const char *sort,
              const top_cost_t *cost, FILE *out)
{
	char line[TOP_LINE];
	fprintf(out, "%s\n", top_title(line, sizeof line, v, n));
	fprintf(out, "%s\n", top_counts(line, sizeof line, v));
	if (cost)
		fprintf(out, "%s\n", top_cost_line(line, sizeof line, cost));
	if (v->trunc[0])
		fprintf(out, "note: %s\n", v->trunc);
	fprintf(out,
	        "\nLock classes by %s (last interval | since the window "
	        "opened):\n",
	        sort);
	fprintf(out, "%s\n", top_lock_head(line, sizeof line, TOP_BOTH, 28));
	size_t shown = 0;
	for (size_t i = 0; i < v->nlock && shown < TOP_LOCK_ROWS; i++) {
		fprintf(
		    out, "%s\n",
		    top_lock_row(line, sizeof line, &v->lock[i], TOP_BOTH, 28));
		shown++;
	}
	if (!shown)
		fprintf(out, "  (no lock taken in the window yet)\n");
	fprintf(out,
	        "\nCode that allocates or frees under them (by the blocks' "
	        "allocation site;\nallocator time in holds, last interval | "
	        "window):\n");
	shown = 0;
	for (size_t i = 0; i < v->nsite && shown < TOP_SITE_ROWS; i++) {
		fprintf(out, "%s\n",
		        top_site_row(line, sizeof line, &v->site[i], 20, 40));
		shown++;
	}
	if (!shown)
		fprintf(out, "  (no allocator call inside a hold yet)\n");
	fprintf(out,
	        "\nFindings of the window so far (as `mallock report`):\n");
	for (size_t i = 0; i < v->nfind && i < TOP_FIND_ROWS; i++) {
		const live_find_t *f = &v->find[i];
		fprintf(out, "%s\n", top_find_row(line, sizeof line, f));
		fprintf(out, "         %s\n", f->summary);
	}
	if (!v->nfind)
		fprintf(out, "  (none yet)\n");
	if (v->nfind > TOP_FIND_ROWS)
		fprintf(out, "  ... %zu more\n", v->nfind - TOP_FIND_ROWS);
	fputc('\n', out);
	fflush(out);
}

static void json_stat(jw_t *w, const char *key, const lockstat_t *s, bool bound)
{
	jw_key(w, key);
	jw_obj(w);
	jw_ku64(w, "wait_ns", s->wait_ns);
	jw_ku64(w, "contended", s->contended);
	jw_ku64(w, "acquisitions", s->acq);
	jw_ku64(w, bound ? "max_wait_below_ns" : "max_wait_ns", s->wait_max);
	jw_ku64(w, "hold_ns", s->hold_ns);
	jw_ku64(w, "alloc_ns_in_holds", s->alloc_ns);
	jw_knum(w, "alloc_share_of_hold", alloc_share(s) / 100);
	jw_ku64(w, "alloc_lock_wait_ns", s->alloc_lw_ns);
	jw_end(w, '}');
}

/* "shim_cost": the estimate (top_cost_t), or null figures and why. */
static void json_cost(jw_t *w, const top_cost_t *c)
{
	jw_key(w, "shim_cost");
	jw_obj(w);
	jw_kbool(w, "estimated", c->ok);
	if (c->ok) {
		jw_knum(w, "share_of_cpu", c->share);
		jw_knum(w, "shim_cpu_ns", c->shim_ns);
		jw_knum(w, "process_cpu_ns", c->cpu_ns);
		jw_knum(w, "mean_ns_per_call", c->mean_ns);
	} else {
		jw_kstr(w, "why_not", c->why);
	}
	jw_ku64(w, "calls", c->calls);
	jw_ku64(w, "sampled_calls", c->sampled);
	jw_ku64(w, "samples_left_out", c->over);
	jw_end(w, '}');
}

void top_json(const live_view_t *v, int n, const char *sort,
              const top_cost_t *cost, FILE *out)
{
	jw_t w;
	jw_init(&w, out);
	w.compact_from = 0;
	jw_obj(&w);
	jw_ku64(&w, "interval", (uint64_t)n);
	jw_ku64(&w, "pid", v->pid);
	jw_kstr(&w, "exe", v->exe);
	jw_knum(&w, "interval_s", v->ivl_s);
	jw_knum(&w, "window_age_s", v->age_s);
	jw_ku64(&w, "threads", v->threads);
	jw_ku64(&w, "events", v->events);
	jw_ku64(&w, "interval_events", v->ievents);
	jw_ku64(&w, "dropped", v->dropped);
	jw_ku64(&w, "interval_dropped", v->idropped);
	jw_kbool(&w, "process_ended", v->have_end);
	jw_kstr(&w, "sort", sort);
	if (cost)
		json_cost(&w, cost);
	jw_key(&w, "locks");
	jw_arr(&w);
	for (size_t i = 0; i < v->nlock && i < TOP_LOCK_ROWS; i++) {
		const live_lock_t *l = &v->lock[i];
		jw_obj(&w);
		jw_kstr(&w, "name", l->name);
		jw_kstr(&w, "site", l->site[0] ? l->site : NULL);
		jw_kstr(&w, "kind", lock_kind_word(l->kind));
		jw_ku64(&w, "instances", l->ninst);
		jw_kbool(&w, "queue_like", l->queue);
		json_stat(&w, "interval", &l->ivl, l->ivl_max_bound);
		json_stat(&w, "window", &l->win, false);
		jw_end(&w, '}');
	}
	jw_end(&w, ']');
	jw_key(&w, "sites");
	jw_arr(&w);
	for (size_t i = 0; i < v->nsite && i < TOP_SITE_ROWS; i++) {
		const live_site_t *s = &v->site[i];
		jw_obj(&w);
		jw_kstr(&w, "lock", s->lock);
		jw_kstr(&w, "site", s->site);
		jw_key(&w, "interval");
		jw_obj(&w);
		jw_ku64(&w, "alloc_ns_in_holds", s->ins);
		jw_ku64(&w, "allocs", s->iallocs);
		jw_ku64(&w, "frees", s->icalls - s->iallocs);
		jw_ku64(&w, "alloc_lock_wait_ns", s->ilw_ns);
		jw_end(&w, '}');
		jw_key(&w, "window");
		jw_obj(&w);
		jw_ku64(&w, "alloc_ns_in_holds", s->ns);
		jw_ku64(&w, "allocs", s->allocs);
		jw_ku64(&w, "frees", s->calls - s->allocs);
		jw_ku64(&w, "alloc_lock_wait_ns", s->lw_ns);
		jw_end(&w, '}');
		jw_end(&w, '}');
	}
	jw_end(&w, ']');
	jw_key(&w, "findings");
	jw_arr(&w);
	for (size_t i = 0; i < v->nfind && i < TOP_FIND_ROWS; i++) {
		const live_find_t *f = &v->find[i];
		jw_obj(&w);
		jw_kstr(&w, "kind", f->kind);
		jw_kstr(&w, "severity", f->severity);
		jw_kstr(&w, "lock", f->lock[0] ? f->lock : NULL);
		jw_kstr(&w, "site", f->site[0] ? f->site : NULL);
		jw_kstr(&w, "summary", f->summary);
		jw_knum(&w, "score_ns", f->score_ns);
		jw_end(&w, '}');
	}
	jw_end(&w, ']');
	jw_ku64(&w, "findings_total", v->nfind);
	jw_end(&w, '}'); /* and the line's end */
	fflush(out);
}
