/*
 * report_text.c - the terminal report: header, totals, the top findings
 * (for a lock finding, its contention points: the waiters' stacks, and its
 * contending points: the holders' stacks that made them wait; for an
 * allocation finding, the stacks that reach its site), the cascade told for
 * the top alloc_under_lock finding, the lock table with the contention of
 * its top locks, and the threads. Lines stay within 100 columns.
 */
#include "classes.h"
#include "load.h"
#include "report.h"
#include "symbols.h"
#include "thresholds.h"
#include "trace_format.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 8

static double ev(const finding_t *f, ev_t e)
{
	return finding_ev(f, e, 0);
}

/* "name (mutex, queue-like, 12 instances)" */
static const char *class_label(const model_t *m, uint32_t c, char *buf,
                               size_t len)
{
	const lockclass_t *k = &m->cls[c];
	char name[128], inst[32] = "";
	lock_label(m, &m->lock[k->rep], name, sizeof name);
	if (k->ninst > 1)
		snprintf(inst, sizeof inst, ", %u instances", k->ninst);
	const char *fx = "";
	if (k->kind == FMT_KIND_FUTEX)
		fx = k->s.wait_ns > k->s.idle_wait_ns
		         ? ", a lock word: its waiters also wake it"
		         : ", a signal word: waiting for work";
	snprintf(buf, len, "%s (%s%s%s%s)", name, lock_kind_word(k->kind),
	         k->queue ? ", queue-like" : "", inst, fx);
	return buf;
}

static void print_stack(FILE *out, model_t *m, uint32_t stack,
                        const char *label)
{
	frame_t fr[MAX_FRAMES + 1];
	char buf[512];
	int n = stack_view(m, stack, fr, MAX_FRAMES + 1);
	if (n == 0) {
		fprintf(out, "   %-6s (no stack recorded)\n", label);
		return;
	}
	for (int i = 0; i < n && i < MAX_FRAMES; i++) {
		frame_label(&fr[i], buf, sizeof buf);
		if (strlen(buf) > 88)
			strcpy(buf + 85, "...");
		fprintf(out, "   %-6s %s%s\n", i ? "" : label,
		        fr[i].inlined ? "[inline] " : "", buf);
	}
	if (n > MAX_FRAMES)
		fprintf(out, "          ...\n");
}

#define WIDTH 100
#define POINTS_SHOWN 3    /* waiter and holder stacks per lock */
#define CONTENDED_LOCKS 5 /* locks whose points follow the lock table */

/* Writes prefix and text wrapped at WIDTH columns; continuation lines get
 * indent spaces. */
static void wrap_print(FILE *out, int indent, const char *prefix,
                       const char *text)
{
	int col = fprintf(out, "%s", prefix);
	const char *p = text;
	bool line_start = true;
	while (*p) {
		while (*p == ' ')
			p++;
		const char *w = p;
		while (*p && *p != ' ')
			p++;
		int len = (int)(p - w);
		if (!len)
			break;
		if (!line_start && col + 1 + len > WIDTH) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
			line_start = true;
		}
		if (!line_start) {
			fputc(' ', out);
			col++;
		}
		fwrite(w, 1, (size_t)len, out);
		col += len;
		line_start = false;
	}
	fputc('\n', out);
}

/* One line: prefix, then a stack as "site < caller < caller", cut to the
 * report's width. */
static void print_chain(FILE *out, model_t *m, const char *prefix,
                        uint32_t stack)
{
	frame_t fr[4];
	char line[1024], lab[512];
	int n = stack_view(m, stack, fr, 4);
	size_t len = (size_t)snprintf(line, sizeof line, "%s", prefix);
	if (n == 0)
		snprintf(line + len, sizeof line - len, "(no stack recorded)");
	for (int i = 0; i < n && len < sizeof line; i++) {
		if (i == 0)
			frame_label(&fr[i], lab, sizeof lab);
		else if (fr[i].function)
			snprintf(lab, sizeof lab, "%s", frame_name(&fr[i]));
		else
			frame_label(&fr[i], lab, sizeof lab);
		len += (size_t)snprintf(line + len, sizeof line - len, "%s%s",
		                        i ? " < " : "", lab);
	}
	if (strlen(line) > WIDTH)
		strcpy(line + WIDTH - 3, "...");
	fprintf(out, "%s\n", line);
}

/* The contention points (waiter stacks, by wait) and contending points
 * (holder stacks, by the wait they caused) of class c, indent spaces in;
 * of its futex lock words only when lock_words. */
