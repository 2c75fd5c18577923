/*
 * find_locks.c - the lock detectors (see detectors.h):
 *
 *   alloc_under_lock   one per lock class: W x S, where W is the time
 *                      waiters lost on the lock class and S the share of
 *                      its hold time spent in the allocator (allocations,
 *                      and frees of blocks from every allocation site);
 *                      find_contention.c then scores a contended lock's
 *                      one finding W. A lock never waited on scores 0 and
 *                      is not reported: allocation under an uncontended
 *                      lock costs no one else anything. Its advice follows
 *                      the mix of allocations and frees.
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

/* The calls of one class's holds for the blocks of one allocation site
 * (a site group, or a stack without one: a key of its own). */
typedef struct aul {
	uint32_t cls, grp; /* grp: site group, or NONE32: a stack of its own */
	uint32_t stack;    /* the first stack seen (the key without a group) */
	uint64_t n, ns, lw, allocs, slow;
	uint32_t first; /* first (class, stack) entry of this site */
	uint32_t cnext; /* the class's next site, NONE32 */
} aul_t;

/* One (class, stack) pair's totals, chained per (class, site). */
typedef struct aulstk {
	uint32_t stack, next;
	uint64_t ns;
} aulstk_t;

/* One class's allocator calls in holds: its sites, and where its holds
 * freed (LS_HOLDALLOC, by the hold's acquisition site). */
typedef struct aulcls {
	uint32_t head;                /* its first site entry, NONE32 */
	uint64_t nosite_n, nosite_ns; /* calls for blocks without a stack */
	uint64_t nosite_allocs;
	uint64_t ns, free_ns;  /* all its holds' calls, and frees */
	uint32_t free_stack;   /* the hold site with most free time */
	uint64_t free_site_ns; /* its frees' time */
	uint32_t free_sites;   /* hold sites whose holds freed */
} aulcls_t;

/* A hold-site pair, for grouping by class and code address. */
typedef struct hsite {
	uint32_t cls, pair;
	uint64_t pc;
} hsite_t;

static int by_cls_pc(const void *a, const void *b)
{
	const hsite_t *x = a, *y = b;
	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	return (x->pair > y->pair) - (x->pair < y->pair);
}

/*
 * Where each class's holds freed: its LS_HOLDALLOC pairs grouped by the
 * first user frame of the hold's acquisition site (an uncontended
 * acquisition's one-frame site and a contended one's whole stack are the
 * same code), the group with most free time named by its deepest stack.
 * Holds whose site is unknown (a condition wake whose first acquisition
 * was not recorded) count in the totals only.
 */
static void hold_frees(model_t *m, aulcls_t *C)
{
	const lstab_t *t = &m->ls[LS_HOLDALLOC];
	hsite_t *h = xmalloc((t->n + 1) * sizeof *h);
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const lspair_t *p = &t->v[i];
		uint32_t c = m->lock[p->lock].cls;
		if (c == NONE32)
			continue;
		C[c].ns += p->ns;
		C[c].free_ns += p->ns2;
		if (!p->ns2)
			continue;
		h[n++] = (hsite_t){
		    c, (uint32_t)i,
		    p->stack == NONE32 ? 0 : stack_site_pc(m, p->stack)};
	}
	if (n > 1)
		qsort(h, n, sizeof *h, by_cls_pc);
	for (size_t i = 0, j; i < n; i = j) {
		uint64_t fns = 0;
		uint32_t rep = NONE32;
		for (j = i; j < n && h[j].cls == h[i].cls &&
		            h[j].pc == h[i].pc && (h[i].pc || j == i);
		     j++) {
			const lspair_t *p = &t->v[h[j].pair];
			fns += p->ns2;
			if (p->stack != NONE32 &&
			    (rep == NONE32 ||
			     m->stk[p->stack].n > m->stk[rep].n))
				rep = p->stack;
		}
		aulcls_t *c = &C[h[i].cls];
		if (!h[i].pc || rep == NONE32)
			continue; /* no site known: nothing to name */
		c->free_sites++;
		if (fns > c->free_site_ns) {
			c->free_site_ns = fns;
			c->free_stack = rep;
		}
	}
	free(h);
}

/* The label of site entry a (with its lines, when several) into buf. */
static const char *aul_site_name(model_t *m, const sites_t *S, const aul_t *a,
                                 uint32_t stack, char *buf, size_t len)
{
	finding_t tmp = {0}; /* finding_site_name reads a finding */
	tmp.m = m;
	tmp.stack = stack;
	if (a->grp != NONE32)
		finding_set_lines(&tmp, S->g[a->grp].line, S->g[a->grp].nline);
	return finding_site_name(&tmp, buf, len);
}

