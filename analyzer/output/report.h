/*
 * report.h - the state of one `mallock report` run (report.c), what every
 * output format may ask of it (report_query.c), and the formats (output/:
 * text, JSON, folded, pprof, Perfetto, HTML). The formats call
 * report_query.c, finding.h, the model and replay.h; the HTML page embeds
 * the JSON and folded outputs (report_html.c calls them); report.c calls
 * the formats.
 */
#ifndef MALLOCK_REPORT_H
#define MALLOCK_REPORT_H

#include "run.h"
#include "model.h"

#include <stdbool.h>
#include <stdio.h>

/* clang-format off */
#define METRICS(X)                                                             \
	X(WAIT, "wait") X(HOLD, "hold") X(ALLOC_UNDER_LOCK, "alloc-under-lock") \
	X(CROSS_THREAD, "cross-thread")                                      \
	X(CAUSED, "caused") /* pprof: holder stacks, wait caused */
/* clang-format on */
enum metric {
#define METRIC_ENUM_(e, name) METRIC_##e,
	METRICS(METRIC_ENUM_)
#undef METRIC_ENUM_
};

typedef struct report {
	model_t *m; /* one per trace */
	size_t nm;
	findings_t f; /* all traces', sorted, filtered */
	int top;
	int metric;
	int min_sev;
	const char *lock_filter;
	bool per_process;
	uint64_t from_ns, to_ns; /* --from/--to (timeline window;
	                            to_ns 0: the end) */
	bool window;             /* --from or --to was given */
	bool all; /* --all: list every lock instance and class (JSON) */
} report_t;

/* The cascade in four steps (report_cascade.c): the first
 * alloc_under_lock finding (idx: its rank, from 1), the wait its lock
 * lost, its holders' allocator share, the calls and their blocks, what
 * each fix gives back at most. The text, JSON and HTML outputs tell it
 * from these. */
#define CASCADE_STEPS 4
typedef struct cascade {
	const finding_t *f;
	size_t idx;
	char step[CASCADE_STEPS][2048];
} cascade_t;
/* Fills c; false when no finding is alloc_under_lock. */
bool report_cascade(const report_t *r, cascade_t *c);

/* report_query.c */

/* Whether lock class c of m passes --lock (id, name or site substring). */
bool report_class_matches(const report_t *r, model_t *m, uint32_t c);
/* The id a lock has in the report's output (unique across traces). */
uint64_t report_lock_id(const report_t *r, const model_t *m, const lock_t *l);

/* A contention point (waiter stack, LS_WAITER) or contending point (holder
 * stack at a contended release, LS_HOLDER) of a lock class, summed over its
 * instances: n waits (holds), ns waited (held), ns2 the wait it caused. */
typedef struct point {
	uint32_t stack;
	uint64_t n, ns, ns2;
} point_t;

/* The top max points of kind k (LS_WAITER by ns, LS_HOLDER by ns2) of class
 * c into out; returns how many, and *total the distinct stacks. May
 * allocate (freed before it returns). */
int class_points(model_t *m, uint32_t c, int k, point_t *out, int max,
                 size_t *total);
/* The same, of its futex lock words only when lock_words (a futex_lock
 * finding: a signal word of the class is none of its evidence). */
int class_points_of(model_t *m, uint32_t c, int k, bool lock_words,
                    point_t *out, int max, size_t *total);

/* The formats: each writes the whole report r to out. */
void report_text(const report_t *r, FILE *out);
void report_json(const report_t *r, FILE *out);
void report_folded(const report_t *r, FILE *out);
/* Binary outputs; each returns 0, or 1 on an error it printed. */
int report_pprof(const report_t *r, FILE *out);    /* report_pprof.c */
int report_perfetto(const report_t *r, FILE *out); /* report_perfetto.c */
int report_html(const report_t *r, FILE *out);     /* report_html.c */

/* One interval's profile (`mallock top --pprof-dir`, report_pprof.c):
 * report_pprof's, with the samples that have one key (their location
 * stack, lock and thread, these by id: bytes that are the same in every
 * profile of one process) merged, each passed to fn, which may change its
 * nv values and returns whether it is written; time_ns and duration_ns
 * (profile.proto's time_nanos and duration_nanos) and the comment as
 * given. Returns as report_pprof. */
typedef struct pprof_delta {
	bool (*fn)(void *ctx, const char *key, size_t len, uint64_t *v, int nv);
	void *ctx;
	uint64_t time_ns, duration_ns;
	const char *comment;
} pprof_delta_t;
int report_pprof_delta(const report_t *r, const pprof_delta_t *d, FILE *out);

#endif
