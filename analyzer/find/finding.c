/*
 * finding.c - one finding (see finding.h): names, evidence, creation with
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

int severity_parse(const char *s)
{
	for (int i = 0; i <= SEV_HIGH; i++)
		if (strcmp(s, severity_name(i)) == 0)
			return i;
	return -1;
}

double finding_ev(const finding_t *f, const char *key, double def)
{
	for (int i = 0; i < f->nev; i++)
		if (strcmp(f->ev[i].key, key) == 0)
			return f->ev[i].v;
	return def;
}

void finding_put(finding_t *f, const char *key, double v)
{
	if (f->nev >= EV_MAX) {
		fprintf(stderr,
		        "mallock: internal error: a %s finding has more than "
		        "%d evidence members (adding %s): raise EV_MAX\n",
		        finding_kind_name(f->kind), EV_MAX, key);
		abort();
	}
	f->ev[f->nev].key = key;
	f->ev[f->nev].v = v;
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

static double ev(const finding_t *f, const char *k)
{
	return finding_ev(f, k, 0);
}

/* ", estimated from N timed calls" when f's allocator time is an
 * estimate (allocator_ns_estimated), else "". */
static const char *estimate_from(const finding_t *f, char *buf, size_t len)
{
	buf[0] = 0;
	if (ev(f, "allocator_ns_estimated"))
		snprintf(buf, len, ", estimated from %.0f timed calls",
		         ev(f, "timed_samples"));
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
	double n = finding_ev(f, "timed_samples", -1);
	if (n < 0 || n >= TH_MIN_TIMED_SAMPLES)
		return;
	size_t l = strlen(buf);
	snprintf(buf + l, len - l,
	         " Ranked at most low: it rests on %.0f %s, fewer than %d.", n,
	         what, TH_MIN_TIMED_SAMPLES);
}

