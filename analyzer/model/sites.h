/*
 * sites.h - allocation sites: the stacks that allocated, grouped by their
 * first user frame (sym_stack_site), so one allocating line reached from
 * several callers is one site with the statistics of all its stacks merged.
 * The allocation detectors (find_allocs.c, and find_locks.c's
 * alloc_under_lock) report per site.
 */
#ifndef MALLOCK_SITES_H
#define MALLOCK_SITES_H

#include "model.h"

/* A site: the stacks whose first user frame (sym_stack_site) is in the same
 * symbolized function of one file (or, unsymbolized, at the same return
 * address), with their statistics merged: one function allocating at
 * lines 155 and 166 is one site, its lines listed. */
#define SITE_LINES 6
typedef struct sitegrp {
	site_t s;
	uint32_t rep; /* the member stack with the most allocator time */
	const char *key;
	uint32_t line[SITE_LINES]; /* its distinct lines, ascending */
	uint32_t nline;
} sitegrp_t;

typedef struct sites {
	sitegrp_t *g;
	size_t ng, cap;
	uint32_t *of; /* stack index -> group index, NONE32 without a site */
	uint32_t *order, *start; /* members of g: order[start[g]..start[g+1]) */
} sites_t;

/* Groups m's stacks that carry allocation statistics (stk_t.site) into S
 * (needs sym_open done). Allocates; free with sites_free. */
void sites_build(model_t *m, sites_t *S);
void sites_free(sites_t *S);

#endif
