/*
 * find_contention.c - the plain contention detector (see detectors.h), run
 * after every other detector:
 *
 *   lock_contention   W, the wait the class's waiters lost: its wait less
 *                     the waits that ended in a condition wait (waiting
 *                     for work, not lost), in ns, on the scale of every
 *                     other finding. One finding per contended class with
 *                     at least CONT_MIN_WAITS contended acquisitions and
 *                     W at least CONT_MIN_LOST_PPM of the recorded time.
 *
 * One lock, one finding: a class that also has alloc_under_lock findings
 * keeps one of them (the highest scored), rescored W and given the
 * contention evidence, when the allocator explains a meaningful part of
 * its holds (CONT_ALLOC_SHARE_PCT of the hold time, or CONT_MIN_WAITS
 * waits of its holders on the allocator's own lock); otherwise its
 * alloc_under_lock findings go and lock_contention names it, the
 * allocator's share among its evidence. A class below the minimums is
 * left to the other detectors.
 *
 * Likewise a contended class whose holders spend CONT_NEST_SHARE_PCT of
 * their hold holding inner locks: the heaviest nested_lock finding with it
 * outside names it, scored W (or its own score when higher), with the
 * contention evidence. A class that a nested_lock finding names otherwise
 * (inner, or a member of its family) with a score at least half the
 * class's W is that finding's: its waits are mostly the nesting's.
 *
 * Skipped: allocator-internal locks (the allocator's own lock is what
 * alloc_under_lock and slow_alloc explain), futex words (futex_lock's,
 * which sees no holds) and conditions (no class).
 *
 * Not known: what the holders did off the CPU during a long hold (the
 * shim records no scheduler events): "own work" is the hold time less the
 * allocator, inner locks' holds and nothing else.
 */
#include "detectors.h"

#include "thresholds.h"
#include "trace_format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one class's holders and waiters did, summed over its instances. */
typedef struct cstat {
	double W;                        /* lost wait, ns */
	uint64_t inner_hold, inner_wait; /* inner locks taken in holds */
	uint32_t threads, waiting;       /* threads that took it, waited */
	uint32_t nholder, nwaiter;       /* distinct holder, waiter stacks */
	uint32_t top_holder, top_waiter; /* heaviest stacks, NONE32 if none */
	uint64_t top_caused, caused;     /* wait caused: top holder, all */
	uint64_t top_waited;             /* the top waiter stack's wait */
	bool aul;                        /* has alloc_under_lock findings */
} cstat_t;

static bool skipped_kind(uint32_t kind)
{
	return kind == FMT_KIND_ALLOC_INTERNAL || kind == FMT_KIND_FUTEX ||
	       kind == FMT_KIND_COND;
}

/* The class's waiter (LS_WAITER, by wait) or holder (LS_HOLDER, by wait
 * caused) stacks, summed by stack over its instances' site groups: how
 * many, the heaviest and its value, and (holders) the sum. */
static void side(const model_t *m, cstat_t *v, int k)
{
	const lstab_t *t = &m->ls[k];
	u64map_t map = {0};
	uint64_t *sum = NULL;
	uint32_t *cls = NULL, *stk = NULL;
	size_t n = 0, cap = 0, cap2 = 0, cap3 = 0;
	for (size_t i = 0; i < t->n; i++) {
		const lspair_t *p = &t->v[i];
		uint32_t c = m->lock[p->lock].cls;
		if (c == NONE32 || skipped_kind(m->cls[c].kind))
			continue;
		int added;
		uint32_t *x =
		    u64map_put(&map, (uint64_t)c << 32 | p->stack, &added);
		if (added) {
			VEC_RESERVE(sum, cap, n);
			VEC_RESERVE(cls, cap2, n);
			VEC_RESERVE(stk, cap3, n);
			sum[n] = 0;
			cls[n] = c;
			stk[n] = p->stack;
			*x = (uint32_t)n++;
		}
		sum[*x] += k == LS_HOLDER ? p->ns2 : p->ns;
	}
	for (size_t i = 0; i < n; i++) {
		cstat_t *s = &v[cls[i]];
		if (k == LS_HOLDER) {
			s->nholder++;
			s->caused += sum[i];
			if (s->top_holder == NONE32 || sum[i] > s->top_caused ||
			    (sum[i] == s->top_caused &&
			     stk[i] < s->top_holder)) {
				s->top_holder = stk[i];
				s->top_caused = sum[i];
			}
		} else {
			s->nwaiter++;
			if (s->top_waiter == NONE32 || sum[i] > s->top_waited ||
			    (sum[i] == s->top_waited &&
			     stk[i] < s->top_waiter)) {
				s->top_waiter = stk[i];
				s->top_waited = sum[i];
			}
		}
	}
	free(sum);
	free(cls);
	free(stk);
	u64map_free(&map);
}

