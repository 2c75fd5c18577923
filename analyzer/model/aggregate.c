/*
 * aggregate.c - the per-event loop: folds each merged event into the model
 * (model.h), one on_<record>() function per record family: lock,
 * condition, futex, thread and mark events here, the allocator events
 * (ALLOC, FREE, REALLOC, the live blocks) in aggregate_alloc.c, the
 * metadata records in aggregate_meta.c. This is the analyzer's hot path:
 * no allocation per event (the tables only grow when a new lock, stack,
 * pair or live block appears), one hash lookup per lock or allocator
 * event, times converted to ns once.
 *
 * Semantics follow trace_format.h:
 * - ACQ, ACQ_WAIT (and shared, untimed and sampled forms) and COND_WAKE
 * start a hold on the acting thread; REL, REL_CONTENDED and COND_WAIT end it
 * (hold = release tsc - acquire tsc). A thread may hold several locks;
 * rwlocks may be held shared by many threads at once.
 * - Timed holds (trace format 1.6, MALLOCK_HOLD_EVERY = N): a hold begun by
 * ACQ_UNTIMED or ACQ_SHARED_UNTIMED was not timed (its stamps are the
 * thread's previous ones): it counts as a hold, adds no time. One begun by
 * ACQ_SAMPLED or ACQ_SHARED_SAMPLED stands for N (one uncontended nest of
 * holds in N was timed, at random gaps); every other one for itself.
 * Each timed hold's time goes to the sums (hold time, the hold
 * histogram, acquisition-site and holder pairs, nested time) times its
 * weight, so that they estimate what all holds took (a Horvitz-Thompson
 * sum); holds_timed counts the timed ones. A timed allocator call in a
 * hold weighs what the thread's latest acquisition does (t->hold_w: the
 * nest's timing, aggregate_alloc.c call_weight).
 * - ACQ_WAIT's tsc is the time acquired; its wait began wait ticks before.
 * - ALLOC_LOCK_WAIT and ALLOC_MIGRATED belong to the same thread's next
 *   allocator event.
 * - FUTEX_WAIT and FUTEX_WAKE (a futex word used through syscall(): a lock
 *   of the program's own, or a condition, event or semaphore) push no hold:
 *   a wait that ended does not say the word was then acquired, and an
 *   acquisition that never waited never reached the kernel. A wait adds to
 *   the word's wait (and its waiter stack, LS_WAITER); a wake to its wakes
 *   (the waker's stack as the holder's side, LS_HOLDER with n wakes).
 *   Once the trace is read, a word some thread both waited
 *   on and woke is a lock word (futex_lockish): its waits are time lost to
 *   its holders. On any other word (waiters never wake it, wakers never
 *   wait on it: a producer and its consumers) the waits were waiting for
 *   work, counted in idle_wait_ns.
 * - An allocator call made while locks are held is charged to each of them:
 *   the thread sums its calls in holds (holdsum_t) and a hold, when it ends,
 *   charges its lock the difference since it began, and the (lock, hold's
 *   acquisition site) pair (LS_HOLDALLOC) too, so a call costs O(1)
 *   however many locks are held. Its (lock, allocation stack) pair is kept
 *   for the ALLOC_PAIR_LOCKS innermost holds only (charge_holds).
 * - A MARK ends the holds and pending state of the threads on the busy list
 *   (those that acquired, slept or saw an allocator lock wait since the
 *   last MARK), not of every thread: a MARK costs O(busy threads).
 * - A free of a block the live map does not know (allocated before
 *   recording, or lost in a truncation) is an unknown free, never a
 *   cross-thread one (aggregate_alloc.c).
 */
#include "aggregate_int.h"

#include "lock_names.h"
#include "lockfold.h"

#include "meta.h"
#include "thresholds.h"

#include <stdlib.h>
#include <string.h>

/* The lock with id (created on first use). Index first: model_lock() may
 * move the array. */
static lock_t *lock_at(model_t *m, uint64_t id)
{
	uint32_t i = model_lock(m, id);
	return &m->lock[i];
}

static lockthr_t *lockthr(model_t *m, thread_t *t, uint32_t ti, uint32_t lock)
{
	if (t->lt_lock == lock)
		return &m->lt[t->lt_idx];
	int added;
	uint32_t *v = u64map_put(&m->lt_map, (uint64_t)lock << 32 | ti, &added);
	if (added) {
		VEC_RESERVE(m->lt, m->caplt, m->nlt);
		lockthr_t *p = &m->lt[m->nlt];
		memset(p, 0, sizeof *p);
		p->lock = lock;
		p->thread = ti;
		*v = (uint32_t)m->nlt++;
	}
	t->lt_lock = lock;
	t->lt_idx = *v;
	return &m->lt[*v];
}

static uint32_t nest_of(model_t *m, uint32_t outer, uint32_t inner,
                        uint32_t site)
{
	int added;
	uint32_t *v =
	    u64map_put(&m->nest_map, (uint64_t)outer << 32 | inner, &added);
	if (added) {
		VEC_RESERVE(m->nest, m->capnest, m->nnest);
		nest_t *p = &m->nest[m->nnest];
		memset(p, 0, sizeof *p);
		p->outer = outer;
		p->inner = inner;
		p->site = site;
		*v = (uint32_t)m->nnest++;
	}
	return *v;
}

/* ---- locks ---- */

/* Keeps one of the thread's first distinct whole stacks (for its entry
 * function: find_starvation.c, thread_entry). An uncontended acquisition
 * records only its call site (a stack of one frame): skipped when already
 * known to be one. */