static void print_points(FILE *out, model_t *m, uint32_t c, int indent,
                         bool lock_words)
{
	point_t p[POINTS_SHOWN];
	size_t total;
	char a[32], b[32], prefix[96];
	int n = class_points_of(m, c, LS_WAITER, lock_words, p, POINTS_SHOWN,
	                        &total);
	for (int i = 0; i < n; i++) {
		snprintf(prefix, sizeof prefix, "%*s%-8s %9s %6sx  ", indent,
		         "", i ? "" : "waiters",
		         human_ns(a, sizeof a, (double)p[i].ns),
		         human_count(b, sizeof b, (double)p[i].n));
		print_chain(out, m, prefix, p[i].stack);
	}
	if (total > (size_t)n)
		fprintf(out, "%*s%-8s %zu more waiter stacks\n", indent, "", "",
		        total - (size_t)n);
	/* A futex word's holder side is the threads that woke its waiters:
	 * how often, not for how long (no hold is seen). */
	bool futex = m->cls[c].kind == FMT_KIND_FUTEX;
	n = class_points_of(m, c, LS_HOLDER, lock_words, p, POINTS_SHOWN,
	                    &total);
	for (int i = 0; i < n; i++) {
		snprintf(prefix, sizeof prefix, "%*s%-8s %9s %6sx  ", indent,
		         "",
		         i       ? ""
		         : futex ? "wakers"
		                 : "holders",
		         futex ? "" : human_ns(a, sizeof a, (double)p[i].ns2),
		         human_count(b, sizeof b, (double)p[i].n));
		print_chain(out, m, prefix, p[i].stack);
	}
	if (total > (size_t)n)
		fprintf(out, "%*s%-8s %zu more %s stacks\n", indent, "", "",
		        total - (size_t)n, futex ? "waker" : "holder");
}

/* A stack's frames without the shim's, innermost first, inlined frames
 * expanded (at most max). */
#define PART_DEPTH 48
static int raw_frames(model_t *m, uint32_t si, frame_t *out, int max)
{
	int n = 0;
	if (si == NONE32 || !m->stk[si].defined)
		return 0;
	const stk_t *st = &m->stk[si];
	for (uint32_t i = 0; i < st->n && n < max; i++) {
		const frame_t *fr;
		int k = sym_addr(m, m->frames[st->off + i], &fr);
		for (int j = 0; j < k && n < max; j++)
			if (fr[j].fold != SYM_SHIM)
				out[n++] = fr[j];
	}
	return n;
}

static bool same_frame(const frame_t *a, const frame_t *b)
{
	if (a->function && b->function)
		return strcmp(a->function, b->function) == 0 &&
		       a->line == b->line;
	return a->address == b->address;
}

/* Frames the two stacks share from their root end. */
static int common_root(const frame_t *a, int na, const frame_t *b, int nb)
{
	int k = 0;
	while (k < na && k < nb && same_frame(&a[na - 1 - k], &b[nb - 1 - k]))
		k++;
	return k;
}

/*
 * Where stack i of f's evidence stacks parts from the most similar other
 * one (several stacks reaching one site looked the
 * same): its first frame from the root end that the other lacks, as
 * "parts at F" into buf when it is not among the frames a chain shows
 * (inside the folded allocator or library code below the site, or beyond
 * the callers shown); "" otherwise.
 */
static const char *part_note(const finding_t *f, uint32_t i, char *buf,
                             size_t len)
{
	static frame_t fr[FINDING_STACKS][PART_DEPTH];
	int n[FINDING_STACKS], best = -1;
	buf[0] = 0;
	if (f->nstacks < 2)
		return buf;
	for (uint32_t k = 0; k < f->nstacks; k++)
		n[k] = raw_frames(f->m, f->stacks[k], fr[k], PART_DEPTH);
	for (uint32_t k = 0; k < f->nstacks; k++)
		if (k != i) {
			int c = common_root(fr[i], n[i], fr[k], n[k]);
			if (c > best)
				best = c;
		}
	if (best < 0 || best >= n[i])
		return buf; /* the same frames: nothing parts them */
	const frame_t *p = &fr[i][n[i] - 1 - best];
	frame_t site;
	if (!sym_stack_site(f->m, f->stacks[i], &site))
		return buf;
	/* The site's index in the raw frames: a part above it, within the
	 * callers a chain shows, needs no note. */
	int s = -1;
	for (int k = 0; k < n[i] && s < 0; k++)
		if (same_frame(&fr[i][k], &site))
			s = k;
	int pi = n[i] - 1 - best;
	if (s >= 0 && pi >= s && pi < s + 4)
		return buf;
	char lab[512];
	snprintf(buf, len, "parts at %s", frame_label(p, lab, sizeof lab));
	return buf;
}

