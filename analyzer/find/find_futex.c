/*
 * find_futex.c - the futex lock word detector (see detectors.h):
 *
 *   futex_lock   L, the time waiters lost on the lock words of one class
 *                (words some thread both waited on and woke: aggregate.c),
 *                never more than the time the trace covers. The waits of
 *                signal words (waiting for work) are never counted.
 *
 * A futex word is seen only where it reaches the kernel: a FUTEX_WAIT
 * that slept (its waiter's stack and wait) and a FUTEX_WAKE that woke
 * someone (the waker's stack: it released the lock, the holder's side).
 * How often the word was taken and how long it was held are not seen,
 * and the finding says so. It does not overlap alloc_under_lock: a futex
 * word has no holds, so no allocator call is ever charged to it.
 */
#include "detectors.h"

#include "symbols.h"
#include "thresholds.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lock words of one class, summed, and its waiter and waker stacks. */
typedef struct fword {
	uint64_t words, waits, wait_ns, wait_max, wakes, woken;
	uint32_t top;     /* the lock word with most wait */
	uint32_t waiters; /* threads that waited on its lock words */
	uint32_t wakers;  /* threads that woke them */
	uint32_t nstk[2]; /* [0] waiter, [1] waker stacks of the class */
	uint32_t stk[2];  /* the heaviest of each (by wait; by wakes) */
	uint64_t stk_v[2];
} fword_t;

/* One stack of one class's lock words, its pairs summed. */
typedef struct fstk {
	uint32_t cls, stack;
	uint64_t v;
} fstk_t;

/* Sums the pairs of kind k (LS_WAITER: side 0, valued by wait;
 * LS_HOLDER: side 1, by wakes) of each class's lock words by stack,
 * counts the stacks and keeps the heaviest. A futex word's pairs are its
 * own (it has no init or acquisition site to share: model_pair), so a
 * signal word in the same class adds none. */
static void side_stacks(const model_t *m, fword_t *v, int k, int side)
{
	const lstab_t *t = &m->ls[k];
	u64map_t map = {0};
	fstk_t *s = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < t->n; i++) {
		const lspair_t *p = &t->v[i];
		const lock_t *l = &m->lock[p->lock];
		if (l->kind != FMT_KIND_FUTEX || !l->futex_lockish ||
		    l->cls == NONE32)
			continue;
		int added;
		uint32_t *x =
		    u64map_put(&map, (uint64_t)l->cls << 32 | p->stack, &added);
		if (added) {
			VEC_RESERVE(s, cap, n);
			s[n] = (fstk_t){l->cls, p->stack, 0};
			*x = (uint32_t)n++;
		}
		s[*x].v += side ? p->n : p->ns;
	}
	for (size_t i = 0; i < n; i++) {
		fword_t *w = &v[s[i].cls];
		if (!w->nstk[side]++ || s[i].v > w->stk_v[side]) {
			w->stk[side] = s[i].stack;
			w->stk_v[side] = s[i].v;
		}
	}
	free(s);
	u64map_free(&map);
}

static bool same_function(const frame_t *a, const frame_t *b)
{
	if (a->function && b->function)
		return strcmp(a->function, b->function) == 0;
	return a->address == b->address;
}

/* Where stack si (one side: waiters or wakers) parts from stack other
 * (the other side): its first user frame past the innermost frames both
 * share, as a label into buf, or dflt. A lock that waits and wakes
 * through one wrapper (`futex()`) is then named by its lock and unlock
 * functions, not the wrapper twice. */
#define SIDE_DEPTH 32
static const char *side_label(model_t *m, uint32_t si, uint32_t other,
                              const char *dflt, char *buf, size_t len)
{
	frame_t a[SIDE_DEPTH], b[SIDE_DEPTH];
	int na = stack_view(m, si, a, SIDE_DEPTH);
	int nb = stack_view(m, other, b, SIDE_DEPTH);
	int k = 0;
	while (k + 1 < na && k < nb && same_function(&a[k], &b[k]))
		k++;
	if (na == 0 || (!a[k].function && !a[k].module))
		return dflt;
	return frame_label(&a[k], buf, len);
}

/* Two futex_lock findings whose words carry one label (both "first
 * waited on in" one function) are told apart by the first frame where
 * their waiters' stacks part, else their wakers': added to the named
 * word's label. */
