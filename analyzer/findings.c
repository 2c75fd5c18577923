/*
 * findings.c - derives the findings from an aggregated model. Every
 * threshold comes from thresholds.h. Scores are nanoseconds of time the
 * finding explains, so findings of different kinds rank on one scale:
 *
 *   alloc_under_lock   W x S (x QUEUE_BOOST for queue-like locks), where W
 *                      is the time waiters lost on the lock class and S the
 *                      share of its hold time spent in the allocator from
 *                      this stack. A lock never waited on scores 0 and is
 *                      not reported: allocation under an uncontended lock
 *                      costs no one else anything.
 *   cross_thread_free  allocator time (malloc + free) of the blocks freed
 *                      on another thread beyond two median calls each.
 *   alloc_churn        allocator time of the short-lived blocks.
 *   nested_lock        wait on the inner lock while holding the outer, plus
 *                      the outer's wait x the share of its hold spent
 *                      holding the inner.
 *   starvation         per lock and role (threads with one entry
 *                      function), the time the peers behind the role's
 *                      mean rate of service would have needed, at that
 *                      rate, for the service they did not get:
 *                      sum (1 - rate_i / mean rate) x life_i.
 *   slow_alloc         time of the slow calls beyond the median call.
 */
#include "findings.h"

#include "symbols.h"
#include "thresholds.h"
#include "trace_format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *finding_kind_name(int kind)
{
	static const char *const names[] = {
#define FK_NAME_(e, name) name,
	    FINDING_KINDS(FK_NAME_)
#undef FK_NAME_
	};
	return kind >= 0 && kind < FK_COUNT ? names[kind] : "?";
}

const char *severity_name(int sev)
{
	static const char *const names[] = {
#define SEV_NAME_(e, name) name,
	    SEVERITIES(SEV_NAME_)
#undef SEV_NAME_
	};
	return sev >= 0 && sev <= SEV_HIGH ? names[sev] : "?";
}

int severity_parse(const char *s)
{
	for (int i = 0; i <= SEV_HIGH; i++)
		if (strcmp(s, severity_name(i)) == 0)
			return i;
	return -1;
}

double finding_ev(const finding_t *f, const char *key, double def)
{
	for (int i = 0; i < f->nev; i++)
		if (strcmp(f->ev[i].key, key) == 0)
			return f->ev[i].v;
	return def;
}

static void ev(finding_t *f, const char *key, double v)
{
	if (f->nev < EV_MAX) {
		f->ev[f->nev].key = key;
		f->ev[f->nev].v = v;
		f->nev++;
	}
}