const char *finding_summary(const finding_t *f, char *buf, size_t len)
{
	char a[32], b[32], c[32], g[32], d[64], e[64], efrom[80];
	const model_t *m = f->m;
	switch (f->kind) {
	case FK_ALLOC_UNDER_LOCK: {
		char from[64] = "this site";
		if (ev(f, "sites") > 1)
			snprintf(from, sizeof from, "%.0f allocation sites",
			         ev(f, "sites"));
		snprintf(
		    buf, len,
		    "waiters lost %s on this lock (%.0f contended "
		    "acquisitions); its holders spent %.1f%% of their hold "
		    "time in the allocator; %.0f calls (%.0f allocations, "
		    "%.0f frees) for blocks from %s take %.1f%% (%.0f slow, %s "
		    "waiting on the allocator's own lock).",
		    human_ns(a, sizeof a, ev(f, "lock_wait_ns")),
		    ev(f, "contended"), 100 * ev(f, "allocator_share_of_hold"),
		    ev(f, "calls"), ev(f, "allocs"), ev(f, "frees"), from,
		    100 * ev(f, "site_share_of_hold"), ev(f, "slow_calls"),
		    human_ns(b, sizeof b, ev(f, "allocator_lock_wait_ns")));
		if (ev(f, "calls_without_stack") > 0) {
			size_t l = strlen(buf);
			snprintf(
			    buf + l, len - l,
			    " Besides, %.0f frees of blocks whose "
			    "allocation is not in the trace (unsampled, or "
			    "made before recording) take %.1f%%.",
			    ev(f, "calls_without_stack"),
			    100 * ev(f, "allocator_ns_without_stack") /
			        ev(f, "hold_ns"));
		}
		frame_t fr;
		if (ev(f, "free_ns_in_holds") > 0) {
			char held[320] = "", lab[300];
			if (sym_stack_site(f->m, f->stack2, &fr) &&
			    (fr.function || fr.module))
				snprintf(
				    held, sizeof held,
				    ", %s of it in holds taken at %s",
				    human_ns(c, sizeof c,
				             ev(f, "free_ns_at_hold_site")),
				    frame_label(&fr, lab, sizeof lab));
			size_t l = strlen(buf);
			snprintf(
			    buf + l, len - l,
			    " Frees take %.1f%% of the allocator time in "
			    "these holds (%s%s).",
			    100 * ev(f, "free_share"),
			    human_ns(g, sizeof g, ev(f, "free_ns_in_holds")),
			    held);
		}
		break;
	}
	case FK_CROSS_THREAD_FREE:
		snprintf(
		    buf, len,
		    "%s of %s frees (%.0f%%) happen on another thread than "
		    "the allocating one (%.0f allocating, %.0f freeing "
		    "threads), %s%s spent in the allocator on them%s.",
		    human_count(d, sizeof d, ev(f, "cross_thread_frees")),
		    human_count(e, sizeof e, ev(f, "frees")),
		    100 * ev(f, "share"), ev(f, "allocating_threads"),
		    ev(f, "freeing_threads"),
		    ev(f, "allocator_ns_estimated") ? "about " : "",
		    human_ns(a, sizeof a, ev(f, "allocator_ns")),
		    estimate_from(f, efrom, sizeof efrom));
		add_capped(f, buf, len, "timed calls");
		break;
	case FK_ALLOC_CHURN:
		snprintf(buf, len,
		         "%s short-lived blocks (%.0f%% of size %.0f bytes), "
		         "%.0f/s, living %s on average; %s%s in the "
		         "allocator%s.",
		         human_count(d, sizeof d, ev(f, "short_lived")),
		         100 * ev(f, "size_share"), ev(f, "size"),
		         ev(f, "rate_per_s"),
		         human_ns(a, sizeof a, ev(f, "mean_lifetime_ns")),
		         ev(f, "allocator_ns_estimated") ? "about " : "",
		         human_ns(b, sizeof b, ev(f, "allocator_ns")),
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
		if (ev(f, "inversion")) {
			char b2[32];
			snprintf(
			    buf, len,
			    "Taken in both orders: %.0f acquisitions of %s "
			    "while holding %s (%s waited on it meanwhile) and "
			    "%.0f of %s while holding %s (%s waited on it "
			    "meanwhile).",
			    ev(f, "nested_acquisitions"), i, o,
			    human_ns(a, sizeof a,
			             ev(f, "inner_wait_ns_while_outer_held")),
			    ev(f, "reverse_nested_acquisitions"), o, i,
			    human_ns(
			        b2, sizeof b2,
			        ev(f,
			           "reverse_inner_wait_ns_while_outer_held")));
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
			    ev(f, "nested_acquisitions"), i,
			    ev(f, "nested_ascending_address"),
			    ev(f, "nested_descending_address"),
			    human_ns(a, sizeof a,
			             ev(f, "inner_wait_ns_while_outer_held")),
			    human_ns(b, sizeof b, ev(f, "outer_wait_ns")),
			    100 * ev(f, "outer_hold_share_in_inner"));
			break;
		}
		snprintf(
		    buf, len,
		    "%.0f acquisitions of %s while holding %s; %s waited on "
		    "the inner lock meanwhile; the outer lock was waited on "
		    "for %s (%.1f%% of its hold time is spent holding the "
		    "inner one).",
		    ev(f, "nested_acquisitions"), i, o,
		    human_ns(a, sizeof a,
		             ev(f, "inner_wait_ns_while_outer_held")),
		    human_ns(b, sizeof b, ev(f, "outer_wait_ns")),
		    100 * ev(f, "outer_hold_share_in_inner"));
		break;
	}
	case FK_STARVATION: {
		const char *what = ev(f, "service_by_cond_wakes")
		                       ? "condition wakes"
		                       : "acquisitions";
		char range[96];
		if (ev(f, "service_min") == ev(f, "service_max"))
			snprintf(range, sizeof range, "%.0f %s per thread",
			         ev(f, "service_min"), what);
		else
			snprintf(range, sizeof range,
			         "%s from %.0f to %.0f per thread", what,
			         ev(f, "service_min"), ev(f, "service_max"));
		snprintf(buf, len,
		         "%.0f threads running the same code share the lock "
		         "unequally: %s (rate CV %.2f), %.0f with none; the "
		         "%.0f behind the mean rate lost %s of service at that "
		         "rate.",
		         ev(f, "threads"), range, ev(f, "acquisitions_cv"),
		         ev(f, "threads_with_no_acquisition"),
		         ev(f, "threads_behind"),
		         human_ns(a, sizeof a, ev(f, "lost_ns")));
		break;
	}
	case FK_SLOW_ALLOC: {
		char from[160] = "";
		bool est = ev(f, "estimated") != 0;
		if (est)
			snprintf(
			    from, sizeof from,
			    "estimated from %.0f slow of %.0f timed calls, ",
			    ev(f, "timed_slow_calls"), ev(f, "timed_calls"));
		snprintf(
		    buf, len,
		    "%s%s of %s allocator calls (%.1f%%) %s took over %s "
		    "(%smean %s, median call %s); its calls waited %s on the "
		    "allocator's own lock.",
		    est ? "about " : "",
		    human_count(d, sizeof d, ev(f, "slow_calls")),
		    human_count(e, sizeof e, ev(f, "calls")),
		    100 * ev(f, "slow_share"),
		    ev(f, "lock_held") ? "made with a lock held"
		                       : "made with no lock held",
		    human_ns(a, sizeof a, ev(f, "threshold_ns")), from,
		    human_ns(b, sizeof b, ev(f, "mean_slow_ns")),
		    human_ns(c, sizeof c, ev(f, "median_call_ns")),
		    human_ns(g, sizeof g, ev(f, "allocator_lock_wait_ns")));
		if (ev(f, "preempted_calls") > 0) {
			size_t l = strlen(buf);
			char mig[64] = "";
			if (ev(f, "migrated_calls") > 0)
				snprintf(mig, sizeof mig,
				         ", %.0f of them moved to another CPU "
				         "during the call",
				         ev(f, "migrated_calls"));
			snprintf(
			    buf + l, len - l,
			    " Set apart as preemption, not counted: %.0f "
			    "timed calls (%s in all%s) that took over %s "
			    "with no wait on the allocator's own lock for "
			    "blocks under %s, or moved to another CPU.",
			    ev(f, "preempted_calls"),
			    human_ns(a, sizeof a, ev(f, "preempted_ns")), mig,
			    human_ns(b, sizeof b, TH_PREEMPT_NS),
			    bytes_label(c, sizeof c, TH_PREEMPT_MAX_BYTES));
		}
		add_capped(f, buf, len, "timed slow calls");
		break;
	}
	case FK_FUTEX_LOCK:
		if (ev(f, "lock_words") > 1)
			snprintf(d, sizeof d, "these %.0f futex lock words",
			         ev(f, "lock_words"));
		else
			snprintf(d, sizeof d, "this futex lock word");
		snprintf(buf, len,
		         "waiters lost %s on %s: %.0f waits "
		         "that slept in the kernel (longest %s) by %.0f "
		         "threads; %.0f threads released it with %.0f wakes. "
		         "Only waits that reached the kernel are seen: how "
		         "often it was taken and how long it was held are not.",
		         human_ns(a, sizeof a, ev(f, "lock_wait_ns")), d,
		         ev(f, "futex_waits"),
		         human_ns(b, sizeof b, ev(f, "wait_max_ns")),
		         ev(f, "waiting_threads"), ev(f, "waking_threads"),
		         ev(f, "futex_wakes"));
		break;
	case FK_LOCK_CONTENTION:
		snprintf(
		    buf, len,
		    "waiters lost %s on this lock (%.0f of %s acquisitions "
		    "contended, %.1f%%, up to %.0f threads waiting at once, "
		    "%.0f of the %.0f threads that took it waited); holds "
		    "took a median of %s, p99 %s, longest %s; holders spent "
		    "%.1f%% of their hold time in the allocator, %.1f%% "
		    "holding other locks, the rest (%.1f%%) on their own "
		    "work.",
		    human_ns(a, sizeof a, ev(f, "lock_wait_ns")),
		    ev(f, "contended"),
		    human_count(d, sizeof d, ev(f, "acquisitions")),
		    100 * ev(f, "contended_share"), ev(f, "max_waiters"),
		    ev(f, "waiting_threads"), ev(f, "threads"),
		    human_ns(b, sizeof b, ev(f, "hold_median_ns")),
		    human_ns(c, sizeof c, ev(f, "hold_p99_ns")),
		    human_ns(g, sizeof g, ev(f, "hold_max_ns")),
		    100 * ev(f, "allocator_share_of_hold"),
		    100 * ev(f, "inner_lock_share_of_hold"),
		    100 * ev(f, "own_work_share"));
		break;
	default:
		buf[0] = 0;
	}
	return buf;
}
