/*
 * lockfold.c - folding destroyed lock instances (model.h). A server that
 * makes a mutex inside every message, connection or request destroys them
 * by the million (rsyslogd: 3.49M in an 8 s window, a 1.4 GB lock table);
 * a record each would make the analyzer's memory grow with the window.
 *
 * A lock destroyed while no thread holds it is retired, when nothing
 * names it alone: an unnamed mutex, rwlock or spinlock, never used with a
 * condition, not its site group's first instance (the lock its pairs are
 * filed under), acquired fewer times than a starvation finding needs
 * (TH_STARVE_MIN_OPS; its lockthr entries then never make one), with a
 * defined init stack (else first site), so that classes.c keys it by its
 * stacks, never by its index. The shim gives a later lock at the same
 * address a new id (docs/trace-format.md, LOCK_DESTROY), so a retired id
 * is not seen again.
 *
 * Retired records stay in m->lock until a compaction, which drops those
 * no output can name: of each fold tuple (lock_fold_t), all but its first
 * instance (classes_build takes a class's site and kind from its first
 * instance) and its best by (wait, acquisitions, index) (a class's
 * representative); and of all retired ones, all but the FOLD_KEEP_TOP
 * best (the instances the JSON lists). A dropped instance's counters are
 * summed into its tuple, which counts for its first instance's class
 * (lock_t.fold). A nest_t of a dropped lock names the tuple's first
 * instance instead (the same class) and is merged into the first nest_t
 * that then names the same two locks (find_nested_locks takes a class
 * pair's site from its first nest_t); it keeps whether the inner lock's
 * address was above or below the outer's (nest_t.mixed).
 *
 * Compaction keeps the records' order, so the order of the kept ones
 * (their creation order) and every tie broken by it stay as without
 * folding; it renumbers every lock index the model holds.
 */
#include "lockfold.h"

#include "thresholds.h"
#include "trace_format.h"

#include <stdlib.h>
#include <string.h>

/* Compact when this many records (and as many as the live ones) are
 * retired: each compaction costs O(records), paid for by the retirements
 * since the last one. */
#define FOLD_COMPACT_MIN 4096

static uint64_t tuple_hash(const lock_t *l)
{
	uint64_t h = 14695981039346656037ull;
	const uint32_t v[5] = {l->kind, l->init_stack, l->first_site,
	                       l->in_block ? l->blk_stack : NONE32, l->hist};
	for (int i = 0; i < 5; i++)
		h = (h ^ v[i]) * 0x100000001b3ull;
	return h == U64MAP_EMPTY ? h - 1 : h;
}

/* The fold tuple of retired lock l (created empty). May allocate. */
static uint32_t fold_of(model_t *m, const lock_t *l)
{
	uint32_t blk = l->in_block ? l->blk_stack : NONE32;
	int added;
	uint32_t *head = u64map_put(&m->fold_map, tuple_hash(l), &added);
	uint32_t first = added ? 0 : *head + 1;
	for (uint32_t f = first; f; f = m->fold[f - 1].next) {
		const lock_fold_t *g = &m->fold[f - 1];
		if (g->kind == l->kind && g->init_stack == l->init_stack &&
		    g->first_site == l->first_site && g->blk_stack == blk &&
		    g->hist == l->hist)
			return f - 1;
	}
	*head = (uint32_t)m->nfold; /* the new one heads the chain */
	VEC_RESERVE(m->fold, m->capfold, m->nfold);
	lock_fold_t *g = &m->fold[m->nfold];
	memset(g, 0, sizeof *g);
	g->kind = l->kind;
	g->init_stack = l->init_stack;
	g->first_site = l->first_site;
	g->blk_stack = blk;
	g->hist = l->hist;
	g->next = first;
	return (uint32_t)m->nfold++;
}

static bool stack_known(const model_t *m, uint32_t si)
{
	return si != NONE32 && m->stk[si].defined && m->stk[si].n;
}

/* Whether lock li may be retired (the file header). */
static bool retirable(const model_t *m, uint32_t li)
{
	const lock_t *l = &m->lock[li];
	if (!m->fold_locks || l->retired || l->nheld || !l->defined ||
	    l->name || l->is_cond || l->queue_cond || l->queue_named ||
	    l->s.acq >= TH_STARVE_MIN_OPS)
		return false;
	if (l->kind != FMT_KIND_MUTEX && l->kind != FMT_KIND_RWLOCK &&
	    l->kind != FMT_KIND_SPIN)
		return false;
	if (l->hist && m->lhist[l->hist - 1].rep == li)
		return false;
	/* classes.c's site: the init stack's, else the first site's. */
	return l->init_stack != NONE32 ? stack_known(m, l->init_stack)
	                               : stack_known(m, l->first_site);
}

