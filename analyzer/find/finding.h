/*
 * finding.h - one finding: its kind (FINDING_KINDS), a severity, a score
 * (nanoseconds of time it explains), the lock class, the code, the evidence
 * in numbers and one sentence of advice; and what every output asks of one
 * finding (its names, evidence, lock and summary). The detectors (detectors.h)
 * create findings with finding_add and fill them with finding_put and
 * finding_add_stack. The evidence members are listed in
 * finding_evidence.h and stored by enum (EV_*).
 */
#ifndef MALLOCK_FINDING_H
#define MALLOCK_FINDING_H

#include "model.h"

#include <stdbool.h>
#include <stddef.h>

/* X(enum, name) */
/* clang-format off */
#define FINDING_KINDS(X)                                                       \
	X(ALLOC_UNDER_LOCK, "alloc_under_lock")                                \
	X(CROSS_THREAD_FREE, "cross_thread_free")                              \
	X(ALLOC_CHURN, "alloc_churn")                                          \
	X(NESTED_LOCK, "nested_lock")                                          \
	X(STARVATION, "starvation")                                            \
	X(SLOW_ALLOC, "slow_alloc")                                            \
	X(FUTEX_LOCK, "futex_lock")                                            \
	X(LOCK_CONTENTION, "lock_contention")

enum finding_kind {
#define FK_ENUM_(e, name) FK_##e,
	FINDING_KINDS(FK_ENUM_)
#undef FK_ENUM_
	FK_COUNT
};

#define SEVERITIES(X)                                                          \
	X(INFO, "info") X(LOW, "low") X(MEDIUM, "medium") X(HIGH, "high")
enum severity {
#define SEV_ENUM_(e, name) SEV_##e,
	SEVERITIES(SEV_ENUM_)
#undef SEV_ENUM_
};
/* clang-format on */

#include "finding_evidence.h"

/* Evidence members one finding holds: at least the most any kind declares
 * (FINDING_EVIDENCE's kinds column; unit_evidence checks it). */
#define EV_MAX 56
/* Allocation findings are per allocation site (the first frame outside the
 * allocator, the shim and libc): one allocating line reached from several
 * callers is one finding, with its stacks, the heaviest first, as evidence. */
#define FINDING_STACKS 4
#define FINDING_LINES 6
#define FINDING_MEMBERS 4
/* alloc_under_lock is per lock class: the allocation sites of the blocks
 * its holds allocated or freed, the heaviest first (finding_add_site). */
#define FINDING_SITES 4

typedef struct fsite {
	uint32_t stack;  /* the site's heaviest stack */
	uint32_t stacks; /* its stacks in the class's holds */
	double ns;       /* allocator time in holds for its blocks */
	double calls, allocs, frees, slow, lw_ns;
} fsite_t;

typedef struct finding {
	int kind, severity;
	double score;       /* ns of time the finding explains */
	model_t *m;         /* the process */
	uint32_t cls, cls2; /* lock class (nested_lock: outer, inner) */
	uint32_t lock;      /* the instance named, NONE32: the class's rep */
	uint32_t stack;     /* the code: stack index, NONE32 if none; for
	                       allocation findings the heaviest stack of the
	                       site */
	uint32_t stack2;    /* futex_lock: the wakers' heaviest stack (the
	                       holders' side); nested_lock of two classes
	                       taken in both orders: the inner acquisition's
	                       stack in the reverse order; alloc_under_lock:
	                       the hold acquisition site where most of the
	                       frees' time was spent (the holding code);
	                       NONE32 if none */
	uint32_t stacks[FINDING_STACKS]; /* evidence stacks, heaviest first */
	double stack_v[FINDING_STACKS];  /* each one's share of stack_unit */
	uint32_t nstacks, stacks_total;  /* shown; reaching the site */
	uint32_t lines[FINDING_LINES];   /* the site's lines, when several */
	uint32_t nlines;
	ev_t stack_unit; /* what stack_v counts, EV_NONE if none */
	/* One finding for one phenomenon: the lock instances it groups (a
	 * lock hierarchy's inner locks, a family of futex words), the worst
	 * first by member_v (member_unit: a JSON member name). */
	uint32_t member[FINDING_MEMBERS];
	double member_v[FINDING_MEMBERS];
	uint32_t nmembers, members_total;
	const char *member_unit;
	fsite_t sites[FINDING_SITES]; /* alloc_under_lock, heaviest first */
	uint32_t nsites, sites_total;
	/* the evidence, in the order the finder put it (JSON's order) */
	uint8_t ev_id[EV_MAX]; /* ev_t */
	uint8_t nev;
	double ev_v[EV_MAX];
	char advice[1024];
} finding_t;

typedef struct findings {
	finding_t *v;
	size_t n, cap;
} findings_t;

/* Appends a finding of kind to out, scored score (ns), with its severity
 * (score against the trace's duration, thresholds.h) and no class, lock or
 * stack (NONE32). The pointer is valid until the next finding_add on out.
 * May allocate. */
finding_t *finding_add(findings_t *out, model_t *m, int kind, double score);
/* Adds evidence member e = v. A member f's kind does not declare
 * (finding_evidence.h), or one f already has, is a finder's bug: it
 * prints the finding's kind and the member on stderr and aborts. */
void finding_put(finding_t *f, ev_t e, double v);
/* Sets f's score (ns) and the severity that follows from it, as
 * finding_add does. */
void finding_rescore(finding_t *f, double score);
/* Counts stack si among those reaching f's code, and keeps it, valued v,
 * among the heaviest FINDING_STACKS (f->stacks, heaviest first). */
void finding_add_stack(finding_t *f, uint32_t si, double v);
/* The first user frame of f's stack as a label ("fn (file:line)", or with
 * the site's lines when it has several: "fn (file:155, 166)") into buf, or
 * its module and offset when unnamed, "this site" when it has neither:
 * the site an advice sentence names. */
const char *finding_site_name(const finding_t *f, char *buf, size_t len);
/* Counts lock instance li among the members f groups and keeps it,
 * valued v, among the heaviest FINDING_MEMBERS (f->member). */
void finding_add_member(finding_t *f, uint32_t li, double v);
/* Counts allocation site s among those f's holds used, and keeps it
 * among the heaviest FINDING_SITES by s->ns (f->sites). */
void finding_add_site(finding_t *f, const fsite_t *s);
/* Copies a site's lines (ascending) into f when there are several. */
void finding_set_lines(finding_t *f, const uint32_t *line, uint32_t n);

/* The value of evidence member e, or def when f does not have it. */
double finding_ev(const finding_t *f, ev_t e, double def);
/* Whether f has evidence member e. */
bool finding_has(const finding_t *f, ev_t e);
/* Instance index a finding names (its own, or its class's rep), or
 * NONE32. */
uint32_t finding_lock(const finding_t *f);
/* One sentence of evidence for f (the "what" of the text report, the
 * "summary" of the JSON one), into buf; returns buf. */
const char *finding_summary(const finding_t *f, char *buf, size_t len);

const char *finding_kind_name(int kind);
const char *severity_name(int sev);
/* Parses "info|low|medium|high"; returns -1 if unknown. */
int severity_parse(const char *s);

#endif
