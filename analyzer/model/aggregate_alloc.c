/*
 * aggregate_alloc.c - the allocator events of the per-event loop
 * (aggregate.c) into the model: ALLOC, FREE and REALLOC records, the live
 * block map (m->live, slots in m->blk, freed slots chained from
 * m->blk_free), the per-site statistics (site_t) and the charging of each
 * allocator call to the locks its thread holds.
 *
 * Invariants:
 * - No allocation per event: m->blk and the live map grow only when a new
 *   live block appears; a freed block's slot is reused.
 * - An allocator call made while locks are held is charged to each of them
 *   through the thread's running sums (t->snap[0], charge_hold in
 *   aggregate.c), O(1) however many locks are held; its (lock, allocation
 *   stack) pair is kept for the ALLOC_PAIR_LOCKS innermost holds only.
 * - A free of a block the live map does not know (allocated before
 *   recording, or lost in a truncation) is an unknown free, never a
 *   cross-thread one; in a sampled trace it is expected and not counted.
 * - Sampled traces (PROCESS sample_bytes) weigh each sampled block by
 *   sample_count; the fraction is carried over in m->wcarry.
 */
#include "aggregate_int.h"

#include "thresholds.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static site_t *site_of(model_t *m, uint32_t stack)
{
	if (stack == NONE32)
		return &m->nostack_site;
	stk_t *s = &m->stk[stack];
	if (!s->site)
		s->site = xcalloc(1, sizeof *s->site);
	return s->site;
}

/* Counts one call by thread t (index) in a site's small thread table. */
static void site_thread(uint32_t *thr, uint64_t *cnt, uint32_t t)
{
	for (int i = 0; i < SITE_THREADS; i++) {
		if (thr[i] == t + 1) {
			cnt[i]++;
			return;
		}
		if (!thr[i]) {
			thr[i] = t + 1;
			cnt[i] = 1;
			return;
		}
	}
	/* table full: counted in the last slot's "others" by convention */
}

/* Space-saving count of the site's most frequent sizes. */
static void site_size(site_t *s, uint64_t size)
{
	int min = 0;
	for (int i = 0; i < SITE_SIZES; i++) {
		if (s->size_n[i] && s->size[i] == size) {
			s->size_n[i]++;
			return;
		}
		if (s->size_n[i] < s->size_n[min])
			min = i;
	}
	s->size[min] = size;
	s->size_n[min]++;
}

/* (lock, allocation stack) pairs are kept for this many innermost holds.
 * Charging every held lock made a forged trace that holds 1024 locks and
 * allocates from a new stack each time create 1024 pairs per 9-byte
 * record (a 23 KB trace needed 500 MB); the lock totals stay exact. */
#define ALLOC_PAIR_LOCKS 4

/* Charges one allocator call to the locks t holds: to every one's totals
 * (through the running sums t->snap[0], see charge_hold), and to the
 * (lock, stack) pair of the ALLOC_PAIR_LOCKS innermost holds. O(1) in the
 * number of locks held. ns and slow are weighted (call_weight: slow is the
 * call's weight when it was slow, else 0). */
static void charge_holds(model_t *m, thread_t *t, uint32_t stack, uint64_t ns,
                         uint64_t lw_ns, uint64_t lw_n, uint64_t slow,
                         bool alloc, uint64_t size)
{
	m->tot.alloc_calls_in_holds++;
	holdsum_t *c = &t->snap[0]; /* allocated by push_hold: t holds one */
	c->calls++;
	c->allocs += alloc;
	c->ns += ns;
	c->free_ns += alloc ? 0 : ns;
	c->slow += slow;
	c->lw_ns += lw_ns;
	c->lw_n += lw_n;
	size_t lo =
	    t->nheld > ALLOC_PAIR_LOCKS ? t->nheld - ALLOC_PAIR_LOCKS : 0;
	for (size_t i = lo; i < t->nheld; i++) {
		lspair_t *p = model_pair(m, LS_ALLOC, t->held[i].lock, stack);
		p->n++;
		p->ns += ns;
		p->ns2 += lw_ns;
		p->n2 += alloc;
		/* slow is weighted (an estimate): never more than the calls
		 * counted */
		p->n3 = p->n3 + slow < p->n ? p->n3 + slow : p->n;
		p->bytes += size;
	}
}

/* The allocator lock t waited on before this call (if any) learns the
 * call's block size. */