void lockfold_destroy(model_t *m, uint32_t li)
{
	if (!retirable(m, li))
		return;
	m->lock[li].retired = true;
	if (++m->nretired >= FOLD_COMPACT_MIN && m->nretired * 2 >= m->nlock)
		lockfold_compact(m);
}

/* Whether retired lock a ranks before b: more wait, then more
 * acquisitions, then created first (a lower index). */
static bool better(const model_t *m, uint32_t a, uint32_t b)
{
	const lockstat_t *x = &m->lock[a].s, *y = &m->lock[b].s;
	if (x->wait_ns != y->wait_ns)
		return x->wait_ns > y->wait_ns;
	if (x->acq != y->acq)
		return x->acq > y->acq;
	return a < b;
}

/* A heap of the FOLD_KEEP_TOP best retired locks, its worst at [0]. */
typedef struct top {
	uint32_t v[FOLD_KEEP_TOP];
	size_t n;
} top_t;

static void top_down(const model_t *m, top_t *t, size_t i)
{
	for (;;) {
		size_t w = i, a = 2 * i + 1, b = a + 1;
		if (a < t->n && better(m, t->v[w], t->v[a]))
			w = a;
		if (b < t->n && better(m, t->v[w], t->v[b]))
			w = b;
		if (w == i)
			return;
		uint32_t x = t->v[i];
		t->v[i] = t->v[w];
		t->v[w] = x;
		i = w;
	}
}

static void top_add(const model_t *m, top_t *t, uint32_t li)
{
	if (t->n < FOLD_KEEP_TOP) {
		size_t i = t->n++;
		t->v[i] = li;
		while (i && better(m, t->v[(i - 1) / 2], t->v[i])) {
			uint32_t x = t->v[i];
			t->v[i] = t->v[(i - 1) / 2];
			t->v[(i - 1) / 2] = x;
			i = (i - 1) / 2;
		}
	} else if (better(m, li, t->v[0])) {
		t->v[0] = li;
		top_down(m, t, 0);
	}
}

/*
 * The maps keyed by lock index are rebuilt at each compaction at the size
 * they had before it, not at their kept count: the next locks fill them
 * again before the next compaction, and a map sized to the kept count grew
 * back by doubling, a rehash of every key at each step (rsyslogd's window:
 * 46 compactions, the (lock, thread) map's rehashes 1.7% of the report's
 * time). The memory is what the map held already.
 */

/* Rebuilds a pair table's map for renumbered locks. */
static void rekey_pairs(lstab_t *t)
{
	uint32_t was = t->map.n;
	u64map_free(&t->map);
	memset(&t->map, 0, sizeof t->map);
	memset(&t->cache, 0, sizeof t->cache);
	u64map_reserve(&t->map, was > t->n ? was : (uint32_t)t->n);
	for (size_t i = 0; i < t->n; i++) {
		int added;
		uint64_t k = (uint64_t)t->v[i].lock << 32 | t->v[i].stack;
		*u64map_put(&t->map, k, &added) = (uint32_t)i;
	}
}

/* Renumbers the nests: a kept lock i is nx[i], a dropped one (nx[i]
 * NONE32) its tuple's first instance, proxy[i]; a nest that then names
 * the same two locks as an earlier one is merged into it. Open holds'
 * nest indexes follow. */
