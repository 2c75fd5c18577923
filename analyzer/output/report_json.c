/*
 * report_json.c - the JSON report, schema "mallock.report/1"
 * (docs/report-json.md). Names in the contract stay stable; more members
 * may be added.
 */
#include "classes.h"
#include "json.h"
#include "load.h"
#include "report.h"
#include "symbols.h"
#include "trace_format.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JSON_FRAMES 64
#define JSON_POINTS 5
#define JSON_SITES 50
/* Lock instances and classes listed (unless --all): the top ones by wait,
 * then acquisitions, plus every named one and every one a finding names;
 * the rest are one total. A web server's 82k mutexes made a 103 MB report. */
#define JSON_LOCKS 50
/* A fold keeps whole the instances this lists (lockfold.c). */
_Static_assert(JSON_LOCKS <= FOLD_KEEP_TOP, "JSON_LOCKS above FOLD_KEEP_TOP");

static void frame_json(jw_t *w, const frame_t *f)
{
	char a[32];
	jw_obj(w);
	jw_kstr(w, "function", f->function);
	jw_kstr(w, "file", f->file);
	jw_key(w, "line");
	if (f->line)
		jw_u64(w, f->line);
	else
		jw_null(w);
	jw_kstr(w, "module", f->module);
	jw_key(w, "address");
	if (f->address) {
		snprintf(a, sizeof a, "0x%" PRIx64, f->address);
		jw_str(w, a);
	} else {
		jw_null(w);
	}
	if (f->inlined)
		jw_kbool(w, "inlined", true);
	jw_end(w, '}');
}

static void site_json(jw_t *w, model_t *m, const char *key, uint32_t stack)
{
	frame_t f;
	jw_key(w, key);
	if (sym_stack_site(m, stack, &f))
		frame_json(w, &f);
	else
		jw_null(w);
}

static void stack_json(jw_t *w, model_t *m, const char *key, uint32_t stack)
{
	frame_t fr[JSON_FRAMES];
	int n = stack_view(m, stack, fr, JSON_FRAMES);
	jw_key(w, key);
	jw_arr(w);
	for (int i = 0; i < n; i++)
		frame_json(w, &fr[i]);
	jw_end(w, ']');
}

static void hist_json(jw_t *w, const char *key, const hist_t *h)
{
	int last = -1;
	for (int i = 0; i < HIST_BUCKETS; i++)
		if (h->n[i])
			last = i;
	jw_key(w, key);
	jw_arr(w);
	for (int i = 0; i <= last; i++)
		jw_u64(w, h->n[i]);
	jw_end(w, ']');
}

