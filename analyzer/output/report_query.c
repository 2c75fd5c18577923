/*
 * report_query.c - what every output format asks of a report (see
 * report.h): the id a lock is shown under, whether a class passes --lock,
 * and a class's contention and contending points. The formats and the
 * `report` command call it; it calls none of them.
 */
#include "report.h"

#include "symbols.h"

#include <stdlib.h>
#include <string.h>

uint64_t report_lock_id(const report_t *r, const model_t *m, const lock_t *l)
{
	size_t ti = (size_t)(m - r->m);
	return r->nm > 1 ? (uint64_t)ti << 32 | (l->id & 0xffffffffu) : l->id;
}

bool report_class_matches(const report_t *r, model_t *m, uint32_t c)
{
	if (!r->lock_filter)
		return true;
	if (c == NONE32)
		return false;
	const char *flt = r->lock_filter;
	char *end;
	unsigned long long id = strtoull(flt, &end, 0);
	for (size_t i = 0; i < m->nlock; i++) {
		const lock_t *l = &m->lock[i];
		if (l->cls != c)
			continue;
		if (!*end && (l->id == id || report_lock_id(r, m, l) == id))
			return true;
		if (l->name && strstr(l->name, flt))
			return true;
	}
	frame_t fr;
	if (sym_stack_site(m, m->cls[c].site, &fr) && fr.function &&
	    strstr(fr.function, flt))
		return true;
	return false;
}

static int by_point(const void *a, const void *b)
{
	const point_t *x = a, *y = b;
	/* ns2 first: for holders the wait caused; waiters have ns2 == 0. */
	if (x->ns2 != y->ns2)
		return x->ns2 > y->ns2 ? -1 : 1;
	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	/* Futex wakers have neither: by their number of wakes. */
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

int class_points(model_t *m, uint32_t c, int k, point_t *out, int max,
                 size_t *total)
{
	return class_points_of(m, c, k, false, out, max, total);
}

int class_points_of(model_t *m, uint32_t c, int k, bool lock_words,
                    point_t *out, int max, size_t *total)
{
	u64map_t map = {0};
	point_t *v = NULL;
	size_t n = 0, cap = 0;
	*total = 0;
	if (c == NONE32 || c >= m->ncls)
		return 0;
	for (size_t li = 0; li < m->nlock; li++) {
		if (m->lock[li].cls != c ||
		    (lock_words && !m->lock[li].futex_lockish))
			continue;
		const uint32_t *idx;
		size_t np = model_lock_pairs(m, k, (uint32_t)li, &idx);
		for (size_t i = 0; i < np; i++) {
			const lspair_t *p = &m->ls[k].v[idx[i]];
			int added;
			uint32_t *x = u64map_put(&map, p->stack, &added);
			if (added) {
				VEC_RESERVE(v, cap, n);
				memset(&v[n], 0, sizeof v[n]);
				v[n].stack = p->stack;
				*x = (uint32_t)n++;
			}
			v[*x].n += p->n;
			v[*x].ns += p->ns;
			v[*x].ns2 += p->ns2;
		}
	}
	if (n > 1)
		qsort(v, n, sizeof *v, by_point);
	int shown = 0;
	for (size_t i = 0; i < n && shown < max; i++)
		out[shown++] = v[i];
	*total = n;
	free(v);
	u64map_free(&map);
	return shown;
}
