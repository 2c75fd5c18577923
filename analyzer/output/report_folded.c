/*
 * report_folded.c - FlameGraph's folded stacks ("root;...;leaf count"),
 * one line per stack, counting the chosen metric (--metric):
 *   wait              ns waited, by waiter stack; leaf "[wait LOCK]"
 *   hold              ns held, by acquisition stack; leaf "[hold LOCK]"
 *   alloc-under-lock  allocator ns inside holds, by allocation stack;
 *                     leaf "[alloc under LOCK]"
 *   cross-thread      blocks freed on another thread, by allocation stack
 *   caused            the wait a holder caused, by holder stack at its
 *                     contended releases; leaf "[caused on LOCK]"
 * Recorded stacks are leaf first; folded lines are root first. With several
 * traces each line starts with "pid N".
 */
#include "report.h"
#include "symbols.h"

#include <inttypes.h>
#include <string.h>

#define FOLD_FRAMES 128

/* Writes a frame name with ';' and newlines made harmless. */
static void put_name(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, out);
}

static void put_frame(FILE *out, const frame_t *f)
{
	char buf[512];
	if (f->function)
		put_name(out, f->function);
	else
		put_name(out, frame_label(f, buf, sizeof buf));
}

static void line(FILE *out, const report_t *r, model_t *m, uint32_t stack,
                 const char *leaf, uint64_t count)
{
	frame_t fr[FOLD_FRAMES];
	int n = stack_view(m, stack, fr, FOLD_FRAMES);
	bool first = true;
	if (!count)
		return;
	if (r->nm > 1) {
		fprintf(out, "pid %" PRIu64, m->pid);
		first = false;
	}
	for (int i = n; i-- > 0;) {
		if (!first)
			fputc(';', out);
		put_frame(out, &fr[i]);
		first = false;
	}
	if (leaf) {
		if (!first)
			fputc(';', out);
		put_name(out, leaf);
	}
	fprintf(out, " %" PRIu64 "\n", count);
}

static void pairs(FILE *out, const report_t *r, model_t *m, int k,
                  const char *what)
{
	const lstab_t *t = &m->ls[k];
	for (size_t i = 0; i < t->n; i++) {
		const lspair_t *p = &t->v[i];
		const lock_t *l = &m->lock[p->lock];
		/* A futex word's waits and wakes are not lock waits and
		 * holds (no acquisition is seen): the profiles keep to the
		 * locks whose waits JSON's lock_wait_ns totals, as pprof's. */
		if (l->kind == FMT_KIND_FUTEX ||
		    !report_class_matches(r, m, l->cls))
			continue;
		char name[160], leaf[200];
		lock_label(m, l, name, sizeof name);
		snprintf(leaf, sizeof leaf, "[%s %s]", what, name);
		/* caused: a holder stack counts the wait it caused */
		line(out, r, m, p->stack, leaf,
		     r->metric == METRIC_CAUSED ? p->ns2 : p->ns);
	}
}

void report_folded(const report_t *r, FILE *out)
{
	for (size_t t = 0; t < r->nm; t++) {
		model_t *m = &r->m[t];
		switch (r->metric) {
		case METRIC_WAIT:
			pairs(out, r, m, LS_WAITER, "wait");
			break;
		case METRIC_HOLD:
			pairs(out, r, m, LS_ACQSITE, "hold");
			break;
		case METRIC_CAUSED:
			pairs(out, r, m, LS_HOLDER, "caused on");
			break;
		case METRIC_ALLOC_UNDER_LOCK:
			pairs(out, r, m, LS_ALLOC, "alloc under");
			break;
		case METRIC_CROSS_THREAD:
			for (size_t i = 0; i < m->nstk; i++)
				if (m->stk[i].site)
					line(out, r, m, (uint32_t)i,
					     "[cross-thread free]",
					     m->stk[i].site->xfree_n);
			break;
		}
	}
}