static void trace_json(jw_t *w, const report_t *r, model_t *m)
{
	char tr[400];
	size_t nthr = 0;
	for (size_t i = 0; i < m->nthr; i++)
		nthr += m->thr[i].events > 0;
	jw_obj(w);
	jw_kstr(w, "path", m->path);
	jw_ku64(w, "pid", m->pid);
	jw_ku64(w, "ppid", m->ppid);
	jw_kstr(w, "command", m->cmdline && *m->cmdline ? m->cmdline : m->exe);
	jw_kstr(w, "exe", m->exe);
	jw_kstr(w, "hostname", m->hostname);
	jw_kstr(w, "recorder_version", m->version);
	jw_ku64(w, "duration_ns", model_duration_ns(m));
	jw_ku64(w, "recorded_ns", model_recorded_ns(m));
	jw_ku64(w, "threads", nthr);
	jw_ku64(w, "events", m->events);
	jw_ku64(w, "dropped_events", m->tot.dropped);
	jw_kbool(w, "truncated", m->info.truncated);
	if (m->info.truncated) {
		jw_ku64(w, "truncated_at", m->info.truncated_at);
		jw_kstr(w, "truncation", truncation_text(m, tr, sizeof tr));
	}
	jw_ku64(w, "chunks_read", m->info.chunks);
	jw_key(w, "chunks_total");
	if (m->info.chunks_total)
		jw_u64(w, m->info.chunks_total);
	else
		jw_null(w);
	jw_kbool(w, "clean_exit", m->have_end && m->end_clean);
	jw_kbool(w, "attached", m->attached);
	jw_kbool(w, "window_closed", !m->have_end && m->paused);
	char rec[256];
	jw_kstr(w, "recording", recording_text(m, rec, sizeof rec));
	jw_key(w, "ended_without_exit");
	if (!m->have_end && !m->paused) {
		jw_obj(w);
		jw_ku64(w, "after_ns", unended_after_ns(m));
		jw_end(w, '}');
	} else {
		jw_null(w);
	}
	char blind[400];
	jw_kstr(w, "blind_spot",
	        *blind_text(m, blind, sizeof blind) ? blind : NULL);
	jw_kstr(w, "clock_source", m->info.clock_source);
	jw_knum(w, "ns_per_tick", m->ns_per_tick);
	jw_key(w, "notes");
	jw_arr(w);
	for (size_t i = 0; i < m->nnote; i++) {
		jw_obj(w);
		jw_kstr(w, "level",
		        m->note[i].level == FMT_NOTE_WARN ? "warning" : "info");
		jw_kstr(w, "text", m->note[i].text);
		jw_ku64(w, "count", m->note[i].count);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	/* Modules whose frames stayed unnamed */
	const sym_missing_t *ms;
	size_t nms = sym_missing(m, &ms);
	jw_key(w, "missing_symbols");
	jw_arr(w);
	for (size_t i = 0; i < nms; i++) {
		jw_obj(w);
		jw_kstr(w, "module", ms[i].module);
		jw_kstr(w, "build_id", ms[i].build_id);
		jw_ku64(w, "frames", ms[i].frames);
		jw_key(w, "package");
		if (ms[i].package)
			jw_str(w, ms[i].package);
		else
			jw_null(w);
		jw_kstr(w, "hint", ms[i].hint);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	(void)r;
	jw_end(w, '}');
}

/* The top JSON_POINTS pairs of kind k for lock li, by ns: those of its
 * site group (model_pair), its own when it is alone at its site. */
static void points_json(jw_t *w, model_t *m, const char *key, int k,
                        uint32_t li, const char *nkey, const char *nskey)
{
	const uint32_t *idx;
	const lock_t *l = &m->lock[li];
	size_t n = model_lock_pairs(
	    m, k, l->hist ? m->lhist[l->hist - 1].rep : li, &idx);
	jw_key(w, key);
	jw_arr(w);
	for (size_t i = 0; i < n && i < JSON_POINTS; i++) {
		const lspair_t *p = &m->ls[k].v[idx[i]];
		jw_obj(w);
		jw_ku64(w, nkey, p->n);
		jw_ku64(w, nskey, p->ns);
		if (k == LS_HOLDER)
			jw_ku64(w, "wait_caused_ns", p->ns2);
		stack_json(w, m, "stack", p->stack);
		jw_end(w, '}');
	}
	jw_end(w, ']');
}

/* A class's top JSON_POINTS points, summed over its instances. */
static void class_points_json(jw_t *w, model_t *m, uint32_t c, int k,
                              const char *key, const char *nkey,
                              const char *nskey)
{
	point_t p[JSON_POINTS];
	size_t total;
	int n = class_points(m, c, k, p, JSON_POINTS, &total);
	jw_key(w, key);
	jw_arr(w);
	for (int i = 0; i < n; i++) {
		jw_obj(w);
		jw_ku64(w, nkey, p[i].n);
		jw_ku64(w, nskey, p[i].ns);
		if (k == LS_HOLDER)
			jw_ku64(w, "wait_caused_ns", p[i].ns2);
		stack_json(w, m, "stack", p[i].stack);
		jw_end(w, '}');
	}
	jw_end(w, ']');
}

static void stats_json(jw_t *w, const lockstat_t *s)
{
	jw_ku64(w, "acquisitions", s->acq);
	jw_ku64(w, "contended", s->contended);
	jw_ku64(w, "wait_ns", s->wait_ns);
	jw_ku64(w, "idle_wait_ns", s->idle_wait_ns);
	jw_ku64(w, "hold_ns", s->hold_ns);
	jw_ku64(w, "allocations_in_holds", s->alloc_calls);
	jw_ku64(w, "allocator_ns_in_holds", s->alloc_ns);
	jw_ku64(w, "allocator_lock_wait_ns_in_holds", s->alloc_lw_ns);
	jw_ku64(w, "allocs_in_holds", s->alloc_allocs);
	jw_ku64(w, "slow_allocator_calls_in_holds", s->alloc_slow);
	jw_ku64(w, "holds", s->holds);
	jw_ku64(w, "timed_holds", s->holds_timed);
	jw_ku64(w, "holds_set_apart", s->holds_apart);
	jw_ku64(w, "holds_set_apart_ns", s->holds_apart_ns);
	jw_ku64(w, "holds_with_alloc", s->holds_with_alloc);
	jw_ku64(w, "shared_acquisitions", s->acq_shared);
	jw_ku64(w, "try_failures", s->try_fail);
	jw_ku64(w, "cond_waits", s->cond_waits);
	jw_ku64(w, "cond_wakes", s->cond_wakes);
	jw_ku64(w, "owner_switches", s->owner_switches);
	jw_ku64(w, "contended_holds", s->contended_holds);
	jw_ku64(w, "wait_max_ns", s->wait_max);
	jw_ku64(w, "hold_max_ns", s->hold_max);
	jw_ku64(w, "max_waiters", s->max_waiters);
	jw_ku64(w, "allocator_internal_waits", s->internal_waits);
	jw_ku64(w, "futex_waits", s->futex_waits);
	jw_ku64(w, "futex_wakes", s->futex_wakes);
	jw_ku64(w, "futex_woken", s->futex_woken);
}

static void empty_json(jw_t *w, const char *key)
{
	jw_key(w, key);
	jw_arr(w);
	jw_end(w, ']');
}

/* A futex word's side that woke its waiters (LS_HOLDER pairs of lock li,
 * or of class c when li is NONE32), by number of wakes: what a futex word
 * shows of its holders. */
static void wakers_json(jw_t *w, model_t *m, uint32_t li, uint32_t c)
{
	point_t p[JSON_POINTS];
	size_t total;
	int n;
	if (li == NONE32) {
		n = class_points(m, c, LS_HOLDER, p, JSON_POINTS, &total);
	} else {
		const uint32_t *idx;
		size_t np = model_lock_pairs(m, LS_HOLDER, li, &idx);
		n = 0;
		for (size_t i = 0; i < np && n < JSON_POINTS; i++) {
			const lspair_t *q = &m->ls[LS_HOLDER].v[idx[i]];
			p[n].stack = q->stack;
			p[n].n = q->n;
			p[n].ns = q->ns;
			p[n++].ns2 = q->ns2;
		}
	}
	jw_key(w, "wakers");
	jw_arr(w);
	for (int i = 0; i < n; i++) {
		jw_obj(w);
		jw_ku64(w, "wakes", p[i].n);
		stack_json(w, m, "stack", p[i].stack);
		jw_end(w, '}');
	}
	jw_end(w, ']');
}

/* A kind's JSON value: the format's kind name, and the schema's word for a kind
 * the trace never said, "unknown" (docs/report-json.md). */
static const char *json_kind(uint32_t kind)
{
	return kind == LOCK_KIND_UNKNOWN ? "unknown" : fmt_lock_kind_name(kind);
}

typedef struct rank {
	uint64_t wait, acq;
	uint32_t i;
} rank_t;

static int by_rank(const void *a, const void *b)
{
	const rank_t *x = a, *y = b;
	if (x->wait != y->wait)
		return x->wait > y->wait ? -1 : 1;
	if (x->acq != y->acq)
		return x->acq > y->acq ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/*
 * Which lock instances (classes: cls true) of m the JSON lists: a bitmap
 * (1 listed) over m->lock (m->cls); unlisted candidates, those that pass
 * --lock, are summed into *rest. Everything with r->all. Allocates; the
 * caller frees.
 */
static uint8_t *listed(const report_t *r, model_t *m, bool cls,
                       lockstat_t *rest, uint64_t *nrest)
{
	size_t n = cls ? m->ncls : m->nlock, k = 0;
	uint8_t *on = xcalloc(n + 1, 1);
	rank_t *v = xmalloc((n + 1) * sizeof *v);
	/* --lock is tested once per class (it scans the instances). */
	uint8_t *match = xmalloc(m->ncls + 1);
	for (size_t c = 0; c < m->ncls; c++)
		match[c] = report_class_matches(r, m, (uint32_t)c);
	for (size_t i = 0; i < n; i++) {
		uint32_t c = cls ? (uint32_t)i : m->lock[i].cls;
		if (c == NONE32 || !match[c])
			continue;
		const lockstat_t *s = cls ? &m->cls[i].s : &m->lock[i].s;
		bool named =
		    cls ? m->cls[i].name != NULL : m->lock[i].name != NULL;
		if (r->all || named)
			on[i] = 1;
		v[k].wait = s->wait_ns;
		v[k].acq = s->acq;
		v[k].i = (uint32_t)i;
		k++;
	}
	if (k > 1)
		qsort(v, k, sizeof *v, by_rank);
	for (size_t i = 0; i < k && i < JSON_LOCKS; i++)
		on[v[i].i] = 1;
	for (size_t i = 0; i < r->f.n; i++) {
		const finding_t *f = &r->f.v[i];
		if (f->m != m)
			continue;
		uint32_t li = finding_lock(f);
		uint32_t c[2] = {f->cls, f->cls2};
		if (!cls && li != NONE32)
			on[li] = 1;
		for (int j = 0; j < 2; j++)
			if (c[j] != NONE32)
				on[cls ? c[j] : m->cls[c[j]].rep] = 1;
	}
	for (size_t i = 0; i < k; i++) {
		const lock_t *l = cls ? NULL : &m->lock[v[i].i];
		if (l && l->fold) { /* folded instances are never listed */
			lockstat_add(rest, &m->fold[l->fold - 1].s);
			*nrest += m->fold[l->fold - 1].n;
		}
		if (!on[v[i].i]) {
			lockstat_add(rest, cls ? &m->cls[v[i].i].s
			                       : &m->lock[v[i].i].s);
			++*nrest;
		}
	}
	free(v);
	free(match);
	return on;
}

static void rest_json(jw_t *w, const char *key, const char *what,
                      const lockstat_t *s, uint64_t n)
{
	jw_key(w, key);
	jw_obj(w);
	jw_ku64(w, what, n);
	jw_ku64(w, "acquisitions", s->acq);
	jw_ku64(w, "contended", s->contended);
	jw_ku64(w, "wait_ns", s->wait_ns);
	jw_ku64(w, "hold_ns", s->hold_ns);
	jw_end(w, '}');
}

static void locks_json(jw_t *w, const report_t *r)
{
	char a[32];
	lockstat_t rest = {0};
	uint64_t nrest = 0;
	jw_key(w, "locks");
	jw_arr(w);
	for (size_t t = 0; t < r->nm; t++) {
		model_t *m = &r->m[t];
		uint8_t *on = listed(r, m, false, &rest, &nrest);
		for (size_t i = 0; i < m->nlock; i++) {
			const lock_t *l = &m->lock[i];
			if (!on[i])
				continue;
			jw_obj(w);
			jw_ku64(w, "id", report_lock_id(r, m, l));
			jw_kstr(w, "kind", json_kind(l->kind));
			jw_kstr(w, "name", l->name);
			char lab[700];
			jw_kstr(w, "label", lock_label(m, l, lab, sizeof lab));
			jw_kbool(w, "queue_like",
			         l->queue_cond || l->queue_named);
			site_json(w, m, "init_site", l->init_stack);
			stats_json(w, &l->s);
			if (l->lw_size_max) {
				jw_ku64(w, "waiting_call_size_min",
				        l->lw_size_min);
				jw_ku64(w, "waiting_call_size_max",
				        l->lw_size_max);
			}
			jw_ku64(w, "pid", m->pid);
			snprintf(a, sizeof a, "0x%" PRIx64, l->addr);
			jw_kstr(w, "address", l->addr ? a : NULL);
			jw_ku64(w, "class", l->cls);
			site_json(w, m, "first_site", l->first_site);
			points_json(w, m, "contention_points", LS_WAITER,
			            (uint32_t)i, "waits", "wait_ns");
			/* A futex word has no holds: its wakers instead. */
			if (l->kind != FMT_KIND_FUTEX)
				points_json(w, m, "contending_points",
				            LS_HOLDER, (uint32_t)i, "holds",
				            "hold_ns");
			else
				empty_json(w, "contending_points");
			if (l->kind == FMT_KIND_FUTEX) {
				jw_kbool(w, "futex_lock_word",
				         l->futex_lockish);
				wakers_json(w, m, (uint32_t)i, NONE32);
			}
			jw_end(w, '}');
		}
		free(on);
	}
	jw_end(w, ']');
	rest_json(w, "locks_not_listed", "locks", &rest, nrest);
	memset(&rest, 0, sizeof rest);
	nrest = 0;
	jw_key(w, "lock_classes");
	jw_arr(w);
	for (size_t t = 0; t < r->nm; t++) {
		model_t *m = &r->m[t];
		uint8_t *on = listed(r, m, true, &rest, &nrest);
		for (size_t i = 0; i < m->ncls; i++) {
			const lockclass_t *c = &m->cls[i];
			if (!on[i])
				continue;
			jw_obj(w);
			jw_ku64(w, "class", i);
			jw_ku64(w, "pid", m->pid);
			jw_ku64(w, "lock",
			        report_lock_id(r, m, &m->lock[c->rep]));
			jw_kstr(w, "kind", json_kind(c->kind));
			jw_kstr(w, "name", c->name);
			char lab[700];
			jw_kstr(
			    w, "label",
			    lock_label(m, &m->lock[c->rep], lab, sizeof lab));
			jw_kbool(w, "queue_like", c->queue);
			jw_ku64(w, "instances", c->ninst);
			jw_kstr(w, "site_kind",
			        c->site == NONE32 ? NULL
			        : c->by_init      ? "init"
			                          : "first_acquisition");
			site_json(w, m, "site", c->site);
			frame_t own;
			jw_key(w, "owner");
			if (class_owner(m, (uint32_t)i, &own))
				frame_json(w, &own);
			else
				jw_null(w);
			stats_json(w, &c->s);
			hist_json(w, "wait_hist_log2_ns", &c->wait_hist);
			hist_json(w, "hold_hist_log2_ns", &c->hold_hist);
			class_points_json(w, m, (uint32_t)i, LS_WAITER,
			                  "contention_points", "waits",
			                  "wait_ns");
			if (c->kind != FMT_KIND_FUTEX)
				class_points_json(w, m, (uint32_t)i, LS_HOLDER,
				                  "contending_points", "holds",
				                  "hold_ns");
			else
				empty_json(w, "contending_points");
			if (c->kind == FMT_KIND_FUTEX) {
				jw_kbool(w, "futex_lock_word",
				         c->s.wait_ns > c->s.idle_wait_ns);
				wakers_json(w, m, NONE32, (uint32_t)i);
			}
			jw_end(w, '}');
		}
		free(on);
	}
	jw_end(w, ']');
	rest_json(w, "lock_classes_not_listed", "classes", &rest, nrest);
}

static void threads_json(jw_t *w, const report_t *r)
{
	jw_key(w, "threads");
	jw_arr(w);
	for (size_t t = 0; t < r->nm; t++) {
		model_t *m = &r->m[t];
		for (size_t i = 0; i < m->nthr; i++) {
			const thread_t *th = &m->thr[i];
			if (!th->events && !th->name)
				continue;
			jw_obj(w);
			jw_ku64(w, "tid", th->tid);
			jw_ku64(w, "pid", m->pid);
			jw_kstr(w, "name", th->name);
			jw_kstr(w, "role", th->role);
			jw_ku64(w, "parent", th->parent);
			jw_ku64(w, "events", th->events);
			jw_ku64(w, "allocations", th->allocs);
			jw_ku64(w, "frees", th->frees);
			jw_ku64(w, "allocated_bytes", th->bytes);
			jw_ku64(w, "allocator_ns", th->alloc_ns);
			jw_ku64(w, "cross_thread_frees", th->xfrees);
			jw_ku64(w, "lock_acquisitions", th->acq);
			jw_ku64(w, "contended_acquisitions", th->contended);
			jw_ku64(w, "lock_wait_ns", th->wait_ns);
			jw_ku64(w, "cond_waits", th->cond_waits);
			jw_ku64(w, "cond_signals", th->cond_signals);
			jw_ku64(w, "cond_sleep_ns", th->sleep_ns);
			jw_ku64(w, "dropped_events", th->dropped);
			jw_end(w, '}');
		}
	}
	jw_end(w, ']');
}

typedef struct site_ref {
	model_t *m;
	uint32_t stack;
	uint64_t ns;
} site_ref_t;

static int by_site_ns(const void *a, const void *b)
{
	const site_ref_t *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static void tids_json(jw_t *w, model_t *m, const char *key, const uint32_t *thr,
                      const uint64_t *n)
{
	jw_key(w, key);
	jw_arr(w);
	for (int i = 0; i < SITE_THREADS && thr[i]; i++) {
		jw_obj(w);
		jw_ku64(w, "tid", m->thr[thr[i] - 1].tid);
		jw_ku64(w, "count", n[i]);
		jw_end(w, '}');
	}
	jw_end(w, ']');
}

static void sites_json(jw_t *w, const report_t *r)
{
	site_ref_t *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t t = 0; t < r->nm; t++)
		for (size_t i = 0; i < r->m[t].nstk; i++) {
			const site_t *s = r->m[t].stk[i].site;
			if (!s)
				continue;
			VEC_RESERVE(v, cap, n);
			v[n].m = &r->m[t];
			v[n].stack = (uint32_t)i;
			v[n].ns = s->alloc_ns + s->free_ns;
			n++;
		}
	if (n)
		qsort(v, n, sizeof *v, by_site_ns);
	jw_key(w, "alloc_sites");
	jw_arr(w);
	for (size_t i = 0; i < n && i < JSON_SITES; i++) {
		model_t *m = v[i].m;
		const site_t *s = m->stk[v[i].stack].site;
		jw_obj(w);
		jw_ku64(w, "pid", m->pid);
		site_json(w, m, "site", v[i].stack);
		stack_json(w, m, "stack", v[i].stack);
		jw_ku64(w, "allocations", s->allocs + s->reallocs);
		jw_ku64(w, "bytes", s->bytes);
		jw_ku64(w, "frees", s->frees);
		jw_ku64(w, "live", s->live);
		jw_ku64(w, "allocator_ns", s->alloc_ns + s->free_ns);
		jw_ku64(w, "allocator_lock_wait_ns", s->lw_ns);
		jw_knum(w, "lifetime_mean_ns",
		        s->frees ? (double)s->life_ns / (double)s->frees : 0);
		jw_ku64(w, "lifetime_max_ns", s->life_max);
		jw_ku64(w, "short_lived", s->short_n);
		jw_ku64(w, "cross_thread_frees", s->xfree_n);
		jw_ku64(w, "calls_with_lock_held", s->calls[1]);
		/* estimated from the timed calls (site_scale), without the
		 * calls set apart as preemption, which are counted apart */
		jw_ku64(w, "slow_calls",
		        (uint64_t)((double)s->slow_n[0] * site_scale(s, 0) +
		                   (double)s->slow_n[1] * site_scale(s, 1) +
		                   0.5));
		jw_ku64(w, "timed_calls", s->timed[0] + s->timed[1]);
		jw_ku64(w, "preempted_calls", s->pre_n[0] + s->pre_n[1]);
		tids_json(w, m, "allocating_threads", s->athr, s->athr_n);
		tids_json(w, m, "freeing_threads", s->fthr, s->fthr_n);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	free(v);
}

static void findings_json(jw_t *w, const report_t *r)
{
	jw_key(w, "findings");
	jw_arr(w);
	for (size_t i = 0; i < r->f.n; i++) {
		const finding_t *f = &r->f.v[i];
		model_t *m = f->m;
		char a[1024];
		jw_obj(w);
		jw_kstr(w, "kind", finding_kind_name(f->kind));
		jw_kstr(w, "severity", severity_name(f->severity));
		jw_knum(w, "score", f->score);
		{
			uint64_t rec = model_recorded_ns(m);
			jw_key(w, "share_of_recorded_time");
			if (rec)
				jw_num(w, f->score / (double)rec);
			else
				jw_null(w);
		}
		uint32_t li = finding_lock(f);
		jw_key(w, "lock");
		if (li != NONE32)
			jw_u64(w, report_lock_id(r, m, &m->lock[li]));
		else
			jw_null(w);
		if (f->cls2 != NONE32)
			jw_ku64(w, "inner_lock",
			        report_lock_id(r, m,
			                       &m->lock[m->cls[f->cls2].rep]));
		if (li != NONE32)
			jw_kstr(w, "lock_name",
			        lock_label(m, &m->lock[li], a, sizeof a));
		site_json(w, m, "site", f->stack);
		stack_json(w, m, "stack", f->stack);
		if (f->kind == FK_FUTEX_LOCK) /* the holders' side */
			stack_json(w, m, "waker_stack", f->stack2);
		if (f->kind == FK_NESTED_LOCK && f->stack2 != NONE32)
			/* an inversion: the other order's inner acquisition */
			stack_json(w, m, "reverse_stack", f->stack2);
		if (f->nlines > 1) {
			/* one function allocating at several lines */
			jw_key(w, "lines");
			jw_arr(w);
			for (uint32_t k = 0; k < f->nlines; k++)
				jw_u64(w, f->lines[k]);
			jw_end(w, ']');
		}
		if (f->stack_unit != EV_NONE) {
			/* Allocation findings are per site: the stacks that
			 * reach it, heaviest first. */
			jw_kstr(w, "stacks_unit", ev_name(f->stack_unit));
			jw_ku64(w, "stacks_total", f->stacks_total);
			jw_key(w, "stacks");
			jw_arr(w);
			for (uint32_t k = 0; k < f->nstacks; k++) {
				jw_obj(w);
				jw_knum(w, "value", f->stack_v[k]);
				stack_json(w, m, "stack", f->stacks[k]);
				jw_end(w, '}');
			}
			jw_end(w, ']');
		}
		if (f->kind == FK_ALLOC_UNDER_LOCK) {
			/* One finding per lock class: the allocation sites of
			 * the blocks its holds allocated or freed, the
			 * heaviest first; the holding code that freed most. */
			jw_ku64(w, "sites_total", f->sites_total);
			jw_key(w, "sites");
			jw_arr(w);
			for (uint32_t k = 0; k < f->nsites; k++) {
				const fsite_t *s = &f->sites[k];
				jw_obj(w);
				jw_knum(w, "allocator_ns", s->ns);
				jw_knum(w, "calls", s->calls);
				jw_knum(w, "allocs", s->allocs);
				jw_knum(w, "frees", s->frees);
				jw_knum(w, "slow_calls", s->slow);
				jw_knum(w, "allocator_lock_wait_ns", s->lw_ns);
				jw_ku64(w, "stacks_total", s->stacks);
				site_json(w, m, "site", s->stack);
				stack_json(w, m, "stack", s->stack);
				jw_end(w, '}');
			}
			jw_end(w, ']');
			if (f->stack2 != NONE32) {
				site_json(w, m, "free_hold_site", f->stack2);
				stack_json(w, m, "free_hold_stack", f->stack2);
			}
		}
		if (f->members_total) {
			/* The lock instances one finding groups. */
			jw_kstr(w, "members_unit", f->member_unit);
			jw_ku64(w, "members_total", f->members_total);
			jw_key(w, "members");
			jw_arr(w);
			for (uint32_t k = 0; k < f->nmembers; k++) {
				const lock_t *ml = &m->lock[f->member[k]];
				jw_obj(w);
				jw_ku64(w, "lock", report_lock_id(r, m, ml));
				jw_kstr(w, "lock_name",
				        lock_label(m, ml, a, sizeof a));
				jw_knum(w, "value", f->member_v[k]);
				jw_end(w, '}');
			}
			jw_end(w, ']');
		}
		if (finding_has(f, EV_HOLD_MEDIAN_NS)) {
			/* A contended lock's waiters and holders, by the
			 * wait they lost and caused. */
			class_points_json(w, m, f->cls, LS_WAITER, "waiters",
			                  "waits", "wait_ns");
			class_points_json(w, m, f->cls, LS_HOLDER, "holders",
			                  "holds", "hold_ns");
		}
		jw_key(w, "evidence");
		jw_obj(w);
		for (int k = 0; k < f->nev; k++)
			jw_knum(w, ev_name(f->ev_id[k]), f->ev_v[k]);
		jw_end(w, '}');
		jw_kstr(w, "summary", finding_summary(f, a, sizeof a));
		jw_kstr(w, "advice", f->advice);
		jw_ku64(w, "pid", m->pid);
		jw_end(w, '}');
	}
	jw_end(w, ']');
}

/* The cascade's four steps as the text report words them (report_cascade),
 * for readers of the JSON and the HTML page. */
static void cascade_json(jw_t *w, const report_t *r)
{
	cascade_t c;
	if (!report_cascade(r, &c))
		return;
	jw_key(w, "cascade");
	jw_obj(w);
	jw_ku64(w, "finding", c.idx);
	jw_key(w, "steps");
	jw_arr(w);
	for (int k = 0; k < CASCADE_STEPS; k++)
		jw_str(w, c.step[k]);
	jw_end(w, ']');
	jw_end(w, '}');
}

void report_json(const report_t *r, FILE *out)
{
	jw_t w;
	totals_t t = {0};
	jw_init(&w, out);
	jw_obj(&w);
	jw_kstr(&w, "schema", "mallock.report/1");
	jw_key(&w, "trace");
	trace_json(&w, r, &r->m[0]);
	jw_key(&w, "traces");
	jw_arr(&w);
	for (size_t i = 0; i < r->nm; i++)
		trace_json(&w, r, &r->m[i]);
	jw_end(&w, ']');
	for (size_t i = 0; i < r->nm; i++) {
#define TOT_ADD_(name, json) t.name += r->m[i].tot.name;
		MODEL_TOTALS(TOT_ADD_)
#undef TOT_ADD_
	}
	jw_key(&w, "totals");
	jw_obj(&w);
#define TOT_JSON_(name, json) jw_ku64(&w, json, t.name);
	MODEL_TOTALS(TOT_JSON_)
#undef TOT_JSON_
	jw_end(&w, '}');
	locks_json(&w, r);
	threads_json(&w, r);
	sites_json(&w, r);
	findings_json(&w, r);
	cascade_json(&w, r);
	jw_end(&w, '}');
}
