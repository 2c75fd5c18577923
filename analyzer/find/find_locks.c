/*
 * find_locks.c - the lock detectors (see detectors.h):
 *
 *   alloc_under_lock   W x S (x QUEUE_BOOST for queue-like locks), where W
 *                      is the time waiters lost on the lock class and S the
 *                      share of its hold time spent in the allocator from
 *                      this site. A lock never waited on scores 0 and is
 *                      not reported: allocation under an uncontended lock
 *                      costs no one else anything.
 *   nested_lock        wait on the inner lock while holding the outer, plus
 *                      the outer's wait x the share of its hold spent
 *                      holding the inner.
 */
#include "detectors.h"

#include "symbols.h"
#include "thresholds.h"
#include "trace_format.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- alloc_under_lock ---- */

typedef struct aul {
	uint32_t cls, grp; /* grp: site group, or NONE32: a stack of its own */
	uint32_t stack;    /* the first stack seen (the key without a group) */
	uint64_t n, ns, lw, allocs, slow;
	uint32_t first; /* first (class, stack) entry of this group */
	/* Calls without a stack folded in (fold_nosite), and their time. */
	uint64_t nosite_n, nosite_ns;
	bool folded; /* folded into another entry: not reported */
} aul_t;

/*
 * A free of a block whose allocation the trace does not hold (an unsampled
 * block of a sampled trace, one allocated before recording started) has no
 * stack: in a hold, its time would make a finding of its own, "(no stack
 * recorded)", beside the lock's finding for its allocation sites. Each
 * class's stackless entry is folded into its heaviest entry with a site
 * instead, as calls the finding counts apart; alone, it stays a finding.
 */
static void fold_nosite(aul_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		aul_t *u = &v[i];
		if (u->grp != NONE32 || u->stack != NONE32)
			continue;
		aul_t *best = NULL;
		for (size_t k = 0; k < n; k++)
			if (k != i && v[k].cls == u->cls && !v[k].folded &&
			    (!best || v[k].ns > best->ns))
				best = &v[k];
		if (!best)
			continue;
		best->nosite_n += u->n;
		best->nosite_ns += u->ns;
		u->folded = true;
	}
}

/* One (class, stack) pair's totals, chained per (class, site). */
typedef struct aulstk {
	uint32_t stack, next;
	uint64_t ns;
} aulstk_t;

void find_alloc_under_lock(model_t *m, const sites_t *S, findings_t *out)
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
		uint32_t *x = u64map_put(
		    &map, key ^ (g == NONE32 ? 1ull << 63 : 0), &added);
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
		uint32_t *y =
		    u64map_put(&smap, (uint64_t)c << 32 | p->stack, &added);
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
	fold_nosite(v, n);
	for (size_t i = 0; i < n; i++) {
		const aul_t *a = &v[i];
		if (a->folded)
			continue;
		const lockclass_t *c = &m->cls[a->cls];
		/* Waits that ended in a condition wait were waiting for
		 * work: not lost to the holders. */
		double W = (double)(c->s.wait_ns - c->s.idle_wait_ns),
		       H = (double)c->s.hold_ns;
		if (c->kind == FMT_KIND_ALLOC_INTERNAL || W <= 0 || H <= 0 ||
		    a->ns + a->nosite_ns == 0)
			continue;
		double share = fmin(1.0, (double)(a->ns + a->nosite_ns) / H);
		double lock_share = fmin(1.0, (double)c->s.alloc_ns / H);
		if (share * 1e6 < TH_AUL_MIN_SHARE_PPM)
			continue;
		double score = W * share * (c->queue ? TH_QUEUE_BOOST : 1);
		finding_t *f = finding_add(out, m, FK_ALLOC_UNDER_LOCK, score);
		f->cls = a->cls;
		f->stack = a->stack;
		f->stack_unit = "allocator_ns";
		for (uint32_t k = a->first; k != NONE32; k = st[k].next)
			finding_add_stack(f, st[k].stack, (double)st[k].ns);
		if (f->nstacks)
			f->stack = f->stacks[0];
		if (a->grp != NONE32)
			finding_set_lines(f, S->g[a->grp].line,
			                  S->g[a->grp].nline);
		finding_put(f, "lock_wait_ns", W);
		finding_put(f, "idle_wait_ns", (double)c->s.idle_wait_ns);
		finding_put(f, "contended", (double)c->s.contended);
		finding_put(f, "acquisitions", (double)c->s.acq);
		finding_put(f, "hold_ns", H);
		finding_put(f, "holds", (double)c->s.holds);
		finding_put(f, "holds_with_alloc",
		            (double)c->s.holds_with_alloc);
		finding_put(f, "allocator_ns_in_holds", (double)c->s.alloc_ns);
		finding_put(f, "allocator_share_of_hold", lock_share);
		finding_put(f, "allocator_lock_wait_ns_in_holds",
		            (double)c->s.alloc_lw_ns);
		finding_put(f, "calls", (double)a->n);
		finding_put(f, "allocs", (double)a->allocs);
		finding_put(f, "frees", (double)(a->n - a->allocs));
		finding_put(f, "site_allocator_ns", (double)a->ns);
		finding_put(f, "site_share_of_hold",
		            fmin(1.0, (double)a->ns / H));
		finding_put(f, "calls_without_stack", (double)a->nosite_n);
		finding_put(f, "allocator_ns_without_stack",
		            (double)a->nosite_ns);
		finding_put(f, "slow_calls", (double)a->slow);
		finding_put(f, "allocator_lock_wait_ns", (double)a->lw);
		finding_put(f, "queue_like", c->queue);
		finding_put(f, "instances", c->ninst);
		finding_put(f, "gives_back_ns", W * lock_share);
		finding_put(f, "stacks", f->stacks_total);
		char sn[256];
		snprintf(f->advice, sizeof f->advice,
		         "Move the allocation at %s out of the critical "
		         "section (allocate before locking, hand objects over "
		         "by value) or pre-allocate (a reserved vector, a free "
		         "list)%s.",
		         finding_site_name(f, sn, sizeof sn),
		         c->queue ? ": every producer and consumer of this "
		                    "queue waits for the allocator too"
		                  : "");
	}
	free(v);
	free(st);
	u64map_free(&map);
	u64map_free(&smap);
}