static finding_t *add(findings_t *out, model_t *m, int kind, double score)
{
	VEC_RESERVE(out->v, out->cap, out->n);
	finding_t *f = &out->v[out->n++];
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->m = m;
	f->score = score;
	f->cls = f->cls2 = f->stack = f->lock = NONE32;
	uint64_t dur = model_duration_ns(m);
	double ppm = dur ? score * 1e6 / (double)dur : 1e9;
	f->severity = ppm >= TH_SEV_HIGH_PPM     ? SEV_HIGH
	              : ppm >= TH_SEV_MEDIUM_PPM ? SEV_MEDIUM
	              : ppm >= TH_SEV_LOW_PPM    ? SEV_LOW
	                                         : SEV_INFO;
	return f;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static const char *site_name(model_t *m, uint32_t stack, char *buf,
                             size_t len)
{
	frame_t fr;
	if (stack_site(m, stack, &fr) && fr.function)
		return frame_label(&fr, buf, len);
	snprintf(buf, len, "this site");
	return buf;
}

/* ---- allocation sites: stacks grouped by their first user frame ---- */

/* A site: the stacks whose first user frame (stack_site) is the same
 * symbolized line (or, unsymbolized, the same return address), with their
 * statistics merged. */
typedef struct sitegrp {
	site_t s;
	uint32_t rep; /* the member stack with the most allocator time */
	const char *key;
} sitegrp_t;

typedef struct sites {
	sitegrp_t *g;
	size_t ng, cap;
	uint32_t *of; /* stack index -> group index, NONE32 without a site */
	uint32_t *order, *start; /* members of g: order[start[g]..start[g+1]) */
} sites_t;

static void thr_merge(uint32_t *dt, uint64_t *dn, const uint32_t *st,
                      const uint64_t *sn)
{
	for (int i = 0; i < SITE_THREADS && st[i]; i++) {
		int j = 0;
		while (j < SITE_THREADS && dt[j] && dt[j] != st[i])
			j++;
		if (j == SITE_THREADS)
			continue; /* table full, as in aggregate.c */
		dt[j] = st[i];
		dn[j] += sn[i];
	}
}

/* d += s: sums, maxima, and the small size and thread tables. */
static void site_merge(site_t *d, const site_t *s)
{
#define SITE_SUM_(f) d->f += s->f;
	SITE_SUM_(allocs) SITE_SUM_(reallocs) SITE_SUM_(bytes) SITE_SUM_(frees)
	SITE_SUM_(live) SITE_SUM_(alloc_ns) SITE_SUM_(free_ns) SITE_SUM_(lw_ns)
	SITE_SUM_(lw_n) SITE_SUM_(life_ns) SITE_SUM_(short_n)
	SITE_SUM_(short_ns) SITE_SUM_(xfree_n) SITE_SUM_(xfree_ns)
	SITE_SUM_(xfree_bytes)
#undef SITE_SUM_
	for (int h = 0; h < 2; h++) {
		d->calls[h] += s->calls[h];
		d->slow_n[h] += s->slow_n[h];
		d->slow_ns[h] += s->slow_ns[h];
		d->slow_lw_ns[h] += s->slow_lw_ns[h];
	}
	if (s->life_max > d->life_max)
		d->life_max = s->life_max;
	for (int i = 0; i < SITE_SIZES; i++) {
		if (!s->size_n[i])
			continue;
		int j = 0, min = 0;
		for (; j < SITE_SIZES; j++) {
			if (d->size_n[j] && d->size[j] == s->size[i])
				break;
			if (d->size_n[j] < d->size_n[min])
				min = j;
		}
		if (j < SITE_SIZES) {
			d->size_n[j] += s->size_n[i];
		} else if (s->size_n[i] > d->size_n[min]) {
			d->size[min] = s->size[i];
			d->size_n[min] = s->size_n[i];
		}
	}
	thr_merge(d->athr, d->athr_n, s->athr, s->athr_n);
	thr_merge(d->fthr, d->fthr_n, s->fthr, s->fthr_n);
}

static uint64_t fnv(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h == U64MAP_EMPTY ? h - 1 : h;
}

static void sites_build(model_t *m, sites_t *S)
{
	u64map_t map = {0};
	char label[512];
	memset(S, 0, sizeof *S);
	S->of = xmalloc((m->nstk + 1) * sizeof *S->of);
	for (size_t i = 0; i < m->nstk; i++) {
		const site_t *st = m->stk[i].site;
		S->of[i] = NONE32;
		if (!st)
			continue;
		frame_t fr;
		const char *key;
		if (m->stk[i].defined && stack_site(m, (uint32_t)i, &fr))
			key = frame_label(&fr, label, sizeof label);
		else /* no frame to group by: a site of its own */
			key = NULL;
		int added = 1;
		uint32_t *v = NULL;
		if (key) {
			v = u64map_put(&map, fnv(key, 14695981039346656037ull),
			               &added);
			if (!added && strcmp(S->g[*v].key, key) != 0) {
				v = NULL; /* a hash collision: a group of its own */
				added = 1;
			}
		}
		if (added) {
			VEC_RESERVE(S->g, S->cap, S->ng);
			sitegrp_t *g = &S->g[S->ng];
			memset(g, 0, sizeof *g);
			g->rep = (uint32_t)i;
			g->key = key ? arena_strdup(&m->arena, key) : "";
			if (v)
				*v = (uint32_t)S->ng;
			S->of[i] = (uint32_t)S->ng++;
		} else {
			S->of[i] = *v;
		}
		sitegrp_t *g = &S->g[S->of[i]];
		const site_t *r = m->stk[g->rep].site;
		if (st->alloc_ns + st->free_ns > r->alloc_ns + r->free_ns)
			g->rep = (uint32_t)i;
		site_merge(&g->s, st);
	}
	u64map_free(&map);
	/* Members by group: a counting sort of the stacks. */
	S->start = xcalloc(S->ng + 2, sizeof *S->start);
	S->order = xmalloc((m->nstk + 1) * sizeof *S->order);
	for (size_t i = 0; i < m->nstk; i++)
		if (S->of[i] != NONE32)
			S->start[S->of[i] + 2]++;
	for (size_t g = 0; g < S->ng; g++)
		S->start[g + 2] += S->start[g + 1];
	for (size_t i = 0; i < m->nstk; i++)
		if (S->of[i] != NONE32)
			S->order[S->start[S->of[i] + 1]++] = (uint32_t)i;
}

static void sites_free(sites_t *S)
{
	free(S->g);
	free(S->of);
	free(S->order);
	free(S->start);
}

/* Keeps stack si with value v among f's heaviest FINDING_STACKS. */
static void stack_ev(finding_t *f, uint32_t si, double v)
{
	f->stacks_total++;
	uint32_t n = f->nstacks, i = n;
	if (n == FINDING_STACKS) {
		if (v <= f->stack_v[n - 1])
			return;
		i = --n;
	}
	while (i > 0 && f->stack_v[i - 1] < v) {
		f->stacks[i] = f->stacks[i - 1];
		f->stack_v[i] = f->stack_v[i - 1];
		i--;
	}
	f->stacks[i] = si;
	f->stack_v[i] = v;
	f->nstacks = n + 1;
}

/* Evidence of a site finding: its member stacks valued by what(site). */
static void group_stacks(finding_t *f, model_t *m, const sites_t *S,
                         uint32_t g, const char *unit,
                         double (*what)(const site_t *, int), int h)
{
	f->stack_unit = unit;
	for (uint32_t k = S->start[g]; k < S->start[g + 1]; k++) {
		uint32_t si = S->order[k];
		double v = what(m->stk[si].site, h);
		if (v > 0)
			stack_ev(f, si, v);
	}
	if (f->nstacks)
		f->stack = f->stacks[0];
}

static double v_xfree(const site_t *s, int h)
{
	(void)h;
	return (double)s->xfree_n;
}

static double v_churn(const site_t *s, int h)
{
	(void)h;
	return (double)s->short_n;
}

static double v_slow(const site_t *s, int h)
{
	return (double)s->slow_ns[h];
}

/* ---- alloc_under_lock ---- */

typedef struct aul {
	uint32_t cls, grp; /* grp: site group, or NONE32 for a stack of its own */
	uint32_t stack;    /* the first stack seen (the key without a group) */
	uint64_t n, ns, lw, allocs, slow;
	uint32_t first; /* first (class, stack) entry of this group */
} aul_t;

/* One (class, stack) pair's totals, chained per (class, site). */
typedef struct aulstk {
	uint32_t stack, next;
	uint64_t ns;
} aulstk_t;

static void find_alloc_under_lock(model_t *m, const sites_t *S,
                                  findings_t *out)
{
	lstab_t *t = &m->ls[LS_ALLOC];
	u64map_t map = {0}, smap = {0};
	aul_t *v = NULL;
	aulstk_t *st = NULL;
	size_t n = 0, cap = 0, nst = 0, capst = 0;
	for (size_t i = 0; i < t->n; i++) {
		const lspair_t *p = &t->v[i];
		uint32_t c = m->lock[p->lock].cls;
		if (c == NONE32)
			continue;
		uint32_t g = p->stack == NONE32 ? NONE32 : S->of[p->stack];
		/* Grouped by site; a stack without one is its own key. */
		uint64_t key = g != NONE32 ? (uint64_t)c << 32 | g
		                           : (uint64_t)c << 32 | p->stack;
		int added;
		uint32_t *x = u64map_put(&map, key ^ (g == NONE32 ? 1ull << 63
		                                                  : 0),
		                         &added);
		if (added) {
			VEC_RESERVE(v, cap, n);
			memset(&v[n], 0, sizeof v[n]);
			v[n].cls = c;
			v[n].grp = g;
			v[n].stack = p->stack;
			v[n].first = NONE32;
			*x = (uint32_t)n++;
		}
		aul_t *a = &v[*x];
		a->n += p->n;
		a->ns += p->ns;
		a->lw += p->ns2;
		a->allocs += p->n2;
		a->slow += p->n3;
		/* Per (class, stack): several lock instances of one class. */
		uint32_t *y = u64map_put(&smap, (uint64_t)c << 32 | p->stack,
		                         &added);
		if (added) {
			VEC_RESERVE(st, capst, nst);
			st[nst].stack = p->stack;
			st[nst].ns = 0;
			st[nst].next = a->first;
			a->first = (uint32_t)nst;
			*y = (uint32_t)nst++;
		}
		st[*y].ns += p->ns;
	}
	for (size_t i = 0; i < n; i++) {
		const aul_t *a = &v[i];
		const lockclass_t *c = &m->cls[a->cls];
		double W = (double)c->s.wait_ns, H = (double)c->s.hold_ns;
		if (c->kind == FMT_KIND_ALLOC_INTERNAL || W <= 0 || H <= 0 ||
		    a->ns == 0)
			continue;
		double share = fmin(1.0, (double)a->ns / H);
		double lock_share = fmin(1.0, (double)c->s.alloc_ns / H);
		if (share * 1e6 < TH_AUL_MIN_SHARE_PPM)
			continue;
		double score = W * share * (c->queue ? TH_QUEUE_BOOST : 1);
		finding_t *f = add(out, m, FK_ALLOC_UNDER_LOCK, score);
		f->cls = a->cls;
		f->stack = a->stack;
		f->stack_unit = "allocator_ns";
		for (uint32_t k = a->first; k != NONE32; k = st[k].next)
			stack_ev(f, st[k].stack, (double)st[k].ns);
		if (f->nstacks)
			f->stack = f->stacks[0];
		ev(f, "lock_wait_ns", W);
		ev(f, "contended", (double)c->s.contended);
		ev(f, "acquisitions", (double)c->s.acq);
		ev(f, "hold_ns", H);
		ev(f, "holds", (double)c->s.holds);
		ev(f, "holds_with_alloc", (double)c->s.holds_with_alloc);
		ev(f, "allocator_ns_in_holds", (double)c->s.alloc_ns);
		ev(f, "allocator_share_of_hold", lock_share);
		ev(f, "allocator_lock_wait_ns_in_holds",
		   (double)c->s.alloc_lw_ns);
		ev(f, "calls", (double)a->n);
		ev(f, "allocs", (double)a->allocs);
		ev(f, "frees", (double)(a->n - a->allocs));
		ev(f, "site_allocator_ns", (double)a->ns);
		ev(f, "site_share_of_hold", share);
		ev(f, "slow_calls", (double)a->slow);
		ev(f, "allocator_lock_wait_ns", (double)a->lw);
		ev(f, "queue_like", c->queue);
		ev(f, "instances", c->ninst);
		ev(f, "gives_back_ns", W * lock_share);
		ev(f, "stacks", f->stacks_total);
		char sn[256];
		snprintf(f->advice, sizeof f->advice,
		         "Move the allocation at %s out of the critical "
		         "section (allocate before locking, hand objects over "
		         "by value) or pre-allocate (a reserved vector, a free "
		         "list)%s.",
		         site_name(m, f->stack, sn, sizeof sn),
		         c->queue ? ": every producer and consumer of this "
		                    "queue waits for the allocator too"
		                  : "");
	}
	free(v);
	free(st);
	u64map_free(&map);
	u64map_free(&smap);
}

/* ---- allocation sites ---- */

static uint64_t top_size(const site_t *s, uint64_t *count)
{
	int best = 0;
	for (int i = 1; i < SITE_SIZES; i++)
		if (s->size_n[i] > s->size_n[best])
			best = i;
	*count = s->size_n[best];
	return s->size[best];
}

static int nthreads(const uint32_t *thr)
{
	int n = 0;
	for (int i = 0; i < SITE_THREADS; i++)
		n += thr[i] != 0;
	return n;
}

static void find_sites(model_t *m, const sites_t *S, findings_t *out)
{
	double dur_s = (double)model_duration_ns(m) / 1e9;
	double median = hist_quantile(&m->alloc_hist, 0.5) / 2;
	char sn[256];
	for (uint32_t g = 0; g < S->ng; g++) {
		const site_t *s = &S->g[g].s;
		uint32_t si = S->g[g].rep;
		/* cross_thread_free */
		double xexcess =
		    (double)s->xfree_ns - 2.0 * (double)s->xfree_n * median;
		if (s->xfree_n >= TH_XFREE_MIN &&
		    s->xfree_n * 100 >= s->frees * TH_XFREE_MIN_SHARE_PCT) {
			finding_t *f = add(out, m, FK_CROSS_THREAD_FREE,
			                   xexcess > 0 ? xexcess : 0);
			f->stack = si;
			group_stacks(f, m, S, g, "cross_thread_frees", v_xfree, 0);
			ev(f, "cross_thread_frees", (double)s->xfree_n);
			ev(f, "frees", (double)s->frees);
			ev(f, "share", ratio((double)s->xfree_n, (double)s->frees));
			ev(f, "bytes", (double)s->xfree_bytes);
			ev(f, "allocator_ns", (double)s->xfree_ns);
			ev(f, "allocating_threads", nthreads(s->athr));
			ev(f, "freeing_threads", nthreads(s->fthr));
			ev(f, "stacks", f->stacks_total);
			snprintf(f->advice, sizeof f->advice,
			         "Blocks allocated at %s are freed by another "
			         "thread, which defeats per-thread caches: free "
			         "them where they were allocated, move the "
			         "objects by value, or recycle them through a "
			         "per-thread pool.",
			         site_name(m, f->stack, sn, sizeof sn));
		}
		/* alloc_churn */
		uint64_t nsize;
		uint64_t size = top_size(s, &nsize);
		uint64_t allocs = s->allocs + s->reallocs;
		if (s->short_n >= TH_CHURN_MIN_BLOCKS && dur_s > 0 &&
		    (double)s->short_n / dur_s >= TH_CHURN_MIN_RATE &&
		    nsize * 100 >= allocs * TH_CHURN_SIZE_SHARE_PCT) {
			finding_t *f = add(out, m, FK_ALLOC_CHURN,
			                   (double)s->short_ns);
			f->stack = si;
			group_stacks(f, m, S, g, "short_lived", v_churn, 0);
			ev(f, "short_lived", (double)s->short_n);
			ev(f, "allocs", (double)allocs);
			ev(f, "rate_per_s", (double)s->short_n / dur_s);
			ev(f, "size", (double)size);
			ev(f, "size_share", ratio((double)nsize, (double)allocs));
			ev(f, "mean_lifetime_ns",
			   ratio((double)s->life_ns, (double)s->frees));
			ev(f, "allocator_ns", (double)s->short_ns);
			ev(f, "stacks", f->stacks_total);
			snprintf(f->advice, sizeof f->advice,
			         "%llu-byte blocks from %s live less than %.1f ms "
			         "at %.0f/s (a node-based container?): use open "
			         "addressing or a pre-allocated pool, or reuse "
			         "the objects.",
			         (unsigned long long)size,
			         site_name(m, f->stack, sn, sizeof sn),
			         TH_CHURN_LIFETIME_NS / 1e6,
			         (double)s->short_n / dur_s);
		}
		/* slow_alloc, by whether a lock was held */
		for (int h = 0; h < 2; h++) {
			uint64_t calls = s->calls[h], slow = s->slow_n[h];
			if (slow < TH_SLOW_MIN_CALLS ||
			    (double)slow * 1e6 <
			        (double)calls * TH_SLOW_MIN_SHARE_PPM)
				continue;
			double excess = (double)s->slow_ns[h] - (double)slow * median;
			if (excess <= 0)
				continue;
			finding_t *f = add(out, m, FK_SLOW_ALLOC, excess);
			f->stack = si;
			group_stacks(f, m, S, g, "slow_ns", v_slow, h);
			ev(f, "lock_held", h);
			ev(f, "slow_calls", (double)slow);
			ev(f, "calls", (double)calls);
			ev(f, "slow_share", ratio((double)slow, (double)calls));
			ev(f, "slow_ns", (double)s->slow_ns[h]);
			ev(f, "mean_slow_ns", ratio((double)s->slow_ns[h], (double)slow));
			ev(f, "median_call_ns", median);
			ev(f, "allocator_lock_wait_ns", (double)s->slow_lw_ns[h]);
			ev(f, "threshold_ns", TH_SLOW_ALLOC_NS);
			ev(f, "stacks", f->stacks_total);
			snprintf(f->advice, sizeof f->advice,
			         h ? "Allocator calls for %s often take the "
			             "slow path while a lock is held: allocate "
			             "before locking, or pre-allocate."
			           : "Allocator calls for %s often take the "
			             "slow path (central free list, page heap): "
			             "reuse objects, reserve capacity, or give "
			             "the allocator larger thread caches.",
			         site_name(m, f->stack, sn, sizeof sn));
		}
	}
}

/* ---- nested_lock ---- */

typedef struct cnest {
	uint32_t outer, inner, site;
	uint64_t n, wait, hold;
} cnest_t;

static void find_nested(model_t *m, findings_t *out)
{
	u64map_t map = {0};
	cnest_t *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < m->nnest; i++) {
		const nest_t *p = &m->nest[i];
		uint32_t co = m->lock[p->outer].cls, ci = m->lock[p->inner].cls;
		if (co == NONE32 || ci == NONE32)
			continue;
		int added;
		uint32_t *x = u64map_put(&map, (uint64_t)co << 32 | ci, &added);
		if (added) {
			VEC_RESERVE(v, cap, n);
			memset(&v[n], 0, sizeof v[n]);
			v[n].outer = co;
			v[n].inner = ci;
			v[n].site = p->site;
			*x = (uint32_t)n++;
		}
		v[*x].n += p->n;
		v[*x].wait += p->inner_wait_ns;
		v[*x].hold += p->inner_hold_ns;
	}
	for (size_t i = 0; i < n; i++) {
		const cnest_t *p = &v[i];
		const lockclass_t *o = &m->cls[p->outer], *in = &m->cls[p->inner];
		if (p->n < TH_NEST_MIN || (!o->s.contended && !in->s.contended))
			continue;
		double share = fmin(1.0, ratio((double)p->hold, (double)o->s.hold_ns));
		double score = (double)p->wait + (double)o->s.wait_ns * share;
		if (score <= 0)
			continue;
		finding_t *f = add(out, m, FK_NESTED_LOCK, score);
		f->cls = p->outer;
		f->cls2 = p->inner;
		f->stack = p->site;
		ev(f, "nested_acquisitions", (double)p->n);
		ev(f, "inner_wait_ns_while_outer_held", (double)p->wait);
		ev(f, "inner_hold_ns_while_outer_held", (double)p->hold);
		ev(f, "outer_wait_ns", (double)o->s.wait_ns);
		ev(f, "outer_contended", (double)o->s.contended);
		ev(f, "inner_wait_ns", (double)in->s.wait_ns);
		ev(f, "inner_contended", (double)in->s.contended);
		ev(f, "outer_hold_share_in_inner", share);
		char a[128], b[128];
		snprintf(f->advice, sizeof f->advice,
		         "Lock %s is taken while %s is held, so waiters of the "
		         "outer lock also wait for the inner one: use one lock "
		         "(and a condition variable) for both, or release the "
		         "outer lock first.",
		         lock_label(m, &m->lock[in->rep], a, sizeof a),
		         lock_label(m, &m->lock[o->rep], b, sizeof b));
	}
	free(v);
	u64map_free(&map);
}