/* An allocation finding's stacks: how many reach the site, and the
 * heaviest with what each accounts for, and where they part. */
static void print_site_stacks(FILE *out, const finding_t *f)
{
	char a[32], prefix[96], part[600];
	fprintf(out, "   %-6s %u stacks reach this site; the heaviest:\n",
	        "stacks", f->stacks_total);
	for (uint32_t i = 0; i < f->nstacks; i++) {
		double v = f->stack_v[i];
		if (ev_unit(f->stack_unit) == EVU_NS)
			human_ns(a, sizeof a, v);
		else
			human_count(a, sizeof a, v);
		snprintf(prefix, sizeof prefix, "          %9s  ", a);
		print_chain(out, f->m, prefix, f->stacks[i]);
		if (*part_note(f, i, part, sizeof part)) {
			char line[700];
			snprintf(line, sizeof line, "%*s%s",
			         (int)strlen(prefix) + 2, "", part);
			if (strlen(line) > WIDTH)
				strcpy(line + WIDTH - 3, "...");
			fprintf(out, "%s\n", line);
		}
	}
	if (f->stacks_total > f->nstacks)
		fprintf(out, "          ... %u more\n",
		        f->stacks_total - f->nstacks);
}

/* An alloc_under_lock finding's allocation sites (when several), by
 * allocator time in the holds, each with its allocations and frees; and
 * the holding code that freed most (the hold's acquisition site). */
static void print_aul_sites(FILE *out, const finding_t *f)
{
	char a[32], b[32], c[32], prefix[128];
	if (f->sites_total > 1) {
		fprintf(out,
		        "   %-6s %u allocation sites of the blocks, by "
		        "allocator time in holds:\n",
		        "sites", f->sites_total);
		for (uint32_t i = 0; i < f->nsites; i++) {
			const fsite_t *s = &f->sites[i];
			snprintf(prefix, sizeof prefix,
			         "          %9s  %s allocs %s frees  ",
			         human_ns(a, sizeof a, s->ns),
			         human_count(b, sizeof b, s->allocs),
			         human_count(c, sizeof c, s->frees));
			print_chain(out, f->m, prefix, s->stack);
		}
		if (f->sites_total > f->nsites)
			fprintf(out, "          ... %u more\n",
			        f->sites_total - f->nsites);
	}
	if (f->stack2 != NONE32 && ev(f, EV_FREE_NS_IN_HOLDS) > 0) {
		snprintf(prefix, sizeof prefix,
		         "   %-6s %s of %s in holds taken at ", "frees",
		         human_ns(a, sizeof a, ev(f, EV_FREE_NS_AT_HOLD_SITE)),
		         human_ns(b, sizeof b, ev(f, EV_FREE_NS_IN_HOLDS)));
		print_chain(out, f->m, prefix, f->stack2);
	}
}

static void print_header(FILE *out, const report_t *r, model_t *m)
{
	char a[32], b[32], tr[400];
	(void)r;
	size_t nthr = 0;
	for (size_t i = 0; i < m->nthr; i++)
		nthr += m->thr[i].events > 0;
	const char *cmd = m->cmdline && *m->cmdline ? m->cmdline
	                  : m->exe && *m->exe       ? m->exe
	                                            : "?";
	char head[900], rec[256], dur[80], c[32];
	recording_text(m, rec, sizeof rec);
	/* The time recorded, and the events' span when a window left part
	 * of it unrecorded (rates and severities are per recorded time). */
	uint64_t span = model_duration_ns(m), recd = model_recorded_ns(m);
	human_ns(a, sizeof a, (double)span);
	if (recd + span / 100 < span)
		snprintf(dur, sizeof dur, "%s recorded in %s",
		         human_ns(c, sizeof c, (double)recd), a);
	else
		snprintf(dur, sizeof dur, "%s", a);
	snprintf(head, sizeof head,
	         "%s: pid %" PRIu64 ", %s, %s, %zu threads, %s events "
	         "(libmallock %s, report by mallock %s)%s%s%s",
	         m->path, m->pid, cmd, dur, nthr,
	         human_count(b, sizeof b, (double)m->events),
	         m->version && *m->version ? m->version : "?", MALLOCK_VERSION,
	         *rec ? " (" : "", rec, *rec ? ")" : "");
	wrap_print(out, 2, "", head);
	if (m->info.truncated)
		wrap_print(out, 4, "  ! ", truncation_text(m, tr, sizeof tr));
	if (*blind_text(m, tr, sizeof tr))
		wrap_print(out, 4, "  ! ", tr);
	if (m->tot.dropped)
		fprintf(out,
		        "  ! %" PRIu64 " events were dropped by the "
		        "recorder: counts are lower bounds\n",
		        m->tot.dropped);
	if (m->tot.bad_meta)
		fprintf(out,
		        "  ! %" PRIu64 " malformed metadata records "
		        "skipped\n",
		        m->tot.bad_meta);
	for (size_t i = 0; i < m->nnote; i++) {
		char t[700];
		snprintf(t, sizeof t, "%s%s", m->note[i].text,
		         m->note[i].count > 1 ? " (repeated)" : "");
		wrap_print(out, 4,
		           m->note[i].level == FMT_NOTE_WARN ? "  ! " : "  - ",
		           t);
	}
}

