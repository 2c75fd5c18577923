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

#include "thresholds.h"
#include "trace_format.h"

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
} aul_t;

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
	for (size_t i = 0; i < n; i++) {
		const aul_t *a = &v[i];
		const lockclass_t *c = &m->cls[a->cls];
		/* Waits that ended in a condition wait were waiting for
		 * work: not lost to the holders. */
		double W = (double)(c->s.wait_ns - c->s.idle_wait_ns),
		       H = (double)c->s.hold_ns;
		if (c->kind == FMT_KIND_ALLOC_INTERNAL || W <= 0 || H <= 0 ||
		    a->ns == 0)
			continue;
		double share = fmin(1.0, (double)a->ns / H);
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
		finding_put(f, "site_share_of_hold", share);
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
	uint64_t n, wait, hold;
	uint64_t up, down; /* nestings with the inner lock at a higher, lower
	                      address than the outer (one class) */
} cnest_t;

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
		if (co == ci) {
			uint64_t ao = m->lock[p->outer].addr,
			         ai = m->lock[p->inner].addr;
			if (ai > ao)
				v[*x].up += p->n;
			else if (ai < ao)
				v[*x].down += p->n;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const cnest_t *p = &v[i];
		const lockclass_t *o = &m->cls[p->outer],
		                  *in = &m->cls[p->inner];
		if (p->n < TH_NEST_MIN || (!o->s.contended && !in->s.contended))
			continue;
		double share =
		    fmin(1.0, ratio((double)p->hold, (double)o->s.hold_ns));
		double score =
		    (double)p->wait +
		    (double)(o->s.wait_ns - o->s.idle_wait_ns) * share;
		if (score <= 0)
			continue;
		finding_t *f = finding_add(out, m, FK_NESTED_LOCK, score);
		f->cls = p->outer;
		f->cls2 = p->inner;
		f->stack = p->site;
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
