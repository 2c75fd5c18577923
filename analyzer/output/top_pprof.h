/*
 * top_pprof.h - `mallock top --pprof-dir DIR`: one pprof profile per
 * interval (report_pprof.c's, metric wait), for a continuous profiler
 * (docs/mallock-top.md).
 *
 * Each profile holds the interval: a sample's values are the window's at
 * this look minus those of the previous look, by sample key (locations
 * and labels: report_pprof_delta), the samples left at zero dropped;
 * time_nanos is the interval's start, duration_nanos its length. The file
 * is DIR/mallock-PID-MS.pb.gz, MS the Unix time of the interval's end (the
 * look's watermark) in milliseconds, 13 digits: the names sort by time.
 * It is written under a temporary name in DIR and renamed.
 *
 * The previous look's values are kept in a file without a name (memfd)
 * opened by top_pprof_open, so that a look made in a forked process (the
 * screen's) finds them and leaves its own to the next one, whichever
 * process makes it. Looks are made one at a time.
 */
#ifndef MALLOCK_TOP_PPROF_H
#define MALLOCK_TOP_PPROF_H

#include "live.h"

#include <stddef.h>

typedef struct top_pprof top_pprof_t;

/*
 * Opens dir for the profiles (made when missing, one level) and checks
 * that a file can be written and renamed there; top is the pid of the
 * top process (in the temporary file's name). Returns the state, or NULL
 * after writing why into why (n bytes, no newline).
 */
top_pprof_t *top_pprof_open(const char *dir, long top, char *why, size_t n);

/*
 * live_t.on_model: writes the profile of the interval that view v ends,
 * from the window's model m. A write that fails is said once on stderr
 * ("mallock top: ...") and no profile is written after it. Allocates
 * (freed before it returns).
 */
void top_pprof_look(void *ctx, model_t *m, const live_view_t *v);

/* Removes a temporary file a look ended before its rename left, and
 * frees t (NULL: nothing). */
void top_pprof_close(top_pprof_t *t);

#endif