static void print_totals(FILE *out, const report_t *r)
{
	totals_t t = {0};
	char a[32], b[32], c[32], d[32], e[32], g[32];
	for (size_t i = 0; i < r->nm; i++) {
#define TOT_ADD_(name, json) t.name += r->m[i].tot.name;
		MODEL_TOTALS(TOT_ADD_)
#undef TOT_ADD_
	}
	/* With calls left untimed (MALLOCK_TIME_EVERY) the allocator time
	 * is scaled from the timed ones: an estimate, said so here and in
	 * the note above. */
	fprintf(out,
	        "  %s allocations (%s bytes), %s frees (%s cross-thread), "
	        "%s%s in the allocator\n",
	        human_count(a, sizeof a, (double)(t.allocs + t.reallocs)),
	        human_count(b, sizeof b, (double)t.bytes),
	        human_count(c, sizeof c, (double)t.frees),
	        human_count(d, sizeof d, (double)t.xfrees),
	        t.untimed_calls ? "about " : "",
	        human_ns(e, sizeof e, (double)t.alloc_ns));
	fprintf(out,
	        "  %s lock acquisitions, %s contended (%.1f%%), %s "
	        "waited\n",
	        human_count(a, sizeof a, (double)t.acq),
	        human_count(b, sizeof b, (double)t.contended),
	        t.acq ? 100.0 * (double)t.contended / (double)t.acq : 0.0,
	        human_ns(g, sizeof g, (double)t.wait_ns));
	if (t.futex_waits || t.futex_wakes)
		fprintf(out,
		        "  %s futex waits through syscall() (%s waited, %s "
		        "of it on lock words), %s wakes\n",
		        human_count(a, sizeof a, (double)t.futex_waits),
		        human_ns(b, sizeof b, (double)t.futex_wait_ns),
		        human_ns(c, sizeof c, (double)t.futex_lost_ns),
		        human_count(d, sizeof d, (double)t.futex_wakes));
}

/* A contended lock's holds (find_contention.c's evidence, on a
 * lock_contention finding or an alloc_under_lock one that names the
 * lock): their distribution and what the holders did in them. */
static void print_contention(FILE *out, const finding_t *f)
{
	if (!finding_has(f, EV_HOLD_MEDIAN_NS))
		return;
	char a[32], b[32], c[32], d[32], e[32], txt[700], from[200] = "";
	/* Estimates when some holds were not timed (MALLOCK_HOLD_EVERY). */
	bool est = finding_has(f, EV_TIMED_HOLDS);
	if (est && finding_has(f, EV_HOLDS_SET_APART))
		snprintf(from, sizeof from,
		         " (about, estimated from %.0f of %.0f timed holds; "
		         "%.0f set apart as preemption would add %s at their "
		         "weight)",
		         ev(f, EV_TIMED_HOLDS), ev(f, EV_HOLDS),
		         ev(f, EV_HOLDS_SET_APART),
		         human_ns(a, sizeof a, ev(f, EV_HOLDS_SET_APART_NS)));
	else if (est)
		snprintf(from, sizeof from,
		         " (about, estimated from %.0f of %.0f timed holds)",
		         ev(f, EV_TIMED_HOLDS), ev(f, EV_HOLDS));
	snprintf(txt, sizeof txt,
	         "%s holds, median <= %s, p99 <= %s (log2 bucket tops)%s, "
	         "longest %s%s; %.1f%% of %s acquisitions contended, up to "
	         "%.0f waiting at once",
	         human_count(a, sizeof a, ev(f, EV_HOLDS)),
	         human_ns(b, sizeof b, ev(f, EV_HOLD_MEDIAN_NS)),
	         human_ns(c, sizeof c, ev(f, EV_HOLD_P99_NS)), from,
	         est ? "timed " : "",
	         human_ns(d, sizeof d, ev(f, EV_HOLD_MAX_NS)),
	         100 * ev(f, EV_CONTENDED_SHARE),
	         human_count(e, sizeof e, ev(f, EV_ACQUISITIONS)),
	         ev(f, EV_MAX_WAITERS));
	wrap_print(out, 10, "   holds  ", txt);
	size_t n = (size_t)snprintf(
	    txt, sizeof txt,
	    "holders spent %s%.1f%% of their hold time in the allocator, "
	    "%.1f%% holding other locks, %.1f%% on their own work",
	    est ? "about " : "", 100 * ev(f, EV_ALLOCATOR_SHARE_OF_HOLD),
	    100 * ev(f, EV_INNER_LOCK_SHARE_OF_HOLD),
	    100 * ev(f, EV_OWN_WORK_SHARE));
	if (ev(f, EV_COND_WAITS) > 0 && n < sizeof txt)
		snprintf(txt + n, sizeof txt - n,
		         "; %.0f condition waits released it (%s of waits "
		         "that ended in one not counted)",
		         ev(f, EV_COND_WAITS),
		         human_ns(a, sizeof a, ev(f, EV_IDLE_WAIT_NS)));
	wrap_print(out, 10, "   during ", txt);
}