static void renest(model_t *m, const uint32_t *nx, const uint32_t *proxy)
{
	uint32_t *to = xmalloc((m->nnest + 1) * sizeof *to);
	size_t n = 0;
	uint32_t was = m->nest_map.n;
	u64map_free(&m->nest_map);
	memset(&m->nest_map, 0, sizeof m->nest_map);
	u64map_reserve(&m->nest_map, was);
	for (size_t i = 0; i < m->nnest; i++) {
		nest_t p = m->nest[i];
		uint32_t o = nx[p.outer], in = nx[p.inner];
		/* A dropped side's nest is mixed (lockfold_compact). */
		o = o != NONE32 ? o : proxy[p.outer];
		in = in != NONE32 ? in : proxy[p.inner];
		p.outer = o;
		p.inner = in;
		int added;
		uint32_t *v =
		    u64map_put(&m->nest_map, (uint64_t)o << 32 | in, &added);
		if (added) {
			*v = (uint32_t)n;
			m->nest[n++] = p;
			to[i] = *v;
			continue;
		}
		/* A second nest of the two: merged into the first (its
		 * locks renumbered, m->lock already compacted). */
		nest_t *q = &m->nest[*v];
		if (!q->mixed) {
			uint64_t ao = m->lock[q->outer].addr,
			         ai = m->lock[q->inner].addr;
			q->up = ai > ao ? q->n : 0;
			q->down = ai < ao ? q->n : 0;
			q->mixed = true;
		}
		q->n += p.n;
		q->inner_contended += p.inner_contended;
		q->inner_wait_ns += p.inner_wait_ns;
		q->inner_hold_ns += p.inner_hold_ns;
		q->try_fail += p.try_fail;
		if (!p.mixed) { /* both its locks kept */
			uint64_t ao = m->lock[o].addr, ai = m->lock[in].addr;
			p.up = ai > ao ? p.n : 0;
			p.down = ai < ao ? p.n : 0;
		}
		q->up += p.up;
		q->down += p.down;
		to[i] = *v;
	}
	m->nnest = n;
	for (size_t i = 0; i < m->nthr; i++) {
		thread_t *t = &m->thr[i];
		for (size_t k = 0; k < t->nheld; k++)
			if (t->held[k].nest)
				t->held[k].nest = to[t->held[k].nest - 1] + 1;
	}
	free(to);
}

/* Renumbers every lock index the model holds: lock i becomes nx[i]
 * (never NONE32 for a lock anything but its lockthr entries and nests
 * refer to); drops the lockthr entries of dropped locks. */
static void renumber(model_t *m, const uint32_t *nx, const uint32_t *proxy)
{
	for (size_t i = 0; i < m->nlhist; i++) {
		lockhist_t *h = &m->lhist[i];
		h->rep = nx[h->rep];
		if (h->key >> 63)
			h->key = 1ull << 63 | h->rep;
	}
	uint32_t was = m->lhist_map.n;
	u64map_free(&m->lhist_map);
	memset(&m->lhist_map, 0, sizeof m->lhist_map);
	u64map_reserve(&m->lhist_map,
	               was > m->nlhist ? was : (uint32_t)m->nlhist);
	for (size_t i = 0; i < m->nlhist; i++) {
		int added;
		*u64map_put(&m->lhist_map, m->lhist[i].key, &added) =
		    (uint32_t)i;
	}
	for (int k = 0; k < LS_NKINDS; k++) {
		lstab_t *t = &m->ls[k];
		for (size_t i = 0; i < t->n; i++)
			t->v[i].lock = nx[t->v[i].lock];
		rekey_pairs(t);
	}
	renest(m, nx, proxy);
	size_t n = 0;
	for (size_t i = 0; i < m->nlt; i++) {
		lockthr_t e = m->lt[i];
		if (nx[e.lock] == NONE32)
			continue;
		e.lock = nx[e.lock];
		m->lt[n++] = e;
	}
	m->nlt = n;
	was = m->lt_map.n;
	u64map_free(&m->lt_map);
	memset(&m->lt_map, 0, sizeof m->lt_map);
	u64map_reserve(&m->lt_map, was);
	for (size_t i = 0; i < n; i++) {
		int added;
		*u64map_put(&m->lt_map,
		            (uint64_t)m->lt[i].lock << 32 | m->lt[i].thread,
		            &added) = (uint32_t)i;
	}
	for (size_t i = 0; i < m->nthr; i++) {
		thread_t *t = &m->thr[i];
		t->lt_lock = NONE32;
		for (size_t k = 0; k < t->nheld; k++)
			t->held[k].lock = nx[t->held[k].lock];
		if (t->pend_lw_lock)
			t->pend_lw_lock = nx[t->pend_lw_lock - 1] + 1;
	}
}