void agg_first_stack(model_t *m, thread_t *t, uint32_t stack)
{
	if (stack == NONE32 || t->nfirst >= THREAD_FIRST_STACKS ||
	    (m->stk[stack].defined && m->stk[stack].n < 2))
		return;
	for (uint32_t k = 0; k < t->nfirst; k++)
		if (t->first_stk[k] == stack)
			return;
	t->first_stk[t->nfirst++] = stack;
}

static void owner(lock_t *l, uint32_t ti)
{
	if (l->last_owner && l->last_owner != ti + 1)
		l->s.owner_switches++;
	l->last_owner = ti + 1;
}

/* Puts thread ti on the busy list (once): it holds a lock or has pending
 * state that a MARK must end. May allocate. */
static void busy(model_t *m, thread_t *t, uint32_t ti)
{
	if (t->busy)
		return;
	t->busy = true;
	VEC_RESERVE(m->busy, m->capbusy, m->nbusy);
	m->busy[m->nbusy++] = ti;
}

/* Charges lock h->lock the allocator calls t made during the hold h (its
 * sums now, less at the hold's start). Called once per hold, when it
 * ends: released (completed: it counts in holds_with_alloc, as in holds),
 * or cut by a thread exit, a MARK or the end of the trace. */
static void charge_hold(model_t *m, const thread_t *t, const held_t *h,
                        bool completed)
{
	const holdsum_t *a = &t->snap[h->snap], *b = &t->snap[0];
	lockstat_t *s = &m->lock[h->lock].s;
	if (b->calls == a->calls)
		return;
	s->holds_with_alloc += completed;
	s->alloc_calls += b->calls - a->calls;
	s->alloc_allocs += b->allocs - a->allocs;
	s->alloc_ns += b->ns - a->ns;
	s->alloc_slow += b->slow - a->slow;
	/* weighted slow calls (an estimate) never exceed the calls counted */
	if (s->alloc_slow > s->alloc_calls)
		s->alloc_slow = s->alloc_calls;
	s->alloc_lw_ns += b->lw_ns - a->lw_ns;
	s->alloc_lw_n += b->lw_n - a->lw_n;
	/* By the hold's acquisition site (a condition wake's hold: the site
	 * of the hold its wait ended): the holding code, where the frees of
	 * the hold were made (a FREE has no stack of its own). */
	uint32_t site = h->site != NONE32 ? h->site
	                : h->resite1      ? h->resite1 - 1
	                                  : NONE32;
	lspair_t *p = model_pair(m, LS_HOLDALLOC, h->lock, site);
	p->n += b->calls - a->calls;
	p->ns += b->ns - a->ns;
	p->ns2 += b->free_ns - a->free_ns;
	p->n2 += b->allocs - a->allocs;
	p->n3++;
}

/* Drops the snapshots no open hold refers to: holds keep their order in
 * t->held and take snapshots in that order, so the last hold's is the
 * newest still needed. */
static void trim_snaps(thread_t *t)
{
	if (t->snap)
		t->nsnap = t->nheld ? t->held[t->nheld - 1].snap + 1 : 1;
}

/* Ends every hold of t uncounted as a hold (thread exit, MARK), charging
 * the allocator calls made in each; adds their number to *cut. */
static void cut_holds(model_t *m, thread_t *t, uint64_t *cut)
{
	for (size_t i = 0; i < t->nheld; i++) {
		charge_hold(m, t, &t->held[i], false);
		m->lock[t->held[i].lock].nheld--;
	}
	*cut += t->nheld;
	t->nheld = 0;
	trim_snaps(t);
}

/* Most locks one thread is seen to hold at once. Beyond it an acquisition
 * is not tracked as a hold (its release counts as unmatched) and a note
 * says so: a forged trace of a million acquisitions and no release would
 * otherwise make every release scan and shift the whole stack. */
#define HELD_MAX 1024

static held_t *push_hold(model_t *m, thread_t *t, uint32_t ti, uint32_t li,
                         uint32_t site, uint64_t tsc, uint32_t w)
{
	/* The nest's timing, for the allocator calls that follow. */
	t->hold_w = w ? w : 1;
	uint32_t nest = 0;
	if (t->nheld >= HELD_MAX) {
		static const char msg[] =
		    "analyzer: a thread held more than 1024 locks at once; "
		    "holds beyond that are not measured";
		model_note(m, FMT_NOTE_WARN, msg, sizeof msg - 1);
		return NULL;
	}
	if (t->nheld) {
		uint32_t outer = t->held[t->nheld - 1].lock;
		if (outer != li) {
			nest = nest_of(m, outer, li, site) + 1;
			m->nest[nest - 1].n++;
		}
	}
	if (!t->snap) { /* the running sums, zero */
		VEC_RESERVE(t->snap, t->capsnap, 1);
		memset(t->snap, 0, sizeof *t->snap);
		t->nsnap = 1;
	}
	/* A new snapshot only when calls were made since the last one: at
	 * most one per open hold. */
	if (t->nsnap == 1 || t->snap[t->nsnap - 1].calls != t->snap[0].calls) {
		VEC_RESERVE(t->snap, t->capsnap, t->nsnap);
		t->snap[t->nsnap++] = t->snap[0];
	}
	busy(m, t, ti);
	VEC_RESERVE(t->held, t->capheld, t->nheld);
	held_t *h = &t->held[t->nheld++];
	h->lock = li;
	h->site = site;
	h->nest = nest;
	h->snap = (uint32_t)(t->nsnap - 1);
	h->tsc = tsc;
	h->wait_ns = 0;
	h->resite1 = 0;
	h->w = w;
	m->lock[li].nheld++;
	return h;
}

