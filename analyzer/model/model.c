/*
 * model.c - the model's tables: id -> index lookups that create entries on
 * first use, pair tables, labels, and freeing. See model.h.
 */
#include "model.h"

#include "trace_format.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double hist_quantile(const hist_t *h, double q)
{
	uint64_t total = 0, acc = 0;
	for (int i = 0; i < HIST_BUCKETS; i++)
		total += h->n[i];
	if (!total)
		return 0;
	for (int i = 0; i < HIST_BUCKETS; i++) {
		acc += h->n[i];
		if ((double)acc >= q * (double)total)
			return (double)(2ull << i);
	}
	return (double)(1ull << HIST_BUCKETS);
}

void lockstat_add(lockstat_t *d, const lockstat_t *s)
{
#define LOCK_ADD_S(name) d->name += s->name;
#define LOCK_ADD_M(name)                                                       \
	if (s->name > d->name)                                                 \
		d->name = s->name;
#define LOCK_ADD_(name, how, doc) LOCK_ADD_##how(name)
	LOCK_COUNTERS(LOCK_ADD_)
#undef LOCK_ADD_
#undef LOCK_ADD_S
#undef LOCK_ADD_M
}

uint32_t lock_group(model_t *m, lock_t *l)
{
	if (!l->hist) {
		uint64_t key = l->init_stack != NONE32 ? l->init_stack
		               : l->first_site != NONE32
		                   ? l->first_site
		                   : (1ull << 63) | (uint64_t)(l - m->lock);
		int added;
		uint32_t *v = u64map_put(&m->lhist_map, key, &added);
		if (added) {
			VEC_RESERVE(m->lhist, m->caplhist, m->nlhist);
			memset(&m->lhist[m->nlhist], 0, sizeof *m->lhist);
			m->lhist[m->nlhist].rep = (uint32_t)(l - m->lock);
			m->lhist[m->nlhist].key = key;
			*v = (uint32_t)m->nlhist++;
		}
		l->hist = *v + 1;
	}
	return l->hist - 1;
}

hist_t *lock_hist(model_t *m, lock_t *l, int which)
{
	uint32_t g = lock_group(m, l); /* may move lhist */
	lockhist_t *h = &m->lhist[g];
	return which ? &h->hold : &h->wait;
}

uint32_t model_stack_slow(model_t *m, uint64_t id)
{
	int added;
	if (id == 0 || id == U64MAP_EMPTY)
		return NONE32;
	uint32_t *v = u64map_put(&m->stk_by_id, id, &added);
	if (added) {
		VEC_RESERVE(m->stk, m->capstk, m->nstk);
		stk_t *s = &m->stk[m->nstk];
		memset(s, 0, sizeof *s);
		s->id = id;
		*v = (uint32_t)m->nstk++;
	}
	u64cache_set(&m->stk_cache, id, *v);
	return *v;
}

uint32_t model_lock_slow(model_t *m, uint64_t id)
{
	int added;
	if (id == U64MAP_EMPTY)
		id = U64MAP_EMPTY - 1;
	uint32_t *v = u64map_put(&m->lock_by_id, id, &added);
	if (added) {
		VEC_RESERVE(m->lock, m->caplock, m->nlock);
		lock_t *l = &m->lock[m->nlock];
		memset(l, 0, sizeof *l);
		l->id = id;
		l->kind = LOCK_KIND_UNKNOWN;
		l->init_stack = l->first_site = NONE32;
		l->cls = NONE32;
		*v = (uint32_t)m->nlock++;
		if (m->nlock > m->lock_peak)
			m->lock_peak = m->nlock;
	}
	u64cache_set(&m->lock_cache, id, *v);
	return *v;
}

uint32_t model_thread(model_t *m, uint32_t tid)
{
	int added;
	uint32_t *v = u64map_put(&m->thr_by_tid, tid, &added);
	if (added) {
		VEC_RESERVE(m->thr, m->capthr, m->nthr);
		thread_t *t = &m->thr[m->nthr];
		memset(t, 0, sizeof *t);
		t->tid = tid;
		t->lt_lock = NONE32;
		*v = (uint32_t)m->nthr++;
	}
	return *v;
}

lspair_t *model_pair_slow(model_t *m, int k, uint32_t lock, uint32_t stack)
{
	lstab_t *t = &m->ls[k];
	int added;
	/* Cached by the lock before its group: lock_group() never changes
	 * its answer for a lock once it gave one. */
	uint64_t ckey = (uint64_t)lock << 32 | stack;
	uint32_t g = lock_group(m, &m->lock[lock]); /* may move lhist */
	lock = m->lhist[g].rep;
	uint32_t *v = u64map_put(&t->map, (uint64_t)lock << 32 | stack, &added);
	if (added) {
		VEC_RESERVE(t->v, t->cap, t->n);
		lspair_t *p = &t->v[t->n];
		memset(p, 0, sizeof *p);
		p->lock = lock;
		p->stack = stack;
		*v = (uint32_t)t->n++;
	}
	u64cache_set(&t->cache, ckey, *v);
	return &t->v[*v];
}

