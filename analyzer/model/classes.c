/*
 * classes.c - lock instances -> lock classes, and each thread's activity
 * (see classes.h). The class's representative instance (the one a finding
 * names) is the one with the most wait, then the most acquisitions.
 */
#include "classes.h"

#include "symbols.h"
#include "trace_format.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
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
		/* The runtime calling in (libc starting main, pthread_once
		 * running an init routine) owns nothing: a lock made in main
		 * or in a once-routine is named by its own site. */
		if (fr[i].fold != SYM_USER)
			return false;
		*out = fr[i];
		return true;
	}
	return false;
}

/* A raw stack's frames from its first user frame (the one stack_site_pc
 * returns) on: their number, *fr pointing into m->frames. */
static uint32_t user_frames(const model_t *m, uint32_t si, const uint64_t **fr)
{
	const stk_t *st = &m->stk[si];
	uint32_t i = 0;
	for (; i < st->n; i++) {
		const frame_t *f;
		int k = sym_addr((model_t *)m, m->frames[st->off + i], &f);
		if (f[k - 1].fold == SYM_USER)
			break;
	}
	if (i == st->n)
		i = 0;
	*fr = &m->frames[st->off + i];
	return st->n - i;
}

/*
 * Where the code that made lock l's object called the lock's init: for a
 * lock inside a heap block, the first frame of its init stack (past the
 * site) that the block's allocation stack shares is the creator's caller
 * (*caller), and the init frame just below it the creator's call of the
 * constructor (*made). HotSpot makes every Mutex with `new Mutex(...)`:
 * os::malloc, then the constructor, both called from the line that defines
 * that lock (Heap_lock, Threads_lock...), so the init stacks of different
 * locks differ first there, below a shared factory (the constructor), and
 * a function that mallocs and initialises a lock (make_lock) shares its
 * own frame with the block: its caller tells its locks apart. Locks made
 * in one loop share both. False when l is in no block or the two stacks
 * share no frame (cut by the recorded depth).
 */
static bool lock_maker(const model_t *m, const lock_t *l, uint64_t *made,
                       uint64_t *caller)
{
	if (!l->in_block || l->init_stack == NONE32 || l->blk_stack == NONE32 ||
	    !m->stk[l->init_stack].defined || !m->stk[l->blk_stack].defined)
		return false;
	const uint64_t *in, *bl;
	uint32_t ni = user_frames(m, l->init_stack, &in);
	uint32_t nb = user_frames(m, l->blk_stack, &bl);
	for (uint32_t i = 1; i < ni; i++)
		for (uint32_t j = 0; j < nb; j++)
			if (in[i] == bl[j]) {
				*made = in[i - 1];
				*caller = in[i];
				return true;
			}
	return false;
}

/* A site with at least 7/8 of the most holds ties with it. */
#define MAIN_SITE_NEAR_DEN 8

uint32_t lock_main_site(model_t *m, const lock_t *l)
{
	if (!l->hist || l->init_stack != NONE32)
		return l->first_site;
	lockhist_t *g = &m->lhist[l->hist - 1];
	if (g->main_site1)
		return g->main_site1 - 1;
	const uint32_t *idx;
	size_t n = model_lock_pairs(m, LS_ACQSITE, g->rep, &idx);
	/* Holds summed by site: a site's one-frame stack (uncontended) and
	 * its whole stacks (waited) are one site. */
	u64map_t by_pc = {0};
	uint64_t *sum = xcalloc(n + 1, sizeof *sum);
	uint64_t top = 0;
	for (size_t k = 0; k < n; k++) {
		const lspair_t *p = &m->ls[LS_ACQSITE].v[idx[k]];
		uint64_t pc = stack_site_pc(m, p->stack);
		if (!pc)
			continue;
		int added;
		uint32_t *v = u64map_put(&by_pc, pc, &added);
		if (added)
			*v = (uint32_t)k;
		sum[*v] += p->n;
		if (sum[*v] > top)
			top = sum[*v];
	}
	/* Sites that share the holds about evenly (a set and a get taking
	 * one lock in turn) swap ranks from one window to the next: of those
	 * that tie with the most, the lowest address names the lock. */
	uint32_t best = NONE32;
	uint64_t best_pc = 0;
	for (size_t k = 0; k < n; k++) {
		if (!sum[k] || sum[k] * MAIN_SITE_NEAR_DEN <
		                   top * (MAIN_SITE_NEAR_DEN - 1))
			continue;
		uint64_t pc =
		    stack_site_pc(m, m->ls[LS_ACQSITE].v[idx[k]].stack);
		if (best == NONE32 || pc < best_pc) {
			best = (uint32_t)k;
			best_pc = pc;
		}
	}
	uint32_t site = best != NONE32 ? m->ls[LS_ACQSITE].v[idx[best]].stack
	                               : l->first_site;
	free(sum);
	u64map_free(&by_pc);
	g = &m->lhist[l->hist - 1];
	g->main_site1 = site + 1;
	return site;
}

static bool lock_used(const lock_t *l)
{
	return l->s.acq || l->s.internal_waits || l->s.futex_waits ||
	       l->s.futex_wakes || l->s.try_fail || l->s.cond_wakes ||
	       l->s.holds || l->defined || l->name;
}

/* The classes one factory made for different callers (one base key, told
 * apart by lock_maker) show as their owner the maker frame that tells
 * them apart: the creator's call of the constructor, or the creator's
 * caller when another class shares that call (make_lock's callers). */