static void gather(const model_t *m, cstat_t *v)
{
	for (uint32_t c = 0; c < m->ncls; c++) {
		const lockstat_t *s = &m->cls[c].s;
		v[c].W = s->wait_ns > s->idle_wait_ns
		             ? (double)(s->wait_ns - s->idle_wait_ns)
		             : 0;
		v[c].top_holder = v[c].top_waiter = NONE32;
	}
	for (size_t i = 0; i < m->nnest; i++) {
		const nest_t *p = &m->nest[i];
		uint32_t co = m->lock[p->outer].cls;
		if (co == NONE32)
			continue;
		v[co].inner_hold += p->inner_hold_ns;
		v[co].inner_wait += p->inner_wait_ns;
	}
	/* Threads, each once per class however many instances it took. */
	u64map_t thr = {0};
	for (size_t i = 0; i < m->nlt; i++) {
		const lockthr_t *lt = &m->lt[i];
		uint32_t c = m->lock[lt->lock].cls;
		if (c == NONE32 || !(lt->acq || lt->contended))
			continue;
		int added;
		uint32_t *seen =
		    u64map_put(&thr, (uint64_t)c << 32 | lt->thread, &added);
		if (added)
			*seen = 0;
		if (lt->acq && !(*seen & 2)) {
			v[c].threads++;
			*seen |= 2;
		}
		if (lt->contended && !(*seen & 1)) {
			v[c].waiting++;
			*seen |= 1;
		}
	}
	u64map_free(&thr);
	side(m, v, LS_WAITER);
	side(m, v, LS_HOLDER);
}

/* The hold time's quantile q: the top of its log2 bucket, never above
 * the longest hold. */
static double hold_quantile(const lockclass_t *c, double q)
{
	double v = hist_quantile(&c->hold_hist, q);
	return c->s.hold_max && v > (double)c->s.hold_max
	           ? (double)c->s.hold_max
	           : v;
}

/* Puts e = v unless f already has e (an alloc_under_lock finding given
 * the contention evidence keeps its own). */
static void put_new(finding_t *f, ev_t e, double v)
{
	if (!finding_has(f, e))
		finding_put(f, e, v);
}

