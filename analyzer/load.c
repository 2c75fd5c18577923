/*
 * load.c - the pipeline of one trace (see load.h), and the thread roles.
 */
#include "load.h"

#include "aggregate.h"
#include "classes.h"
#include "reader.h"
#include "symbols.h"

#include <stdio.h>
#include <string.h>

const char *truncation_text(const model_t *m, char *buf, size_t len)
{
	const reader_info_t *in = &m->info;
	if (!in->truncated) {
		buf[0] = 0;
		return buf;
	}
	if (in->chunks_total)
		snprintf(buf, len,
		         "trace truncated at byte %llu: %u of %u chunks read "
		         "(%s)",
		         (unsigned long long)in->truncated_at, in->chunks,
		         in->chunks_total, in->why);
	else
		snprintf(buf, len,
		         "trace truncated at byte %llu: %u chunks read (%s)",
		         (unsigned long long)in->truncated_at, in->chunks,
		         in->why);
	return buf;
}

void threads_roles(model_t *m)
{
	for (size_t i = 0; i < m->nthr; i++) {
		thread_t *t = &m->thr[i];
		if (m->pid && t->tid == m->pid)
			t->role = "main";
		else if (t->cond_waits && t->cond_waits >= t->cond_signals)
			t->role = "consumer (waits on a condition)";
		else if (t->cond_signals)
			t->role = "producer (signals a condition)";
		else if (t->acq)
			t->role = "worker (takes locks)";
		else if (t->allocs)
			t->role = "worker (allocates)";
		else
			t->role = "idle";
	}
}

int load_trace(const char *path, model_t *m, findings_t *f,
               const load_opts_t *o)
{
	reader_t *r;
	char err[256], tr[400];
	int rc = reader_open(path, &r, err, sizeof err);
	memset(m, 0, sizeof *m);
	if (rc) {
		fprintf(stderr, "mallock: %s: %s\n", path, err);
		return rc;
	}
	aggregate(m, r, path, o->thread_filter);
	reader_close(r);
	if (m->info.truncated && !o->quiet)
		fprintf(stderr, "mallock: %s: %s\n", path,
		        truncation_text(m, tr, sizeof tr));
	sym_open(m, o->symbols);
	classes_build(m);
	threads_roles(m);
	if (f)
		findings_compute(m, f);
	return 0;
}

void load_free(model_t *m)
{
	sym_close(m);
	model_free(m);
}
