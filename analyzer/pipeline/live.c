/*
 * live.c - `mallock top`'s engine (see live.h): the running model is fed
 * the chunks written since the last poll (live_advance); a child process
 * ends its copy of it as load_trace ends a model, copies the rows shown
 * and subtracts the previous poll's rows of the same class (by class key)
 * and site (class key and site label) to get the interval (live_finish),
 * and sends the view back.
 */
#define _GNU_SOURCE /* pipe2 */
#include "live.h"

#include "aggregate.h"
#include "load.h"
#include "reader.h"
#include "symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void view_free(live_view_t *v)
{
	free(v->lock);
	free(v->site);
	free(v->find);
	free(v->thr);
	memset(v, 0, sizeof *v);
}

/* Drops the running model and its reader. */
static void drop_model(live_t *lv)
{
	if (lv->m) {
		load_free(lv->m);
		free(lv->m);
	}
	reader_close(lv->rd);
	lv->m = NULL;
	lv->rd = NULL;
	lv->warm_stacks = lv->warm_mods = 0; /* a new model's are new */
}

void live_free(live_t *lv)
{
	drop_model(lv);
	view_free(&lv->prev);
	view_free(&lv->cur);
}

static void site_label(model_t *m, uint32_t stack, char *buf, size_t len)
{
	frame_t fr;
	char a[LIVE_NAME];
	if (stack != NONE32 && sym_stack_site(m, stack, &fr) &&
	    (fr.function || fr.module))
		snprintf(buf, len, "%s", frame_label(&fr, a, sizeof a));
	else
		buf[0] = 0;
}

/* The top of hist bucket b: the bound of the values it counts. */
static uint64_t bucket_top(unsigned b)
{
	return b + 1 >= 64 ? UINT64_MAX : (1ull << (b + 1)) - 1;
}

static const live_lock_t *prev_lock(const live_view_t *p, uint64_t key)
{
	for (size_t i = 0; i < p->nlock; i++)
		if (p->lock[i].key == key)
			return &p->lock[i];
	return NULL;
}

static const live_site_t *prev_site(const live_view_t *p, uint64_t key,
                                    const char *site)
{
	for (size_t i = 0; i < p->nsite; i++)
		if (p->site[i].cls_key == key && !strcmp(p->site[i].site, site))
			return &p->site[i];
	return NULL;
}

/* The interval of lock l: its window counters minus those of the previous
 * poll (sums; a class first seen now counts whole). */
static void lock_interval(live_lock_t *l, const live_lock_t *o)
{
	l->ivl = l->win;
	if (!o)
		return;
#define LOCK_SUB_(name, how, doc)                                              \
	l->ivl.name =                                                          \
	    l->win.name >= o->win.name ? l->win.name - o->win.name : 0;
	LOCK_COUNTERS(LOCK_SUB_)
#undef LOCK_SUB_
	l->ivl.max_waiters = l->win.max_waiters;
	l->ivl.hold_max =
	    l->win.hold_max > o->win.hold_max ? l->win.hold_max : 0;
	if (l->win.wait_max > o->win.wait_max) {
		l->ivl.wait_max = l->win.wait_max;
		return;
	}
	l->ivl.wait_max = 0;
	for (unsigned b = HIST_BUCKETS; b-- > 0;)
		if (l->wait_hist.n[b] > o->wait_hist.n[b]) {
			uint64_t top = bucket_top(b);
			l->ivl.wait_max =
			    top < l->win.wait_max ? top : l->win.wait_max;
			l->ivl_max_bound = true;
			break;
		}
}

static int sort_key;

static uint64_t lock_metric(const lockstat_t *s)
{
	return sort_key == LIVE_SORT_HOLD    ? s->hold_ns
	       : sort_key == LIVE_SORT_ALLOC ? s->alloc_ns
	                                     : s->wait_ns;
}

