/*
 * detectors.h - the detectors, one file per family: each appends the findings
 * of its kinds to out, in a fixed order (run.c runs them). They create findings
 * with finding.h's finding_add and read the model, its classes (classes.h) and
 * the allocation sites (sites.h). Every threshold comes from thresholds.h. All
 * may allocate.
 */
#ifndef MALLOCK_DETECTORS_H
#define MALLOCK_DETECTORS_H

#include "finding.h"
#include "sites.h"

/* find_locks.c: alloc_under_lock (per lock class and allocation site) and
 * nested_lock (per pair of classes). */
void find_alloc_under_lock(model_t *m, const sites_t *S, findings_t *out);
void find_nested_locks(model_t *m, findings_t *out);
/* find_allocs.c: cross_thread_free, alloc_churn and slow_alloc, per
 * allocation site. */
void find_alloc_sites(model_t *m, const sites_t *S, findings_t *out);
/* find_starvation.c: starvation, per lock and peer role. */
void find_starvation(model_t *m, findings_t *out);
/* find_futex.c: futex_lock, per class of futex lock words. */
void find_futex_locks(model_t *m, findings_t *out);
/* find_contention.c: lock_contention, per lock class; run last: a class
 * it names keeps one finding, its alloc_under_lock findings merged into
 * one or dropped (out's findings of m may be removed and reordered). */
void find_lock_contention(model_t *m, findings_t *out);

/* a / b, or 0 when b is not positive. */
static inline double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

#endif