static void lw_size(model_t *m, thread_t *t, uint64_t size)
{
	if (!t->pend_lw_lock || !size)
		return;
	lock_t *l = &m->lock[t->pend_lw_lock - 1];
	uint32_t s = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	if (!l->lw_size_min || s < l->lw_size_min)
		l->lw_size_min = s;
	if (s > l->lw_size_max)
		l->lw_size_max = s;
}

/*
 * What one allocator call's ticks stand for (PROCESS time_every = N > 1:
 * the shim timed one in N of the calls made outside every lock; hold_every
 * = H > 1: the calls of one uncontended nest of holds in H, and those
 * after a contended acquisition): 0 for an untimed call (ticks 0: its time
 * is unknown), N for a timed call outside every hold, the nest's weight
 * for one in a hold (t->hold_w: H in a sampled nest, else 1), 1 in a trace
 * that timed every call. Time sums add ns times the weight, so that they
 * estimate what all calls took.
 */
static uint64_t call_weight(const model_t *m, const thread_t *t, uint64_t ticks)
{
	if (m->time_every <= 1 && m->hold_every <= 1)
		return 1;
	if (!ticks)
		return 0;
	if (t->nheld)
		return t->hold_w ? t->hold_w : 1;
	return m->time_every;
}

/*
 * Whether a slow timed call that took ns1 is preemption rather than
 * allocator work: the thread moved to another CPU during it (mig), or it
 * took over PREEMPT_NS without waiting on the allocator's own lock, for a
 * block of known size under PREEMPT_MAX_BYTES (larger ones may be mapped,
 * zeroed or copied inside the call). rsyslog's tcmalloc, on a loaded
 * 2-vCPU machine, had 3856 calls of 8-byte-median sites take 669 us on
 * average with no allocator-lock wait: descheduled threads.
 */
static bool preempted(uint64_t ns1, uint64_t lw_ns, uint64_t size, bool mig)
{
	return mig || (ns1 >= TH_PREEMPT_NS && !lw_ns && size &&
	               size < TH_PREEMPT_MAX_BYTES);
}

/* The weight of a timed call in a sampled nest of holds (tw > 1) that
 * preempted() judges preemption: 1. Weighted as its nest stands for, the
 * time its thread spent descheduled would count MALLOCK_HOLD_EVERY times
 * in its locks' allocator time (aggregate.c hold_preempted says the same
 * of the hold). Calls outside holds keep their weight (time_every). */
static uint64_t held_call_weight(model_t *m, const thread_t *t, uint64_t tw,
                                 uint64_t ticks, uint64_t ns1, uint64_t lw_ns,
                                 uint64_t size)
{
	if (tw <= 1 || !t->nheld || ticks <= m->slow_ticks ||
	    !preempted(ns1, lw_ns, size, t->pend_mig))
		return tw;
	/* what weighing it as its nest stands for would add */
	m->tot.alloc_apart_ns += ns1 * (tw - 1);
	return 1;
}

/* Common accounting of one allocator call for a block of size bytes (0:
 * unknown) that took ns1 (w: its weight, call_weight()); returns whether
 * it was slow (over SLOW_ALLOC_NS, preempted or not). The site's slow and
 * preempted figures count the timed calls unweighted (site_t). */
static bool alloc_call(model_t *m, thread_t *t, site_t *s, uint64_t ticks,
                       uint64_t w, uint64_t ns1, uint64_t lw_ns, uint64_t size)
{
	static const uint64_t big[SITE_BIG_N] = SITE_BIG_LIMITS;
	bool slow = w && ticks > m->slow_ticks;
	bool held = t->nheld != 0, mig = t->pend_mig;
	uint64_t ns = ns1 * w;
	lw_size(m, t, size);
	t->pend_lw_lock = 0;
	t->pend_mig = false;
	s->calls[held]++;
	s->lw_h[held] += lw_ns;
	if (!w) {
		m->tot.untimed_calls++;
		return false;
	}
	s->timed[held]++;
	m->tot.alloc_ns += ns;
	t->alloc_ns += ns;
	hist_add_n(&m->alloc_hist, ns1, w);
	if (slow && preempted(ns1, lw_ns, size, mig)) {
		m->tot.alloc_preempted++;
		m->tot.alloc_migrated += mig;
		s->pre_n[held]++;
		s->pre_ns[held] += ns1;
		s->pre_mig[held] += mig;
	} else if (slow) {
		m->tot.alloc_slow += w;
		s->slow_n[held]++;
		s->slow_ns[held] += ns1;
		for (int i = 0; i < SITE_BIG_N; i++)
			s->slow_big[held][i] += size > big[i];
	}
	return slow;
}