static int by_metric(const void *a, const void *b)
{
	const live_lock_t *x = a, *y = b;
	uint64_t p = lock_metric(&x->ivl), q = lock_metric(&y->ivl);
	if (p != q)
		return p < q ? 1 : -1;
	p = lock_metric(&x->win), q = lock_metric(&y->win);
	if (p != q)
		return p < q ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int by_site_ns(const void *a, const void *b)
{
	const live_site_t *x = a, *y = b;
	if (x->ins != y->ins)
		return x->ins < y->ins ? 1 : -1;
	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	int c = strcmp(x->lock, y->lock);
	return c ? c : strcmp(x->site, y->site);
}

static void copy_locks(live_t *lv, model_t *m, live_view_t *v)
{
	v->lock = calloc(m->ncls + 1, sizeof *v->lock);
	for (size_t c = 0; c < m->ncls; c++) {
		const lockclass_t *k = &m->cls[c];
		if (!k->s.acq && !k->s.wait_ns)
			continue;
		live_lock_t *l = &v->lock[v->nlock++];
		l->key = k->key;
		lock_label(m, &m->lock[k->rep], l->name, sizeof l->name);
		site_label(m, k->site, l->site, sizeof l->site);
		l->kind = k->kind;
		l->ninst = k->ninst;
		l->queue = k->queue;
		l->win = k->s;
		l->wait_hist = k->wait_hist;
		lock_interval(l, prev_lock(&lv->prev, l->key));
	}
	qsort(v->lock, v->nlock, sizeof *v->lock, by_metric);
}

static void copy_sites(live_t *lv, model_t *m, live_view_t *v)
{
	const lstab_t *t = &m->ls[LS_ALLOC];
	size_t cap = t->n + 1;
	v->site = calloc(cap, sizeof *v->site);
	for (size_t i = 0; i < t->n; i++) {
		const lspair_t *p = &t->v[i];
		uint32_t c = m->lock[p->lock].cls;
		if (c == NONE32 || c >= m->ncls)
			continue;
		char site[LIVE_NAME];
		site_label(m, p->stack, site, sizeof site);
		if (!site[0])
			snprintf(site, sizeof site, "[unknown]");
		live_site_t *s = NULL;
		for (size_t k = 0; k < v->nsite && !s; k++)
			if (v->site[k].cls_key == m->cls[c].key &&
			    !strcmp(v->site[k].site, site))
				s = &v->site[k];
		if (!s) {
			s = &v->site[v->nsite++];
			s->cls_key = m->cls[c].key;
			lock_label(m, &m->lock[m->cls[c].rep], s->lock,
			           sizeof s->lock);
			memcpy(s->site, site, sizeof s->site);
		}
		s->calls += p->n;
		s->allocs += p->n2;
		s->ns += p->ns;
		s->lw_ns += p->ns2;
	}
	for (size_t k = 0; k < v->nsite; k++) {
		live_site_t *s = &v->site[k];
		const live_site_t *o =
		    prev_site(&lv->prev, s->cls_key, s->site);
		s->icalls =
		    s->calls - (o && o->calls <= s->calls ? o->calls : 0);
		s->iallocs =
		    s->allocs - (o && o->allocs <= s->allocs ? o->allocs : 0);
		s->ins = s->ns - (o && o->ns <= s->ns ? o->ns : 0);
		s->ilw_ns =
		    s->lw_ns - (o && o->lw_ns <= s->lw_ns ? o->lw_ns : 0);
	}
	qsort(v->site, v->nsite, sizeof *v->site, by_site_ns);
}

static void copy_findings(model_t *m, findings_t *f, live_view_t *v)
{
	findings_sort(f);
	v->find = calloc(f->n + 1, sizeof *v->find);
	for (size_t i = 0; i < f->n; i++) {
		const finding_t *x = &f->v[i];
		live_find_t *o = &v->find[v->nfind++];
		snprintf(o->kind, sizeof o->kind, "%s",
		         finding_kind_name(x->kind));
		snprintf(o->severity, sizeof o->severity, "%s",
		         severity_name(x->severity));
		uint32_t li = finding_lock(x);
		if (li != NONE32)
			lock_label(m, &m->lock[li], o->lock, sizeof o->lock);
		if (x->stack != NONE32)
			finding_site_name(x, o->site, sizeof o->site);
		finding_summary(x, o->summary, sizeof o->summary);
		o->score_ns = x->score;
	}
}

static int by_thread_wait(const void *a, const void *b)
{
	const live_thread_t *x = a, *y = b;
	if (x->iwait_ns != y->iwait_ns)
		return x->iwait_ns < y->iwait_ns ? 1 : -1;
	if (x->wait_ns != y->wait_ns)
		return x->wait_ns < y->wait_ns ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* a minus the previous poll's b, or a whole when b is none or larger (a
 * tid reused by a new thread). */
static uint64_t since_prev(uint64_t a, const uint64_t *b)
{
	return b && *b <= a ? a - *b : a;
}

static void copy_threads(live_t *lv, model_t *m, live_view_t *v)
{
	v->thr = calloc(m->nthr + 1, sizeof *v->thr);
	for (size_t i = 0; i < m->nthr; i++) {
		const thread_t *t = &m->thr[i];
		if (!t->events)
			continue;
		live_thread_t *o = &v->thr[v->nthr++];
		o->tid = t->tid;
		snprintf(o->name, sizeof o->name, "%s", t->name ? t->name : "");
		o->exited = t->exited;
		o->events = t->events;
		o->acq = t->acq;
		o->contended = t->contended;
		o->wait_ns = t->wait_ns;
		o->allocs = t->allocs;
		o->frees = t->frees;
		o->alloc_ns = t->alloc_ns;
		const live_thread_t *p = NULL;
		for (size_t k = 0; k < lv->prev.nthr && !p; k++)
			if (lv->prev.thr[k].tid == o->tid)
				p = &lv->prev.thr[k];
		o->ievents = since_prev(o->events, p ? &p->events : NULL);
		o->iacq = since_prev(o->acq, p ? &p->acq : NULL);
		o->icontended =
		    since_prev(o->contended, p ? &p->contended : NULL);
		o->iwait_ns = since_prev(o->wait_ns, p ? &p->wait_ns : NULL);
		o->iallocs = since_prev(o->allocs, p ? &p->allocs : NULL);
		o->ifrees = since_prev(o->frees, p ? &p->frees : NULL);
		o->ialloc_ns = since_prev(o->alloc_ns, p ? &p->alloc_ns : NULL);
	}
	qsort(v->thr, v->nthr, sizeof *v->thr, by_thread_wait);
}

/* Makes the view of m (ended, its findings f) lv's current one, the
 * current one its previous. */
static void make_view(live_t *lv, model_t *m, findings_t *f,
                      uint64_t until_mono_ns, int sort)
{
	view_free(&lv->prev);
	lv->prev = lv->cur;
	memset(&lv->cur, 0, sizeof lv->cur);
	live_view_t *v = &lv->cur, *p = &lv->prev;
	sort_key = sort;
	v->pid = m->pid;
	snprintf(v->exe, sizeof v->exe, "%s", m->exe ? path_base(m->exe) : "?");
	v->until_mono_ns = until_mono_ns;
	uint64_t from = lv->from_mono_ns;
	if (!from && m->info.have_process)
		from = m->info.process.mono_ns;
	v->age_s =
	    until_mono_ns > from ? (double)(until_mono_ns - from) / 1e9 : 0;
	uint64_t since = lv->polls ? p->until_mono_ns : from;
	v->ivl_s =
	    until_mono_ns > since ? (double)(until_mono_ns - since) / 1e9 : 0;
	for (size_t i = 0; i < m->nthr; i++)
		v->threads += m->thr[i].events && !m->thr[i].exited;
	v->events = m->events;
	v->ievents = lv->polls && p->events <= m->events ? m->events - p->events
	                                                 : m->events;
	v->dropped = m->tot.dropped;
	v->idropped = lv->polls && p->dropped <= m->tot.dropped
	                  ? m->tot.dropped - p->dropped
	                  : m->tot.dropped;
	v->have_end = m->have_end;
	/* A last chunk still being written is the trace's growing edge, not
	 * damage: only a bad chunk before the end is said. */
	if (m->info.truncated && m->info.chunks_total > m->info.chunks + 1)
		truncation_text(m, v->trunc, sizeof v->trunc);
	copy_locks(lv, m, v);
	copy_sites(lv, m, v);
	copy_findings(m, f, v);
	copy_threads(lv, m, v);
	if (lv->on_model)
		lv->on_model(lv->on_model_ctx, m, v);
	lv->polls++;
}

/* A poll that reads the whole window again (load_trace). */
static int reread(live_t *lv, uint64_t until_mono_ns, int sort)
{
	model_t m;
	findings_t f = {0};
	load_opts_t o = {.symbols = lv->symbols,
	                 .quiet = true,
	                 .fold_locks = true,
	                 .from_mono_ns = lv->from_mono_ns,
	                 .until_mono_ns = until_mono_ns};
	int rc = load_trace(lv->path, &m, &f, &o);
	if (rc)
		return rc;
	make_view(lv, &m, &f, until_mono_ns, sort);
	free(f.v);
	load_free(&m);
	return 0;
}

int live_advance(live_t *lv, uint64_t until_mono_ns, uint64_t max_records)
{
	lv->behind = false;
	if (lv->reread)
		return 0;
	char err[256];
	if (lv->rd) {
		int g = reader_grow(lv->rd);
		if (g < 0) {
			fprintf(stderr, "mallock: %s: read error: %s\n",
			        lv->path, strerror(errno));
			return 1;
		}
		if (g > 0) /* another file now: read it from its start */
			drop_model(lv);
	}
	if (!lv->rd) {
		reader_t *r;
		int rc = reader_open(lv->path, &r, err, sizeof err);
		if (rc) {
			fprintf(stderr, "mallock: %s: %s\n", lv->path, err);
			return rc;
		}
		lv->rd = r;
		lv->m = xmalloc(sizeof *lv->m);
		aggregate_begin(lv->m, r, lv->path, true, NULL);
	}
	/* Events before the window's start are skipped, metadata records
	 * kept (as load_trace's limit); the records from the watermark on
	 * are left for the next poll. */
	uint64_t u = load_mono_tsc(lv->rd, until_mono_ns);
	reader_limit(lv->rd, load_mono_tsc(lv->rd, lv->from_mono_ns),
	             UINT64_MAX);
	reader_stop_at(lv->rd, u ? u : UINT64_MAX);
	/* A malformed record stops the reader for good: m->info says
	 * where, and the view of what came before goes on. */
	lv->behind = aggregate_feed(lv->m, lv->rd, max_records) > 0;
	lv->forgot += reader_forget(lv->rd, lv->forget_min ? lv->forget_min
	                                                   : LIVE_FORGET_MIN);
	return 0;
}

int live_finish(live_t *lv, uint64_t until_mono_ns, int sort)
{
	if (!lv->m)
		return reread(lv, until_mono_ns, sort);
	model_t *m = lv->m;
	reader_t *r = lv->rd;
	/* The metadata records past the watermark, as load_trace's limit
	 * gives them (its events skipped). */
	uint64_t u = load_mono_tsc(r, until_mono_ns);
	reader_limit(r, load_mono_tsc(r, lv->from_mono_ns), u ? u : UINT64_MAX);
	reader_stop_at(r, UINT64_MAX);
	aggregate_feed(m, r, 0);
	aggregate_end(m);
	/* What a replay of the window reads (top's --pprof-dir). */
	m->lim_from_tsc = load_mono_tsc(r, lv->from_mono_ns);
	m->lim_until_tsc = u ? u : UINT64_MAX;
	findings_t f = {0};
	load_opts_t o = {.symbols = lv->symbols, .quiet = true};
	int rc = load_finish(m, &f, &o);
	if (!rc)
		make_view(lv, m, &f, until_mono_ns, sort);
	free(f.v);
	drop_model(lv); /* ended: it can take no more events */
	return rc;
}

/* The table reads the running model's modules, stacks and frames, and
 * sets only the modules' status, which the child's own table sets the
 * same; its notes are dropped (the child writes them). */
void live_warm(live_t *lv, uint64_t max_ns)
{
	model_t *m = lv->m;
	if (!m || !lv->symbols || !m->nmod)
		return;
	if (m->nmod != lv->warm_mods) { /* new modules: the table differs */
		lv->warm_mods = m->nmod;
		lv->warm_stacks = 0;
	}
	if (lv->warm_stacks >= m->nstk)
		return;
	model_t t;
	memset(&t, 0, sizeof t);
	t.mod = m->mod;
	t.nmod = m->nmod;
	t.stk = m->stk;
	t.nstk = m->nstk;
	t.frames = m->frames;
	t.nframes = m->nframes;
	sym_open(&t, true, NULL);
	frame_t fr[64];
	double end = max_ns ? mono_seconds() + (double)max_ns * 1e-9 : 0;
	size_t i = lv->warm_stacks;
	while (i < m->nstk) {
		stack_view(&t, (uint32_t)i++, fr, 64);
		if (max_ns && i % 16 == 0 && mono_seconds() >= end)
			break;
	}
	lv->warm_stacks = i;
	sym_close(&t);
	free(t.note);
	arena_free(&t.arena);
}

/* live_finish in a child process, its view taken back: 0, 1 or 2 as
 * live_poll, -1 when no child could be started. */
static int finish_forked(live_t *lv, uint64_t until_mono_ns, int sort)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	live_warm(lv, 0);
	pid_t parent = getpid();
	pid_t c = fork();
	if (c < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (c == 0) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		int rc = live_finish(lv, until_mono_ns, sort);
		if (!rc && live_pack(&lv->cur, p[1]) != 0)
			rc = 1;
		_exit(rc);
	}
	close(p[1]);
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? 2 * cap : 262144;
			buf = xrealloc(buf, cap);
		}
		ssize_t n = read(p[0], buf + len, cap - len);
		if (n > 0)
			len += (size_t)n;
		else if (n == 0 || errno != EINTR)
			break;
	}
	close(p[0]);
	int st = 0;
	while (waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	live_view_t v;
	int bad = live_unpack(&v, buf, len);
	free(buf);
	if (!bad && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		live_push(lv, &v);
		return 0;
	}
	live_view_free(&v);
	if (WIFEXITED(st) && WEXITSTATUS(st))
		return WEXITSTATUS(st); /* its line is on stderr */
	if (WIFSIGNALED(st))
		fprintf(stderr, "mallock top: a look was ended by signal %d\n",
		        WTERMSIG(st));
	else
		fprintf(stderr,
		        "mallock top: a look sent %zu bytes that are no view\n",
		        len);
	return 1;
}