/* What a hold begun by an acquisition of record type `type` stands for:
 * 0 untimed, MALLOCK_HOLD_EVERY sampled, else 1. */
static uint32_t hold_weight(const model_t *m, unsigned type)
{
	switch (type) {
	case FMT_ACQ_UNTIMED:
	case FMT_ACQ_SHARED_UNTIMED:
		return 0;
	case FMT_ACQ_SAMPLED:
	case FMT_ACQ_SHARED_SAMPLED:
		return m->hold_every > 1 && m->hold_every <= UINT32_MAX
		           ? (uint32_t)m->hold_every
		           : 1;
	default:
		return 1;
	}
}

static void on_acq(model_t *m, thread_t *t, uint32_t ti, const fmt_record_t *r,
                   bool shared, bool waited)
{
	uint32_t li = model_lock(m, r->f[FMT_ACQ_LOCK]);
	lock_t *l = &m->lock[li];
	uint32_t stack = model_stack(m, r->f[FMT_ACQ_SITE]);
	l->s.acq++;
	m->tot.acq++;
	t->acq++;
	if (shared)
		l->s.acq_shared++;
	if (l->first_site == NONE32)
		l->first_site = stack;
	owner(l, ti);
	if (t->nfirst < THREAD_FIRST_STACKS)
		agg_first_stack(m, t, stack);
	lockthr_t *lt = lockthr(m, t, ti, li);
	lt->acq++;
	held_t *h =
	    push_hold(m, t, ti, li, stack, r->tsc, hold_weight(m, r->type));
	uint32_t nest = h ? h->nest : 0;
	if (!waited)
		return;
	uint64_t w = to_ns(m, r->f[FMT_ACQ_WAIT_WAIT]);
	if (h)
		h->wait_ns = w;
	l = &m->lock[li];
	l->s.contended++;
	l->s.wait_ns += w;
	if (w > l->s.wait_max)
		l->s.wait_max = w;
	if (r->f[FMT_ACQ_WAIT_WAITERS] > l->s.max_waiters)
		l->s.max_waiters = r->f[FMT_ACQ_WAIT_WAITERS];
	hist_add(lock_hist(m, l, 0), w);
	m->tot.contended++;
	m->tot.wait_ns += w;
	t->contended++;
	t->wait_ns += w;
	lt->contended++;
	lt->wait_ns += w;
	lspair_t *p = model_pair(m, LS_WAITER, li, stack);
	p->n++;
	p->ns += w;
	if (l->last_holder)
		m->ls[LS_HOLDER].v[l->last_holder - 1].ns2 += w;
	if (nest) {
		nest_t *n = &m->nest[nest - 1];
		n->inner_contended++;
		n->inner_wait_ns += w;
	}
}

/* Whether a sampled hold h of lock l that lasted hold ns was most likely
 * descheduled rather than working: at least PREEMPT_NS, and HOLD_PREEMPT_X
 * times the lock's mean timed hold so far (known from HOLD_PREEMPT_MIN
 * timed holds). Weighted as it stands for, one preemption of a few ms
 * would count MALLOCK_HOLD_EVERY times (a known allocator share of 0.23
 * came out 0.087 on a loaded machine); so it counts once, and the holds
 * it stood for count at the lock's mean. A lock whose holds are rarely
 * but truly that long (I/O under the lock) is underestimated by as much:
 * the report says how many holds were set apart. */
#define HOLD_PREEMPT_MIN 4
static bool hold_preempted(const lock_t *l, const held_t *h, uint64_t hold)
{
	return h->w > 1 && hold >= TH_PREEMPT_NS &&
	       l->s.holds_timed >= HOLD_PREEMPT_MIN &&
	       hold / TH_HOLD_PREEMPT_X >= l->s.hold_ns / l->s.timed_w;
}

/* Files the sampled hold h of t, set apart, with the time wns it counts
 * for (model_t.apart). */
static void hold_apart(model_t *m, const thread_t *t, const held_t *h,
                       uint64_t wns)
{
	uint32_t ti = (uint32_t)(t - m->thr);
	int added;
	uint32_t *v =
	    u64map_put(&m->apart_map, model_apart_key(ti, h->tsc), &added);
	if (!added) /* a key taken by another hold: its replay weighs it w */
		return;
	VEC_RESERVE(m->apart, m->capapart, m->napart);
	m->apart[m->napart] = (hold_apart_t){h->tsc, ti, wns};
	*v = (uint32_t)m->napart++;
}

/* Ends t's hold of lock li at tsc. Returns the hold's duration times its
 * weight (0 for an untimed hold), or -1 when t did not hold it (a hold
 * that began before recording). */
