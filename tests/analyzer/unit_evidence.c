/*
 * unit_evidence.c - a finding holds EV_MAX evidence members; one more is a
 * finder's bug, and finding_put aborts with a message rather than drop it.
 *
 *   unit_evidence fit   puts EV_MAX members, checks them, exits 0
 *   unit_evidence       puts EV_MAX + 1: aborts (test_contention.py)
 */
#include "finding.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	static model_t m;
	findings_t out = {0};
	finding_t *f = finding_add(&out, &m, FK_LOCK_CONTENTION, 1);
	static char keys[EV_MAX + 1][16];
	for (int i = 0; i < EV_MAX; i++) {
		snprintf(keys[i], sizeof keys[i], "k%d", i);
		finding_put(f, keys[i], i);
	}
	if (f->nev != EV_MAX || finding_ev(f, "k0", -1) != 0 ||
	    finding_ev(f, keys[EV_MAX - 1], -1) != EV_MAX - 1) {
		fprintf(stderr, "unit_evidence: members lost\n");
		return 1;
	}
	if (argc > 1 && strcmp(argv[1], "fit") == 0)
		return 0;
	finding_put(f, "one_too_many", 1);
	fprintf(stderr, "unit_evidence: the member past EV_MAX was taken\n");
	return 0;
}