static void put_evidence(const model_t *m, finding_t *f, uint32_t c,
                         const cstat_t *s)
{
	const lockclass_t *k = &m->cls[c];
	double H = (double)k->s.hold_ns;
	double alloc = fmin(1.0, ratio((double)k->s.alloc_ns, H));
	double inner = fmin(1.0, ratio((double)s->inner_hold, H));
	put_new(f, EV_LOCK_WAIT_NS, s->W);
	put_new(f, EV_IDLE_WAIT_NS, (double)k->s.idle_wait_ns);
	put_new(f, EV_CONTENDED, (double)k->s.contended);
	put_new(f, EV_ACQUISITIONS, (double)k->s.acq);
	put_new(f, EV_SHARED_ACQUISITIONS, (double)k->s.acq_shared);
	put_new(f, EV_CONTENDED_SHARE,
	        fmin(1.0, ratio((double)k->s.contended, (double)k->s.acq)));
	put_new(f, EV_MAX_WAITERS, (double)k->s.max_waiters);
	put_new(f, EV_WAIT_MAX_NS, (double)k->s.wait_max);
	put_new(f, EV_INSTANCES, k->ninst);
	put_new(f, EV_THREADS, s->threads);
	put_new(f, EV_WAITING_THREADS, s->waiting);
	put_new(f, EV_HOLDS, (double)k->s.holds);
	if (k->s.holds_timed < k->s.holds)
		put_new(f, EV_TIMED_HOLDS, (double)k->s.holds_timed);
	if (k->s.holds_apart) {
		put_new(f, EV_HOLDS_SET_APART, (double)k->s.holds_apart);
		put_new(f, EV_HOLDS_SET_APART_NS, (double)k->s.holds_apart_ns);
	}
	put_new(f, EV_HOLD_NS, H);
	put_new(f, EV_HOLD_MEDIAN_NS, hold_quantile(k, 0.5));
	put_new(f, EV_HOLD_P99_NS, hold_quantile(k, 0.99));
	put_new(f, EV_HOLD_MAX_NS, (double)k->s.hold_max);
	put_new(f, EV_ALLOCATOR_NS_IN_HOLDS, (double)k->s.alloc_ns);
	put_new(f, EV_ALLOCATOR_SHARE_OF_HOLD, alloc);
	put_new(f, EV_ALLOCATOR_LOCK_WAIT_NS_IN_HOLDS,
	        (double)k->s.alloc_lw_ns);
	put_new(f, EV_INNER_LOCK_HOLD_NS, (double)s->inner_hold);
	put_new(f, EV_INNER_LOCK_WAIT_NS, (double)s->inner_wait);
	put_new(f, EV_INNER_LOCK_SHARE_OF_HOLD, inner);
	put_new(f, EV_COND_WAITS, (double)k->s.cond_waits);
	put_new(f, EV_OWN_WORK_SHARE, fmax(0.0, 1.0 - alloc - inner));
	put_new(f, EV_HOLDER_STACKS, s->nholder);
	put_new(f, EV_TOP_HOLDER_WAIT_CAUSED_NS, (double)s->top_caused);
	put_new(f, EV_TOP_HOLDER_SHARE,
	        fmin(1.0, ratio((double)s->top_caused, (double)s->caused)));
	put_new(f, EV_WAITER_STACKS, s->nwaiter);
}

/* Whether the allocator explains a meaningful part of class c's holds. */
static bool alloc_explains(const model_t *m, uint32_t c)
{
	const lockstat_t *s = &m->cls[c].s;
	return (double)s->alloc_ns * 100 >=
	           (double)TH_CONT_ALLOC_SHARE_PCT * (double)s->hold_ns ||
	       s->alloc_lw_n >= TH_CONT_MIN_WAITS;
}

/* The advice, chosen from the evidence (docs/mallock-report.md, "Lock
 * contention"). */
static void advise(const model_t *m, finding_t *f, uint32_t c)
{
	const lockclass_t *k = &m->cls[c];
	char site[400], a[32], b[32], d[32];
	double med = finding_ev(f, EV_HOLD_MEDIAN_NS, 0),
	       p99 = finding_ev(f, EV_HOLD_P99_NS, 0),
	       top = finding_ev(f, EV_TOP_HOLDER_SHARE, 0),
	       thr = finding_ev(f, EV_THREADS, 0);
	char at[300];
	finding_site_name(f, at, sizeof at);
	if (f->stack == NONE32)
		snprintf(site, sizeof site, "its holders' code");
	else if (finding_ev(f, EV_HOLDER_STACKS, 0) > 0)
		snprintf(site, sizeof site, "%s", at);
	else /* no contended release recorded a holder stack */
		snprintf(site, sizeof site,
		         "%s (where its waiters wait; no holder stack was "
		         "recorded)",
		         at);
	size_t n = 0, len = sizeof f->advice;
	if (k->kind == FMT_KIND_RWLOCK &&
	    (double)k->s.acq_shared * 100 >=
	        (double)TH_CONT_SHARED_PCT * (double)k->s.acq) {
		n = (size_t)snprintf(
		    f->advice, len,
		    "%.0f%% of its acquisitions are shared: readers wait "
		    "behind the exclusive holds; shorten the writers' "
		    "critical section (the worst holder: %s) or publish "
		    "updates without the lock (copy-on-write).",
		    100 * ratio((double)k->s.acq_shared, (double)k->s.acq),
		    site);
	} else if (med > 0 && p99 >= TH_CONT_TAIL_X * med) {
		char caused[64] = "";
		if (finding_ev(f, EV_HOLDER_STACKS, 0) > 0)
			snprintf(caused, sizeof caused,
			         ", which caused %.0f%% of the wait",
			         100 * top);
		n = (size_t)snprintf(
		    f->advice, len,
		    "A few long holds make the waits (p99 %s, longest %s, "
		    "median %s): shorten the critical section at %s%s; do "
		    "what does not need the lock before taking it or after "
		    "releasing it.",
		    human_ns(a, sizeof a, p99),
		    human_ns(b, sizeof b, finding_ev(f, EV_HOLD_MAX_NS, 0)),
		    human_ns(d, sizeof d, med), site, caused);
	} else if (top * 100 >= TH_CONT_DOMINANT_PCT &&
	           finding_ev(f, EV_HOLDER_STACKS, 0) > 1) {
		n = (size_t)snprintf(
		    f->advice, len,
		    "One holder causes most of the wait: %s (%.0f%%); "
		    "shorten what it does while holding the lock, or take "
		    "the lock there less often (batch the work).",
		    site, 100 * top);
	} else if (thr >= TH_CONT_MANY_THREADS) {
		n = (size_t)snprintf(
		    f->advice, len,
		    "Many short holds (median %s) by %.0f threads: the "
		    "lock itself is the bottleneck; shard or stripe it (a "
		    "lock per bucket, object or thread) or batch the work "
		    "to take it less often (%s%s).",
		    human_ns(a, sizeof a, med), thr,
		    finding_ev(f, EV_HOLDER_STACKS, 0) > 0
		        ? "the heaviest holder: "
		        : "taken at ",
		    site);
	} else {
		n = (size_t)snprintf(
		    f->advice, len,
		    "Shorten the critical section at %s, or take the lock "
		    "less often (batch the work).",
		    site);
	}
	double inner = finding_ev(f, EV_INNER_LOCK_SHARE_OF_HOLD, 0);
	if (n < len && inner * 100 >= TH_CONT_INNER_PCT)
		snprintf(f->advice + n, len - n,
		         " Holders spend %.0f%% of the hold holding other "
		         "locks (see nested_lock).",
		         100 * inner);
}