static int64_t release(model_t *m, thread_t *t, uint32_t li, uint64_t tsc)
{
	lock_t *l = &m->lock[li];
	size_t i = t->nheld;
	while (i > 0 && t->held[i - 1].lock != li)
		i--;
	if (i == 0) {
		l->s.unmatched_rel++;
		return -1;
	}
	held_t h = t->held[i - 1];
	l->nheld--;
	charge_hold(m, t, &h, true);
	/* A hold nested in this one counts as nested only while this one
	 * lasts: its part up to now, and no more at its own release (memcached
	 * releases an LRU lock before the item lock taken under it). The
	 * holds above h are newer; one nested in an earlier hold of li would
	 * sit below a later hold of li, and release takes the latest. */
	for (size_t k = i; k < t->nheld; k++) {
		held_t *in = &t->held[k];
		if (!in->nest || m->nest[in->nest - 1].outer != li)
			continue;
		if (in->w && tsc > in->tsc)
			m->nest[in->nest - 1].inner_hold_ns +=
			    to_ns(m, tsc - in->tsc) * in->w;
		in->nest = 0;
	}
	memmove(&t->held[i - 1], &t->held[i], (t->nheld - i) * sizeof h);
	t->nheld--;
	trim_snaps(t);
	l->s.holds++;
	m->tot.holds++;
	if (!h.w) {
		m->tot.untimed_holds++;
		if (h.site != NONE32 || h.resite1)
			model_pair(m, LS_ACQSITE, li,
			           h.site != NONE32 ? h.site : h.resite1 - 1)
			    ->n++;
		return 0;
	}
	uint64_t hold = tsc > h.tsc ? to_ns(m, tsc - h.tsc) : 0;
	uint64_t wh = hold * h.w;
	hist_t *hh = lock_hist(m, l, 1);
	if (hold_preempted(l, &h, hold)) {
		uint64_t mean = l->s.hold_ns / l->s.timed_w;
		wh = hold + mean * (h.w - 1);
		m->tot.holds_preempted++;
		/* what weighing it as it stands for would add */
		m->tot.holds_apart_ns += (hold - mean) * (h.w - 1);
		l->s.holds_apart++;
		l->s.holds_apart_ns += (hold - mean) * (h.w - 1);
		hold_apart(m, t, &h, wh);
		hist_add(hh, hold);
		hist_add_n(hh, mean, h.w - 1);
	} else {
		hist_add_n(hh, hold, h.w);
	}
	l->s.holds_timed++;
	l->s.timed_w += h.w;
	l->s.hold_ns += wh;
	if (hold > l->s.hold_max)
		l->s.hold_max = hold;
	uint32_t site = h.site != NONE32 ? h.site : h.resite1 - 1;
	if (h.site != NONE32 || h.resite1) {
		lspair_t *p = model_pair(m, LS_ACQSITE, li, site);
		p->n++;
		p->ns += wh;
	}
	if (h.nest)
		m->nest[h.nest - 1].inner_hold_ns += wh;
	return (int64_t)wh;
}

/* Lock words and signal words (the file header): a futex word some thread
 * both waited on and woke is a lock word; every other word's waits were
 * waiting for work (idle_wait_ns). */
static void futex_words(model_t *m)
{
	for (size_t i = 0; i < m->nlt; i++) {
		const lockthr_t *lt = &m->lt[i];
		if (lt->contended && lt->futex_wakes)
			m->lock[lt->lock].futex_lockish = true;
	}
	for (size_t i = 0; i < m->nlock; i++) {
		lock_t *l = &m->lock[i];
		if (!l->s.futex_waits)
			continue;
		if (l->futex_lockish)
			m->tot.futex_lost_ns += l->s.wait_ns;
		else
			l->s.idle_wait_ns = l->s.wait_ns;
	}
	/* A thread's waits on signal words were sleeps for work, as a
	 * condition wait is: not its lock wait. */
	for (size_t i = 0; i < m->nlt; i++) {
		const lockthr_t *lt = &m->lt[i];
		const lock_t *l = &m->lock[lt->lock];
		thread_t *t = &m->thr[lt->thread];
		if (l->kind != FMT_KIND_FUTEX || !l->s.futex_waits ||
		    l->futex_lockish)
			continue;
		uint64_t w =
		    lt->wait_ns < t->wait_ns ? lt->wait_ns : t->wait_ns;
		t->wait_ns -= w;
		t->sleep_ns += w;
	}
}

/* ---- one function per record family ---- */

static void on_try_fail(model_t *m, thread_t *t, uint32_t ti,
                        const fmt_record_t *r)
{
	uint32_t li = model_lock(m, r->f[FMT_TRY_FAIL_LOCK]);
	m->lock[li].s.try_fail++;
	lockthr(m, t, ti, li)->try_fail++;
	/* Tried while holding another lock: that order is taken with a
	 * trylock (nested_lock tells an inversion made safe by it). */
	uint32_t outer = t->nheld ? t->held[t->nheld - 1].lock : li;
	if (outer != li) {
		uint32_t site = model_stack(m, r->f[FMT_TRY_FAIL_SITE]);
		uint32_t k = nest_of(m, outer, li, site); /* may move m->nest */
		m->nest[k].try_fail++;
	}
}

/* A release whose lock had waiters: the hold counts for the releasing
 * stack (LS_HOLDER), which the lock's next contended wait is charged to. */
static void on_rel_contended(model_t *m, thread_t *t, const fmt_record_t *r)
{
	uint32_t li = model_lock(m, r->f[FMT_REL_CONTENDED_LOCK]);
	int64_t hold = release(m, t, li, r->tsc);
	uint32_t stack = model_stack(m, r->f[FMT_REL_CONTENDED_STACK]);
	lspair_t *p = model_pair(m, LS_HOLDER, li, stack);
	p->n++;
	p->ns += hold > 0 ? (uint64_t)hold : 0;
	m->lock[li].s.contended_holds++;
	m->lock[li].last_holder = (uint32_t)(p - m->ls[LS_HOLDER].v) + 1;
}

