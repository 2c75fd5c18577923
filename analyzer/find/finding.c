/*
 * finding.c - one finding (see finding.h): names, evidence (the table
 * FINDING_EVIDENCE expands to, and finding_put's bounds), creation with
 * its severity, and the sentence that sums it up for every output.
 */
#include "finding.h"

#include "symbols.h"
#include "thresholds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *finding_kind_name(int kind)
{
	static const char *const names[] = {
#define FK_NAME_(e, name) name,
	    FINDING_KINDS(FK_NAME_)
#undef FK_NAME_
	};
	return kind >= 0 && kind < FK_COUNT ? names[kind] : "?";
}

const char *severity_name(int sev)
{
	static const char *const names[] = {
#define SEV_NAME_(e, name) name,
	    SEVERITIES(SEV_NAME_)
#undef SEV_NAME_
	};
	return sev >= 0 && sev <= SEV_HIGH ? names[sev] : "?";
}

/* "s" after a count other than one, "" after one. */
static const char *plural(double n)
{
	return n == 1 ? "" : "s";
}

int severity_parse(const char *s)
{
	for (int i = 0; i <= SEV_HIGH; i++)
		if (strcmp(s, severity_name(i)) == 0)
			return i;
	return -1;
}

static const struct {
	const char *name, *words;
	int unit;
	unsigned kinds;
} ev_list[EV_COUNT_] = {
#define EV_ROW_(e, name, unit, kinds, words) {name, words, EVU_##unit, kinds},
    FINDING_EVIDENCE(EV_ROW_)
#undef EV_ROW_
};
_Static_assert(EV_COUNT_ <= UINT8_MAX, "finding_t's ev_id is a uint8_t");
_Static_assert(EV_MAX <= UINT8_MAX, "finding_t's nev is a uint8_t");
_Static_assert(FK_COUNT <= 32, "ev_kinds is a mask of kinds");

const char *ev_name(ev_t e)
{
	return e < EV_COUNT_ ? ev_list[e].name : "?";
}

int ev_unit(ev_t e)
{
	return e < EV_COUNT_ ? ev_list[e].unit : EVU_COUNT;
}

unsigned ev_kinds(ev_t e)
{
	return e < EV_COUNT_ ? ev_list[e].kinds : 0;
}

const char *ev_words(ev_t e)
{
	return e < EV_COUNT_ ? ev_list[e].words : NULL;
}

const char *ev_unit_name(int unit)
{
	static const char *const names[] = {
#define EVU_NAME_(e, name) name,
	    EV_UNITS(EVU_NAME_)
#undef EVU_NAME_
	};
	return unit >= 0 && unit < EVU_COUNT_ ? names[unit] : "?";
}

int ev_kind_count(int kind)
{
	int n = 0;
	for (int e = 0; e < EV_COUNT_; e++)
		n += kind >= 0 && kind < FK_COUNT &&
		     (ev_list[e].kinds >> kind & 1);
	return n;
}

double finding_ev(const finding_t *f, ev_t e, double def)
{
	for (int i = 0; i < f->nev; i++)
		if (f->ev_id[i] == e)
			return f->ev_v[i];
	return def;
}

bool finding_has(const finding_t *f, ev_t e)
{
	for (int i = 0; i < f->nev; i++)
		if (f->ev_id[i] == e)
			return true;
	return false;
}

void finding_put(finding_t *f, ev_t e, double v)
{
	const char *why = NULL;
	if (e >= EV_COUNT_ || !(ev_kinds(e) >> f->kind & 1))
		why = "a member its kind does not declare "
		      "(finding_evidence.h)";
	else if (finding_has(f, e))
		why = "a member it already has";
	else if (f->nev >= EV_MAX)
		why = "more members than fit: raise EV_MAX";
	if (why) {
		fprintf(stderr,
		        "mallock: internal error: a %s finding is given %s: "
		        "%s\n",
		        finding_kind_name(f->kind), why, ev_name(e));
		abort();
	}
	f->ev_id[f->nev] = (uint8_t)e;
	f->ev_v[f->nev] = v;
	f->nev++;
}