/* A block slot off the free list, or a new one. */
static uint32_t block_slot(model_t *m)
{
	if (m->blk_free) {
		uint32_t slot = m->blk_free - 1;
		m->blk_free = m->blk[slot].next_free;
		/* The next allocation reads the new head's record to pop
		 * it: a cache miss when its free was long ago, asked for
		 * now so that it is not waited for then. */
		if (m->blk_free)
			prefetch_line(&m->blk[m->blk_free - 1]);
		return slot;
	}
	VEC_RESERVE(m->blk, m->capblk, m->nblk);
	return (uint32_t)m->nblk++;
}

static void block_release(model_t *m, uint32_t slot)
{
	m->blk[slot].next_free = m->blk_free;
	m->blk_free = slot + 1;
}

/*
 * An ALLOC of an address still live: its block's free is not merged yet.
 * The merge orders threads by their CPUs' TSCs, which differ by up to
 * REUSE_SKEW_NS: the free of the old block, made before this allocation
 * got the address, can be stamped after it. The old block waits in
 * m->displaced for that free (block_free); a free that never comes (lost
 * with dropped events) leaves it there, never freed, as before. An older
 * displaced block of the same address is dropped the same way.
 */
static void block_new(model_t *m, uint64_t ptr, uint64_t size, uint64_t tsc,
                      uint32_t stack, uint32_t ti, uint64_t ns, bool timed)
{
	int added;
	if (ptr == U64MAP_EMPTY)
		return;
	uint32_t *v = u64map_put(&m->live, ptr, &added);
	if (!added) {
		uint32_t old = *v, *d = u64map_put(&m->displaced, ptr, &added);
		if (!added)
			block_release(m, *d);
		*d = old;
	}
	uint32_t slot = block_slot(m);
	/* block_slot may grow m->blk, not m->live: v is still valid */
	*v = slot;
	block_t *b = &m->blk[slot];
	b->tsc = tsc;
	b->size = size;
	b->stack = stack;
	b->thread = ti;
	b->alloc_ns = (ns > BLOCK_NS_MAX ? BLOCK_NS_MAX : (uint32_t)ns) |
	              (timed ? BLOCK_TIMED : 0);
	if (size > LOCK_BLOCK_REACH) {
		/* Older entries of this start now see this block. */
		for (uint32_t k = 0; k < BIGBLK_RING; k++)
			if (m->bigblk[k] == ptr && m->bigsize[k] < size)
				m->bigsize[k] = size;
		m->bigsize[m->nbigblk % BIGBLK_RING] = size;
		m->bigblk[m->nbigblk++ % BIGBLK_RING] = ptr;
	}
}

/*
 * Sampled traces (PROCESS sample_bytes = N): a sampled block of size s
 * stands for 1 / (1 - exp(-s/N)) allocations (the probability that a
 * byte-countdown of mean N ends inside it, as tcmalloc's sampler). Returns
 * the whole number of allocations to count now; the fraction is carried
 * over, so sums over many samples are unbiased. 1 when not sampled.
 */
static uint64_t sample_count(model_t *m, uint64_t size, double *w)
{
	*w = 1.0;
	if (!m->sample_bytes)
		return 1;
	if (size)
		*w = 1.0 / -expm1(-(double)size / (double)m->sample_bytes);
	m->wcarry += *w;
	uint64_t n = sat_u64(m->wcarry);
	m->wcarry -= (double)n;
	return n;
}

/* Takes ptr's block out of the live map for a free begun at start: the
 * displaced one when the free comes within the skew of the allocation that
 * took the address again (block_new). False when no block is known. */
static bool block_take(model_t *m, uint64_t ptr, uint64_t start, uint32_t *slot)
{
	uint32_t old;
	if (m->displaced.n && u64map_del(&m->displaced, ptr, &old)) {
		uint32_t *cur = u64map_find(&m->live, ptr);
		if (cur && start <= m->blk[*cur].tsc + m->skew_ticks) {
			*slot = old;
			return true;
		}
		block_release(m, old);
	}
	return u64map_del(&m->live, ptr, slot) != 0;
}

/* Removes ptr's block (a free begun at start, ended at tsc, that took
 * free_ns, weighted; timed: its time is known); returns its stack index
 * (NONE32 when unknown) and accounts its lifetime and who freed it. */
