/*
 * classes.c - lock instances -> lock classes, and each thread's activity
 * (see classes.h). The class's representative instance (the one a finding
 * names) is the one with the most wait, then the most acquisitions.
 */
#include "classes.h"

#include "symbols.h"
#include "trace_format.h"

#include <stdlib.h>
#include <string.h>

static bool lock_used(const lock_t *l)
{
	return l->s.acq || l->s.internal_waits || l->s.try_fail ||
	       l->s.cond_wakes || l->s.holds || l->defined || l->name;
}

void classes_build(model_t *m)
{
	u64map_t by_key = {0};
	size_t cap = 0;
	for (size_t i = 0; i < m->nlhist; i++)
		m->lhist[i].cls = NONE32;
	free(m->cls);
	m->cls = NULL;
	m->ncls = 0;
	for (size_t i = 0; i < m->nlock; i++) {
		lock_t *l = &m->lock[i];
		l->cls = NONE32;
		if (l->is_cond || l->kind == FMT_KIND_COND || !lock_used(l))
			continue;
		uint64_t pc = 0;
		uint32_t site = NONE32;
		bool by_init = false;
		if (l->kind != FMT_KIND_ALLOC_INTERNAL) {
			if (l->init_stack != NONE32 &&
			    (pc = stack_site_pc(m, l->init_stack))) {
				site = l->init_stack;
				by_init = true;
			} else if (l->first_site != NONE32 &&
			           (pc = stack_site_pc(m, l->first_site))) {
				site = l->first_site;
			}
		}
		/* Instances without a site get a key of their own: the top
		 * bit marks it so it cannot equal a code address. */
		uint64_t key = pc ? pc : (1ull << 63) | i;
		int added;
		uint32_t *v = u64map_put(&by_key, key, &added);
		if (added) {
			VEC_RESERVE(m->cls, cap, m->ncls);
			lockclass_t *c = &m->cls[m->ncls];
			memset(c, 0, sizeof *c);
			c->key = key;
			c->site = site;
			c->by_init = by_init;
			c->rep = (uint32_t)i;
			c->kind = l->kind;
			*v = (uint32_t)m->ncls++;
		}
		lockclass_t *c = &m->cls[*v];
		l->cls = *v;
		c->ninst++;
		lockstat_add(&c->s, &l->s);
		/* A site's histograms go to the class of its first instance
		 * (all of its instances normally share one class). */
		lockhist_t *h = l->hist ? &m->lhist[l->hist - 1] : NULL;
		if (h && h->cls == NONE32) {
			h->cls = *v;
			for (int b = 0; b < HIST_BUCKETS; b++) {
				c->wait_hist.n[b] += h->wait.n[b];
				c->hold_hist.n[b] += h->hold.n[b];
			}
		}
		const lock_t *r = &m->lock[c->rep];
		if (l->s.wait_ns > r->s.wait_ns ||
		    (l->s.wait_ns == r->s.wait_ns && l->s.acq > r->s.acq))
			c->rep = (uint32_t)i;
		if (l->queue_cond || l->queue_named)
			c->queue = true;
		if (l->name && !c->name)
			c->name = l->name;
		if (c->kind == LOCK_KIND_UNKNOWN)
			c->kind = l->kind;
	}
	u64map_free(&by_key);
}

void thread_activity(model_t *m)
{
	for (size_t i = 0; i < m->nthr; i++) {
		thread_t *t = &m->thr[i];
		if (m->pid && t->tid == m->pid)
			t->role = "main";
		else if (t->cond_waits && t->cond_waits >= t->cond_signals)
			t->role = "consumer (waits on a condition)";
		else if (t->cond_signals)
			t->role = "producer (signals a condition)";
		else if (t->acq)
			t->role = "worker (takes locks)";
		else if (t->allocs)
			t->role = "worker (allocates)";
		else
			t->role = "idle";
	}
}