void finding_rescore(finding_t *f, double score)
{
	f->score = score;
	uint64_t dur = model_recorded_ns(f->m);
	double ppm = dur ? score * 1e6 / (double)dur : 1e9;
	f->severity = ppm >= TH_SEV_HIGH_PPM     ? SEV_HIGH
	              : ppm >= TH_SEV_MEDIUM_PPM ? SEV_MEDIUM
	              : ppm >= TH_SEV_LOW_PPM    ? SEV_LOW
	                                         : SEV_INFO;
}

finding_t *finding_add(findings_t *out, model_t *m, int kind, double score)
{
	VEC_RESERVE(out->v, out->cap, out->n);
	finding_t *f = &out->v[out->n++];
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->m = m;
	f->cls = f->cls2 = f->stack = f->stack2 = f->lock = NONE32;
	f->stack_unit = EV_NONE;
	finding_rescore(f, score);
	return f;
}

void finding_add_stack(finding_t *f, uint32_t si, double v)
{
	f->stacks_total++;
	uint32_t n = f->nstacks, i = n;
	if (n == FINDING_STACKS) {
		if (v <= f->stack_v[n - 1])
			return;
		i = --n;
	}
	while (i > 0 && f->stack_v[i - 1] < v) {
		f->stacks[i] = f->stacks[i - 1];
		f->stack_v[i] = f->stack_v[i - 1];
		i--;
	}
	f->stacks[i] = si;
	f->stack_v[i] = v;
	f->nstacks = n + 1;
}

void finding_add_member(finding_t *f, uint32_t li, double v)
{
	f->members_total++;
	uint32_t n = f->nmembers, i = n;
	if (n == FINDING_MEMBERS) {
		if (v <= f->member_v[n - 1])
			return;
		i = --n;
	}
	while (i > 0 && f->member_v[i - 1] < v) {
		f->member[i] = f->member[i - 1];
		f->member_v[i] = f->member_v[i - 1];
		i--;
	}
	f->member[i] = li;
	f->member_v[i] = v;
	f->nmembers = n + 1;
}

void finding_add_site(finding_t *f, const fsite_t *s)
{
	f->sites_total++;
	uint32_t n = f->nsites, i = n;
	if (n == FINDING_SITES) {
		if (s->ns <= f->sites[n - 1].ns)
			return;
		i = --n;
	}
	while (i > 0 && f->sites[i - 1].ns < s->ns) {
		f->sites[i] = f->sites[i - 1];
		i--;
	}
	f->sites[i] = *s;
	f->nsites = n + 1;
}

const char *finding_site_name(const finding_t *f, char *buf, size_t len)
{
	frame_t fr;
	if (!sym_stack_site(f->m, f->stack, &fr) ||
	    (!fr.function && !fr.module)) {
		snprintf(buf, len, "this site");
		return buf;
	}
	if (!fr.function) /* unnamed: its module and offset, as in stacks */
		return frame_label(&fr, buf, len);
	if (f->nlines < 2 || !fr.file)
		return frame_label(&fr, buf, len);
	const char *base = strrchr(fr.file, '/');
	int n = snprintf(buf, len, "%s (%s:", frame_name(&fr),
	                 base ? base + 1 : fr.file);
	for (uint32_t i = 0; i < f->nlines && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s%u", i ? ", " : "",
		              f->lines[i]);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ")");
	return buf;
}

void finding_set_lines(finding_t *f, const uint32_t *line, uint32_t n)
{
	if (n < 2)
		return;
	if (n > FINDING_LINES)
		n = FINDING_LINES;
	memcpy(f->lines, line, n * sizeof *line);
	f->nlines = n;
}

uint32_t finding_lock(const finding_t *f)
{
	if (f->lock != NONE32)
		return f->lock;
	if (f->cls != NONE32)
		return f->m->cls[f->cls].rep;
	return NONE32;
}

static double ev(const finding_t *f, ev_t e)
{
	return finding_ev(f, e, 0);
}

/* ", estimated from N timed calls" when f's allocator time is an
 * estimate (allocator_ns_estimated), else "". */
static const char *estimate_from(const finding_t *f, char *buf, size_t len)
{
	buf[0] = 0;
	if (ev(f, EV_ALLOCATOR_NS_ESTIMATED))
		snprintf(buf, len, ", estimated from %.0f timed calls",
		         ev(f, EV_TIMED_SAMPLES));
	return buf;
}