static void maker_owners(model_t *m)
{
	u64map_t by_base = {0}, by_made = {0};
	uint32_t *nbase = xcalloc(m->ncls + 1, sizeof *nbase);
	uint32_t *nmade = xcalloc(m->ncls + 1, sizeof *nmade);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < m->ncls; i++) {
			lockclass_t *c = &m->cls[i];
			if (!c->has_maker)
				continue;
			uint64_t mk = (c->base_key ^
			               (c->made_addr * 0x9e3779b97f4a7c15ull)) &
			              ~(1ull << 63);
			int added;
			uint32_t *b = u64map_put(&by_base, c->base_key, &added);
			if (added)
				*b = (uint32_t)i;
			uint32_t *d = u64map_put(&by_made, mk, &added);
			if (added)
				*d = (uint32_t)i;
			if (pass == 0) {
				nbase[*b]++;
				nmade[*d]++;
				continue;
			}
			if (nbase[*b] < 2)
				continue; /* the factory made one class */
			c->has_owner = true;
			c->by_maker = true;
			c->owner_addr =
			    nmade[*d] < 2 ? c->made_addr : c->caller_addr;
			c->owner_inl = 0;
		}
	free(nbase);
	free(nmade);
	u64map_free(&by_base);
	u64map_free(&by_made);
	/* Their instances' labels name the maker, not only the block (one
	 * os::malloc site holds them all). */
	char buf[700], own[512];
	for (size_t i = 0; i < m->nlock; i++) {
		lock_t *l = &m->lock[i];
		if (l->name || l->cls == NONE32 || !m->cls[l->cls].by_maker ||
		    !class_owner_label(m, l->cls, own, sizeof own))
			continue;
		snprintf(buf, sizeof buf, "%s at +0x%x of an object made in %s",
		         lock_kind_word(l->kind), l->blk_off, own);
		l->label = arena_strdup(&m->arena, buf);
	}
}

/*
 * A class of locks at several offsets of blocks from one allocation site
 * (an array of stripes, 1024 item locks in one calloc'd table) is named by
 * the range of its offsets, not by the offset of whichever instance waited
 * most: its representative's label becomes "mutex at +0x0..+0x9fd8 in a
 * block from main (...)", the same in every window that sees the array.
 */
static void array_labels(model_t *m)
{
	typedef struct {
		uint32_t lo, hi, n;
		uint64_t pc;
		bool other; /* an instance outside a block, or another site */
	} span_t;
	span_t *sp = xcalloc(m->ncls + 1, sizeof *sp);
	for (size_t i = 0; i < m->nlock; i++) {
		const lock_t *l = &m->lock[i];
		if (l->cls == NONE32)
			continue;
		span_t *x = &sp[l->cls];
		uint64_t pc = l->in_block ? stack_site_pc(m, l->blk_stack) : 0;
		if (!pc || (x->n && pc != x->pc)) {
			x->other = true;
			continue;
		}
		if (!x->n || l->blk_off < x->lo)
			x->lo = l->blk_off;
		if (!x->n || l->blk_off > x->hi)
			x->hi = l->blk_off;
		x->pc = pc;
		x->n++;
	}
	char buf[700], site[512];
	frame_t fr;
	for (size_t c = 0; c < m->ncls; c++) {
		const span_t *x = &sp[c];
		lock_t *r = &m->lock[m->cls[c].rep];
		if (x->other || x->n < 2 || x->lo == x->hi || r->name ||
		    m->cls[c].by_maker || !r->label ||
		    !strstr(r->label, " in a block from "))
			continue;
		if (sym_stack_site(m, r->blk_stack, &fr))
			frame_label(&fr, site, sizeof site);
		else
			snprintf(site, sizeof site, "an unknown site");
		snprintf(buf, sizeof buf,
		         "%s at +0x%x..+0x%x in a block from %s",
		         lock_kind_word(r->kind), x->lo, x->hi, site);
		r->label = arena_strdup(&m->arena, buf);
	}
	free(sp);
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
			} else {
				uint32_t ms = lock_main_site(m, l);
				if (ms != NONE32 && (pc = stack_site_pc(m, ms)))
					site = ms;
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
		/* Locks made by one factory for different callers (a
		 * constructor, a make function) are told apart by where their
		 * object was made (lock_maker). */
		uint64_t made = 0, caller = 0;
		bool has_maker =
		    by_init && pc && lock_maker(m, l, &made, &caller);
		uint64_t base = pc;
		if (has_maker)
			pc = (pc ^ (made * 0xc2b2ae3d27d4eb4full) ^
			      (caller * 0x165667b19e3779f9ull)) &
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
			c->base_key = base;
			c->has_maker = has_maker;
			c->made_addr = made;
			c->caller_addr = caller;
			c->rep = (uint32_t)i;
			c->kind = l->kind;
			*v = (uint32_t)m->ncls++;
		}
		lockclass_t *c = &m->cls[*v];
		l->cls = *v;
		c->ninst++;
		lockstat_add(&c->s, &l->s);
		if (l->fold) { /* the instances folded into it (lockfold.c) */
			c->ninst += m->fold[l->fold - 1].n;
			lockstat_add(&c->s, &m->fold[l->fold - 1].s);
		}
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
	maker_owners(m);
	array_labels(m);
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

const char *class_owner_label(model_t *m, uint32_t c, char *buf, size_t len)
{
	frame_t own;
	if (!class_owner(m, c, &own))
		return NULL;
	frame_label(&own, buf, len);
	if (m->cls[c].by_maker && !(own.file && own.line) && own.module) {
		/* One function makes several of these classes: its call
		 * sites' offsets tell them apart without line numbers. */
		const char *fn = frame_name(&own);
		if (fn)
			snprintf(buf, len, "%s (%s+0x%" PRIx64 ")", fn,
			         path_base(own.module), own.offset);
	}
	return buf;
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