/* A condition wait: releases its mutex and starts t's sleep. */
static void on_cond_wait(model_t *m, thread_t *t, uint32_t ti,
                         const fmt_record_t *r)
{
	uint32_t ci = model_lock(m, r->f[FMT_COND_WAIT_COND]);
	uint32_t li = model_lock(m, r->f[FMT_COND_WAIT_LOCK]);
	m->lock[ci].is_cond = true;
	m->lock[ci].s.cond_waits++;
	m->lock[ci].cond_mutex = li + 1;
	m->lock[li].queue_cond = true;
	m->lock[li].s.cond_waits++;
	/* The thread waited for the lock only to find no work: that
	 * wait was waiting for work, not time lost to the holders. */
	t->cond_site1 = 0;
	for (size_t k = t->nheld; k-- > 0;)
		if (t->held[k].lock == li) {
			m->lock[li].s.idle_wait_ns += t->held[k].wait_ns;
			t->cond_site1 = t->held[k].site != NONE32
			                    ? t->held[k].site + 1
			                    : t->held[k].resite1;
			break;
		}
	release(m, t, li, r->tsc);
	t->cond_waits++;
	t->cond_sleep_tsc = r->tsc;
	busy(m, t, ti);
}

/* A condition wait's return: ends t's sleep and holds the mutex again,
 * at the acquisition site of the hold the wait released. */
static void on_cond_wake(model_t *m, thread_t *t, uint32_t ti,
                         const fmt_record_t *r)
{
	uint32_t ci = model_lock(m, r->f[FMT_COND_WAKE_COND]);
	uint32_t li = model_lock(m, r->f[FMT_COND_WAKE_LOCK]);
	lock_t *l = &m->lock[li];
	m->lock[ci].is_cond = true;
	m->lock[ci].s.cond_wakes++;
	l->s.cond_wakes++;
	if (r->f[FMT_COND_WAKE_FLAGS] & FMT_WAKEF_TIMEDOUT) {
		l->s.cond_timeouts++;
		lockthr(m, t, ti, li)->timeouts++;
	}
	owner(l, ti);
	lockthr_t *lt = lockthr(m, t, ti, li);
	lt->wakes++;
	if (t->cond_sleep_tsc && r->tsc > t->cond_sleep_tsc) {
		uint64_t slept = to_ns(m, r->tsc - t->cond_sleep_tsc);
		t->sleep_ns += slept;
		lt->sleep_ns += slept;
	}
	t->cond_sleep_tsc = 0;
	held_t *h = push_hold(m, t, ti, li, NONE32, r->tsc, 1);
	if (h)
		h->resite1 = t->cond_site1;
	t->cond_site1 = 0;
}

static void on_cond_signal(model_t *m, thread_t *t, uint32_t ti,
                           const fmt_record_t *r)
{
	uint32_t ci = model_lock(m, r->f[FMT_COND_SIGNAL_COND]);
	m->lock[ci].is_cond = true;
	m->lock[ci].s.cond_signals++;
	t->cond_signals++;
	if (m->lock[ci].cond_mutex)
		lockthr(m, t, ti, m->lock[ci].cond_mutex - 1)->signals++;
}

/* A wait on the allocator's own lock: counted for that lock, and pending
 * on t for its next allocator event (aggregate_alloc.c). */
static void alloc_lock_wait(model_t *m, thread_t *t, uint32_t ti, lock_t *l,
                            uint64_t w)
{
	l->s.internal_waits++;
	l->s.contended++;
	l->s.wait_ns += w;
	if (w > l->s.wait_max)
		l->s.wait_max = w;
	hist_add(lock_hist(m, l, 0), w);
	t->pend_lw_ns += w;
	t->pend_lw_n++;
	t->pend_lw_lock = (uint32_t)(l - m->lock) + 1;
	busy(m, t, ti);
	m->tot.alloc_lw_ns += w;
	m->tot.alloc_lw_n++;
}

static void on_alloc_lock_wait(model_t *m, thread_t *t, uint32_t ti,
                               const fmt_record_t *r)
{
	lock_t *l = lock_at(m, r->f[FMT_ALLOC_LOCK_WAIT_LOCK]);
	if (l->kind == LOCK_KIND_UNKNOWN)
		l->kind = FMT_KIND_ALLOC_INTERNAL;
	alloc_lock_wait(m, t, ti, l, to_ns(m, r->f[FMT_ALLOC_LOCK_WAIT_WAIT]));
}

static void on_futex_wait(model_t *m, thread_t *t, uint32_t ti,
                          const fmt_record_t *r)
{
	uint64_t w = to_ns(m, r->f[FMT_FUTEX_WAIT_WAIT]);
	uint32_t li = model_lock(m, r->f[FMT_FUTEX_WAIT_LOCK]);
	uint32_t stack = model_stack(m, r->f[FMT_FUTEX_WAIT_STACK]);
	lock_t *l = &m->lock[li];
	if (l->kind == LOCK_KIND_UNKNOWN)
		l->kind = FMT_KIND_FUTEX;
	/* The allocator's own lock, waited on outside a hooked call
	 * (tcmalloc returning a thread's cache to its central lists at
	 * thread exit): a wait on the allocator's lock, not a futex word's
	 * nor a lock acquisition's (the wait profiles would count it, the
	 * totals not). */
	if (l->kind == FMT_KIND_ALLOC_INTERNAL) {
		alloc_lock_wait(m, t, ti, l, w);
		return;
	}
	/* Its own histogram (before first_site is set: lock_hist
	 * would share the first waiter stack's). */
	hist_add(lock_hist(m, l, 0), w);
	if (l->first_site == NONE32)
		l->first_site = stack;
	l->s.futex_waits++;
	l->s.wait_ns += w;
	if (w > l->s.wait_max)
		l->s.wait_max = w;
	lspair_t *p = model_pair(m, LS_WAITER, li, stack);
	p->n++;
	p->ns += w;
	lockthr_t *lt = lockthr(m, t, ti, li);
	lt->contended++;
	lt->wait_ns += w;
	t->wait_ns += w;
	t->futex_waits++;
	if (t->nfirst < THREAD_FIRST_STACKS)
		agg_first_stack(m, t, stack);
	m->tot.futex_waits++;
	m->tot.futex_wait_ns += w;
}