/* ---- starvation ---- */

/*
 * A thread's role: its entry function, the outermost user frame of one of
 * its recorded whole stacks that reaches the thread's start (its outermost
 * frame is in libc, start_thread/clone or __libc_start_main, or is _start;
 * a stack cut at the recording depth does not count). NULL when no stack
 * does (a thread whose acquisitions were all uncontended and which never
 * allocated has only call sites) or when it is not symbolized.
 */
static const char *thread_entry(model_t *m, const thread_t *t)
{
	const char *inl = NULL;
	for (uint32_t k = 0; k < t->nfirst; k++) {
		const stack_t *st = &m->stk[t->first_stk[k]];
		if (!st->defined || st->n < 2)
			continue;
		const frame_t *fr;
		int nf = sym_addr(m, m->frames[st->off + st->n - 1], &fr);
		const frame_t *root = &fr[nf - 1];
		if (root->fold == SYM_USER &&
		    !(root->function && strcmp(root->function, "_start") == 0))
			continue;
		for (uint32_t i = st->n; i-- > 0;) {
			nf = sym_addr(m, m->frames[st->off + i], &fr);
			const frame_t *f = &fr[nf - 1]; /* the real function */
			if (f->fold != SYM_USER)
				continue;
			if (f->function && strcmp(f->function, "_start") == 0)
				continue;
			if (!f->function)
				break;
			/* An inlined frame whose enclosing function the debug
			 * info did not give: another stack may name it. */
			if (f->inlined) {
				if (!inl)
					inl = f->function;
				break;
			}
			return f->function;
		}
	}
	return inl;
}

