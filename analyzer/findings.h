/*
 * findings.h - what is wrong, ranked: the six finding kinds of DESIGN.md,
 * each with a severity, a score (nanoseconds of time it explains), the lock
 * class, the code, the evidence in numbers and one sentence of advice.
 */
#ifndef MALLOCK_FINDINGS_H
#define MALLOCK_FINDINGS_H

#include "model.h"

/* X(enum, name) */
#define FINDING_KINDS(X)                                                       \
	X(ALLOC_UNDER_LOCK, "alloc_under_lock")                                \
	X(CROSS_THREAD_FREE, "cross_thread_free")                              \
	X(ALLOC_CHURN, "alloc_churn")                                          \
	X(NESTED_LOCK, "nested_lock")                                          \
	X(STARVATION, "starvation")                                            \
	X(SLOW_ALLOC, "slow_alloc")

enum finding_kind {
#define FK_ENUM_(e, name) FK_##e,
	FINDING_KINDS(FK_ENUM_)
#undef FK_ENUM_
	FK_COUNT
};

#define SEVERITIES(X) X(INFO, "info") X(LOW, "low") X(MEDIUM, "medium") X(HIGH, "high")
enum severity {
#define SEV_ENUM_(e, name) SEV_##e,
	SEVERITIES(SEV_ENUM_)
#undef SEV_ENUM_
};

typedef struct evidence {
	const char *key; /* static string, a JSON member name */
	double v;
} evidence_t;

#define EV_MAX 24
/* Allocation findings are per allocation site (the first frame outside the
 * allocator, the shim and libc): one allocating line reached from several
 * callers is one finding, with its stacks, the heaviest first, as evidence. */
#define FINDING_STACKS 4

typedef struct finding {
	int kind, severity;
	double score; /* ns of time the finding explains */
	model_t *m;   /* the process */
	uint32_t cls, cls2; /* lock class (nested_lock: outer, inner) */
	uint32_t lock;      /* the instance named, NONE32: the class's rep */
	uint32_t stack;     /* the code: stack index, NONE32 if none; for
	                       allocation findings the heaviest stack of the
	                       site */
	uint32_t stacks[FINDING_STACKS]; /* evidence stacks, heaviest first */
	double stack_v[FINDING_STACKS];  /* each one's share of stack_unit */
	uint32_t nstacks, stacks_total;  /* shown; reaching the site */
	const char *stack_unit; /* what stack_v counts (a JSON member name) */
	evidence_t ev[EV_MAX];
	int nev;
	char advice[1024];
} finding_t;

typedef struct findings {
	finding_t *v;
	size_t n, cap;
} findings_t;

/* Appends m's findings to out (needs classes_build and sym_open done).
 * May allocate. */
void findings_compute(model_t *m, findings_t *out);
/* Sorts by score, highest first (ties: kind, then class). */
void findings_sort(findings_t *f);
/* The value of evidence key, or def. */
double finding_ev(const finding_t *f, const char *key, double def);

const char *finding_kind_name(int kind);
const char *severity_name(int sev);
/* Parses "info|low|medium|high"; returns -1 if unknown. */
int severity_parse(const char *s);

#endif
