/*
 * classes.c - lock instances -> lock classes, and each thread's activity
 * (see classes.h). The class's representative instance (the one a finding
 * names) is the one with the most wait, then the most acquisitions.
 */
#include "classes.h"

#include "symbols.h"
#include "trace_format.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Whether fn looks like a lock init wrapper: a lock word and a making
 * word in its last name component (apr_thread_mutex_create,
 * mysql_mutex_init, g_mutex_init, PR_NewLock), or a lock class's
 * constructor (Mutex::Mutex). */
static bool init_wrapper(const char *fn)
{
	static const char *const lockw[] = {"mutex",   "lock",    "spin",
	                                    "critsec", "monitor", NULL};
	static const char *const makew[] = {"init",  "create", "new", "make",
	                                    "alloc", "setup",  NULL};
	if (!fn)
		return false;
	char b[256], *p;
	size_t n = strcspn(fn, "(");
	if (n >= sizeof b)
		n = sizeof b - 1;
	memcpy(b, fn, n);
	b[n] = 0;
	for (p = b; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	const char *last = b, *prev = NULL;
	for (char *q = strstr(b, "::"); q; q = strstr(q + 2, "::")) {
		prev = last;
		last = q + 2;
	}
	bool lockword = false;
	for (int i = 0; lockw[i]; i++)
		lockword |= strstr(last, lockw[i]) != NULL;
	if (!lockword)
		return false;
	if (prev && strncmp(prev, last, strlen(last)) == 0 &&
	    prev[strlen(last)] == ':')
		return true; /* Mutex::Mutex */
	for (int i = 0; makew[i]; i++)
		if (strstr(last, makew[i]))
			return true;
	return false;
}

/* (classes.h) All 82k mutexes of a web server were one
 * class, made by apr_thread_mutex_create. */
#define OWNER_DEPTH 12
bool stack_owner(model_t *m, uint32_t si, frame_t *out)
{
	frame_t fr[OWNER_DEPTH];
	int n = stack_view(m, si, fr, OWNER_DEPTH);
	if (n < 2 || !fr[0].module)
		return false;
	bool wrap = init_wrapper(fr[0].function);
	for (int i = 1; i < n; i++) {
		bool same_mod =
		    fr[i].module && strcmp(fr[i].module, fr[0].module) == 0;
		if (fr[i].inlined || fr[i].address == fr[0].address)
			continue; /* the wrapper inlined into itself */
		if (same_mod && (!wrap || init_wrapper(fr[i].function)))
			continue; /* still inside the wrapping library */
		*out = fr[i];
		return true;
	}
	return false;
}

static bool lock_used(const lock_t *l)
{
	return l->s.acq || l->s.internal_waits || l->s.futex_waits ||
	       l->s.futex_wakes || l->s.try_fail || l->s.cond_wakes ||
	       l->s.holds || l->defined || l->name;
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
		if (l->kind == FMT_KIND_FUTEX) {
			/* A futex word: every word waits at the same place of
			 * its lock type (srw_mutex_impl::wait), so the waiting
			 * site is no class. Words inside heap blocks are one
			 * class per (allocation site, offset); others each
			 * their own. */
			uint64_t bpc =
			    l->in_block ? stack_site_pc(m, l->blk_stack) : 0;
			if (bpc)
				pc = ((bpc * 0x9e3779b97f4a7c15ull) ^
				      l->blk_off) &
				     ~(1ull << 63);
		} else if (l->kind != FMT_KIND_ALLOC_INTERNAL) {
			if (l->init_stack != NONE32 &&
			    (pc = stack_site_pc(m, l->init_stack))) {
				site = l->init_stack;
				by_init = true;
			} else if (l->first_site != NONE32 &&
			           (pc = stack_site_pc(m, l->first_site))) {
				site = l->first_site;
			}
		}
		/* Through an init wrapper, the owner's frame is part of
		 * the key. */
		frame_t own;
		bool has_own =
		    pc && site != NONE32 && stack_owner(m, site, &own);
		if (has_own)
			pc = (pc ^ (own.address * 0x9e3779b97f4a7c15ull)) &
			     ~(1ull << 63);
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
			c->has_owner = has_own;
			if (has_own) {
				const frame_t *fr;
				int nf = sym_addr(m, own.address, &fr);
				c->owner_addr = own.address;
				for (int k = 0; k < nf; k++)
					if (fr[k].function == own.function)
						c->owner_inl = (uint8_t)k;
			}
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

bool class_owner(model_t *m, uint32_t c, frame_t *out)
{
	if (c == NONE32 || !m->cls[c].has_owner)
		return false;
	const frame_t *fr;
	int nf = sym_addr(m, m->cls[c].owner_addr, &fr);
	*out = fr[m->cls[c].owner_inl < nf ? m->cls[c].owner_inl : nf - 1];
	return true;
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
		else if (t->futex_waits)
			t->role = "worker (waits on futex words)";
		else if (t->allocs)
			t->role = "worker (allocates)";
		else
			t->role = "idle";
	}
}
