/*
 * load.h - one trace from file to findings: read, aggregate, symbolize,
 * group locks into classes and threads by activity, derive findings.
 * Shared by `mallock report` and `mallock diff`.
 */
#ifndef MALLOCK_LOAD_H
#define MALLOCK_LOAD_H

#include "run.h"
#include "model.h"

#include <stdbool.h>

typedef struct load_opts {
	bool symbols;               /* symbolize (else addresses) */
	const char **thread_filter; /* NULL-terminated, or NULL */
	bool quiet;                 /* no truncation warning on stderr */
	/* --debug-dir: NULL-terminated, or NULL */
	const char *const *debug_dirs;
	/* Fold destroyed per-object locks (model.h): for outputs that name
	 * no instance but a class's (not --all, --lock or a replay). */
	bool fold_locks;
	/* `mallock top`: only the events from from_mono_ns until
	 * until_mono_ns (CLOCK_MONOTONIC of the traced host; 0: no bound),
	 * converted to the trace's clock by its PROCESS record's pair. */
	uint64_t from_mono_ns, until_mono_ns;
	/* --as-sampled: a trace that timed every hold and call read as if
	 * one in as_sampled had been (reader_as_sampled); 0: as recorded. */
	uint32_t as_sampled;
} load_opts_t;

/*
 * Loads path into m and appends its findings to f. Returns 0 (also for a
 * truncated trace of which at least one chunk was read, after a one-line
 * warning on stderr), 2 when the file is not a mallock trace or of an
 * unsupported version, 1 on an I/O error or a truncated trace of which no
 * chunk could be read (m is then empty);
 * errors print one line "mallock: PATH: what" on stderr.
 * Allocates; free with load_free().
 */
int load_trace(const char *path, model_t *m, findings_t *f,
               const load_opts_t *o);
void load_free(model_t *m);

/* load_trace's steps for a model aggregated by the caller (`mallock
 * top`'s engine feeds one as its trace grows: aggregate.h).
 * load_mono_tsc is CLOCK_MONOTONIC ns as a TSC of r's trace (its PROCESS
 * record's clock pair, its current calibration), 0 for 0 or without a
 * pair: the bounds load_opts_t's from and until give reader_limit.
 * load_finish takes a model whose aggregate_end was called on through
 * symbols, names, classes and findings, returning as load_trace does
 * (o's symbols, quiet and debug_dirs are used). */
uint64_t load_mono_tsc(const struct reader *r, uint64_t ns);
int load_finish(model_t *m, findings_t *f, const load_opts_t *o);

/* The truncation sentence, "trace truncated at byte N: M of K chunks
 * read (why)", into buf; "" when the trace is complete. */
const char *truncation_text(const model_t *m, char *buf, size_t len);

/* How the recording began and ended, for the header: "attached at TIME",
 * "window closed by ctl at TIME", "no END record: ...", joined by "; "
 * into buf; "" for a program recorded from its start to a clean exit.
 * TIME is the wall clock (UTC) and the offset in the trace. */
const char *recording_text(const model_t *m, char *buf, size_t len);

/* A trace without END (not a window closed by ctl) that holds events:
 * the offset in ns of its last event from its first, after which events
 * may be missing; 0 otherwise. */
uint64_t unended_after_ns(const model_t *m);

/* What mallock could not see, for the header: when
 * the program's threads ran but no lock of theirs was seen at all (no
 * pthread lock, condition or futex word), or no event at all was
 * recorded, one plain sentence saying so (invisible, not uncontended; with
 * no END record, lost in the buffers rather than not made); for a JVM
 * (libjvm.so loaded), which locks it sees (the VM's pthread locks) and
 * which not (Java monitors); "" otherwise. */
const char *blind_text(const model_t *m, char *buf, size_t len);

#endif