static uint32_t block_free(model_t *m, thread_t *t, uint32_t ti, uint64_t ptr,
                           uint64_t start, uint64_t tsc, uint64_t free_ns,
                           bool timed, bool *known, uint64_t *size)
{
	uint32_t slot;
	*known = false;
	*size = 0;
	if (!block_take(m, ptr, start, &slot)) {
		/* In a sampled trace a free of an untracked block (recorded
		 * because a lock was held) is expected, not unknown. */
		if (!m->sample_bytes)
			m->tot.unknown_frees++;
		return NONE32;
	}
	*known = true;
	block_t *b = &m->blk[slot];
	*size = b->size;
	uint32_t stack = b->stack;
	site_t *s = site_of(m, stack);
	uint64_t life = tsc > b->tsc ? to_ns(m, tsc - b->tsc) : 0;
	double w;
	uint64_t n = sample_count(m, b->size, &w);
	s->frees += n;
	m->free_n = n;
	s->live--;
	s->free_ns += free_ns;
	s->life_ns += life;
	if (life > s->life_max)
		s->life_max = life;
	uint64_t both = (b->alloc_ns & BLOCK_NS_MAX) + free_ns;
	uint64_t timed_calls = !!(b->alloc_ns & BLOCK_TIMED) + timed;
	if (tsc - b->tsc < m->churn_ticks || tsc < b->tsc) {
		s->short_n += n;
		s->short_ns += sat_u64((double)both * w);
		s->short_timed += timed_calls;
	}
	site_thread(s->fthr, s->fthr_n, ti);
	if (b->thread != ti) {
		s->xfree_n += n;
		s->xfree_ns += sat_u64((double)both * w);
		s->xfree_timed += timed_calls;
		s->xfree_bytes += sat_u64((double)b->size * w + 0.5);
		m->tot.xfrees += n;
		t->xfrees += n;
	}
	block_release(m, slot);
	return stack;
}

static void alloc_event(model_t *m, thread_t *t, uint32_t ti, uint64_t tsc,
                        uint64_t ptr, uint64_t size, uint64_t stack_id,
                        uint64_t ticks, bool realloc_)
{
	uint64_t ns1 = to_ns(m, ticks), lw_ns = t->pend_lw_ns,
	         lw_n = t->pend_lw_n;
	uint64_t tw = held_call_weight(m, t, call_weight(m, t, ticks), ticks,
	                               ns1, lw_ns, size),
	         ns = ns1 * tw;
	t->pend_lw_ns = t->pend_lw_n = 0;
	uint32_t stack = model_stack(m, stack_id);
	site_t *s = site_of(m, stack);
	if (m->sample_bytes && !ptr) {
		/* Sampled trace: an unsampled allocator call made under a
		 * lock (pointer 0, the call site as stack). Its time counts
		 * for the holds; it is not an allocation of the statistics. */
		m->tot.untracked_calls++;
		bool slow = alloc_call(m, t, s, ticks, tw, ns1, lw_ns, size);
		if (t->nheld)
			charge_holds(m, t, stack, ns, lw_ns, lw_n,
			             slow ? tw : 0, true, size);
		return;
	}
	double w;
	uint64_t n = sample_count(m, size, &w);
	uint64_t nb = m->sample_bytes ? sat_u64((double)size * w + 0.5) : size;
	if (m->sample_bytes)
		m->tot.sampled_allocs++;
	if (realloc_) {
		s->reallocs += n;
		m->tot.reallocs += n;
	} else {
		s->allocs += n;
		m->tot.allocs += n;
	}
	s->bytes += nb;
	s->alloc_ns += m->sample_bytes ? sat_u64((double)ns * w) : ns;
	s->lw_ns += lw_ns;
	s->lw_n += lw_n;
	s->live++;
	site_size(s, size);
	site_thread(s->athr, s->athr_n, ti);
	if (t->nfirst < THREAD_FIRST_STACKS)
		agg_first_stack(m, t, stack);
	m->tot.bytes += nb;
	t->allocs += n;
	t->bytes += nb;
	bool slow = alloc_call(m, t, s, ticks, tw, ns1, lw_ns, size);
	if (t->nheld)
		charge_holds(m, t, stack, ns, lw_ns, lw_n, slow ? tw : 0, true,
		             size);
	if (ptr)
		block_new(m, ptr, size, tsc, stack, ti, ns, tw != 0);
}