static void on_futex_wake(model_t *m, thread_t *t, uint32_t ti,
                          const fmt_record_t *r)
{
	uint32_t li = model_lock(m, r->f[FMT_FUTEX_WAKE_LOCK]);
	uint32_t stack = model_stack(m, r->f[FMT_FUTEX_WAKE_STACK]);
	lock_t *l = &m->lock[li];
	if (l->kind == LOCK_KIND_UNKNOWN)
		l->kind = FMT_KIND_FUTEX;
	if (l->kind == FMT_KIND_ALLOC_INTERNAL)
		return; /* as inside the allocator: wakes are not recorded */
	l->s.futex_wakes++;
	l->s.futex_woken += r->f[FMT_FUTEX_WAKE_WOKEN];
	lspair_t *p = model_pair(m, LS_HOLDER, li, stack);
	p->n++;
	lockthr(m, t, ti, li)->futex_wakes++;
	m->tot.futex_wakes++;
}

/* A thread's exit: the locks it still holds count an unmatched release
 * each, and its holds end uncounted. */
static void on_thread_exit(model_t *m, thread_t *t)
{
	t->exited = true;
	for (size_t i = 0; i < t->nheld; i++)
		m->lock[t->held[i].lock].s.unmatched_rel++;
	uint64_t cut = 0;
	cut_holds(m, t, &cut);
}

static void on_lock_init(model_t *m, const fmt_record_t *r)
{
	lock_t *l = lock_at(m, r->f[FMT_LOCK_INIT_LOCK]);
	if (l->init_stack == NONE32)
		l->init_stack = model_stack(m, r->f[FMT_LOCK_INIT_STACK]);
}

/* Recording paused or resumed. A hold open across a mark is not trusted:
 * its release may have gone unrecorded while paused (a phantom holder), or
 * its acquisition (then the release is unmatched, counted, never a
 * negative hold). So every thread's holds end here, uncounted (only
 * threads on the busy list can have any). */
static void on_mark(model_t *m, const fmt_record_t *r)
{
	if (r->f[FMT_MARK_WHAT] == FMT_MARK_PAUSE) {
		m->tot.pauses++;
		if (!m->paused && r->tsc > m->rec_since)
			m->rec_ticks += r->tsc - m->rec_since;
		m->paused = true;
		m->pause_tsc = r->tsc;
	} else if (r->f[FMT_MARK_WHAT] == FMT_MARK_RESUME) {
		m->tot.resumes++;
		if (m->paused)
			m->rec_since = r->tsc;
		m->paused = false;
	}
	for (size_t i = 0; i < m->nbusy; i++) {
		thread_t *b = &m->thr[m->busy[i]];
		cut_holds(m, b, &m->tot.holds_cut);
		b->pend_lw_ns = b->pend_lw_n = 0;
		b->pend_lw_lock = 0;
		b->pend_mig = false;
		b->cond_sleep_tsc = 0;
		b->busy = false;
	}
	m->nbusy = 0;
}

/* ---- the loop ---- */

static void on_event(model_t *m, uint32_t ti, const fmt_record_t *r,
                     reader_part_t part)
{
	thread_t *t = &m->thr[ti];
	m->events++;
	t->events++;
	if (!t->seen) {
		t->seen = true;
		t->first_tsc = r->tsc;
	}
	t->last_tsc = r->tsc;
	if (!m->paused) {
		if (!t->rec_first_tsc)
			t->rec_first_tsc = r->tsc;
		t->rec_last_tsc = r->tsc;
	}
	if (t->excluded) {
		/* Keep the live map right for the threads we do report. */
		agg_on_excluded(m, ti, r);
		return;
	}
	switch (r->type) {
	case FMT_ALLOC:
		agg_on_alloc(m, t, ti, r);
		break;
	case FMT_FREE:
		agg_on_free(m, t, ti, r);
		break;
	case FMT_REALLOC:
		agg_on_realloc(m, t, ti, r, part);
		break;
	case FMT_ACQ:
	case FMT_ACQ_UNTIMED:
	case FMT_ACQ_SAMPLED:
		on_acq(m, t, ti, r, false, false);
		break;
	case FMT_ACQ_SHARED:
	case FMT_ACQ_SHARED_UNTIMED:
	case FMT_ACQ_SHARED_SAMPLED:
		on_acq(m, t, ti, r, true, false);
		break;
	case FMT_ACQ_WAIT:
		on_acq(m, t, ti, r, false, true);
		break;
	case FMT_ACQ_SHARED_WAIT:
		on_acq(m, t, ti, r, true, true);
		break;
	case FMT_TRY_FAIL:
		on_try_fail(m, t, ti, r);
		break;
	case FMT_REL:
		release(m, t, model_lock(m, r->f[FMT_REL_LOCK]), r->tsc);
		break;
	case FMT_REL_CONTENDED:
		on_rel_contended(m, t, r);
		break;
	case FMT_COND_WAIT:
		on_cond_wait(m, t, ti, r);
		break;
	case FMT_COND_WAKE:
		on_cond_wake(m, t, ti, r);
		break;
	case FMT_COND_SIGNAL:
		on_cond_signal(m, t, ti, r);
		break;
	case FMT_ALLOC_LOCK_WAIT:
		on_alloc_lock_wait(m, t, ti, r);
		break;
	case FMT_ALLOC_MIGRATED: /* the next allocator call moved CPU */
		t->pend_mig = true;
		busy(m, t, ti);
		break;
	case FMT_FUTEX_WAIT:
		on_futex_wait(m, t, ti, r);
		break;
	case FMT_FUTEX_WAKE:
		on_futex_wake(m, t, ti, r);
		break;
	case FMT_THREAD_START:
		t->started = true;
		t->parent = (uint32_t)r->f[FMT_THREAD_START_PARENT];
		break;
	case FMT_THREAD_EXIT:
		on_thread_exit(m, t);
		break;
	case FMT_DROP:
		m->tot.dropped += r->f[FMT_DROP_COUNT];
		t->dropped += r->f[FMT_DROP_COUNT];
		break;
	case FMT_LOCK_INIT:
		on_lock_init(m, r);
		break;
	case FMT_LOCK_DESTROY: {
		uint32_t li = model_lock(m, r->f[FMT_LOCK_DESTROY_LOCK]);
		m->lock[li].destroyed = true;
		lockfold_destroy(m, li);
		break;
	}
	case FMT_MARK:
		on_mark(m, r);
		break;
	default:
		break;
	}
}