static void part_labels(model_t *m, findings_t *out, size_t from)
{
	frame_t a[SIDE_DEPTH], b[SIDE_DEPTH];
	char la[700], lb[700], fr[512], nl[900];
	for (size_t i = from; i < out->n; i++)
		for (size_t j = i + 1; j < out->n; j++) {
			finding_t *x = &out->v[i], *y = &out->v[j];
			lock_t *lx = &m->lock[x->lock], *ly = &m->lock[y->lock];
			if (lx->name || ly->name ||
			    strcmp(lock_label(m, lx, la, sizeof la),
			           lock_label(m, ly, lb, sizeof lb)) != 0)
				continue;
			for (int side = 0; side < 2; side++) {
				uint32_t sx = side ? x->stack2 : x->stack,
				         sy = side ? y->stack2 : y->stack;
				int na = stack_view(m, sx, a, SIDE_DEPTH);
				int nb = stack_view(m, sy, b, SIDE_DEPTH);
				int k = 0;
				while (k < na && k < nb &&
				       same_function(&a[k], &b[k]))
					k++;
				if (k >= na && k >= nb)
					continue; /* no frame parts them */
				const char *how =
				    side ? "woken in" : "waited on in";
				if (k < na) {
					snprintf(
					    nl, sizeof nl, "%s, %s %s", la, how,
					    frame_label(&a[k], fr, sizeof fr));
					lx->label = arena_strdup(&m->arena, nl);
				}
				if (k < nb) {
					snprintf(
					    nl, sizeof nl, "%s, %s %s", lb, how,
					    frame_label(&b[k], fr, sizeof fr));
					ly->label = arena_strdup(&m->arena, nl);
				}
				break;
			}
		}
}

