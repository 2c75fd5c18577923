/*
 * report_cascade.c - the cascade told in four steps: the first
 * alloc_under_lock finding's lost wait, its holders' allocator share, the
 * calls and their blocks, and what each fix gives back at most. The text
 * report prints the steps, the JSON carries them (`cascade`), and the HTML
 * page shows the JSON's: one wording and one arithmetic for all three.
 */
#include "report.h"

#include "symbols.h"
#include "thresholds.h"

#include <stdio.h>
#include <string.h>

static double ev(const finding_t *f, ev_t e)
{
	return finding_ev(f, e, 0);
}

bool report_cascade(const report_t *r, cascade_t *cs)
{
	const finding_t *f = NULL;
	size_t idx = 0;
	for (size_t i = 0; i < r->f.n && !f; i++)
		if (r->f.v[i].kind == FK_ALLOC_UNDER_LOCK) {
			f = &r->f.v[i];
			idx = i + 1;
		}
	if (!f)
		return false;
	cs->f = f;
	cs->idx = idx;
	model_t *m = f->m;
	char lab[256], site[512], a[32], b[32], c[32], d[32];
	double W = ev(f, EV_LOCK_WAIT_NS),
	       A = ev(f, EV_ALLOCATOR_SHARE_OF_HOLD);
	frame_t fr;
	lock_label(m, &m->lock[m->cls[f->cls].rep], lab, sizeof lab);
	if (sym_stack_site(m, f->stack, &fr))
		frame_label(&fr, site, sizeof site);
	else
		snprintf(site, sizeof site, "an unknown site");
	char idle[96] = "";
	if (ev(f, EV_IDLE_WAIT_NS) > 0)
		snprintf(idle, sizeof idle,
		         ", not counting %s of waits that found no work",
		         human_ns(c, sizeof c, ev(f, EV_IDLE_WAIT_NS)));
	snprintf(cs->step[0], sizeof cs->step[0],
	         "waiters lost %s on lock %s (%.0f contended acquisition%s, "
	         "up to %.0f waiting at once%s);",
	         human_ns(a, sizeof a, W), lab, ev(f, EV_CONTENDED),
	         ev(f, EV_CONTENDED) == 1 ? "" : "s",
	         (double)m->cls[f->cls].s.max_waiters, idle);
	snprintf(cs->step[1], sizeof cs->step[1],
	         "its holders spent %.1f%% of their hold time (%s of %s) in "
	         "the allocator;",
	         100 * A,
	         human_ns(a, sizeof a, ev(f, EV_ALLOCATOR_NS_IN_HOLDS)),
	         human_ns(b, sizeof b, ev(f, EV_HOLD_NS)));
	char where[600] = "";
	if (f->sites_total > 1) {
		const fsite_t *s0 = &f->sites[0];
		snprintf(
		    where, sizeof where,
		    "%u sites (%s; the heaviest %s, %s: %.0f allocation%s, "
		    "%.0f free%s)",
		    f->sites_total,
		    human_ns(a, sizeof a, ev(f, EV_SITE_ALLOCATOR_NS)), site,
		    human_ns(c, sizeof c, s0->ns), s0->allocs,
		    s0->allocs == 1 ? "" : "s", s0->frees,
		    s0->frees == 1 ? "" : "s");
	} else {
		snprintf(where, sizeof where, "%s (%s)", site,
		         human_ns(a, sizeof a, ev(f, EV_SITE_ALLOCATOR_NS)));
	}
	snprintf(cs->step[2], sizeof cs->step[2],
	         "%.0f of those calls (%.0f allocation%s, %.0f free%s) are "
	         "for blocks allocated at %s, %.0f of them slow (over %s), %s "
	         "of it waiting on the allocator's own lock;",
	         ev(f, EV_CALLS), ev(f, EV_ALLOCS),
	         ev(f, EV_ALLOCS) == 1 ? "" : "s", ev(f, EV_FREES),
	         ev(f, EV_FREES) == 1 ? "" : "s", where, ev(f, EV_SLOW_CALLS),
	         human_ns(d, sizeof d, TH_SLOW_ALLOC_NS),
	         human_ns(b, sizeof b, ev(f, EV_ALLOCATOR_LOCK_WAIT_NS)));
	double F = ev(f, EV_FREE_SHARE);
	if (ev(f, EV_FREE_NS_IN_HOLDS) > 0) {
		char held[600] = "";
		if (sym_stack_site(m, f->stack2, &fr) &&
		    (fr.function || fr.module)) {
			char hl[512];
			snprintf(held, sizeof held,
			         ", most in holds taken at %s",
			         frame_label(&fr, hl, sizeof hl));
		}
		size_t l = strlen(cs->step[2]);
		snprintf(cs->step[2] + l, sizeof cs->step[2] - l,
		         " frees take %.1f%% of the allocator time in these "
		         "holds (%s)%s;",
		         100 * F,
		         human_ns(a, sizeof a, ev(f, EV_FREE_NS_IN_HOLDS)),
		         held);
	}
	/* What each fix gives back at most: the lost wait times the share
	 * of the hold time spent in the allocator, split by the mix. */
	const double th = TH_AUL_FREE_SHARE_PCT / 100.0;
	double Wa = W * A;
	if (!(F > 0))
		snprintf(
		    cs->step[3], sizeof cs->step[3],
		    "moving the allocation out of the critical section, or "
		    "pre-allocating, would give back up to about %s (%s x "
		    "%.1f%%).",
		    human_ns(c, sizeof c, Wa), human_ns(a, sizeof a, W),
		    100 * A);
	else if (F >= th)
		snprintf(
		    cs->step[3], sizeof cs->step[3],
		    "freeing the blocks after unlocking would give back up "
		    "to about %s (%s x %.1f%% x %.1f%% in frees).",
		    human_ns(c, sizeof c, Wa * F), human_ns(a, sizeof a, W),
		    100 * A, 100 * F);
	else if (F < 1 - th)
		snprintf(
		    cs->step[3], sizeof cs->step[3],
		    "moving the allocation out of the critical section, or "
		    "pre-allocating, would give back up to about %s (%s x "
		    "%.1f%% x %.1f%% in allocations).",
		    human_ns(c, sizeof c, Wa * (1 - F)),
		    human_ns(a, sizeof a, W), 100 * A, 100 * (1 - F));
	else
		snprintf(
		    cs->step[3], sizeof cs->step[3],
		    "moving the allocation out of the critical section, or "
		    "pre-allocating, would give back up to about %s (%s x "
		    "%.1f%% x %.1f%% in allocations), freeing the blocks "
		    "after unlocking up to about %s (x %.1f%% in frees).",
		    human_ns(c, sizeof c, Wa * (1 - F)),
		    human_ns(a, sizeof a, W), 100 * A, 100 * (1 - F),
		    human_ns(d, sizeof d, Wa * F), 100 * F);
	return true;
}
