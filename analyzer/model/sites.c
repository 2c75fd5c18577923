/*
 * sites.c - allocation sites (see sites.h): a stack's site key is the label
 * of its first user frame; stacks without one are sites of their own. The
 * merged statistics follow aggregate.c's rules (sums, maxima, and the small
 * size and thread tables, which keep their largest entries).
 */
#include "sites.h"

#include "symbols.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void thr_merge(uint32_t *dt, uint64_t *dn, const uint32_t *st,
                      const uint64_t *sn)
{
	for (int i = 0; i < SITE_THREADS && st[i]; i++) {
		int j = 0;
		while (j < SITE_THREADS && dt[j] && dt[j] != st[i])
			j++;
		if (j == SITE_THREADS)
			continue; /* table full, as in aggregate.c */
		dt[j] = st[i];
		dn[j] += sn[i];
	}
}

/* d += s: sums, maxima, and the small size and thread tables. */
static void site_merge(site_t *d, const site_t *s)
{
	/* clang-format off */
#define SITE_SUM_(f) d->f += s->f;
	SITE_SUM_(allocs) SITE_SUM_(reallocs) SITE_SUM_(bytes) SITE_SUM_(frees)
	SITE_SUM_(live) SITE_SUM_(alloc_ns) SITE_SUM_(free_ns) SITE_SUM_(lw_ns)
	SITE_SUM_(lw_n) SITE_SUM_(life_ns) SITE_SUM_(short_n)
	SITE_SUM_(short_ns) SITE_SUM_(xfree_n) SITE_SUM_(xfree_ns)
	SITE_SUM_(xfree_bytes) SITE_SUM_(xfree_timed) SITE_SUM_(short_timed)
#undef SITE_SUM_
	    /* clang-format on */
	    for (int h = 0; h < 2; h++)
	{
		d->calls[h] += s->calls[h];
		d->timed[h] += s->timed[h];
		d->lw_h[h] += s->lw_h[h];
		d->slow_n[h] += s->slow_n[h];
		d->slow_ns[h] += s->slow_ns[h];
		d->pre_n[h] += s->pre_n[h];
		d->pre_ns[h] += s->pre_ns[h];
		d->pre_mig[h] += s->pre_mig[h];
		for (int i = 0; i < SITE_BIG_N; i++)
			d->slow_big[h][i] += s->slow_big[h][i];
	}
	if (s->life_max > d->life_max)
		d->life_max = s->life_max;
	for (int i = 0; i < SITE_SIZES; i++) {
		if (!s->size_n[i])
			continue;
		int j = 0, min = 0;
		for (; j < SITE_SIZES; j++) {
			if (d->size_n[j] && d->size[j] == s->size[i])
				break;
			if (d->size_n[j] < d->size_n[min])
				min = j;
		}
		if (j < SITE_SIZES) {
			d->size_n[j] += s->size_n[i];
		} else if (s->size_n[i] > d->size_n[min]) {
			d->size[min] = s->size[i];
			d->size_n[min] = s->size_n[i];
		}
	}
	thr_merge(d->athr, d->athr_n, s->athr, s->athr_n);
	thr_merge(d->fthr, d->fthr_n, s->fthr, s->fthr_n);
}

static uint64_t fnv(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h == U64MAP_EMPTY ? h - 1 : h;
}

/* Adds line to g's ascending distinct lines (the table keeps the first
 * SITE_LINES). */
static void add_line(sitegrp_t *g, uint32_t line)
{
	uint32_t i = 0;
	while (i < g->nline && g->line[i] < line)
		i++;
	if ((i < g->nline && g->line[i] == line) || g->nline == SITE_LINES)
		return;
	memmove(&g->line[i + 1], &g->line[i], (g->nline - i) * sizeof *g->line);
	g->line[i] = line;
	g->nline++;
}

void sites_build(model_t *m, sites_t *S)
{
	u64map_t map = {0};
	char label[512];
	memset(S, 0, sizeof *S);
	S->of = xmalloc((m->nstk + 1) * sizeof *S->of);
	for (size_t i = 0; i < m->nstk; i++) {
		const site_t *st = m->stk[i].site;
		S->of[i] = NONE32;
		if (!st)
			continue;
		frame_t fr;
		const char *key;
		bool has_line = false;
		if (m->stk[i].defined && sym_stack_site(m, (uint32_t)i, &fr)) {
			has_line = fr.function && fr.file && fr.line;
			if (has_line) /* the full name: overloads stay apart */
				snprintf(label, sizeof label, "%s\001%s",
				         fr.function, fr.file);
			key = has_line ? label
			               : frame_label(&fr, label, sizeof label);
		} else { /* no frame to group by: a site of its own */
			key = NULL;
		}
		int added = 1;
		uint32_t *v = NULL;
		if (key) {
			v = u64map_put(&map, fnv(key, 14695981039346656037ull),
			               &added);
			if (!added && strcmp(S->g[*v].key, key) != 0) {
				/* a hash collision: a group of its own */
				v = NULL;
				added = 1;
			}
		}
		if (added) {
			VEC_RESERVE(S->g, S->cap, S->ng);
			sitegrp_t *g = &S->g[S->ng];
			memset(g, 0, sizeof *g);
			g->rep = (uint32_t)i;
			g->key = key ? arena_strdup(&m->arena, key) : "";
			if (v)
				*v = (uint32_t)S->ng;
			S->of[i] = (uint32_t)S->ng++;
		} else {
			S->of[i] = *v;
		}
		sitegrp_t *g = &S->g[S->of[i]];
		if (has_line)
			add_line(g, fr.line);
		const site_t *r = m->stk[g->rep].site;
		if (st->alloc_ns + st->free_ns > r->alloc_ns + r->free_ns)
			g->rep = (uint32_t)i;
		site_merge(&g->s, st);
	}
	u64map_free(&map);
	/* Members by group: a counting sort of the stacks. */
	S->start = xcalloc(S->ng + 2, sizeof *S->start);
	S->order = xmalloc((m->nstk + 1) * sizeof *S->order);
	for (size_t i = 0; i < m->nstk; i++)
		if (S->of[i] != NONE32)
			S->start[S->of[i] + 2]++;
	for (size_t g = 0; g < S->ng; g++)
		S->start[g + 2] += S->start[g + 1];
	for (size_t i = 0; i < m->nstk; i++)
		if (S->of[i] != NONE32)
			S->order[S->start[S->of[i] + 1]++] = (uint32_t)i;
}

void sites_free(sites_t *S)
{
	free(S->g);
	free(S->of);
	free(S->order);
	free(S->start);
}