/* ---- nested_lock ---- */

typedef struct cnest {
	uint32_t outer, inner, site;
	uint32_t lead; /* the entry of its family that reports it (itself) */
	uint32_t next; /* the next member of its family, NONE32 */
	bool contended;
	uint64_t n, wait, hold;
	uint64_t up, down; /* nestings with the inner lock at a higher, lower
	                      address than the outer (one class) */
} cnest_t;

/* Whether class c's locks are static locks nobody named or made by a call
 * (an array of stripes is such a set: each stripe its own class, by its
 * first acquisition). */
static bool static_class(const model_t *m, uint32_t c)
{
	const lockclass_t *k = &m->cls[c];
	const lock_t *l = &m->lock[k->rep];
	return !k->by_init && k->ninst == 1 && !l->name && !l->in_block &&
	       l->addr && k->kind != FMT_KIND_FUTEX &&
	       k->kind != FMT_KIND_ALLOC_INTERNAL;
}

typedef struct ncand {
	uint32_t e, outer;
	uint64_t addr, sym; /* sym: the data symbol's start, 0 if none */
} ncand_t;

static int by_outer_addr(const void *a, const void *b)
{
	const ncand_t *x = a, *y = b;
	if (x->outer != y->outer)
		return x->outer < y->outer ? -1 : 1;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The stride run [i, j) of cand (sorted by outer, then address): at least
 * 3 locks of one outer class, consecutive gaps at most 4 KiB, each a
 * multiple of the smallest (an array's stripes, some of them used); or
 * at least 2 in one data symbol. Returns j (i + 1: no run). */
static size_t stride_run(const ncand_t *c, size_t i, size_t n)
{
	size_t j = i + 1;
	while (j < n && c[j].outer == c[i].outer && c[i].sym &&
	       c[j].sym == c[i].sym)
		j++;
	if (j - i >= 2)
		return j;
	uint64_t min = 0;
	for (j = i + 1; j < n && c[j].outer == c[i].outer; j++) {
		uint64_t g = c[j].addr - c[j - 1].addr;
		if (g < 8 || g > 4096)
			break;
		if (!min || g < min)
			min = g;
	}
	if (j - i < 3)
		return i + 1;
	for (size_t k = i + 1; k < j; k++)
		if ((c[k].addr - c[k - 1].addr) % min)
			return i + 1;
	return j;
}

/* Joins the entries whose inner classes are stripes of one array under
 * one outer class (memcached's LRU locks under its item locks were 37
 * findings, pair by pair): each entry's lead and next. */
static void nest_families(model_t *m, cnest_t *v, size_t n)
{
	ncand_t *c = xmalloc((n + 1) * sizeof *c);
	size_t nc = 0;
	for (size_t i = 0; i < n; i++) {
		v[i].lead = (uint32_t)i;
		v[i].next = NONE32;
		if (v[i].outer == v[i].inner || !static_class(m, v[i].inner))
			continue;
		uint64_t a = m->lock[m->cls[v[i].inner].rep].addr, off = 0;
		const char *sym = sym_data(m, a, &off);
		c[nc++] =
		    (ncand_t){(uint32_t)i, v[i].outer, a, sym ? a - off : 0};
	}
	if (nc > 1)
		qsort(c, nc, sizeof *c, by_outer_addr);
	for (size_t i = 0, j; i < nc; i = j) {
		j = stride_run(c, i, nc);
		uint32_t lead = c[i].e, tail = c[i].e;
		for (size_t k = i + 1; k < j; k++) {
			cnest_t *e = &v[c[k].e], *L = &v[lead];
			e->lead = lead;
			v[tail].next = c[k].e;
			tail = c[k].e;
			L->n += e->n;
			L->wait += e->wait;
			L->hold += e->hold;
			L->contended |= e->contended;
		}
	}
	free(c);
}

/* An entry's score: the inner lock's wait while the outer was held, plus
 * the outer's wait times the share of its hold spent holding the inner. */
static double nest_score(const model_t *m, const cnest_t *p, uint64_t hold,
                         uint64_t wait)
{
	const lockclass_t *o = &m->cls[p->outer];
	double share = fmin(1.0, ratio((double)hold, (double)o->s.hold_ns));
	return (double)wait +
	       (double)(o->s.wait_ns - o->s.idle_wait_ns) * share;
}

void find_nested_locks(model_t *m, findings_t *out)
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
		v[*x].contended =
		    m->cls[co].s.contended || m->cls[ci].s.contended;
		if (co == ci && p->mixed) { /* folded: addresses gone */
			v[*x].up += p->up;
			v[*x].down += p->down;
		} else if (co == ci) {
			uint64_t ao = m->lock[p->outer].addr,
			         ai = m->lock[p->inner].addr;
			if (ai > ao)
				v[*x].up += p->n;
			else if (ai < ao)
				v[*x].down += p->n;
		}
	}
	/* A family's members keep their own numbers for its list: saved
	 * before the lead sums them. */
	uint64_t *own = xmalloc((2 * n + 1) * sizeof *own);
	for (size_t i = 0; i < n; i++) {
		own[2 * i] = v[i].wait;
		own[2 * i + 1] = v[i].hold;
	}
	nest_families(m, v, n);
	for (size_t i = 0; i < n; i++) {
		const cnest_t *p = &v[i];
		if (p->lead != i)
			continue; /* reported by its family's lead */
		const lockclass_t *o = &m->cls[p->outer];
		if (p->n < TH_NEST_MIN || !p->contended)
			continue;
		double share =
		    fmin(1.0, ratio((double)p->hold, (double)o->s.hold_ns));
		double score = nest_score(m, p, p->hold, p->wait);
		if (score <= 0)
			continue;
		/* The family's heaviest member names the inner lock. */
		uint32_t inner = p->inner, site = p->site;
		double best = -1;
		for (uint32_t k = (uint32_t)i; p->next != NONE32 && k != NONE32;
		     k = v[k].next) {
			double sc =
			    nest_score(m, &v[k], own[2 * k + 1], own[2 * k]);
			if (sc > best) {
				best = sc;
				inner = v[k].inner;
				site = v[k].site;
			}
		}
		const lockclass_t *in = &m->cls[inner];
		finding_t *f = finding_add(out, m, FK_NESTED_LOCK, score);
		f->cls = p->outer;
		f->cls2 = inner;
		f->stack = site;
		if (p->next != NONE32) {
			f->member_unit = "score_ns";
			for (uint32_t k = (uint32_t)i; k != NONE32;
			     k = v[k].next)
				finding_add_member(f, m->cls[v[k].inner].rep,
				                   nest_score(m, &v[k],
				                              own[2 * k + 1],
				                              own[2 * k]));
			finding_put(f, "inner_locks", f->members_total);
		}
		finding_put(f, "nested_acquisitions", (double)p->n);
		finding_put(f, "inner_wait_ns_while_outer_held",
		            (double)p->wait);
		finding_put(f, "inner_hold_ns_while_outer_held",
		            (double)p->hold);
		finding_put(f, "outer_wait_ns", (double)o->s.wait_ns);
		finding_put(f, "outer_contended", (double)o->s.contended);
		finding_put(f, "inner_wait_ns", (double)in->s.wait_ns);
		finding_put(f, "inner_contended", (double)in->s.contended);
		finding_put(f, "outer_hold_share_in_inner", share);
		char a[128], b[128];
		if (p->outer == p->inner) {
			/* Instances of one class nested: one lock cannot do
			 * for both, the order of the instances matters. */
			finding_put(f, "nested_ascending_address",
			            (double)p->up);
			finding_put(f, "nested_descending_address",
			            (double)p->down);
			const char *order =
			    p->up && p->down
			        ? "in both address orders: two threads taking "
			          "two of them in opposite orders can "
			          "deadlock; "
			          "take them in one order (by address, or by "
			          "the structure's own order) and check what "
			          "the "
			          "outer instance protects while the inner is "
			          "taken"
			    : p->up || p->down
			        ? "always in one address order (a hierarchy, "
			          "parent before child, or an order by "
			          "address): waiters of the outer instance "
			          "also "
			          "wait for the inner one; check whether the "
			          "outer instance must stay held while the "
			          "inner "
			          "one is taken"
			        : "";
			snprintf(f->advice, sizeof f->advice,
			         "Two instances of %s are held at once, one "
			         "taken while the other is held, %s.",
			         lock_label(m, &m->lock[in->rep], a, sizeof a),
			         order);
			continue;
		}
		uint32_t nin =
		    f->members_total > 1 ? f->members_total : in->ninst;
		if (o->ninst > 1 || nin > 1) {
			/* Stripes or per-object locks on one side: one lock
			 * for both would serialise what they keep apart. */
			char on[64] = "", inn[64] = "";
			if (o->ninst > 1)
				snprintf(on, sizeof on,
				         "One of %u instances of ", o->ninst);
			if (nin > 1)
				snprintf(inn, sizeof inn,
				         "one of %u inner locks, the worst ",
				         nin);
			snprintf(
			    f->advice, sizeof f->advice,
			    "%s%s is held while %s%s is taken: a lock "
			    "hierarchy, and one lock for both would "
			    "serialise what the instances keep apart. Keep "
			    "the order; shorten what is done under the "
			    "inner lock while the outer one is held, or "
			    "release the outer one first where the inner "
			    "work does not need it.",
			    on, lock_label(m, &m->lock[o->rep], b, sizeof b),
			    inn, lock_label(m, &m->lock[in->rep], a, sizeof a));
			if (!*on)
				f->advice[0] =
				    (char)toupper((unsigned char)f->advice[0]);
			continue;
		}
		/* One lock for both only when the inner lock is (almost)
		 * never taken without the outer: otherwise the merge would
		 * serialise the inner lock's other users (a JVM's ranked
		 * locks: CodeCache_lock taken under Compile_lock in 84 % of
		 * its acquisitions, alone in the rest). */
		uint64_t alone = in->s.acq > p->n ? in->s.acq - p->n : 0;
		finding_put(f, "inner_acquisitions", (double)in->s.acq);
		if (10 * alone > in->s.acq) {
			snprintf(
			    f->advice, sizeof f->advice,
			    "Lock %s is taken while %s is held, so waiters "
			    "of the outer lock also wait for the inner one; "
			    "the inner lock is also taken without the outer "
			    "(%llu of its %llu acquisitions), and one lock "
			    "for both would serialise those: shorten what "
			    "is done under the inner lock while the outer "
			    "one is held, or release the outer one first "
			    "where the inner work does not need it.",
			    lock_label(m, &m->lock[in->rep], a, sizeof a),
			    lock_label(m, &m->lock[o->rep], b, sizeof b),
			    (unsigned long long)alone,
			    (unsigned long long)in->s.acq);
			continue;
		}
		snprintf(
		    f->advice, sizeof f->advice,
		    "Lock %s is taken while %s is held, so waiters of the "
		    "outer lock also wait for the inner one; the inner "
		    "lock is almost never taken without the outer (%llu "
		    "of its %llu acquisitions): use one lock %sfor both, "
		    "or release the outer lock first.",
		    lock_label(m, &m->lock[in->rep], a, sizeof a),
		    lock_label(m, &m->lock[o->rep], b, sizeof b),
		    (unsigned long long)alone, (unsigned long long)in->s.acq,
		    o->queue || in->queue ? "(and a condition variable) " : "");
	}
	free(own);
	free(v);
	u64map_free(&map);
}