/* "about " and ", estimated from K of N timed holds" when f's hold and
 * allocator-in-hold figures are estimates (timed_holds: some holds were
 * not timed, MALLOCK_HOLD_EVERY), else "" and "". */
static const char *hold_about(const finding_t *f)
{
	return finding_has(f, EV_TIMED_HOLDS) ? "about " : "";
}

static const char *holds_from(const finding_t *f, char *buf, size_t len)
{
	buf[0] = 0;
	if (finding_has(f, EV_TIMED_HOLDS))
		snprintf(buf, len, ", estimated from %.0f of %.0f timed holds",
		         ev(f, EV_TIMED_HOLDS), ev(f, EV_HOLDS));
	return buf;
}

/* "128 KiB" for whole KiB, else bytes. */
static const char *bytes_label(char *buf, size_t len, double b)
{
	if (b >= 1024 && (uint64_t)b % 1024 == 0)
		snprintf(buf, len, "%.0f KiB", b / 1024);
	else
		snprintf(buf, len, "%.0f bytes", b);
	return buf;
}

/* Appends why f ranks at most low when it rests on fewer timed samples
 * than MIN_TIMED_SAMPLES (cap_on_samples in find_allocs.c). */
static void add_capped(const finding_t *f, char *buf, size_t len,
                       const char *what)
{
	double n = finding_ev(f, EV_TIMED_SAMPLES, -1);
	if (n < 0 || n >= TH_MIN_TIMED_SAMPLES)
		return;
	size_t l = strlen(buf);
	snprintf(buf + l, len - l,
	         " Ranked at most low: it rests on %.0f %s, fewer than %d.", n,
	         what, TH_MIN_TIMED_SAMPLES);
}