static void print_finding(FILE *out, const report_t *r, size_t i)
{
	const finding_t *f = &r->f.v[i];
	model_t *m = f->m;
	char a[32], buf[1024], lab[256];
	fprintf(out, "\n#%zu %s [%s] score %s", i + 1,
	        finding_kind_name(f->kind), severity_name(f->severity),
	        human_ns(a, sizeof a, f->score));
	/* The severity's ground: the share of the recorded time the score
	 * is (what a fix could give back at most). */
	uint64_t rec = model_recorded_ns(m);
	if (rec) {
		char b[32];
		double pct = 100.0 * f->score / (double)rec;
		fprintf(out, " = %s%.*f%% of %s recorded", pct > 100 ? ">" : "",
		        pct >= 10 || pct == 0 ? 0
		        : pct >= 1            ? 1
		                              : 2,
		        pct > 100 ? 100.0 : pct,
		        human_ns(b, sizeof b, (double)rec));
	}
	if (r->nm > 1)
		fprintf(out, "  (pid %" PRIu64 ")", m->pid);
	fputc('\n', out);
	if (f->cls != NONE32) {
		uint32_t c = f->cls;
		if (f->kind == FK_STARVATION && f->lock != NONE32) {
			lock_label(m, &m->lock[f->lock], lab, sizeof lab);
			fprintf(out, "   lock   %s\n", lab);
		} else {
			fprintf(out, "   lock   %s\n",
			        class_label(m, c, lab, sizeof lab));
		}
		if (f->cls2 != NONE32)
			fprintf(out, "   inner  %s\n",
			        class_label(m, f->cls2, lab, sizeof lab));
		frame_t fr;
		if (sym_stack_site(m, m->cls[c].site, &fr)) {
			char ob[600] = "", o[512];
			if (class_owner_label(m, c, o, sizeof o))
				snprintf(ob, sizeof ob, ", called from %s", o);
			fprintf(out, "   %-6s %s%s\n",
			        m->cls[c].by_init ? "init" : "site",
			        frame_label(&fr, buf, sizeof buf), ob);
		}
	}
	if (f->stacks_total > 1) {
		frame_t fr;
		if (sym_stack_site(m, f->stack,
		                   &fr)) /* with the site's lines */
			fprintf(out, "   %-6s %s\n", "code",
			        finding_site_name(f, buf, sizeof buf));
		print_site_stacks(out, f);
	} else {
		print_stack(out, m, f->stack, "code");
	}
	if (f->kind == FK_NESTED_LOCK && f->stack2 != NONE32)
		print_stack(out, m, f->stack2, "rev"); /* the other order */
	if (f->kind == FK_ALLOC_UNDER_LOCK)
		print_aul_sites(out, f);
	if (f->cls != NONE32 && f->kind != FK_CROSS_THREAD_FREE &&
	    f->kind != FK_ALLOC_CHURN && f->kind != FK_SLOW_ALLOC)
		print_points(out, m, f->cls, 3, f->kind == FK_FUTEX_LOCK);
	print_contention(out, f);
	if (f->members_total > 1) {
		fprintf(out, "   %-6s %u %s in this finding; the worst:\n",
		        f->kind == FK_FUTEX_LOCK ? "words" : "inner",
		        f->members_total,
		        f->kind == FK_FUTEX_LOCK ? "word classes"
		                                 : "inner lock classes");
		for (uint32_t k = 0; k < f->nmembers; k++) {
			char line[700], other[256];
			const lock_t *l = &m->lock[f->member[k]];
			lock_label(m, l, lab, sizeof lab);
			/* Members of one label (words that have no symbol,
			 * first waited on at one site) told apart by the
			 * address of each one's representative. */
			bool twin = false;
			for (uint32_t j = 0; j < f->nmembers && !twin; j++)
				twin = j != k &&
				       !strcmp(
				           lab,
				           lock_label(m, &m->lock[f->member[j]],
				                      other, sizeof other));
			char at[32] = "";
			if (twin)
				snprintf(at, sizeof at, "at 0x%" PRIx64 ": ",
				         l->addr);
			snprintf(line, sizeof line, "          %9s  %s%s",
			         human_ns(a, sizeof a, f->member_v[k]), at,
			         lab);
			if (strlen(line) > WIDTH)
				strcpy(line + WIDTH - 3, "...");
			fprintf(out, "%s\n", line);
		}
		if (f->members_total > f->nmembers)
			fprintf(out, "          ... %u more\n",
			        f->members_total - f->nmembers);
	}
	wrap_print(out, 10, "   what   ", finding_summary(f, buf, sizeof buf));
	wrap_print(out, 10, "   fix    ", f->advice);
}

