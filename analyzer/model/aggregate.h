/*
 * aggregate.h - reads a trace's merged event stream into a model.
 */
#ifndef MALLOCK_AGGREGATE_H
#define MALLOCK_AGGREGATE_H

#include "model.h"
#include "reader.h"

/*
 * Initialises m for the trace r (path is kept, not copied) and folds every
 * event of pass 2 into it. thread_filter (NULL-terminated tids or names, or
 * NULL) keeps only those threads' lock and allocation statistics.
 * fold_locks: destroyed locks may be folded (model.h, lockfold.c): the
 * caller's outputs name no single instance but those a fold keeps (the
 * replaying outputs, --all and --lock do). Returns 0,
 * or -1 when a malformed record stopped the read early (m->info.truncated
 * then says where; the model holds everything before it).
 * Allocates; free with model_free().
 */
int aggregate(model_t *m, reader_t *r, const char *path, bool fold_locks,
              const char **thread_filter);

/* Folds one metadata record (fmt_is_meta) into m (aggregate_meta.c); a
 * record that does not decode counts in m->tot.bad_meta. May allocate. */
void aggregate_meta(model_t *m, const fmt_record_t *r);
/* Whether thread t passes the --thread filter (tids or names): always
 * true without one. */
bool aggregate_thread_matches(const model_t *m, const thread_t *t);

#endif