int live_poll(live_t *lv, uint64_t until_mono_ns, int sort)
{
	if (!lv->reread) {
		int rc = live_advance(lv, until_mono_ns, 0);
		if (rc)
			return rc;
		rc = finish_forked(lv, until_mono_ns, sort);
		if (rc >= 0)
			return rc;
	}
	/* No process for the look (or none wanted): the window is read
	 * again here, the running model left as it is. */
	return reread(lv, until_mono_ns, sort);
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int live_pack(const live_view_t *v, int fd)
{
	live_view_t h = *v;
	h.lock = NULL, h.site = NULL, h.find = NULL, h.thr = NULL;
	int rc = write_all(fd, &h, sizeof h);
	if (!rc)
		rc = write_all(fd, v->lock, v->nlock * sizeof *v->lock);
	if (!rc)
		rc = write_all(fd, v->site, v->nsite * sizeof *v->site);
	if (!rc)
		rc = write_all(fd, v->find, v->nfind * sizeof *v->find);
	if (!rc)
		rc = write_all(fd, v->thr, v->nthr * sizeof *v->thr);
	return rc;
}

/* n elements of size sz from *p (advanced), into a new array of n + 1
 * (as live_poll allocates them). */
static void *take(const char **p, size_t n, size_t sz)
{
	void *a = calloc(n + 1, sz);
	if (a && n)
		memcpy(a, *p, n * sz);
	*p += n * sz;
	return a;
}

int live_unpack(live_view_t *v, const void *buf, size_t len)
{
	memset(v, 0, sizeof *v);
	if (len < sizeof *v)
		return -1;
	live_view_t h;
	memcpy(&h, buf, sizeof h);
	/* Each count bounded by len first: their sum cannot wrap. */
	if (h.nlock > len / sizeof *h.lock || h.nsite > len / sizeof *h.site ||
	    h.nfind > len / sizeof *h.find || h.nthr > len / sizeof *h.thr ||
	    len != sizeof h + h.nlock * sizeof *h.lock +
	               h.nsite * sizeof *h.site + h.nfind * sizeof *h.find +
	               h.nthr * sizeof *h.thr)
		return -1;
	const char *p = (const char *)buf + sizeof h;
	*v = h;
	v->lock = take(&p, h.nlock, sizeof *h.lock);
	v->site = take(&p, h.nsite, sizeof *h.site);
	v->find = take(&p, h.nfind, sizeof *h.find);
	v->thr = take(&p, h.nthr, sizeof *h.thr);
	if (!v->lock || !v->site || !v->find || !v->thr) {
		view_free(v);
		return -1;
	}
	return 0;
}

void live_view_free(live_view_t *v)
{
	view_free(v);
}

void live_push(live_t *lv, live_view_t *v)
{
	view_free(&lv->prev);
	lv->prev = lv->cur;
	lv->cur = *v;
	memset(v, 0, sizeof *v);
	lv->polls++;
}