static void print_cascade(FILE *out, const report_t *r)
{
	static const char *const num[CASCADE_STEPS] = {"  1. ", "  2. ",
	                                               "  3. ", "  4. "};
	cascade_t c;
	if (!report_cascade(r, &c))
		return;
	size_t top = r->top < 0 ? 0 : (size_t)r->top;
	if (c.idx <= top)
		fprintf(out, "\nThe cascade (finding #%zu):\n", c.idx);
	else /* never refer to a finding the reader was not shown */
		fprintf(
		    out,
		    "\nThe cascade (the first alloc_under_lock finding, #%zu "
		    "of %zu, not listed above: --top %zu lists it):\n",
		    c.idx, r->f.n, c.idx);
	for (int k = 0; k < CASCADE_STEPS; k++)
		wrap_print(out, 5, num[k], c.step[k]);
}

static int by_wait(const void *a, const void *b)
{
	const lockclass_t *x = *(lockclass_t *const *)a;
	const lockclass_t *y = *(lockclass_t *const *)b;
	if (x->s.wait_ns != y->s.wait_ns)
		return x->s.wait_ns > y->s.wait_ns ? -1 : 1;
	if (x->s.acq != y->s.acq)
		return x->s.acq > y->s.acq ? -1 : 1;
	return x->rep < y->rep ? -1 : x->rep > y->rep;
}

/* A class's wait lost to its holders: all of it, but for a futex signal
 * word, none. */
static uint64_t lost_wait(const lockclass_t *c)
{
	return c->kind == FMT_KIND_FUTEX ? c->s.wait_ns - c->s.idle_wait_ns
	                                 : c->s.wait_ns;
}

static int by_lost_wait(const void *a, const void *b)
{
	const lockclass_t *x = *(lockclass_t *const *)a;
	const lockclass_t *y = *(lockclass_t *const *)b;
	bool fx = lost_wait(x) > 0, fy = lost_wait(y) > 0;
	if (fx != fy)
		return fx ? -1 : 1;
	return by_wait(a, b);
}

/* A futex word whose waits were all waiting for work (a signal word, not
 * a lock): the lock table ranks them after every lock. */
static bool signal_word(const lockclass_t *c)
{
	return c->kind == FMT_KIND_FUTEX && lost_wait(c) == 0;
}

static int by_lock_rank(const void *a, const void *b)
{
	const lockclass_t *x = *(lockclass_t *const *)a;
	const lockclass_t *y = *(lockclass_t *const *)b;
	if (signal_word(x) != signal_word(y))
		return signal_word(x) ? 1 : -1;
	return by_wait(a, b);
}

#define LOCK_ROWS 25
#define APART_ROWS 3

/* The rows whose sampled holds set apart as preemption would add a tenth
 * of their hold time or more, weighted as they stood for: their waits can
 * then exceed what the hold column shows (a lock whose few long holds made
 * others wait, and were sampled). At most APART_ROWS, in the table's
 * order (by wait). */
static void print_apart(FILE *out, model_t *m, lockclass_t **v, size_t n)
{
	int shown = 0;
	for (size_t i = 0; i < n && shown < APART_ROWS; i++) {
		const lockstat_t *s = &v[i]->s;
		if (!s->holds_apart || s->holds_apart_ns * 10 < s->hold_ns)
			continue;
		char name[256], a[32], b[32], line[512];
		lock_label(m, &m->lock[v[i]->rep], name, sizeof name);
		snprintf(line, sizeof line,
		         "%s: hold %s, or %s with its %llu sampled hold%s set "
		         "apart as preemption weighted as they stood for)",
		         name, human_ns(a, sizeof a, (double)s->hold_ns),
		         human_ns(b, sizeof b,
		                  (double)(s->hold_ns + s->holds_apart_ns)),
		         (unsigned long long)s->holds_apart,
		         s->holds_apart == 1 ? "" : "s");
		wrap_print(out, 3, "  (", line);
		shown++;
	}
}

