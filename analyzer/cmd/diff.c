/*
 * diff.c - `mallock diff [--format=text|json] BEFORE AFTER`: the measures
 * of two traces side by side, as in the before/after of a fix. Lock
 * classes are matched by name (when named) or symbolized site; findings by
 * kind, symbolized code site and lock class. Each row shows wait, hold and
 * allocator-in-hold time before and after and the change.
 *
 * Exit status as `mallock report`.
 */
#include "cli.h"
#include "json.h"
#include "load.h"
#include "report.h"
#include "symbols.h"

#include <getopt.h> /* optarg, optind */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct drow {
	char key[300];
	lockstat_t s[2]; /* summed over the classes matched to the row */
	bool has[2];
	const finding_t *f[2];
	int kind;
} drow_t;

typedef struct dtab {
	drow_t *v;
	size_t n, cap;
	u64map_t map; /* hash of (kind, key) -> row index */
} dtab_t;

/* The row of (key, kind), created on first use. Looked up by a hash, not a
 * scan: two traces of many lock classes must not take quadratic time. */
static drow_t *row(dtab_t *t, const char *key, int kind)
{
	uint64_t h = 14695981039346656037ull ^ (uint64_t)(kind + 2);
	for (const char *p = key; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	if (h == U64MAP_EMPTY)
		h--;
	int added;
	uint32_t *v = u64map_put(&t->map, h, &added);
	if (!added) {
		drow_t *r = &t->v[*v];
		if (r->kind == kind &&
		    strncmp(r->key, key, sizeof r->key - 1) == 0)
			return r;
		/* A hash collision: fall back to a scan. */
		for (size_t i = 0; i < t->n; i++)
			if (t->v[i].kind == kind &&
			    strncmp(t->v[i].key, key, sizeof r->key - 1) == 0)
				return &t->v[i];
	} else {
		*v = (uint32_t)t->n;
	}
	VEC_RESERVE(t->v, t->cap, t->n);
	drow_t *r = &t->v[t->n++];
	memset(r, 0, sizeof *r);
	snprintf(r->key, sizeof r->key, "%s", key);
	r->kind = kind;
	return r;
}

/* A class's matching key: its name, or its symbolized site. Allocator-
 * internal locks have neither (they are keyed by the futex word's
 * address, which moves between runs): they match by kind, all of one
 * module as one class ("allocator-internal locks (libtcmalloc.so.4)"), or
 * all outside any module as another ("... (heap)"). */
static const char *class_key(model_t *m, uint32_t c, char *buf, size_t len)
{
	const lockclass_t *k = &m->cls[c];
	frame_t fr;
	if (k->kind == FMT_KIND_ALLOC_INTERNAL && !k->name) {
		const char *mod = sym_module_path(m, m->lock[k->rep].addr);
		snprintf(buf, len, "allocator-internal locks (%s)",
		         mod ? path_base(mod) : "heap");
	} else if (k->name)
		snprintf(buf, len, "%s", k->name);
	else if (sym_stack_site(m, k->site, &fr) && fr.function)
		frame_label(&fr, buf, len);
	else
		lock_label(m, &m->lock[k->rep], buf, len);
	return buf;
}

static const char *finding_key(const finding_t *f, char *buf, size_t len)
{
	char site[200] = "-", lock[200] = "-";
	frame_t fr;
	if (sym_stack_site(f->m, f->stack, &fr))
		frame_label(&fr, site, sizeof site);
	if (f->cls != NONE32)
		class_key(f->m, f->cls, lock, sizeof lock);
	snprintf(buf, len, "%s @ %s", lock, site);
	return buf;
}

/* Row r's stats of trace i, or NULL when the row has no class there. */
#define SX(r, i) ((r)->has[i] ? &(r)->s[i] : NULL)

static double st(const lockstat_t *s, int which)
{
	if (!s)
		return 0;
	return which == 0   ? (double)s->wait_ns
	       : which == 1 ? (double)s->hold_ns
	       : which == 2 ? (double)s->alloc_ns
	                    : (double)s->acq;
}

static int by_change(const void *a, const void *b)
{
	const drow_t *x = a, *y = b;
	double dx = 0, dy = 0;
	if (x->kind < 0) {
		dx = fabs(st(SX(x, 1), 0) - st(SX(x, 0), 0)) +
		     fabs(st(SX(x, 1), 2) - st(SX(x, 0), 2));
		dy = fabs(st(SX(y, 1), 0) - st(SX(y, 0), 0)) +
		     fabs(st(SX(y, 1), 2) - st(SX(y, 0), 2));
	} else {
		dx = fabs((x->f[1] ? x->f[1]->score : 0) -
		          (x->f[0] ? x->f[0]->score : 0));
		dy = fabs((y->f[1] ? y->f[1]->score : 0) -
		          (y->f[0] ? y->f[0]->score : 0));
	}
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->key, y->key);
}

static const char *pct(char *buf, size_t len, double a, double b)
{
	if (a == 0 && b == 0)
		snprintf(buf, len, "=");
	else if (a == 0)
		snprintf(buf, len, "new");
	else if (b == 0 && a > 0)
		snprintf(buf, len, "gone");
	else
		snprintf(buf, len, "%+.0f%%", 100.0 * (b - a) / a);
	return buf;
}

