/*
 * unit_evidence.c - a finding's evidence, typed (finding_evidence.h): every
 * kind's declared members fit EV_MAX, so a finder can never write more than
 * fits; each name is its enum's, once; a finding of each kind takes every
 * member it declares and keeps them in the order they were put (the JSON's
 * order). A member the kind does not declare, or one put twice, is a
 * finder's bug: finding_put aborts with a message rather than drop it.
 * A finding's sites are its heaviest FINDING_SITES, heaviest first,
 * whatever order they come in, and every site is counted. A score of
 * exactly a severity's threshold (TH_SEV_*_PPM of the recorded time) has
 * that severity; a nanosecond less, the one below.
 *
 *   unit_evidence             the checks above (a CTest of its own)
 *   unit_evidence undeclared  puts a member its kind does not declare:
 *                             aborts (test_contention.py)
 *   unit_evidence twice       puts a member twice: aborts (likewise)
 */
#include "finding.h"
#include "thresholds.h"

#include "test.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const enum_names[] = {
#define EV_ENUM_NAME_(e, name, unit, kinds, words) #e,
    FINDING_EVIDENCE(EV_ENUM_NAME_)
#undef EV_ENUM_NAME_
};

/* A finding of kind holding every member the kind declares, valued by
 * its enum, in the list's order. */
static void fill(findings_t *out, model_t *m, int kind)
{
	finding_t *f = finding_add(out, m, kind, 1);
	for (int e = 0; e < EV_COUNT_; e++)
		if (ev_kinds(e) >> kind & 1)
			finding_put(f, e, 1000.0 + e);
	check_eq(f->nev, ev_kind_count(kind));
	int k = 0;
	for (int e = 0; e < EV_COUNT_; e++) {
		if (ev_kinds(e) >> kind & 1) {
			check(finding_has(f, e));
			check(finding_ev(f, e, -1) == 1000.0 + e);
			check_eq(f->ev_id[k], e); /* the order it was put */
			k++;
		} else {
			check(!finding_has(f, e));
			check(finding_ev(f, e, -1) == -1);
		}
	}
}

/* Sites of allocator time 1, 3, 2, 5, 4, 0.5 ns (stacks 10 to 15): the
 * heaviest four are kept, heaviest first; all six are counted. */
static void sites(findings_t *out, model_t *m)
{
	finding_t *f = finding_add(out, m, FK_ALLOC_UNDER_LOCK, 1);
	static const double ns[] = {1, 3, 2, 5, 4, 0.5};
	for (uint32_t k = 0; k < 6; k++) {
		fsite_t s = {.stack = 10 + k, .ns = ns[k]};
		finding_add_site(f, &s);
	}
	check_eq(f->sites_total, 6);
	check_eq(f->nsites, FINDING_SITES);
	static const uint32_t want[] = {13, 14, 11, 12};
	for (uint32_t i = 0; i < FINDING_SITES && i < 4; i++)
		check_eq(f->sites[i].stack, want[i]);
}

/* A recording of 1 s (1 tick a ns): 1 ppm is 1000 ns of score. */
static void severity(findings_t *out)
{
	static model_t m;
	m.first_tsc = 1000;
	m.last_tsc = 1000 + 1000000000;
	m.ns_per_tick = 1;
	static const struct {
		double ppm;
		int sev;
	} band[] = {{TH_SEV_HIGH_PPM, SEV_HIGH},
	            {TH_SEV_MEDIUM_PPM, SEV_MEDIUM},
	            {TH_SEV_LOW_PPM, SEV_LOW}};
	for (int i = 0; i < 3; i++) {
		double at = band[i].ppm * 1000;
		finding_t *f = finding_add(out, &m, FK_LOCK_CONTENTION, at);
		check_eq(f->severity, band[i].sev);
		finding_rescore(f, at - 1);
		check_eq(f->severity, i < 2 ? band[i + 1].sev : SEV_INFO);
	}
	/* no recorded time: any score is high */
	m.last_tsc = m.first_tsc;
	check_eq(finding_add(out, &m, FK_LOCK_CONTENTION, 1)->severity,
	         SEV_HIGH);
}

int main(int argc, char **argv)
{
	static model_t m;
	findings_t out = {0};
	if (argc > 1) {
		/* nested_lock does not declare cross_thread_frees */
		finding_t *f = finding_add(&out, &m, FK_NESTED_LOCK, 1);
		if (strcmp(argv[1], "undeclared") == 0)
			finding_put(f, EV_CROSS_THREAD_FREES, 1);
		finding_put(f, EV_NESTED_ACQUISITIONS, 1);
		finding_put(f, EV_NESTED_ACQUISITIONS, 2);
		fprintf(stderr, "unit_evidence: %s: the member was taken\n",
		        argv[1]);
		return 0;
	}
	int most = 0;
	for (int k = 0; k < FK_COUNT; k++) {
		int n = ev_kind_count(k);
		if (n > EV_MAX)
			fprintf(
			    stderr,
			    "unit_evidence: %s declares %d evidence members, "
			    "more than EV_MAX (%d) hold\n",
			    finding_kind_name(k), n, EV_MAX);
		check(n <= EV_MAX);
		check(n > 0);
		most = n > most ? n : most;
		fill(&out, &m, k);
	}
	sites(&out, &m);
	severity(&out);
	printf("unit_evidence: the most members a kind declares: %d of "
	       "EV_MAX %d, %d members in all\n",
	       most, EV_MAX, (int)EV_COUNT_);
	/* the JSON name is the enum's, in lower case, and each is once */
	for (int e = 0; e < EV_COUNT_; e++) {
		char low[80];
		size_t i = 0;
		for (; enum_names[e][i] && i + 1 < sizeof low; i++)
			low[i] = (char)tolower((unsigned char)enum_names[e][i]);
		low[i] = 0;
		if (strcmp(low, ev_name(e)) != 0)
			fprintf(stderr, "unit_evidence: EV_%s is named %s\n",
			        enum_names[e], ev_name(e));
		check_eq(low, ev_name(e));
		check(ev_kinds(e) != 0);
		check(ev_unit(e) >= 0 && ev_unit(e) < EVU_COUNT_);
		for (int o = 0; o < e; o++)
			check(strcmp(ev_name(o), ev_name(e)) != 0);
		/* a phrase has one %s, where the value goes */
		const char *w = ev_words(e), *p = w ? strchr(w, '%') : NULL;
		check(!w || (p && p[1] == 's' && !strchr(p + 1, '%')));
	}
	free(out.v);
	return test_done();
}