static void print_locks(FILE *out, const report_t *r, model_t *m)
{
	lockclass_t **v = xmalloc((m->ncls + 1) * sizeof *v);
	size_t n = 0;
	for (size_t i = 0; i < m->ncls; i++)
		if ((m->cls[i].s.acq || m->cls[i].s.wait_ns) &&
		    report_class_matches(r, m, (uint32_t)i))
			v[n++] = &m->cls[i];
	qsort(v, n, sizeof *v, by_lock_rank);
	fprintf(out, "\nLocks (classes by wait%s):\n", r->nm > 1 ? "" : "");
	fprintf(out, "  %-34s %7s %6s %9s %9s %9s %9s %6s\n", "lock (site)",
	        "acq", "cont%", "wait", "max wait", "hold", "max hold",
	        "alloc%");
	for (size_t i = 0; i < n && i < LOCK_ROWS; i++) {
		const lockclass_t *c = v[i];
		char name[256], site[256], a[32], b[32], d[32], e[32], g[32];
		frame_t fr;
		lock_label(m, &m->lock[c->rep], name, sizeof name);
		if (sym_stack_site(m, c->site, &fr) && fr.function)
			snprintf(site, sizeof site, " %s",
			         frame_label(&fr, a, sizeof a));
		else
			site[0] = 0;
		char col[512];
		snprintf(col, sizeof col, "%s%s%s%s",
		         signal_word(c) ? "~"
		         : c->queue     ? "*"
		                        : "",
		         name, c->ninst > 1 ? " x" : "", "");
		if (c->ninst > 1)
			snprintf(col + strlen(col), sizeof col - strlen(col),
			         "%u", c->ninst);
		snprintf(col + strlen(col), sizeof col - strlen(col), "%s",
		         site);
		if (strlen(col) > 34) {
			/* An array element's index ends the name (as in
			 * tcmalloc::Static::central_cache_[5]): keep it. */
			size_t len = strlen(col);
			const char *br = strrchr(col, '[');
			size_t tail = br && col[len - 1] == ']'
			                  ? len - (size_t)(br - col)
			                  : 0;
			if (tail && tail <= 8) {
				memmove(col + 31 - tail, br, tail + 1);
				memcpy(col + 28 - tail, "...", 3);
			} else {
				strcpy(col + 31, "...");
			}
		}
		double hold = (double)c->s.hold_ns;
		if (c->kind == FMT_KIND_FUTEX ||
		    (c->kind == FMT_KIND_ALLOC_INTERNAL && !c->s.acq)) {
			/* Only waits are seen: of a futex word, those that
			 * reached the kernel; of the allocator's own lock,
			 * those its calls reported. No acquisitions, no
			 * holds. */
			fprintf(out, "  %-34s %7s %6s %9s %9s %9s %9s %6s\n",
			        col, "-", "-",
			        human_ns(b, sizeof b, (double)c->s.wait_ns),
			        human_ns(d, sizeof d, (double)c->s.wait_max),
			        "-", "-", "-");
			continue;
		}
		bool timed = lockstat_hold_known(&c->s);
		char pct[16];
		snprintf(pct, sizeof pct, "%5.1f%%",
		         hold > 0 ? 100.0 * (double)c->s.alloc_ns / hold : 0.0);
		fprintf(
		    out, "  %-34s %7s %5.1f%% %9s %9s %9s %9s %6s\n", col,
		    human_count(a, sizeof a, (double)c->s.acq),
		    c->s.acq ? 100.0 * (double)c->s.contended / (double)c->s.acq
		             : 0.0,
		    human_ns(b, sizeof b, (double)c->s.wait_ns),
		    human_ns(d, sizeof d, (double)c->s.wait_max),
		    timed ? human_ns(e, sizeof e, hold) : "-",
		    timed ? human_ns(g, sizeof g, (double)c->s.hold_max) : "-",
		    timed ? pct : "-");
	}
	if (n > LOCK_ROWS)
		fprintf(out, "  ... %zu more (--format=json lists them all)\n",
		        n - LOCK_ROWS);
	if (n)
		fprintf(out,
		        "  (* queue-like; ~ futex signal word, waiting for "
		        "work, after the locks;\n"
		        "   alloc%% = share of hold time spent in the "
		        "allocator)\n");
	if (n && m->tot.untimed_holds) {
		uint64_t k = 0, h = 0;
		for (size_t i = 0; i < n; i++) {
			k += v[i]->s.holds_timed;
			h += v[i]->s.holds;
		}
		fprintf(out,
		        "  (hold and alloc%%: about, estimated from %llu of "
		        "%llu timed holds;\n"
		        "   max hold: the longest timed one; - where none of a "
		        "lock's holds was timed)\n",
		        (unsigned long long)k, (unsigned long long)h);
	}
	print_apart(out, m, v, n < LOCK_ROWS ? n : LOCK_ROWS);
	/* An allocator's own locks in the table: the block sizes of the
	 * calls that waited on them (a central free list's size class). */
	for (size_t i = 0; i < n && i < LOCK_ROWS; i++) {
		const lock_t *l = &m->lock[v[i]->rep];
		char name[256];
		if (v[i]->ninst > 1 || !l->lw_size_max)
			continue;
		lock_label(m, l, name, sizeof name);
		if (l->lw_size_min == l->lw_size_max)
			fprintf(out,
			        "  (%s: waited on by allocator calls for "
			        "blocks of %u bytes)\n",
			        name, l->lw_size_min);
		else
			fprintf(out,
			        "  (%s: waited on by allocator calls for "
			        "blocks of %u to %u bytes)\n",
			        name, l->lw_size_min, l->lw_size_max);
	}
	for (size_t i = 0; i < n; i++)
		if (v[i]->kind == FMT_KIND_FUTEX) {
			fprintf(out,
			        "  (futex: a word the program waits on with "
			        "syscall(SYS_futex); only waits that\n"
			        "   reached the kernel are seen, so no "
			        "acquisitions or hold times)\n");
			break;
		}
	/* The contention shown: futex signal words (waiting for work) after
	 * the locks whose waits were lost, however long their waits. */
	qsort(v, n, sizeof *v, by_lost_wait);
	size_t shown = 0;
	for (size_t i = 0; i < n && shown < CONTENDED_LOCKS; i++) {
		if (!v[i]->s.wait_ns || v[i]->kind == FMT_KIND_ALLOC_INTERNAL)
			continue;
		if (!shown++)
			fprintf(
			    out,
			    "\nContention in the top locks: waiter stacks "
			    "(contention points) by wait, holder\nstacks "
			    "(contending points) by the wait they caused:\n");
		char lab[256];
		fprintf(
		    out, "  %s\n",
		    class_label(m, (uint32_t)(v[i] - m->cls), lab, sizeof lab));
		print_points(out, m, (uint32_t)(v[i] - m->cls), 4, false);
	}
	free(v);
}

