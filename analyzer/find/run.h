/*
 * run.h - what is wrong in a trace, ranked: every detector run over a
 * model. One finding and what it holds are finding.h's.
 */
#ifndef MALLOCK_RUN_H
#define MALLOCK_RUN_H

#include "finding.h"
#include "model.h"

/* Appends m's findings to out (needs classes_build and sym_open done).
 * May allocate. */
void findings_compute(model_t *m, findings_t *out);
/* Sorts by score, highest first (ties: kind, then class, then stack). */
void findings_sort(findings_t *f);

#endif