/* Removes out's alloc_under_lock findings of class c but the one at
 * keep; returns how many it removed. keep's index may change: *keep is
 * updated. */
static uint32_t drop_aul(findings_t *out, const model_t *m, uint32_t c,
                         size_t *keep)
{
	size_t w = 0;
	uint32_t dropped = 0;
	for (size_t i = 0; i < out->n; i++) {
		const finding_t *f = &out->v[i];
		if (f->m == m && f->kind == FK_ALLOC_UNDER_LOCK &&
		    f->cls == c && (!keep || i != *keep)) {
			dropped++;
			continue;
		}
		if (keep && i == *keep)
			*keep = w;
		if (w != i)
			out->v[w] = out->v[i];
		w++;
	}
	out->n = w;
	return dropped;
}

/*
 * Once a finding claims class c's wait (its lock_contention, or the
 * alloc_under_lock or nested_lock finding that speaks for the lock), the
 * waits on c are that finding's: a nested_lock finding with c inside (one
 * inner class, not an inversion) counted them too, while its outer lock
 * was held. It keeps only its outer lock's part (at least the outer's wait
 * when it speaks for that lock), and goes when nothing is left. keep: an index
 * into out kept up to date (NULL: none); skip: the claiming finding's index
 * (SIZE_MAX: none yet).
 */
static void unclaim_inner(findings_t *out, const model_t *m, uint32_t c,
                          size_t *keep, size_t skip)
{
	size_t w = 0;
	for (size_t i = 0; i < out->n; i++) {
		finding_t *f = &out->v[i];
		if (i != skip && f->m == m && f->kind == FK_NESTED_LOCK &&
		    f->cls2 == c && f->cls != c && !f->nmembers &&
		    !finding_ev(f, EV_INVERSION, 0)) {
			double in =
			    finding_ev(f, EV_INNER_WAIT_NS_WHILE_OUTER_HELD, 0);
			/* A finding that already speaks for its outer lock
			 * keeps at least that lock's wait. */
			double left = fmax(f->score - in,
			                   finding_ev(f, EV_LOCK_WAIT_NS, 0));
			if (!(left > 0))
				continue; /* dropped */
			finding_rescore(f, left);
			finding_put(f, EV_INNER_WAIT_IN_ITS_FINDING, 1);
		}
		if (keep && i == *keep)
			*keep = w;
		if (w != i)
			out->v[w] = out->v[i];
		w++;
	}
	out->n = w;
}