const char *finding_summary(const finding_t *f, char *buf, size_t len)
{
	char a[32], b[32], c[32], g[32], d[64], e[64], efrom[80], hfrom[80];
	const model_t *m = f->m;
	switch (f->kind) {
	case FK_ALLOC_UNDER_LOCK: {
		char from[64] = "this site";
		if (ev(f, EV_SITES) > 1)
			snprintf(from, sizeof from, "%.0f allocation sites",
			         ev(f, EV_SITES));
		snprintf(
		    buf, len,
		    "waiters lost %s on this lock (%.0f contended "
		    "acquisition%s); its holders spent %s%.1f%% of their hold "
		    "time in the allocator%s; %.0f calls (%.0f allocation%s, "
		    "%.0f free%s) for blocks from %s take %s%.1f%% (%s%.0f "
		    "slow, %s waiting on the allocator's own lock).",
		    human_ns(a, sizeof a, ev(f, EV_LOCK_WAIT_NS)),
		    ev(f, EV_CONTENDED), plural(ev(f, EV_CONTENDED)),
		    hold_about(f), 100 * ev(f, EV_ALLOCATOR_SHARE_OF_HOLD),
		    holds_from(f, hfrom, sizeof hfrom), ev(f, EV_CALLS),
		    ev(f, EV_ALLOCS), plural(ev(f, EV_ALLOCS)), ev(f, EV_FREES),
		    plural(ev(f, EV_FREES)), from, hold_about(f),
		    100 * ev(f, EV_SITE_SHARE_OF_HOLD), hold_about(f),
		    ev(f, EV_SLOW_CALLS),
		    human_ns(b, sizeof b, ev(f, EV_ALLOCATOR_LOCK_WAIT_NS)));
		if (ev(f, EV_CALLS_WITHOUT_STACK) > 0) {
			size_t l = strlen(buf);
			snprintf(
			    buf + l, len - l,
			    " Besides, %.0f frees of blocks whose "
			    "allocation is not in the trace (unsampled, or "
			    "made before recording) take %.1f%%.",
			    ev(f, EV_CALLS_WITHOUT_STACK),
			    100 * ev(f, EV_ALLOCATOR_NS_WITHOUT_STACK) /
			        ev(f, EV_HOLD_NS));
		}
		frame_t fr;
		if (ev(f, EV_FREE_NS_IN_HOLDS) > 0) {
			char held[320] = "", lab[300];
			if (sym_stack_site(f->m, f->stack2, &fr) &&
			    (fr.function || fr.module))
				snprintf(
				    held, sizeof held,
				    ", %s of it in holds taken at %s",
				    human_ns(c, sizeof c,
				             ev(f, EV_FREE_NS_AT_HOLD_SITE)),
				    frame_label(&fr, lab, sizeof lab));
			size_t l = strlen(buf);
			snprintf(
			    buf + l, len - l,
			    " Frees take %.1f%% of the allocator time in "
			    "these holds (%s%s).",
			    100 * ev(f, EV_FREE_SHARE),
			    human_ns(g, sizeof g, ev(f, EV_FREE_NS_IN_HOLDS)),
			    held);
		}
		break;
	}
	case FK_CROSS_THREAD_FREE:
		/* Their time is their allocations' and frees': two calls a
		 * block, of which the timed ones are counted. */
		if (ev(f, EV_ALLOCATOR_NS_ESTIMATED))
			snprintf(efrom, sizeof efrom,
			         ", estimated from %.0f timed of their %.0f "
			         "calls",
			         ev(f, EV_TIMED_SAMPLES),
			         2 * ev(f, EV_CROSS_THREAD_FREES));
		else
			efrom[0] = 0;
		snprintf(
		    buf, len,
		    "%s of %s frees (%.0f%%) happen on another thread than "
		    "the allocating one (%.0f allocating, %.0f freeing "
		    "threads), %s%s spent in the allocator on them (their "
		    "allocations and frees)%s.",
		    human_count(d, sizeof d, ev(f, EV_CROSS_THREAD_FREES)),
		    human_count(e, sizeof e, ev(f, EV_FREES)),
		    100 * ev(f, EV_SHARE), ev(f, EV_ALLOCATING_THREADS),
		    ev(f, EV_FREEING_THREADS),
		    ev(f, EV_ALLOCATOR_NS_ESTIMATED) ? "about " : "",
		    human_ns(a, sizeof a, ev(f, EV_ALLOCATOR_NS)), efrom);
		add_capped(f, buf, len, "timed calls");
		break;
	case FK_ALLOC_CHURN:
		snprintf(buf, len,
		         "%s short-lived blocks (%.0f%% of size %.0f bytes), "
		         "%.0f/s, living %s on average; %s%s in the "
		         "allocator%s.",
		         human_count(d, sizeof d, ev(f, EV_SHORT_LIVED)),
		         100 * ev(f, EV_SIZE_SHARE), ev(f, EV_SIZE),
		         ev(f, EV_RATE_PER_S),
		         human_ns(a, sizeof a, ev(f, EV_MEAN_LIFETIME_NS)),
		         ev(f, EV_ALLOCATOR_NS_ESTIMATED) ? "about " : "",
		         human_ns(b, sizeof b, ev(f, EV_ALLOCATOR_NS)),
		         estimate_from(f, efrom, sizeof efrom));
		add_capped(f, buf, len, "timed calls");
		break;
	case FK_NESTED_LOCK: {
		char o[128], i[320];
		lock_label(m, &m->lock[m->cls[f->cls].rep], o, sizeof o);
		lock_label(m, &m->lock[m->cls[f->cls2].rep], i, sizeof i);
		if (f->members_total > 1) {
			char one[128];
			snprintf(one, sizeof one, "%.120s", i);
			snprintf(i, sizeof i, "%u inner locks (the worst: %s)",
			         f->members_total, one);
		}
		if (ev(f, EV_INVERSION)) {
			char b2[32];
			snprintf(
			    buf, len,
			    "Taken in both orders: %.0f acquisitions of %s "
			    "while holding %s (%s waited on it meanwhile) and "
			    "%.0f of %s while holding %s (%s waited on it "
			    "meanwhile).",
			    ev(f, EV_NESTED_ACQUISITIONS), i, o,
			    human_ns(a, sizeof a,
			             ev(f, EV_INNER_WAIT_NS_WHILE_OUTER_HELD)),
			    ev(f, EV_REVERSE_NESTED_ACQUISITIONS), o, i,
			    human_ns(
			        b2, sizeof b2,
			        ev(f,
			           EV_REVERSE_INNER_WAIT_NS_WHILE_OUTER_HELD)));
			break;
		}
		if (f->cls == f->cls2) {
			snprintf(
			    buf, len,
			    "%.0f acquisitions of an instance of %s while "
			    "holding another one (%.0f at a higher address, "
			    "%.0f at a lower); %s waited on the inner instance "
			    "meanwhile; the outer ones were waited on for %s "
			    "(%.1f%% of their hold time is spent holding an "
			    "inner one).",
			    ev(f, EV_NESTED_ACQUISITIONS), i,
			    ev(f, EV_NESTED_ASCENDING_ADDRESS),
			    ev(f, EV_NESTED_DESCENDING_ADDRESS),
			    human_ns(a, sizeof a,
			             ev(f, EV_INNER_WAIT_NS_WHILE_OUTER_HELD)),
			    human_ns(b, sizeof b, ev(f, EV_OUTER_WAIT_NS)),
			    100 * ev(f, EV_OUTER_HOLD_SHARE_IN_INNER));
			break;
		}
		snprintf(
		    buf, len,
		    "%.0f acquisitions of %s while holding %s; %s waited on "
		    "the inner lock meanwhile; the outer lock was waited on "
		    "for %s (%.1f%% of its hold time is spent holding the "
		    "inner one).",
		    ev(f, EV_NESTED_ACQUISITIONS), i, o,
		    human_ns(a, sizeof a,
		             ev(f, EV_INNER_WAIT_NS_WHILE_OUTER_HELD)),
		    human_ns(b, sizeof b, ev(f, EV_OUTER_WAIT_NS)),
		    100 * ev(f, EV_OUTER_HOLD_SHARE_IN_INNER));
		break;
	}
	case FK_STARVATION: {
		const char *what = ev(f, EV_SERVICE_BY_COND_WAKES)
		                       ? "condition wakes"
		                       : "acquisitions";
		char range[96];
		if (ev(f, EV_SERVICE_MIN) == ev(f, EV_SERVICE_MAX))
			snprintf(range, sizeof range, "%.0f %s per thread",
			         ev(f, EV_SERVICE_MIN), what);
		else
			snprintf(range, sizeof range,
			         "%s from %.0f to %.0f per thread", what,
			         ev(f, EV_SERVICE_MIN), ev(f, EV_SERVICE_MAX));
		snprintf(buf, len,
		         "%.0f threads running the same code share the lock "
		         "unequally: %s (rate CV %.2f), %.0f with none; the "
		         "%.0f behind the mean rate lost %s of service at that "
		         "rate.",
		         ev(f, EV_THREADS), range, ev(f, EV_ACQUISITIONS_CV),
		         ev(f, EV_THREADS_WITH_NO_ACQUISITION),
		         ev(f, EV_THREADS_BEHIND),
		         human_ns(a, sizeof a, ev(f, EV_LOST_NS)));
		break;
	}
	case FK_SLOW_ALLOC: {
		char from[160] = "";
		bool est = ev(f, EV_ESTIMATED) != 0;
		if (est)
			snprintf(
			    from, sizeof from,
			    "estimated from %.0f slow of %.0f timed calls, ",
			    ev(f, EV_TIMED_SLOW_CALLS), ev(f, EV_TIMED_CALLS));
		snprintf(
		    buf, len,
		    "%s%s of %s allocator calls (%.1f%%) %s took over %s "
		    "(%smean %s, median call %s); its calls waited %s on the "
		    "allocator's own lock.",
		    est ? "about " : "",
		    human_count(d, sizeof d, ev(f, EV_SLOW_CALLS)),
		    human_count(e, sizeof e, ev(f, EV_CALLS)),
		    100 * ev(f, EV_SLOW_SHARE),
		    ev(f, EV_LOCK_HELD) ? "made with a lock held"
		                        : "made with no lock held",
		    human_ns(a, sizeof a, ev(f, EV_THRESHOLD_NS)), from,
		    human_ns(b, sizeof b, ev(f, EV_MEAN_SLOW_NS)),
		    human_ns(c, sizeof c, ev(f, EV_MEDIAN_CALL_NS)),
		    human_ns(g, sizeof g, ev(f, EV_ALLOCATOR_LOCK_WAIT_NS)));
		if (ev(f, EV_PREEMPTED_CALLS) > 0) {
			size_t l = strlen(buf);
			char mig[64] = "";
			if (ev(f, EV_MIGRATED_CALLS) > 0)
				snprintf(mig, sizeof mig,
				         ", %.0f of them moved to another CPU "
				         "during the call",
				         ev(f, EV_MIGRATED_CALLS));
			snprintf(
			    buf + l, len - l,
			    " Set apart as preemption, not counted: %.0f "
			    "timed %s (%s in all%s) that took over %s "
			    "with no wait on the allocator's own lock for "
			    "blocks under %s, or moved to another CPU.",
			    ev(f, EV_PREEMPTED_CALLS),
			    ev(f, EV_PREEMPTED_CALLS) == 1 ? "call" : "calls",
			    human_ns(a, sizeof a, ev(f, EV_PREEMPTED_NS)), mig,
			    human_ns(b, sizeof b, TH_PREEMPT_NS),
			    bytes_label(c, sizeof c, TH_PREEMPT_MAX_BYTES));
		}
		add_capped(f, buf, len, "timed slow calls");
		break;
	}
	case FK_FUTEX_LOCK:
		if (ev(f, EV_LOCK_WORDS) > 1)
			snprintf(d, sizeof d, "these %.0f futex lock words",
			         ev(f, EV_LOCK_WORDS));
		else
			snprintf(d, sizeof d, "this futex lock word");
		snprintf(buf, len,
		         "waiters lost %s on %s: %.0f waits "
		         "that slept in the kernel (longest %s) by %.0f "
		         "threads; %.0f threads released it with %.0f wakes. "
		         "Only waits that reached the kernel are seen: how "
		         "often it was taken and how long it was held are not.",
		         human_ns(a, sizeof a, ev(f, EV_LOCK_WAIT_NS)), d,
		         ev(f, EV_FUTEX_WAITS),
		         human_ns(b, sizeof b, ev(f, EV_WAIT_MAX_NS)),
		         ev(f, EV_WAITING_THREADS), ev(f, EV_WAKING_THREADS),
		         ev(f, EV_FUTEX_WAKES));
		break;
	case FK_LOCK_CONTENTION:
		snprintf(
		    buf, len,
		    "waiters lost %s on this lock (%.0f of %s acquisitions "
		    "contended, %.1f%%, up to %.0f thread%s waiting at once, "
		    "%.0f of the %.0f threads that took it waited); holds "
		    "took a median of %s%s, p99 %s, longest %s%s; holders "
		    "spent %s%.1f%% of their hold time in the allocator, "
		    "%.1f%% holding other locks, the rest (%.1f%%) on their "
		    "own work%s.",
		    human_ns(a, sizeof a, ev(f, EV_LOCK_WAIT_NS)),
		    ev(f, EV_CONTENDED),
		    human_count(d, sizeof d, ev(f, EV_ACQUISITIONS)),
		    100 * ev(f, EV_CONTENDED_SHARE), ev(f, EV_MAX_WAITERS),
		    ev(f, EV_MAX_WAITERS) == 1 ? "" : "s",
		    ev(f, EV_WAITING_THREADS), ev(f, EV_THREADS), hold_about(f),
		    human_ns(b, sizeof b, ev(f, EV_HOLD_MEDIAN_NS)),
		    human_ns(c, sizeof c, ev(f, EV_HOLD_P99_NS)),
		    finding_has(f, EV_TIMED_HOLDS) ? "timed " : "",
		    human_ns(g, sizeof g, ev(f, EV_HOLD_MAX_NS)), hold_about(f),
		    100 * ev(f, EV_ALLOCATOR_SHARE_OF_HOLD),
		    100 * ev(f, EV_INNER_LOCK_SHARE_OF_HOLD),
		    100 * ev(f, EV_OWN_WORK_SHARE),
		    holds_from(f, hfrom, sizeof hfrom));
		break;
	default:
		buf[0] = 0;
	}
	return buf;
}