/*
 * The per-event loop reads AHEAD core events before it handles them, and
 * asks the CPU for the live-map slots (pointers land anywhere in a table
 * of megabytes) and lock-table slots they will touch: their cache misses
 * overlap instead of stalling one event each. The events are handled in
 * the reader's order all the same; a metadata record is handled after
 * every core event read before it (its body is valid until the next
 * reader_next, which is not called in between).
 */
#define AHEAD 8
typedef struct pending {
	fmt_record_t rec;
	uint32_t stream, tid;
	reader_part_t part;
} pending_t;
typedef struct ahead {
	pending_t v[AHEAD];
	unsigned head, n;
} ahead_t;

/* The lock id of an event the look-ahead prefetches a lock's slots for
 * (acquisitions, failed trylocks, releases, destroys); 0 for any other
 * (ids start at 1). */
static uint64_t lock_id(const fmt_record_t *r)
{
	switch (r->type) {
	case FMT_ACQ:
	case FMT_ACQ_UNTIMED:
	case FMT_ACQ_SAMPLED:
	case FMT_ACQ_SHARED:
	case FMT_ACQ_SHARED_UNTIMED:
	case FMT_ACQ_SHARED_SAMPLED:
	case FMT_ACQ_WAIT:
	case FMT_ACQ_SHARED_WAIT:
		return r->f[FMT_ACQ_LOCK];
	case FMT_TRY_FAIL:
		return r->f[FMT_TRY_FAIL_LOCK];
	case FMT_REL:
		return r->f[FMT_REL_LOCK];
	case FMT_REL_CONTENDED:
		return r->f[FMT_REL_CONTENDED_LOCK];
	case FMT_LOCK_DESTROY:
		return r->f[FMT_LOCK_DESTROY_LOCK];
	default:
		return 0;
	}
}

static void ahead_prefetch(const model_t *m, const fmt_record_t *r)
{
	switch (r->type) {
	case FMT_ALLOC:
	case FMT_FREE:
		u64map_prefetch(&m->live, r->f[0]);
		break;
	case FMT_REALLOC:
		u64map_prefetch(&m->live, r->f[FMT_REALLOC_OLD]);
		u64map_prefetch(&m->live, r->f[FMT_REALLOC_NEW]);
		break;
	default: {
		uint64_t id = lock_id(r);
		if (id && !u64cache_get(&m->lock_cache, id))
			u64map_prefetch(&m->lock_by_id, id);
		break;
	}
	}
}

/* The second step for an event read ahead, once the map slots asked for
 * AHEAD / 2 events before are in the cache: a free's block record; a lock
 * event's lock record (a message's mutex, taken or destroyed long after
 * it was made, is out of the lock cache and its record out of the CPU's)
 * and, for an acquisition, its (lock, thread) slot in lt_map (lockthr: a
 * new key for each thread that takes a message's mutex). */
static void ahead_prefetch_rec(const model_t *m, const pending_t *p)
{
	const fmt_record_t *r = &p->rec;
	uint64_t ptr;
	switch (r->type) {
	case FMT_FREE:
		ptr = r->f[FMT_FREE_PTR];
		break;
	case FMT_REALLOC:
		ptr = r->f[FMT_REALLOC_OLD];
		break;
	default: {
		uint64_t id = lock_id(r);
		if (!id)
			return;
		uint32_t li1 = u64cache_get(&m->lock_cache, id);
		if (!li1) {
			const uint32_t *v = u64map_find(&m->lock_by_id, id);
			if (!v)
				return;
			li1 = *v + 1;
		}
		const char *l = (const char *)&m->lock[li1 - 1];
		prefetch_line(l);
		prefetch_line(l + 64);
		prefetch_line(l + 128);
		uint32_t ti1 = m->thr_of_stream[p->stream];
		if (r->type != FMT_TRY_FAIL && r->type != FMT_REL &&
		    r->type != FMT_REL_CONTENDED &&
		    r->type != FMT_LOCK_DESTROY && ti1 &&
		    m->thr[ti1 - 1].lt_lock != li1 - 1)
			u64map_prefetch(&m->lt_map,
			                (uint64_t)(li1 - 1) << 32 | (ti1 - 1));
		return;
	}
	}
	const uint32_t *v = u64map_find(&m->live, ptr);
	if (v)
		prefetch_line(&m->blk[*v]);
}

/* A new lock (a mutex made inside a message, by the million) costs a
 * miss in the lock map, where its id goes, and misses in the live map,
 * where its block is looked for (lock_find_block): asked for before the
 * events read ahead are handled, they come while those are. */