/* The thread's name without its trailing number ("adm-client-3" ->
 * "adm-client") into buf, or NULL: no name, or the process's own name
 * (threads that were never named inherit it). */
static const char *name_stem(const char *name, const char *procname,
                             char *buf, size_t len)
{
	if (!name || !*name || (procname && strcmp(name, procname) == 0))
		return NULL;
	size_t n = strlen(name);
	while (n > 0 && name[n - 1] >= '0' && name[n - 1] <= '9')
		n--;
	while (n > 0 && strchr("-_ .:#/", name[n - 1]))
		n--;
	if (n == 0)
		return NULL;
	snprintf(buf, len, "%.*s", (int)n, name);
	return buf;
}

typedef struct stemref {
	const char *stem;
	uint32_t thread;
} stemref_t;

static int by_stem(const void *a, const void *b)
{
	const stemref_t *x = a, *y = b;
	int c = strcmp(x->stem, y->stem);
	return c ? c : (x->thread > y->thread) - (x->thread < y->thread);
}

/*
 * Roles of every thread (arena strings, NULL: no peers). A thread without a
 * known entry function (no whole stack) takes the entry function of the
 * threads sharing its name stem when they all have the same one (the
 * starved clients of a pool whose lucky members waited once); a name stem
 * whose threads have no entry function at all is a role of its own
 * ("threads named adm-client"); a stem shared by threads of several entry
 * functions gives nothing to the threads without one. Unnamed threads (the
 * process's own name) have no stem.
 */