void lockfold_compact(model_t *m)
{
	size_t nl = m->nlock;
	uint32_t *fi = xmalloc((nl + 1) * sizeof *fi);
	top_t top = {.n = 0};
	/* Per fold tuple: its first and its best retired record (index +
	 * 1); the kept ones of earlier compactions are among them. Found in
	 * the same pass as the tuples: a record is read once (a table of
	 * 140k records of 360 bytes is out of the CPU's cache). */
	size_t capf = m->nfold + 16;
	uint32_t *first = xcalloc(capf, sizeof *first);
	uint32_t *best = xcalloc(capf, sizeof *best);
	for (size_t i = 0; i < nl; i++) {
		fi[i] = NONE32;
		if (!m->lock[i].retired)
			continue;
		uint32_t f = fold_of(m, &m->lock[i]); /* may grow m->fold */
		fi[i] = f;
		top_add(m, &top, (uint32_t)i);
		if (f >= capf) {
			size_t was = capf;
			capf = 2 * capf > f + 1 ? 2 * capf : f + 1;
			first = xrealloc(first, capf * sizeof *first);
			best = xrealloc(best, capf * sizeof *best);
			memset(first + was, 0, (capf - was) * sizeof *first);
			memset(best + was, 0, (capf - was) * sizeof *best);
		}
		if (!first[f])
			first[f] = (uint32_t)i + 1;
		if (!best[f] || better(m, (uint32_t)i, best[f] - 1))
			best[f] = (uint32_t)i + 1;
	}
	uint8_t *keep = xcalloc(nl + 1, 1);
	for (size_t k = 0; k < top.n; k++)
		keep[top.v[k]] = 1;
	for (size_t i = 0; i < nl; i++) {
		uint32_t f = fi[i];
		if (f != NONE32 && !keep[i] && first[f] != i + 1 &&
		    best[f] != i + 1)
			keep[i] = 2; /* dropped */
	}
	/* A dropped lock's nests keep how its address compared, while the
	 * records are still there. */
	for (size_t i = 0; i < m->nnest; i++) {
		nest_t *p = &m->nest[i];
		if (p->mixed || (keep[p->outer] != 2 && keep[p->inner] != 2))
			continue;
		uint64_t ao = m->lock[p->outer].addr,
		         ai = m->lock[p->inner].addr;
		p->up = ai > ao ? p->n : 0;
		p->down = ai < ao ? p->n : 0;
		p->mixed = true;
	}
	uint32_t *nx = fi; /* reused: the new index of each record */
	uint32_t *proxy = xmalloc((nl + 1) * sizeof *proxy);
	size_t n = 0;
	for (size_t i = 0; i < nl; i++) {
		lock_t *l = &m->lock[i];
		uint32_t f = fi[i];
		proxy[i] = NONE32;
		if (keep[i] == 2) {
			m->fold[f].n++;
			lockstat_add(&m->fold[f].s, &l->s);
			m->folded++;
			/* Its tuple's first record: before it, so renumbered.
			 */
			proxy[i] = nx[first[f] - 1];
			nx[i] = NONE32;
			continue;
		}
		nx[i] = (uint32_t)n;
		if (n != i)
			m->lock[n] = *l;
		n++;
	}
	m->nlock = n;
	renumber(m, nx, proxy);
	free(proxy);
	uint32_t was = m->lock_by_id.n;
	u64map_free(&m->lock_by_id);
	memset(&m->lock_by_id, 0, sizeof m->lock_by_id);
	memset(&m->lock_cache, 0, sizeof m->lock_cache);
	u64map_reserve(&m->lock_by_id, was);
	for (size_t i = 0; i < n; i++) {
		lock_t *l = &m->lock[i];
		if (l->cond_mutex)
			l->cond_mutex = nx[l->cond_mutex - 1] + 1;
		if (l->retired)
			continue; /* its id is not seen again */
		int added;
		*u64map_put(&m->lock_by_id, l->id, &added) = (uint32_t)i;
	}
	/* The records kept retired are at most two per tuple and
	 * FOLD_KEEP_TOP: they count against the next compaction's threshold
	 * as the live ones do. */
	m->nretired = 0;
	m->fold_compactions++;
	/* Give back a table left mostly empty (a burst of live locks
	 * gone); a small one is kept, not grown again at every cycle. */
	if (m->caplock > 65536 && m->nlock < m->caplock / 8) {
		m->caplock = m->nlock * 2 + 16;
		m->lock = xrealloc(m->lock, m->caplock * sizeof *m->lock);
	}
	free(keep);
	free(first);
	free(best);
	free(fi);
}

void lockfold_finish(model_t *m)
{
	if (!m->nfold && !m->nretired)
		return;
	lockfold_compact(m);
	/* Each tuple's first record is kept by every compaction: the
	 * tuple's dropped instances count for it. */
	uint32_t *first = xcalloc(m->nfold + 1, sizeof *first);
	for (size_t i = 0; i < m->nlock; i++) {
		const lock_t *l = &m->lock[i];
		if (!l->retired)
			continue;
		uint32_t f = fold_of(m, l);
		if (!first[f])
			first[f] = (uint32_t)i + 1;
	}
	for (size_t f = 0; f < m->nfold; f++)
		if (first[f] && m->fold[f].n)
			m->lock[first[f] - 1].fold = (uint32_t)f + 1;
	free(first);
}
