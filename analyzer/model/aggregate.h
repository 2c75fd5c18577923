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

/*
 * aggregate() in three steps, for a trace read as it grows (`mallock
 * top`'s engine): aggregate_begin initialises m for r (its clock is the
 * model's from then on); aggregate_feed folds the events pass 2 gives
 * until it returns 0 (its end, or reader_stop_at), and may be called
 * again after reader_grow: the streams new since are taken; 0, or -1 as
 * aggregate. max_events (0: no limit) stops it after that many records,
 * returning 1: the next call goes on from there. aggregate_end finishes the
 * model for its readers (the holds still open, lock folds, futex words): once,
 * after the last feed; it is not undone, so a model fed on afterwards is wrong
 * (the engine ends a copy of it, in a child process).
 */
void aggregate_begin(model_t *m, reader_t *r, const char *path, bool fold_locks,
                     const char **thread_filter);
int aggregate_feed(model_t *m, reader_t *r, uint64_t max_events);
void aggregate_end(model_t *m);

/* Folds one metadata record (fmt_is_meta) into m (aggregate_meta.c); a
 * record that does not decode counts in m->tot.bad_meta. May allocate. */
void aggregate_meta(model_t *m, const fmt_record_t *r);
/* Whether thread t passes the --thread filter (tids or names): always
 * true without one. */
bool aggregate_thread_matches(const model_t *m, const thread_t *t);

#endif