static const char **thread_roles(model_t *m)
{
	const char **role = xcalloc(m->nthr + 1, sizeof *role);
	stemref_t *st = xmalloc((m->nthr + 1) * sizeof *st);
	const char *procname = NULL;
	char buf[256];
	size_t ns = 0;
	for (size_t i = 0; i < m->nthr; i++)
		if (m->pid && m->thr[i].tid == m->pid)
			procname = m->thr[i].name;
	for (size_t i = 0; i < m->nthr; i++) {
		const thread_t *t = &m->thr[i];
		const char *e = thread_entry(m, t);
		role[i] = e ? arena_strdup(&m->arena, e) : NULL;
		if (m->pid && t->tid == m->pid)
			continue;
		const char *s = name_stem(t->name, procname, buf, sizeof buf);
		if (s) {
			st[ns].stem = arena_strdup(&m->arena, s);
			st[ns].thread = (uint32_t)i;
			ns++;
		}
	}
	if (ns > 1)
		qsort(st, ns, sizeof *st, by_stem);
	for (size_t i = 0, j; i < ns; i = j) {
		const char *e = NULL;
		bool mixed = false;
		for (j = i; j < ns && strcmp(st[j].stem, st[i].stem) == 0; j++) {
			const char *r = role[st[j].thread];
			if (!r)
				continue;
			if (e && strcmp(e, r) != 0)
				mixed = true;
			e = r;
		}
		if (mixed)
			continue;
		if (!e) {
			snprintf(buf, sizeof buf, "threads named %s", st[i].stem);
			e = arena_strdup(&m->arena, buf);
		}
		for (size_t k = i; k < j; k++)
			if (!role[st[k].thread])
				role[st[k].thread] = e;
	}
	free(st);
	return role;
}