void model_note(model_t *m, uint64_t level, const char *s, size_t n)
{
	static const char more[] =
	    "analyzer: more distinct notes than it keeps; the rest are "
	    "counted here";
	if (m->nnote >= MODEL_NOTES_MAX) {
		m->note[m->nnote - 1].count++;
		return;
	}
	if (m->nnote == MODEL_NOTES_MAX - 1) {
		level = FMT_NOTE_WARN;
		s = more;
		n = sizeof more - 1;
	}
	for (size_t i = 0; i < m->nnote; i++)
		if (strlen(m->note[i].text) == n &&
		    memcmp(m->note[i].text, s, n) == 0) {
			m->note[i].count++;
			return;
		}
	VEC_RESERVE(m->note, m->capnote, m->nnote);
	note_t *x = &m->note[m->nnote++];
	x->level = level;
	x->text = arena_strndup(&m->arena, s, n);
	x->count = 1;
}

static const lstab_t *sort_tab; /* qsort has no context argument */

static int by_lock_ns(const void *a, const void *b)
{
	const lspair_t *x = &sort_tab->v[*(const uint32_t *)a];
	const lspair_t *y = &sort_tab->v[*(const uint32_t *)b];
	if (x->lock != y->lock)
		return x->lock < y->lock ? -1 : 1;
	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	if (x->n != y->n) /* futex wakers: no time, their wakes */
		return x->n > y->n ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

void model_index_pairs(model_t *m)
{
	for (int k = 0; k < LS_NKINDS; k++) {
		lstab_t *t = &m->ls[k];
		free(t->order);
		free(t->start);
		t->order = xmalloc((t->n + 1) * sizeof *t->order);
		t->start = xcalloc(m->nlock + 2, sizeof *t->start);
		for (size_t i = 0; i < t->n; i++)
			t->order[i] = (uint32_t)i;
		sort_tab = t;
		if (t->n > 1)
			qsort(t->order, t->n, sizeof *t->order, by_lock_ns);
		sort_tab = NULL;
		/* start[li + 1] counts lock li's pairs, then prefix sums. */
		for (size_t i = 0; i < t->n; i++)
			t->start[t->v[i].lock + 1]++;
		for (size_t i = 0; i < m->nlock; i++)
			t->start[i + 1] += t->start[i];
	}
}

size_t model_lock_pairs(const model_t *m, int k, uint32_t li,
                        const uint32_t **idx)
{
	const lstab_t *t = &m->ls[k];
	if (!t->order || li >= m->nlock) {
		*idx = NULL;
		return 0;
	}
	*idx = t->order + t->start[li];
	return t->start[li + 1] - t->start[li];
}

const char *model_allocator(const model_t *m)
{
	static const char *const known[] = {"tcmalloc", "jemalloc", "mimalloc",
	                                    NULL};
	for (size_t i = 0; i < m->nmod; i++) {
		const char *p = m->mod[i].path;
		const char *b = p ? strrchr(p, '/') : NULL;
		b = b ? b + 1 : p;
		for (int k = 0; b && known[k]; k++)
			if (strncmp(b, "lib", 3) == 0 &&
			    strncmp(b + 3, known[k], strlen(known[k])) == 0)
				return known[k];
	}
	/* tcmalloc linked into the program: the shim records through its
	 * MallocHook API and says so (shim/hooks/tcmalloc_hooks.c). */
	for (size_t i = 0; i < m->nnote; i++)
		if (strstr(m->note[i].text, "through its MallocHook API"))
			return "tcmalloc";
	return "glibc";
}

const char *lock_kind_word(uint32_t kind)
{
	return kind == LOCK_KIND_UNKNOWN ? "lock"
	       : kind == FMT_KIND_FUTEX  ? "futex word"
	                                 : fmt_lock_kind_name(kind);
}

const char *lock_label(const model_t *m, const lock_t *l, char *buf, size_t len)
{
	(void)m;
	if (l->name)
		snprintf(buf, len, "%s", l->name);
	else if (l->label)
		snprintf(buf, len, "%s", l->label);
	else if (l->addr)
		snprintf(buf, len, "%s@0x%" PRIx64, lock_kind_word(l->kind),
		         l->addr);
	else
		snprintf(buf, len, "lock#%" PRIu64, l->id);
	return buf;
}

const char *thread_label(const thread_t *t, char *buf, size_t len)
{
	if (t->name)
		snprintf(buf, len, "%s (%u)", t->name, t->tid);
	else
		snprintf(buf, len, "%u", t->tid);
	return buf;
}

void model_free(model_t *m)
{
	for (size_t i = 0; i < m->nthr; i++) {
		free(m->thr[i].held);
		free(m->thr[i].snap);
	}
	for (size_t i = 0; i < m->nstk; i++)
		free(m->stk[i].site);
	for (int k = 0; k < LS_NKINDS; k++) {
		u64map_free(&m->ls[k].map);
		free(m->ls[k].v);
		free(m->ls[k].order);
		free(m->ls[k].start);
	}
	u64map_free(&m->thr_by_tid);
	u64map_free(&m->lock_by_id);
	u64map_free(&m->lhist_map);
	free(m->lhist);
	u64map_free(&m->fold_map);
	free(m->fold);
	u64map_free(&m->stk_by_id);
	u64map_free(&m->nest_map);
	u64map_free(&m->lt_map);
	u64map_free(&m->live);
	u64map_free(&m->displaced);
	u64map_free(&m->apart_map);
	free(m->apart);
	u64map_free(&m->mod_map);
	free(m->thr);
	free(m->thr_of_stream);
	free(m->busy);
	free(m->lock);
	free(m->stk);
	free(m->frames);
	free(m->nest);
	free(m->lt);
	free(m->blk);
	free(m->mod);
	free(m->note);
	free(m->cls);
	arena_free(&m->arena);
	memset(m, 0, sizeof *m);
}