#define THREAD_ROWS 16

static void print_threads(FILE *out, model_t *m)
{
	size_t shown = 0, n = 0;
	for (size_t i = 0; i < m->nthr; i++)
		n += m->thr[i].events > 0;
	fprintf(out, "\nThreads:\n  %-28s %-32s %8s %9s %8s\n", "thread",
	        "role", "acq", "wait", "allocs");
	for (size_t i = 0; i < m->nthr && shown < THREAD_ROWS; i++) {
		const thread_t *t = &m->thr[i];
		char lab[128], a[32], b[32], c[32];
		if (!t->events)
			continue;
		thread_label(t, lab, sizeof lab);
		if (strlen(lab) > 28)
			strcpy(lab + 25, "...");
		fprintf(out, "  %-28s %-32s %8s %9s %8s\n", lab, t->role,
		        human_count(a, sizeof a, (double)t->acq),
		        human_ns(b, sizeof b, (double)t->wait_ns),
		        human_count(c, sizeof c, (double)t->allocs));
		shown++;
	}
	if (n > shown)
		fprintf(out, "  ... %zu more\n", n - shown);
}

void report_text(const report_t *r, FILE *out)
{
	fprintf(out, "mallock report\n");
	for (size_t i = 0; i < r->nm; i++)
		print_header(out, r, &r->m[i]);
	print_totals(out, r);
	size_t top = r->top < 0 ? 0 : (size_t)r->top;
	if (!r->f.n)
		fprintf(out, "\nNo findings.\n");
	else
		fprintf(out, "\nFindings (%zu of %zu, worst first):\n",
		        r->f.n < top ? r->f.n : top, r->f.n);
	for (size_t i = 0; i < r->f.n && i < top; i++)
		print_finding(out, r, i);
	print_cascade(out, r);
	for (size_t i = 0; i < r->nm; i++) {
		if (r->nm > 1)
			fprintf(out, "\n== pid %" PRIu64 " (%s)\n", r->m[i].pid,
			        r->m[i].path);
		print_locks(out, r, &r->m[i]);
		print_threads(out, &r->m[i]);
	}
}