typedef struct peer {
	const lockthr_t *lt;
	const char *role; /* arena; NULL: no peers */
	double span_ns;   /* the thread's first to last event */
	double service, rate;
} peer_t;

static int by_lock_role(const void *a, const void *b)
{
	const peer_t *x = a, *y = b;
	if (x->lt->lock != y->lt->lock)
		return x->lt->lock < y->lt->lock ? -1 : 1;
	if (!x->role || !y->role) {
		if (x->role != y->role)
			return x->role ? -1 : 1;
	} else {
		int c = strcmp(x->role, y->role);
		if (c)
			return c;
	}
	return x->lt->thread < y->lt->thread ? -1 : x->lt->thread > y->lt->thread;
}

/*
 * One role's peers on one lock: p[0..k). The measure of service: on a lock
 * the role waits on with a condition variable (its peers were woken, not by
 * a timeout, STARVE_MIN_OPS times or more), the wakes (what a waiter waits
 * for: an answer, an item, a slot); otherwise the successful acquisitions.
 * Rates (service per ns of the thread's life) are compared, so a thread
 * that lived half the run is not starved for doing half the work.
 */
static void starve_group(model_t *m, peer_t *p, size_t k, findings_t *out)
{
	double wakes = 0, acq = 0, maxspan = 0;
	for (size_t i = 0; i < k; i++) {
		wakes += (double)(p[i].lt->wakes - p[i].lt->timeouts);
		acq += (double)p[i].lt->acq;
		maxspan = fmax(maxspan, p[i].span_ns);
	}
	bool by_wakes = wakes >= TH_STARVE_MIN_OPS;
	/* Peers: those that lived long enough to be compared. */
	size_t n = 0;
	double total = 0, rsum = 0;
	for (size_t i = 0; i < k; i++) {
		if (p[i].span_ns * 100 < maxspan * TH_STARVE_PARTICIPANT_PCT ||
		    p[i].span_ns <= 0)
			continue;
		const lockthr_t *lt = p[i].lt;
		p[i].service = by_wakes ? (double)(lt->wakes - lt->timeouts)
		                        : (double)lt->acq;
		p[i].rate = p[i].service / p[i].span_ns;
		total += p[i].service;
		rsum += p[i].rate;
		p[n++] = p[i];
	}
	if (n < TH_STARVE_MIN_PEERS || total < TH_STARVE_MIN_OPS ||
	    total < (double)n * TH_STARVE_MIN_MEAN_OPS)
		return;
	double mu = rsum / (double)n;
	double sq = 0, lost = 0, short_ops = 0;
	double pwait = 0, psleep = 0, smin = HUGE_VAL, smax = 0;
	int zeros = 0, behind = 0;
	double wsum = 0, wsq = 0;
	int wk = 0;
	for (size_t i = 0; i < n; i++) {
		double d = p[i].rate - mu;
		sq += d * d;
		smin = fmin(smin, p[i].service);
		smax = fmax(smax, p[i].service);
		if (p[i].lt->acq) {
			double w = (double)p[i].lt->wait_ns / (double)p[i].lt->acq;
			wsum += w;
			wsq += w * w;
			wk++;
		}
		if (p[i].rate < mu) {
			zeros += p[i].service == 0;
			/* The time this peer would have needed, at the
			 * role's mean rate, for the service it did not get. */
			double gap = (1 - p[i].rate / mu) * p[i].span_ns;
			lost += gap;
			short_ops += mu * p[i].span_ns - p[i].service;
			pwait += (double)p[i].lt->wait_ns;
			psleep += (double)p[i].lt->sleep_ns;
			behind++;
		}
	}
	double cv = sqrt(sq / (double)n) / mu;
	double wcv = 0;
	if (wk >= 2 && wsum > 0) {
		double wm = wsum / wk;
		wcv = sqrt(fmax(0, wsq / wk - wm * wm)) / wm;
	}
	if (!behind || (cv * 100 < TH_STARVE_CV_PCT && !zeros))
		return;
	const lock_t *l = &m->lock[p[0].lt->lock];
	finding_t *f = add(out, m, FK_STARVATION, lost);
	f->cls = l->cls;
	f->lock = p[0].lt->lock;
	f->stack = m->cls[l->cls].site;
	ev(f, "lock_id", (double)l->id);
	ev(f, "threads", (double)n);
	ev(f, "threads_with_no_acquisition", zeros);
	ev(f, "acquisitions_cv", cv);
	ev(f, "mean_wait_cv", wcv);
	ev(f, "cond_waiters_group", by_wakes);
	ev(f, "lock_wait_ns", (double)l->s.wait_ns);
	ev(f, "service_by_cond_wakes", by_wakes);
	ev(f, "service_total", total);
	ev(f, "service_min", smin);
	ev(f, "service_max", smax);
	ev(f, "role_acquisitions", acq);
	ev(f, "role_cond_wakes", wakes);
	ev(f, "threads_behind", behind);
	ev(f, "service_shortfall", short_ops);
	ev(f, "behind_lock_wait_ns", pwait);
	ev(f, "behind_cond_sleep_ns", psleep);
	ev(f, "lost_ns", lost);
	char a[128];
	snprintf(f->advice, sizeof f->advice,
	         "The %zu threads running %s get very unequal shares of %s "
	         "(%s from %.0f to %.0f, %d with none): some are passed over "
	         "again and again; admit work in order (FIFO or "
	         "earliest-deadline-first), or give each thread its own queue.",
	         n, p[0].role, lock_label(m, l, a, sizeof a),
	         by_wakes ? "condition wakes" : "acquisitions", smin, smax,
	         zeros);
}