static void text_out(FILE *o, model_t *m, const dtab_t *locks,
                     const dtab_t *finds)
{
	char a[32], b[32], c[32], d[32], e[32], g[32], h[16], k[16], l[16];
	fprintf(o, "mallock diff\n  before: %s: %s, %s events\n", m[0].path,
	        human_ns(a, sizeof a, (double)model_duration_ns(&m[0])),
	        human_count(b, sizeof b, (double)m[0].events));
	fprintf(o, "  after:  %s: %s, %s events\n", m[1].path,
	        human_ns(a, sizeof a, (double)model_duration_ns(&m[1])),
	        human_count(b, sizeof b, (double)m[1].events));
	fprintf(o, "  lock wait %s -> %s (%s), allocator %s -> %s (%s)\n",
	        human_ns(a, sizeof a, (double)m[0].tot.wait_ns),
	        human_ns(b, sizeof b, (double)m[1].tot.wait_ns),
	        pct(h, sizeof h, (double)m[0].tot.wait_ns,
	            (double)m[1].tot.wait_ns),
	        human_ns(c, sizeof c, (double)m[0].tot.alloc_ns),
	        human_ns(d, sizeof d, (double)m[1].tot.alloc_ns),
	        pct(k, sizeof k, (double)m[0].tot.alloc_ns,
	            (double)m[1].tot.alloc_ns));
	fprintf(o,
	        "\nLock classes (before > after):\n  %-24s %-23s %-23s %-23s\n",
	        "lock", "wait", "hold", "allocator in holds");
	for (size_t i = 0; i < locks->n; i++) {
		const drow_t *r = &locks->v[i];
		fprintf(
		    o, "  %-24.24s %8s>%-8s %-5s %8s>%-8s %-5s %8s>%-8s %-5s\n",
		    r->key, human_ns(a, sizeof a, st(SX(r, 0), 0)),
		    human_ns(b, sizeof b, st(SX(r, 1), 0)),
		    pct(h, sizeof h, st(SX(r, 0), 0), st(SX(r, 1), 0)),
		    human_ns(c, sizeof c, st(SX(r, 0), 1)),
		    human_ns(d, sizeof d, st(SX(r, 1), 1)),
		    pct(k, sizeof k, st(SX(r, 0), 1), st(SX(r, 1), 1)),
		    human_ns(e, sizeof e, st(SX(r, 0), 2)),
		    human_ns(g, sizeof g, st(SX(r, 1), 2)),
		    pct(l, sizeof l, st(SX(r, 0), 2), st(SX(r, 1), 2)));
	}
	fprintf(o, "\nFindings (score before -> after):\n");
	for (size_t i = 0; i < finds->n; i++) {
		const drow_t *r = &finds->v[i];
		double s0 = r->f[0] ? r->f[0]->score : 0;
		double s1 = r->f[1] ? r->f[1]->score : 0;
		fprintf(o, "  %-17s %9s > %-9s %-5s %s\n",
		        finding_kind_name(r->kind), human_ns(a, sizeof a, s0),
		        human_ns(b, sizeof b, s1), pct(h, sizeof h, s0, s1),
		        r->key);
	}
	if (!finds->n)
		fprintf(o, "  none in either trace\n");
}

static void stat_json(jw_t *w, const char *key, const lockstat_t *s)
{
	jw_key(w, key);
	if (!s) {
		jw_null(w);
		return;
	}
	jw_obj(w);
	jw_ku64(w, "acquisitions", s->acq);
	jw_ku64(w, "contended", s->contended);
	jw_ku64(w, "wait_ns", s->wait_ns);
	jw_ku64(w, "hold_ns", s->hold_ns);
	jw_ku64(w, "allocator_ns_in_holds", s->alloc_ns);
	jw_ku64(w, "allocations_in_holds", s->alloc_calls);
	jw_end(w, '}');
}