void find_futex_locks(model_t *m, findings_t *out)
{
	if (!m->ncls)
		return;
	size_t from = out->n;
	fword_t *v = xcalloc(m->ncls, sizeof *v);
	for (uint32_t i = 0; i < m->ncls; i++)
		v[i].top = v[i].stk[0] = v[i].stk[1] = NONE32;
	for (size_t i = 0; i < m->nlock; i++) {
		const lock_t *l = &m->lock[i];
		if (l->kind != FMT_KIND_FUTEX || !l->futex_lockish ||
		    l->cls == NONE32)
			continue;
		fword_t *w = &v[l->cls];
		w->words++;
		w->waits += l->s.futex_waits;
		w->wait_ns += l->s.wait_ns;
		w->wakes += l->s.futex_wakes;
		w->woken += l->s.futex_woken;
		if (l->s.wait_max > w->wait_max)
			w->wait_max = l->s.wait_max;
		if (w->top == NONE32 ||
		    l->s.wait_ns > m->lock[w->top].s.wait_ns)
			w->top = (uint32_t)i;
	}
	side_stacks(m, v, LS_WAITER, 0);
	side_stacks(m, v, LS_HOLDER, 1);
	/* Families: the classes whose words are waited on at one site and
	 * woken at one site (the latches of one lock type, MariaDB's InnoDB
	 * words were 5 of its top 7 findings) are one finding, summed into
	 * the first class, its lead; each keeps its own wait for the list.
	 * These arrays are indexed by class, below ncls (so is v). */
	uint32_t *fam = xmalloc(m->ncls * sizeof *fam);
	uint64_t *own = xmalloc(m->ncls * sizeof *own);
	uint32_t *own_top = xmalloc(m->ncls * sizeof *own_top);
	uint32_t *nfam = xcalloc(m->ncls, sizeof *nfam);
	u64map_t fm = {0};
	for (uint32_t c = 0; c < m->ncls; c++) {
		fam[c] = c;
		own[c] = v[c].wait_ns;
		own_top[c] = v[c].top;
		uint64_t a = stack_site_pc(m, v[c].stk[0]),
		         b = stack_site_pc(m, v[c].stk[1]);
		if (!v[c].words || !a)
			continue;
		int added;
		uint32_t *x = u64map_put(
		    &fm, (a * 0x9e3779b97f4a7c15ull ^ b) & ~(1ull << 63),
		    &added);
		if (added)
			*x = c;
		fam[c] = *x;
		nfam[*x]++;
		if (*x == c)
			continue;
		fword_t *L = &v[*x], *w = &v[c];
		L->words += w->words;
		L->waits += w->waits;
		L->wait_ns += w->wait_ns;
		L->wakes += w->wakes;
		L->woken += w->woken;
		if (w->wait_max > L->wait_max)
			L->wait_max = w->wait_max;
		if (m->lock[w->top].s.wait_ns > m->lock[L->top].s.wait_ns)
			L->top = w->top;
		for (int k = 0; k < 2; k++) {
			L->nstk[k] += w->nstk[k];
			if (w->stk_v[k] > L->stk_v[k]) {
				L->stk[k] = w->stk[k];
				L->stk_v[k] = w->stk_v[k];
			}
		}
	}
	u64map_free(&fm);
	/* Threads, each once per family however many of its words it used:
	 * bit 0 waited, bit 1 woke. */
	u64map_t thr = {0};
	for (size_t i = 0; i < m->nlt; i++) {
		const lockthr_t *lt = &m->lt[i];
		const lock_t *l = &m->lock[lt->lock];
		if (!l->futex_lockish || l->cls == NONE32)
			continue;
		int added;
		uint32_t fc = fam[l->cls];
		uint32_t *seen =
		    u64map_put(&thr, (uint64_t)fc << 32 | lt->thread, &added);
		if (added)
			*seen = 0;
		if (lt->contended && !(*seen & 1)) {
			v[fc].waiters++;
			*seen |= 1;
		}
		if (lt->futex_wakes && !(*seen & 2)) {
			v[fc].wakers++;
			*seen |= 2;
		}
	}
	u64map_free(&thr);
	uint64_t dur = model_recorded_ns(m);
	for (uint32_t c = 0; c < m->ncls; c++) {
		const fword_t *w = &v[c];
		if (fam[c] != c || !w->words || w->waits < TH_FUTEX_MIN_WAITS ||
		    (double)w->wait_ns * 1e6 <
		        (double)TH_FUTEX_MIN_LOST_PPM * (double)dur)
			continue;
		double score = (double)w->wait_ns;
		if (dur && score > (double)dur)
			score = (double)dur;
		finding_t *f = finding_add(out, m, FK_FUTEX_LOCK, score);
		/* A family is shown by the class of its heaviest word. */
		f->cls = m->lock[w->top].cls;
		f->lock = w->top;
		f->stack = w->stk[0];
		f->stack2 = w->stk[1];
		if (nfam[c] > 1) {
			f->member_unit = "lock_wait_ns";
			for (uint32_t k = c; k < m->ncls; k++)
				if (fam[k] == k ? k == c : fam[k] == c)
					finding_add_member(f, own_top[k],
					                   (double)own[k]);
			finding_put(f, EV_LOCK_WORD_CLASSES, nfam[c]);
		}
		finding_put(f, EV_LOCK_WORDS, (double)w->words);
		finding_put(f, EV_FUTEX_WAITS, (double)w->waits);
		finding_put(f, EV_LOCK_WAIT_NS, (double)w->wait_ns);
		finding_put(f, EV_WAIT_MAX_NS, (double)w->wait_max);
		finding_put(f, EV_MEAN_WAIT_NS,
		            ratio((double)w->wait_ns, (double)w->waits));
		finding_put(f, EV_FUTEX_WAKES, (double)w->wakes);
		finding_put(f, EV_FUTEX_WOKEN, (double)w->woken);
		finding_put(f, EV_WAITING_THREADS, w->waiters);
		finding_put(f, EV_WAKING_THREADS, w->wakers);
		finding_put(f, EV_WAITER_STACKS, w->nstk[0]);
		finding_put(f, EV_WAKER_STACKS, w->nstk[1]);
		finding_put(f, EV_COVERED_NS, (double)dur);
		char a[256], b[256];
		snprintf(
		    f->advice, sizeof f->advice,
		    "Threads wait for this lock in %s, woken when a holder "
		    "releases it in %s: shorten the critical sections "
		    "that end there, or split what the lock guards. A "
		    "futex word shows no hold times, so time those "
		    "sections (perf) to find what makes them long.",
		    side_label(m, f->stack, f->stack2, "the waiters' code", a,
		               sizeof a),
		    side_label(m, f->stack2, f->stack, "the wakers' code", b,
		               sizeof b));
	}
	part_labels(m, out, from);
	free(fam);
	free(own);
	free(own_top);
	free(nfam);
	free(v);
}