static void find_starvation(model_t *m, findings_t *out)
{
	if (!m->nlt)
		return;
	const char **role = thread_roles(m);
	peer_t *p = xmalloc(m->nlt * sizeof *p);
	size_t np = 0;
	for (size_t i = 0; i < m->nlt; i++) {
		const lockthr_t *lt = &m->lt[i];
		const thread_t *t = &m->thr[lt->thread];
		const lock_t *l = &m->lock[lt->lock];
		if (l->cls == NONE32 || t->excluded || !role[lt->thread])
			continue;
		memset(&p[np], 0, sizeof p[np]);
		p[np].lt = lt;
		p[np].role = role[lt->thread];
		p[np].span_ns = t->last_tsc > t->first_tsc
		                    ? (double)(t->last_tsc - t->first_tsc) *
		                          m->ns_per_tick
		                    : 0;
		np++;
	}
	if (np > 1)
		qsort(p, np, sizeof *p, by_lock_role);
	for (size_t i = 0, j; i < np; i = j) {
		for (j = i + 1; j < np && p[j].lt->lock == p[i].lt->lock &&
		                strcmp(p[j].role, p[i].role) == 0;
		     j++)
			;
		starve_group(m, p + i, j - i, out);
	}
	free(p);
	free(role);
}

void findings_compute(model_t *m, findings_t *out)
{
	sites_t S;
	sites_build(m, &S);
	find_alloc_under_lock(m, &S, out);
	find_sites(m, &S, out);
	sites_free(&S);
	find_nested(m, out);
	find_starvation(m, out);
}

static int by_score(const void *a, const void *b)
{
	const finding_t *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

void findings_sort(findings_t *f)
{
	/* qsort(NULL, 0, ...) is undefined (found by fuzzing: a trace with no
	 * finding). */
	if (f->n > 1)
		qsort(f->v, f->n, sizeof *f->v, by_score);
}