static void lock_new_prefetch(const model_t *m, const fmt_record_t *r)
{
	meta_lock_new_t p;
	if (meta_lock_new(r, &p) < 0)
		return;
	u64map_prefetch(&m->lock_by_id, p.id);
	if (p.kind == FMT_KIND_COND || !p.addr || !m->live.n)
		return;
	uint64_t a = p.addr & ~7ull;
	for (uint64_t back = 0; back < 8 * LOCK_LOOK_FIRST && back <= a;
	     back += 8)
		u64map_prefetch(&m->live, a - back);
}

/* One core event read by the loop (aggregate). */
static void core_event(model_t *m, const pending_t *p)
{
	const fmt_record_t *rec = &p->rec;
	uint32_t ti = m->thr_of_stream[p->stream];
	if (!ti) {
		ti = model_thread(m, p->tid) + 1;
		m->thr_of_stream[p->stream] = ti;
		m->thr[ti - 1].excluded =
		    !aggregate_thread_matches(m, &m->thr[ti - 1]);
	}
	if (p->part == READER_REALLOC_FREE) {
		/* Not an event of its own: the record comes again
		 * (READER_REALLOC_REST) at its end. An excluded thread's
		 * REALLOC leaves the live map alone. */
		if (!m->thr[ti - 1].excluded)
			agg_on_realloc_free(m, &m->thr[ti - 1], ti - 1, rec);
		return;
	}
	/* A FREE merges at its start (reader.h): tsc may step back. */
	if (!m->events)
		m->rec_since = rec->tsc;
	if (!m->events || rec->tsc < m->first_tsc)
		m->first_tsc = rec->tsc;
	if (rec->tsc > m->last_tsc)
		m->last_tsc = rec->tsc;
	on_event(m, ti - 1, rec, p->part);
}

/* Handles the oldest events read ahead until at most keep are left. */
static void ahead_drain(model_t *m, ahead_t *q, unsigned keep)
{
	while (q->n > keep) {
		core_event(m, &q->v[q->head]);
		q->head = (q->head + 1) % AHEAD;
		q->n--;
	}
}

void aggregate_begin(model_t *m, reader_t *r, const char *path, bool fold_locks,
                     const char **thread_filter)
{
	memset(m, 0, sizeof *m);
	m->path = path;
	m->info = *reader_info(r);
	m->ns_per_tick = m->info.ns_per_tick;
	m->slow_ticks = (uint64_t)(TH_SLOW_ALLOC_NS / m->ns_per_tick);
	m->churn_ticks = (uint64_t)(TH_CHURN_LIFETIME_NS / m->ns_per_tick);
	m->skew_ticks = (uint64_t)(REUSE_SKEW_NS / m->ns_per_tick);
	m->thread_filter = thread_filter;
	m->fold_locks = fold_locks;
	m->pid = m->info.have_process ? m->info.process.pid : 0;
}

int aggregate_feed(model_t *m, reader_t *r, uint64_t max_events)
{
	reader_ev_t ev;
	int rc = 0;
	uint64_t n = 0;
	uint32_t ns = reader_streams(r);

	/* The clock stays the one the model began with: its times so far
	 * were converted with it. */
	m->info = *reader_info(r);
	m->info.ns_per_tick = m->ns_per_tick;
	if (!m->thr_of_stream || ns > m->nstream) {
		m->thr_of_stream = xrealloc(
		    m->thr_of_stream, (ns + 1) * sizeof *m->thr_of_stream);
		memset(m->thr_of_stream + m->nstream, 0,
		       (ns + 1 - m->nstream) * sizeof *m->thr_of_stream);
		m->nstream = ns;
	}
	ahead_t q = {.n = 0};
	while ((!max_events || n++ < max_events) &&
	       (rc = reader_next(r, &ev)) > 0) {
		if (FMT_IS_META(ev.rec->type)) {
			/* In order: the events read ahead first; the body
			 * stays valid, the reader is not called meanwhile. */
			if (ev.rec->type == FMT_LOCK_NEW)
				lock_new_prefetch(m, ev.rec);
			ahead_drain(m, &q, 0);
			aggregate_meta(m, ev.rec);
			continue;
		}
		ahead_drain(m, &q, AHEAD - 1);
		ahead_prefetch(m, ev.rec); /* not the copy, just stored */
		pending_t *p = &q.v[(q.head + q.n++) % AHEAD];
		p->rec = *ev.rec;
		p->stream = ev.stream;
		p->tid = ev.tid;
		p->part = ev.part;
		if (q.n > AHEAD / 2)
			ahead_prefetch_rec(
			    m, &q.v[(q.head + q.n - 1 - AHEAD / 2) % AHEAD]);
	}
	ahead_drain(m, &q, 0);
	if (max_events && n > max_events)
		return 1; /* stopped by max_events: more may follow */
	if (rc < 0) {
		m->info = *reader_info(r);
		m->info.ns_per_tick = m->ns_per_tick;
	}
	return rc < 0 ? -1 : 0;
}

void aggregate_end(model_t *m)
{
	if (!m->paused && m->last_tsc > m->rec_since)
		m->rec_ticks += m->last_tsc - m->rec_since;
	lockfold_finish(m);
	futex_words(m);
	/* Holds still open at the end: their allocator calls count. */
	for (size_t i = 0; i < m->nthr; i++) {
		thread_t *t = &m->thr[i];
		for (size_t k = 0; k < t->nheld; k++)
			charge_hold(m, t, &t->held[k], false);
	}
}

int aggregate(model_t *m, reader_t *r, const char *path, bool fold_locks,
              const char **thread_filter)
{
	aggregate_begin(m, r, path, fold_locks, thread_filter);
	int rc = aggregate_feed(m, r, 0);
	aggregate_end(m);
	return rc;
}