/* The part of a's allocator time that k of its n calls took. */
static double aul_part_ns(const aul_t *a, uint64_t k)
{
	return a->n ? (double)a->ns * (double)k / (double)a->n : 0;
}

/* " and N other sites" when n > 1, into buf. */
static const char *others(uint32_t n, char *buf, size_t len)
{
	buf[0] = 0;
	if (n > 1)
		snprintf(buf, len, " and %u other site%s", n - 1,
		         n > 2 ? "s" : "");
	return buf;
}

/*
 * The advice, from the mix of the holds' allocator time (free share F,
 * thresholds.h AUL_FREE_SHARE_PCT): frees of blocks made elsewhere are
 * freed after unlocking, allocations are made before locking; a mix gets
 * both, each with its share. asite, fsite: the labels of the site with the
 * most allocations and the one with the most frees (NULL: none with a
 * stack), nas, nfs: how many sites allocated, freed; held: the hold site
 * that freed most (NULL: unknown).
 */
static void aul_advice(finding_t *f, bool queue, double F, const char *asite,
                       uint32_t nas, const char *fsite, uint32_t nfs,
                       const char *held)
{
	const double th = TH_AUL_FREE_SHARE_PCT / 100.0;
	const char *q = queue ? ": every producer and consumer of this queue "
	                        "waits for the allocator too"
	                      : "";
	char o1[64], o2[64], made[600] = "", where[600] = "";
	if (fsite)
		snprintf(made, sizeof made, " (made at %s%s)", fsite,
		         others(nfs, o2, sizeof o2));
	if (held)
		snprintf(where, sizeof where, ", in holds taken at %s", held);
	if (F < 1 - th || !(F > 0)) {
		snprintf(f->advice, sizeof f->advice,
		         "Move the allocation at %s%s out of the critical "
		         "section (allocate before locking, hand objects over "
		         "by value) or pre-allocate (a reserved vector, a free "
		         "list)%s.",
		         asite ? asite : "this site",
		         asite ? others(nas, o1, sizeof o1) : "", q);
		return;
	}
	if (F >= th) {
		snprintf(
		    f->advice, sizeof f->advice,
		    "Free the blocks%s after unlocking: collect them under "
		    "the lock, release it, then destroy them; frees take "
		    "%.1f%% of the allocator time in these holds%s%s.",
		    made, 100 * F, where, q);
		return;
	}
	snprintf(f->advice, sizeof f->advice,
	         "Move the allocation at %s%s out of the critical section "
	         "(allocate before locking, hand objects over by value) or "
	         "pre-allocate (a reserved vector, a free list): allocations "
	         "take %.1f%% of the allocator time in these holds. Free the "
	         "blocks%s after unlocking: collect them under the lock, "
	         "release it, then destroy them; frees take %.1f%%%s%s.",
	         asite ? asite : "this site",
	         asite ? others(nas, o1, sizeof o1) : "", 100 * (1 - F), made,
	         100 * F, where, q);
}

