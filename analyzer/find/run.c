/*
 * run.c - derives the findings from an aggregated model: runs every
 * detector (detectors.h) and ranks the result. Scores are nanoseconds of time
 * the finding explains, so findings of different kinds rank on one scale;
 * each detector's file says how it scores. lock_contention runs last: it
 * merges each lock's findings into one (find_contention.c).
 */
#include "run.h"

#include "detectors.h"

#include <stdlib.h>

void findings_compute(model_t *m, findings_t *out)
{
	sites_t S;
	sites_build(m, &S);
	find_alloc_under_lock(m, &S, out);
	find_alloc_sites(m, &S, out);
	sites_free(&S);
	find_nested_locks(m, out);
	find_starvation(m, out);
	find_futex_locks(m, out);
	find_lock_contention(m, out);
}

static int by_score(const void *a, const void *b)
{
	const finding_t *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

void findings_sort(findings_t *f)
{
	/* qsort(NULL, 0, ...) is undefined (found by fuzzing: a trace with no
	 * finding). */
	if (f->n > 1)
		qsort(f->v, f->n, sizeof *f->v, by_score);
}