static void json_out(FILE *o, model_t *m, const dtab_t *locks,
                     const dtab_t *finds)
{
	jw_t w;
	jw_init(&w, o);
	jw_obj(&w);
	jw_kstr(&w, "schema", "mallock.diff/1");
	for (int i = 0; i < 2; i++) {
		jw_key(&w, i ? "after" : "before");
		jw_obj(&w);
		jw_kstr(&w, "path", m[i].path);
		jw_ku64(&w, "pid", m[i].pid);
		jw_ku64(&w, "duration_ns", model_duration_ns(&m[i]));
		jw_ku64(&w, "events", m[i].events);
		jw_ku64(&w, "lock_wait_ns", m[i].tot.wait_ns);
		jw_ku64(&w, "allocator_ns", m[i].tot.alloc_ns);
		jw_ku64(&w, "allocations", m[i].tot.allocs);
		jw_kbool(&w, "truncated", m[i].info.truncated);
		jw_end(&w, '}');
	}
	jw_key(&w, "locks");
	jw_arr(&w);
	for (size_t i = 0; i < locks->n; i++) {
		const drow_t *r = &locks->v[i];
		jw_obj(&w);
		jw_kstr(&w, "lock", r->key);
		stat_json(&w, "before", SX(r, 0));
		stat_json(&w, "after", SX(r, 1));
		jw_key(&w, "delta");
		jw_obj(&w);
		jw_knum(&w, "wait_ns", st(SX(r, 1), 0) - st(SX(r, 0), 0));
		jw_knum(&w, "hold_ns", st(SX(r, 1), 1) - st(SX(r, 0), 1));
		jw_knum(&w, "allocator_ns_in_holds",
		        st(SX(r, 1), 2) - st(SX(r, 0), 2));
		jw_end(&w, '}');
		jw_end(&w, '}');
	}
	jw_end(&w, ']');
	jw_key(&w, "findings");
	jw_arr(&w);
	for (size_t i = 0; i < finds->n; i++) {
		const drow_t *r = &finds->v[i];
		double s0 = r->f[0] ? r->f[0]->score : 0;
		double s1 = r->f[1] ? r->f[1]->score : 0;
		jw_obj(&w);
		jw_kstr(&w, "kind", finding_kind_name(r->kind));
		jw_kstr(&w, "key", r->key);
		jw_kstr(&w, "status",
		        !r->f[0]   ? "new"
		        : !r->f[1] ? "gone"
		                   : "both");
		jw_key(&w, "before_score");
		if (r->f[0])
			jw_num(&w, s0);
		else
			jw_null(&w);
		jw_key(&w, "after_score");
		if (r->f[1])
			jw_num(&w, s1);
		else
			jw_null(&w);
		jw_knum(&w, "delta", s1 - s0);
		jw_end(&w, '}');
	}
	jw_end(&w, ']');
	jw_end(&w, '}');
}

enum { OPT_FORMAT = 256, OPT_NOSYM };

static const cli_opt_t diff_opts[] = {
    {"format", OPT_FORMAT, 1, "text|json",
     "output (default text): totals, lock classes and\nfindings side by "
     "side, with the change"},
    {"no-symbols", OPT_NOSYM, 0, NULL,
     "leave frames as addresses (then only named locks\nmatch across "
     "builds)"},
    {"help", 'h', 0, NULL, "this help"},
    {0}};

static const cli_cmd_t diff_cli = {
    .name = "diff",
    .usage = "[options] BEFORE AFTER",
    .outro = "BEFORE and AFTER are traces (a run before and after a fix); "
             "lock classes\nmatch by name or symbolized site, findings by "
             "kind, lock and site.\n",
    .opts = diff_opts,
    .operands = "BEFORE AFTER (two traces)",
    .min_operands = 2,
    .max_operands = 2,
};

int cmd_diff(int argc, char **argv)
{
	int c, json = 0, rc = 0;
	load_opts_t lo = {.symbols = true, .fold_locks = true};
	cli_t cli = {.cmd = &diff_cli};
	while ((c = cli_next(&cli, argc, argv)) != -1) {
		if (c == CLI_DONE)
			return cli.status;
		if (c == OPT_FORMAT &&
		    (!strcmp(optarg, "text") || !strcmp(optarg, "json")))
			json = !strcmp(optarg, "json");
		else if (c == OPT_FORMAT)
			return cli_bad_value("diff", "--format", optarg,
			                     "not text or json");
		else if (c == OPT_NOSYM)
			lo.symbols = false;
	}
	model_t m[2];
	findings_t f[2] = {{0}, {0}};
	memset(m, 0, sizeof m);
	for (int i = 0; i < 2 && !rc; i++)
		rc = load_trace(argv[optind + i], &m[i], &f[i], &lo);
	if (!rc) {
		dtab_t locks = {0}, finds = {0};
		char key[300];
		for (int i = 0; i < 2; i++) {
			for (size_t k = 0; k < m[i].ncls; k++) {
				if (!m[i].cls[k].s.acq &&
				    !m[i].cls[k].s.wait_ns)
					continue;
				drow_t *r = row(&locks,
				                class_key(&m[i], (uint32_t)k,
				                          key, sizeof key),
				                -1);
				lockstat_add(&r->s[i], &m[i].cls[k].s);
				r->has[i] = true;
			}
			findings_sort(&f[i]);
			for (size_t k = 0; k < f[i].n; k++) {
				drow_t *r = row(
				    &finds,
				    finding_key(&f[i].v[k], key, sizeof key),
				    f[i].v[k].kind);
				if (!r->f[i])
					r->f[i] = &f[i].v[k];
			}
		}
		if (locks.n)
			qsort(locks.v, locks.n, sizeof *locks.v, by_change);
		if (finds.n)
			qsort(finds.v, finds.n, sizeof *finds.v, by_change);
		if (json)
			json_out(stdout, m, &locks, &finds);
		else
			text_out(stdout, m, &locks, &finds);
		free(locks.v);
		free(finds.v);
		u64map_free(&locks.map);
		u64map_free(&finds.map);
	}
	for (int i = 0; i < 2; i++) {
		load_free(&m[i]);
		free(f[i].v);
	}
	return rc;
}