void find_alloc_under_lock(model_t *m, const sites_t *S, findings_t *out)
{
	lstab_t *t = &m->ls[LS_ALLOC];
	u64map_t map = {0}, smap = {0};
	aul_t *v = NULL;
	aulstk_t *st = NULL;
	size_t n = 0, cap = 0, nst = 0, capst = 0;
	aulcls_t *C = xcalloc(m->ncls + 1, sizeof *C);
	for (size_t i = 0; i < m->ncls; i++) {
		C[i].head = NONE32;
		C[i].free_stack = NONE32;
	}
	for (size_t i = 0; i < t->n; i++) {
		const lspair_t *p = &t->v[i];
		uint32_t c = m->lock[p->lock].cls;
		if (c == NONE32)
			continue;
		if (p->stack == NONE32) {
			/* A free of a block whose allocation the trace does
			 * not hold (unsampled, made before recording): no
			 * site, counted apart. */
			C[c].nosite_n += p->n;
			C[c].nosite_ns += p->ns;
			C[c].nosite_allocs += p->n2;
			continue;
		}
		uint32_t g = S->of[p->stack];
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
			v[n].cnext = C[c].head;
			C[c].head = (uint32_t)n;
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
	hold_frees(m, C);
	for (size_t ci = 0; ci < m->ncls; ci++) {
		const aulcls_t *k = &C[ci];
		const lockclass_t *c = &m->cls[ci];
		/* Waits that ended in a condition wait were waiting for
		 * work: not lost to the holders. */
		double W = (double)(c->s.wait_ns - c->s.idle_wait_ns),
		       H = (double)c->s.hold_ns;
		uint64_t sn = 0, sns = 0, slw = 0, sallocs = 0, sslow = 0;
		const aul_t *top = NULL, *amax = NULL, *fmax = NULL;
		uint32_t nas = 0, nfs = 0;
		for (uint32_t e = k->head; e != NONE32; e = v[e].cnext) {
			const aul_t *a = &v[e];
			sn += a->n;
			sns += a->ns;
			slw += a->lw;
			sallocs += a->allocs;
			sslow += a->slow;
			if (!top || a->ns > top->ns)
				top = a;
			/* The advice names the site whose allocations, and the
			 * one whose frees, took the most allocator time (a
			 * site's time split by its calls): the heaviest, as
			 * the cascade's step 3 names it. */
			if (a->allocs) {
				nas++;
				if (!amax ||
				    aul_part_ns(a, a->allocs) >
				        aul_part_ns(amax, amax->allocs))
					amax = a;
			}
			if (a->n > a->allocs) {
				nfs++;
				if (!fmax ||
				    aul_part_ns(a, a->n - a->allocs) >
				        aul_part_ns(fmax,
				                    fmax->n - fmax->allocs))
					fmax = a;
			}
		}
		if (c->kind == FMT_KIND_ALLOC_INTERNAL || W <= 0 || H <= 0 ||
		    sns + k->nosite_ns == 0)
			continue;
		double share = fmin(1.0, (double)(sns + k->nosite_ns) / H);
		double lock_share = fmin(1.0, (double)c->s.alloc_ns / H);
		if (share * 1e6 < TH_AUL_MIN_SHARE_PPM)
			continue;
		/* The share of the holds' allocator time spent in frees
		 * (every hold, as the lock's totals). */
		double F =
		    k->ns ? fmin(1.0, (double)k->free_ns / (double)k->ns) : 0;
		double score = W * share;
		finding_t *f = finding_add(out, m, FK_ALLOC_UNDER_LOCK, score);
		f->cls = (uint32_t)ci;
		f->stack_unit = EV_ALLOCATOR_NS;
		/* Its sites, each by its heaviest stack; the stacks that
		 * reach the heaviest site. */
		for (uint32_t e = k->head; e != NONE32; e = v[e].cnext) {
			const aul_t *a = &v[e];
			fsite_t s = {NONE32,
			             0,
			             (double)a->ns,
			             (double)a->n,
			             (double)a->allocs,
			             (double)(a->n - a->allocs),
			             (double)a->slow,
			             (double)a->lw};
			uint64_t best = 0;
			for (uint32_t q = a->first; q != NONE32;
			     q = st[q].next) {
				s.stacks++;
				if (s.stack == NONE32 || st[q].ns > best) {
					best = st[q].ns;
					s.stack = st[q].stack;
				}
				if (a == top)
					finding_add_stack(f, st[q].stack,
					                  (double)st[q].ns);
			}
			finding_add_site(f, &s);
		}
		if (f->nstacks)
			f->stack = f->stacks[0];
		if (top && top->grp != NONE32)
			finding_set_lines(f, S->g[top->grp].line,
			                  S->g[top->grp].nline);
		f->stack2 = k->free_ns ? k->free_stack : NONE32;
		finding_put(f, EV_LOCK_WAIT_NS, W);
		finding_put(f, EV_IDLE_WAIT_NS, (double)c->s.idle_wait_ns);
		finding_put(f, EV_CONTENDED, (double)c->s.contended);
		finding_put(f, EV_ACQUISITIONS, (double)c->s.acq);
		finding_put(f, EV_HOLD_NS, H);
		finding_put(f, EV_HOLDS, (double)c->s.holds);
		if (c->s.holds_timed < c->s.holds)
			finding_put(f, EV_TIMED_HOLDS,
			            (double)c->s.holds_timed);
		if (c->s.holds_apart) {
			finding_put(f, EV_HOLDS_SET_APART,
			            (double)c->s.holds_apart);
			finding_put(f, EV_HOLDS_SET_APART_NS,
			            (double)c->s.holds_apart_ns);
		}
		finding_put(f, EV_HOLDS_WITH_ALLOC,
		            (double)c->s.holds_with_alloc);
		finding_put(f, EV_ALLOCATOR_NS_IN_HOLDS, (double)c->s.alloc_ns);
		finding_put(f, EV_ALLOCATOR_SHARE_OF_HOLD, lock_share);
		finding_put(f, EV_ALLOCATOR_LOCK_WAIT_NS_IN_HOLDS,
		            (double)c->s.alloc_lw_ns);
		finding_put(f, EV_CALLS, (double)sn);
		finding_put(f, EV_ALLOCS, (double)sallocs);
		finding_put(f, EV_FREES, (double)(sn - sallocs));
		finding_put(f, EV_SITE_ALLOCATOR_NS, (double)sns);
		finding_put(f, EV_SITE_SHARE_OF_HOLD,
		            fmin(1.0, (double)sns / H));
		finding_put(f, EV_CALLS_WITHOUT_STACK, (double)k->nosite_n);
		finding_put(f, EV_ALLOCATOR_NS_WITHOUT_STACK,
		            (double)k->nosite_ns);
		finding_put(f, EV_SLOW_CALLS, (double)sslow);
		finding_put(f, EV_ALLOCATOR_LOCK_WAIT_NS, (double)slw);
		finding_put(f, EV_QUEUE_LIKE, c->queue);
		finding_put(f, EV_INSTANCES, c->ninst);
		finding_put(f, EV_GIVES_BACK_NS, W * lock_share);
		finding_put(f, EV_STACKS, f->stacks_total);
		finding_put(f, EV_SITES, f->sites_total);
		finding_put(f, EV_FREE_SHARE, F);
		finding_put(f, EV_FREE_NS_IN_HOLDS, (double)k->free_ns);
		finding_put(f, EV_FREE_HOLD_SITES, k->free_sites);
		finding_put(f, EV_FREE_NS_AT_HOLD_SITE,
		            k->free_ns ? (double)k->free_site_ns : 0);
		char an[300], fn[300], hn[300];
		frame_t fr;
		const char *held = NULL;
		if (f->stack2 != NONE32 && sym_stack_site(m, f->stack2, &fr) &&
		    (fr.function || fr.module))
			held = frame_label(&fr, hn, sizeof hn);
		aul_advice(
		    f, c->queue, F,
		    amax ? aul_site_name(m, S, amax,
		                         amax == top ? f->stack : amax->stack,
		                         an, sizeof an)
		         : NULL,
		    nas,
		    fmax ? aul_site_name(m, S, fmax,
		                         fmax == top ? f->stack : fmax->stack,
		                         fn, sizeof fn)
		         : NULL,
		    nfs, held);
	}
	free(C);
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
	bool done; /* reported with its reverse order (an inversion) */
	uint64_t n, wait, hold, inner_contended, try_fail;
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

/*
 * The finding of two classes taken in both orders (p: outer then inner, q:
 * the reverse): a lock-order inversion. Whether an order is made safe by
 * trylock shows only in that order's failed trylocks (a successful trylock
 * is recorded as an acquisition): an order with failed trylocks and no wait
 * on its inner lock is said to use trylock; an order whose inner lock was
 * waited on blocked, so both orders blocking can deadlock; otherwise the
 * advice says it cannot tell.
 */
static void inversion(model_t *m, finding_t *f, const cnest_t *p,
                      const cnest_t *q)
{
	const lockclass_t *o = &m->cls[p->outer], *in = &m->cls[p->inner];
	f->cls = p->outer;
	f->cls2 = p->inner;
	f->stack = p->site;
	f->stack2 = q->site;
	finding_put(f, EV_INVERSION, 1);
	finding_put(f, EV_NESTED_ACQUISITIONS, (double)p->n);
	finding_put(f, EV_INNER_WAIT_NS_WHILE_OUTER_HELD, (double)p->wait);
	finding_put(f, EV_INNER_HOLD_NS_WHILE_OUTER_HELD, (double)p->hold);
	finding_put(f, EV_INNER_CONTENDED_WHILE_OUTER_HELD,
	            (double)p->inner_contended);
	finding_put(f, EV_INNER_TRY_FAILURES_WHILE_OUTER_HELD,
	            (double)p->try_fail);
	finding_put(f, EV_REVERSE_NESTED_ACQUISITIONS, (double)q->n);
	finding_put(f, EV_REVERSE_INNER_WAIT_NS_WHILE_OUTER_HELD,
	            (double)q->wait);
	finding_put(f, EV_REVERSE_INNER_HOLD_NS_WHILE_OUTER_HELD,
	            (double)q->hold);
	finding_put(f, EV_REVERSE_INNER_CONTENDED_WHILE_OUTER_HELD,
	            (double)q->inner_contended);
	finding_put(f, EV_REVERSE_INNER_TRY_FAILURES_WHILE_OUTER_HELD,
	            (double)q->try_fail);
	finding_put(f, EV_OUTER_WAIT_NS, (double)o->s.wait_ns);
	finding_put(f, EV_INNER_WAIT_NS, (double)in->s.wait_ns);
	char a[128], b[128], how[512];
	lock_label(m, &m->lock[o->rep], a, sizeof a);
	lock_label(m, &m->lock[in->rep], b, sizeof b);
	bool ptry = p->try_fail && !p->inner_contended,
	     qtry = q->try_fail && !q->inner_contended;
	if (p->inner_contended && q->inner_contended)
		snprintf(how, sizeof how,
		         "both orders blocked on their inner lock (%llu and "
		         "%llu waits), so two threads, one in each order, "
		         "can deadlock",
		         (unsigned long long)p->inner_contended,
		         (unsigned long long)q->inner_contended);
	else if (ptry || qtry)
		snprintf(
		    how, sizeof how,
		    "the order taking %.100s inside %.100s is a trylock (%llu "
		    "failed tries in it, no wait), which is safe only if "
		    "every acquisition in that order is one: mallock "
		    "records a successful trylock as an acquisition",
		    qtry ? a : b, qtry ? b : a,
		    (unsigned long long)(qtry ? q->try_fail : p->try_fail));
	else
		snprintf(how, sizeof how,
		         "mallock cannot tell whether either order is taken "
		         "only with trylock (a successful trylock is recorded "
		         "as an acquisition, and no try failed)");
	snprintf(f->advice, sizeof f->advice,
	         "Lock order inversion: %.100s is taken while %.100s is "
	         "held, and %.100s while %.100s is held; %.400s. Take the "
	         "two in one order "
	         "everywhere, or take the reverse order only with trylock "
	         "and back off when it fails.",
	         b, a, a, b, how);
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
		if (v[*x].site == NONE32 || (!v[*x].n && p->n))
			v[*x].site =
			    p->site; /* an acquisition's, not a try's */
		v[*x].n += p->n;
		v[*x].wait += p->inner_wait_ns;
		v[*x].hold += p->inner_hold_ns;
		v[*x].inner_contended += p->inner_contended;
		v[*x].try_fail += p->try_fail;
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
		if (p->n < TH_NEST_MIN || !p->contended || p->done)
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
		/* The two classes also taken in the other order, each alone
		 * (no family of stripes on either side): one finding. */
		uint32_t *rx =
		    p->outer != p->inner && p->next == NONE32
		        ? u64map_find(&map, (uint64_t)p->inner << 32 | p->outer)
		        : NULL;
		if (rx &&
		    (v[*rx].lead != *rx || v[*rx].next != NONE32 || !v[*rx].n))
			rx = NULL;
		if (rx) {
			cnest_t *q = &v[*rx];
			q->done = true;
			finding_t *f = finding_add(
			    out, m, FK_NESTED_LOCK,
			    score +
			        fmax(0, nest_score(m, q, q->hold, q->wait)));
			inversion(m, f, p, q);
			continue;
		}
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
			finding_put(f, EV_INNER_LOCKS, f->members_total);
		}
		finding_put(f, EV_NESTED_ACQUISITIONS, (double)p->n);
		finding_put(f, EV_INNER_WAIT_NS_WHILE_OUTER_HELD,
		            (double)p->wait);
		finding_put(f, EV_INNER_HOLD_NS_WHILE_OUTER_HELD,
		            (double)p->hold);
		finding_put(f, EV_OUTER_WAIT_NS, (double)o->s.wait_ns);
		finding_put(f, EV_OUTER_CONTENDED, (double)o->s.contended);
		finding_put(f, EV_INNER_WAIT_NS, (double)in->s.wait_ns);
		finding_put(f, EV_INNER_CONTENDED, (double)in->s.contended);
		finding_put(f, EV_OUTER_HOLD_SHARE_IN_INNER, share);
		char a[128], b[128];
		if (p->outer == p->inner) {
			/* Instances of one class nested: one lock cannot do
			 * for both, the order of the instances matters. */
			finding_put(f, EV_NESTED_ASCENDING_ADDRESS,
			            (double)p->up);
			finding_put(f, EV_NESTED_DESCENDING_ADDRESS,
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
		finding_put(f, EV_INNER_ACQUISITIONS, (double)in->s.acq);
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