static void free_event(model_t *m, thread_t *t, uint32_t ti, uint64_t tsc,
                       uint64_t ptr, uint64_t ticks)
{
	uint64_t ns1 = to_ns(m, ticks), lw_ns = t->pend_lw_ns,
	         lw_n = t->pend_lw_n, tw = call_weight(m, t, ticks);
	if (tw > 1 && t->nheld && ticks > m->slow_ticks && ptr) {
		/* the size preempted() judges by: the block's, still live */
		const uint32_t *v = u64map_find(&m->live, ptr);
		tw = held_call_weight(m, t, tw, ticks, ns1, lw_ns,
		                      v ? m->blk[*v].size : 0);
	}
	uint64_t ns = ns1 * tw;
	t->pend_lw_ns = t->pend_lw_n = 0;
	bool known = false;
	uint64_t size = 0;
	uint32_t stack = ptr ? block_free(m, t, ti, ptr, call_began(tsc, ticks),
	                                  tsc, ns, tw != 0, &known, &size)
	                     : NONE32;
	site_t *s = site_of(m, stack);
	/* A tracked block counts as many frees as its allocation counted
	 * (sampled traces); an untracked one of a sampled trace is only an
	 * allocator call. */
	uint64_t n = known ? m->free_n : m->sample_bytes ? 0 : 1;
	m->tot.frees += n;
	t->frees += n;
	s->lw_ns += lw_ns;
	s->lw_n += lw_n;
	bool slow = alloc_call(m, t, s, ticks, tw, ns1, lw_ns, size);
	if (t->nheld)
		charge_holds(m, t, stack, ns, lw_ns, lw_n, slow ? tw : 0, false,
		             0);
}

/* A REALLOC's free of its old block, given at the call's start when it
 * moved or freed it (READER_REALLOC_FREE, reader.h): another thread may
 * have been given the block before the realloc returned. Its lifetime
 * still ends at the realloc's tsc, as when the record was folded whole. */
void agg_on_realloc_free(model_t *m, thread_t *t, uint32_t ti,
                         const fmt_record_t *r)
{
	bool known;
	uint64_t size;
	block_free(m, t, ti, r->f[FMT_REALLOC_OLD],
	           call_began(r->tsc, r->f[FMT_REALLOC_TICKS]), r->tsc, 0,
	           false, &known, &size);
}

/* A REALLOC given whole (it kept its block in place or failed), or the
 * rest of one whose old block agg_on_realloc_free already freed (part). */
void agg_on_realloc(model_t *m, thread_t *t, uint32_t ti, const fmt_record_t *r,
                    reader_part_t part)
{
	/* One allocator call: the old block ends, the new one begins; the
	 * call's time goes to the new block's site. */
	uint64_t old = r->f[FMT_REALLOC_OLD], new_ = r->f[FMT_REALLOC_NEW];
	uint64_t size = r->f[FMT_REALLOC_SIZE];
	if (part == READER_WHOLE && old && (new_ || size == 0))
		agg_on_realloc_free(m, t, ti, r);
	alloc_event(m, t, ti, r->tsc, size ? new_ : 0, size,
	            r->f[FMT_REALLOC_STACK], r->f[FMT_REALLOC_TICKS], true);
}

void agg_on_alloc(model_t *m, thread_t *t, uint32_t ti, const fmt_record_t *r)
{
	alloc_event(m, t, ti, r->tsc, r->f[FMT_ALLOC_PTR], r->f[FMT_ALLOC_SIZE],
	            r->f[FMT_ALLOC_STACK], r->f[FMT_ALLOC_TICKS], false);
}

void agg_on_free(model_t *m, thread_t *t, uint32_t ti, const fmt_record_t *r)
{
	free_event(m, t, ti, r->tsc, r->f[FMT_FREE_PTR], r->f[FMT_FREE_TICKS]);
}

void agg_on_excluded(model_t *m, uint32_t ti, const fmt_record_t *r)
{
	uint32_t slot;
	if (r->type == FMT_ALLOC && r->f[FMT_ALLOC_PTR])
		block_new(m, r->f[FMT_ALLOC_PTR], r->f[FMT_ALLOC_SIZE], r->tsc,
		          model_stack(m, r->f[FMT_ALLOC_STACK]), ti, 0, false);
	else if (r->type == FMT_FREE && r->f[FMT_FREE_PTR] &&
	         block_take(m, r->f[FMT_FREE_PTR],
	                    call_began(r->tsc, r->f[FMT_FREE_TICKS]), &slot))
		block_release(m, slot);
}