void find_lock_contention(model_t *m, findings_t *out)
{
	if (!m->ncls)
		return;
	cstat_t *v = xcalloc(m->ncls, sizeof *v);
	gather(m, v);
	for (size_t i = 0; i < out->n; i++)
		if (out->v[i].m == m && out->v[i].kind == FK_ALLOC_UNDER_LOCK &&
		    out->v[i].cls != NONE32)
			v[out->v[i].cls].aul = true;
	/* The nested_lock findings' score on each class they name. */
	double *nested = xcalloc(m->ncls, sizeof *nested);
	for (size_t i = 0; i < out->n; i++) {
		const finding_t *f = &out->v[i];
		if (f->m != m || f->kind != FK_NESTED_LOCK)
			continue;
		if (f->cls != NONE32)
			nested[f->cls] = fmax(nested[f->cls], f->score);
		if (f->cls2 != NONE32)
			nested[f->cls2] = fmax(nested[f->cls2], f->score);
		for (uint32_t j = 0; j < f->nmembers; j++) {
			uint32_t mc = m->lock[f->member[j]].cls;
			if (mc != NONE32)
				nested[mc] = fmax(nested[mc], f->score);
		}
	}
	uint64_t dur = model_recorded_ns(m);
	for (uint32_t c = 0; c < m->ncls; c++) {
		const lockclass_t *k = &m->cls[c];
		const cstat_t *s = &v[c];
		if (skipped_kind(k->kind) ||
		    k->s.contended < TH_CONT_MIN_WAITS || s->W <= 0 ||
		    s->W * 1e6 < (double)TH_CONT_MIN_LOST_PPM * (double)dur)
			continue;
		if (s->aul && alloc_explains(m, c)) {
			size_t best = SIZE_MAX;
			for (size_t i = 0; i < out->n; i++) {
				const finding_t *f = &out->v[i];
				if (f->m == m &&
				    f->kind == FK_ALLOC_UNDER_LOCK &&
				    f->cls == c &&
				    (best == SIZE_MAX ||
				     f->score > out->v[best].score))
					best = i;
			}
			uint32_t folded = drop_aul(out, m, c, &best);
			unclaim_inner(out, m, c, &best, best);
			finding_t *f = &out->v[best];
			finding_rescore(f, s->W);
			put_evidence(m, f, c, s);
			finding_put(f, EV_ALLOC_SITES_FOLDED, folded);
			continue;
		}
		/* Holding inner locks is a meaningful part of the holds: the
		 * heaviest nested_lock finding with this lock outside names
		 * it, scored W (or its own score, when higher: it also counts
		 * the waits on the inner lock). */
		size_t nb = SIZE_MAX;
		if ((double)s->inner_hold * 100 >=
		    (double)TH_CONT_NEST_SHARE_PCT * (double)k->s.hold_ns)
			for (size_t i = 0; i < out->n; i++) {
				const finding_t *f = &out->v[i];
				if (f->m == m && f->kind == FK_NESTED_LOCK &&
				    f->cls == c &&
				    (nb == SIZE_MAX ||
				     f->score > out->v[nb].score))
					nb = i;
			}
		if (nb != SIZE_MAX) {
			if (s->aul)
				drop_aul(out, m, c, &nb);
			unclaim_inner(out, m, c, &nb, nb);
			finding_t *f = &out->v[nb];
			finding_rescore(f, fmax(f->score, s->W));
			put_evidence(m, f, c, s);
			continue;
		}
		/* A lock whose wait a nested_lock finding mostly explains
		 * (its score at least half the lock's) is that finding's. */
		if (nested[c] * 2 >= s->W)
			continue;
		if (s->aul)
			drop_aul(out, m, c, NULL);
		unclaim_inner(out, m, c, NULL, SIZE_MAX);
		finding_t *f = finding_add(out, m, FK_LOCK_CONTENTION, s->W);
		f->cls = c;
		/* The code: the holders', else where the waiters wait. */
		f->stack =
		    s->top_holder != NONE32 ? s->top_holder : s->top_waiter;
		put_evidence(m, f, c, s);
		advise(m, f, c);
	}
	free(nested);
	free(v);
}
