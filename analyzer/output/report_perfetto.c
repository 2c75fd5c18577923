/*
 * report_perfetto.c - `--format=perfetto`: a Perfetto trace (TrackEvent
 * protobuf, perfetto.dev/docs/reference/synthetic-track-event) of the
 * trace's lock holds, waits and allocator calls in holds, for
 * ui.perfetto.dev:
 *   - a track per thread (named), with child tracks "waits" and one per
 *     lock it held ("LOCK"): holds do not nest (lock A, lock B, unlock A),
 *     so each lock's holds get their own track, where they do nest;
 *   - wait slices "wait LOCK", hold slices "LOCK", and the allocator calls
 *     made in a hold as slices nested in the innermost hold ("alloc 64 B",
 *     "free"), the waiter count and the contended release as debug
 *     annotations (a slice's duration is its wait, hold or call time);
 *   - a flow from each contended release (the holder's hold slice) to the
 *     hold of the waiter that acquired the lock next;
 *   - a counter track "waiters LOCK" per lock that was waited for;
 *   - each wait, hold and allocator call with its stack (the waiter's, the
 *     acquisition site's, the allocation's) as an interned callstack.
 * Size: the packets are encoded compactly (interned strings and
 * callstacks, incremental timestamps, deflated runs: perfetto_enc.h), the
 * clock's 0 is CLOCK_MONOTONIC at the trace's first event (so the trace
 * lines up with a perf capture of the same run), and no annotation repeats
 * a slice's duration: about 30 bytes a slice before deflating, 4 to 5
 * after.
 * --from/--to (a window in seconds from the trace's first event) and --lock
 * bound its size. With no --from/--to the whole trace is written when it
 * has at most PF_MAX_SLICES slices, else the window with the most wait that
 * holds that many; stderr says which in one line. Past PF_MAX_SLICES in an
 * explicit window the rest is left out and stderr says where it stopped.
 *
 * The events come from a second pass over the trace (replay.h), held in
 * memory (bounded as above), then written per track in nesting order and
 * merged by time, since a slice is known only when it ends.
 */
#define _GNU_SOURCE /* qsort_r */
#include "perfetto_enc.h"
#include "replay.h"
#include "report.h"
#include "symbols.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PF_MAX_SLICES 4000000u
#define PF_BINS 20000u /* for choosing the default window */

enum { SL_WAIT, SL_HOLD, SL_ALLOC, SL_FREE };
/* What a tev_t is. */
enum { TEV_BEGIN, TEV_END, TEV_COUNTER };

typedef struct slice {
	uint64_t t0, t1;
	uint64_t flow_out, flow_in;
	/* WAIT ns, waiters; HOLD ns, contended; ALLOC size, ns */
	uint64_t a, b;
	uint32_t track, lock, stack;
	uint8_t kind;
} slice_t;

typedef struct track {
	uint64_t uuid, parent;
	uint32_t thread, lock; /* NONE32 when not of one */
	uint8_t what;          /* 0 thread, 1 waits, 2 lock holds, 3 counter */
} track_t;

/* One event to write: a slice's begin or end, or a counter value. */
typedef struct tev {
	uint64_t ts, seq;
	uint32_t idx; /* slice index, or counter track */
	int32_t value;
	uint8_t type;
} tev_t;

/* Per thread: the flow into its next hold of `lock` acquired at `at`. */
typedef struct pending_in {
	uint64_t flow, at;
	uint32_t lock;
} pending_in_t;

typedef struct pf {
	const report_t *r;
	model_t *m;
	uint32_t t; /* trace index */
	uint64_t from, to;
	slice_t *s;
	size_t ns, caps;
	track_t *tr;
	size_t ntr, captr;
	u64map_t trmap; /* what << 60 | thread << 30 | lock -> track index */
	uint64_t *lock_flow; /* per lock: the flow of its last contended
	                        release, not yet taken by a waiter */
	pending_in_t *pin;   /* per thread */
	tev_t *cnt;          /* counter changes: idx = lock, value +1/-1 */
	size_t ncnt, capcnt;
	uint64_t next_flow, next_uuid;
	bool full;
	uint64_t full_at, cap; /* cap: max_slices() */
	/* the default window: per bin, slices and wait */
	uint64_t bin_ns;
	uint32_t *bin_slices;
	uint64_t *bin_wait;
	bool counting;
} pf_t;

static uint32_t track(pf_t *p, uint8_t what, uint32_t thread, uint32_t lock)
{
	int added;
	uint64_t key = (uint64_t)what << 60 |
	               (uint64_t)(thread & 0x3fffffffu) << 30 |
	               (lock & 0x3fffffffu);
	uint32_t *v = u64map_put(&p->trmap, key, &added);
	if (!added)
		return *v;
	uint64_t parent = 0;
	if (what == 1 || what == 2) {
		uint32_t ti = track(p, 0, thread, NONE32); /* may move p->tr */
		parent = p->tr[ti].uuid;
	}
	v = u64map_put(&p->trmap, key, &added); /* the recursion may move it */
	VEC_RESERVE(p->tr, p->captr, p->ntr);
	p->tr[p->ntr] = (track_t){++p->next_uuid, parent, thread, lock, what};
	*v = (uint32_t)p->ntr++;
	return *v;
}

static bool lock_kept(pf_t *p, uint32_t li)
{
	return report_class_matches(p->r, p->m, p->m->lock[li].cls);
}

/* PF_MAX_SLICES, or MALLOCK_PERFETTO_MAX_SLICES (for tests). */
static uint64_t max_slices(void)
{
	const char *e = getenv("MALLOCK_PERFETTO_MAX_SLICES");
	char *end;
	unsigned long long v = e ? strtoull(e, &end, 10) : 0;
	return e && *e && !*end && v ? v : PF_MAX_SLICES;
}

static slice_t *add(pf_t *p, uint8_t kind, uint32_t tr, const replay_ev_t *e)
{
	if (e->t0 < p->from || e->t1 > p->to)
		return NULL;
	if (p->ns >= p->cap) {
		if (!p->full)
			p->full_at = e->t0;
		p->full = true;
		return NULL;
	}
	VEC_RESERVE(p->s, p->caps, p->ns);
	slice_t *s = &p->s[p->ns++];
	memset(s, 0, sizeof *s);
	s->t0 = e->t0;
	s->t1 = e->t1;
	s->track = tr;
	s->kind = kind;
	s->lock = e->lock;
	s->stack = e->stack;
	return s;
}

static void counter(pf_t *p, uint32_t li, uint64_t ts, int32_t d)
{
	VEC_RESERVE(p->cnt, p->capcnt, p->ncnt);
	p->cnt[p->ncnt] = (tev_t){ts, p->ncnt, li, d, TEV_COUNTER};
	p->ncnt++;
}

/* The counting pass for the default window: slices and wait per bin. */
static void count(pf_t *p, const replay_ev_t *e)
{
	bool kept;
	switch (e->kind) {
	case REPLAY_WAIT:
		kept = lock_kept(p, e->lock);
		break;
	case REPLAY_HOLD: /* an untimed hold (w 0) has no times to draw */
		kept = e->matched && e->w && lock_kept(p, e->lock);
		break;
	case REPLAY_ALLOC:
		kept = lock_kept(p, e->held[e->nheld - 1]);
		break;
	default:
		kept = false;
	}
	if (!kept)
		return;
	uint64_t b = e->t0 / p->bin_ns;
	if (b >= PF_BINS)
		b = PF_BINS - 1;
	p->bin_slices[b]++;
	if (e->kind == REPLAY_WAIT)
		p->bin_wait[b] += e->ns;
}

static void on_replay(void *ctx, const replay_ev_t *e)
{
	pf_t *p = ctx;
	slice_t *s;
	if (p->counting) {
		count(p, e);
		return;
	}
	switch (e->kind) {
	case REPLAY_WAIT:
		if (!lock_kept(p, e->lock))
			break;
		s = add(p, SL_WAIT, track(p, 1, e->thread, NONE32), e);
		if (!s)
			break;
		s->a = e->ns;
		s->b = e->waiters;
		counter(p, e->lock, e->t0, 1);
		counter(p, e->lock, e->t1, -1);
		/* The waiter that takes the lock after a contended release is
		 * the one it woke: its next hold receives the flow. */
		if (p->lock_flow[e->lock] && e->holder_thread != e->thread) {
			p->pin[e->thread] = (pending_in_t){
			    p->lock_flow[e->lock], e->t1, e->lock};
			p->lock_flow[e->lock] = 0;
		}
		break;
	case REPLAY_HOLD:
		if (!e->matched || !e->w || !lock_kept(p, e->lock))
			break;
		s = add(p, SL_HOLD, track(p, 2, e->thread, e->lock), e);
		if (!s)
			break;
		s->a = e->ns;
		s->b = e->contended;
		pending_in_t *in = &p->pin[e->thread];
		if (in->flow && in->lock == e->lock && in->at == e->t0) {
			s->flow_in = in->flow;
			in->flow = 0;
		}
		if (e->contended) {
			s->flow_out = ++p->next_flow;
			p->lock_flow[e->lock] = s->flow_out;
		}
		break;
	case REPLAY_ALLOC: {
		uint32_t li = e->held[e->nheld - 1];
		if (!lock_kept(p, li))
			break;
		s = add(p, e->is_alloc ? SL_ALLOC : SL_FREE,
		        track(p, 2, e->thread, li), e);
		if (!s)
			break;
		s->lock = li;
		s->a = e->size;
		s->b = e->ns;
		break;
	}
	}
}

static int by_track_start(const void *a, const void *b, void *ctx)
{
	const slice_t *v = ctx;
	const slice_t *x = &v[*(const uint32_t *)a],
	              *y = &v[*(const uint32_t *)b];
	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->t1 != y->t1)
		return x->t1 > y->t1 ? -1 : 1; /* the enclosing one first */
	/* equal spans: a hold encloses its allocator call */
	return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static int by_time(const void *a, const void *b)
{
	const tev_t *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Flows whose other end was left out (window, cap) are dropped: a flow
 * always pairs. */
static void pair_flows(pf_t *p)
{
	u64map_t in = {0};
	int added;
	for (size_t i = 0; i < p->ns; i++)
		if (p->s[i].flow_in)
			*u64map_put(&in, p->s[i].flow_in, &added) = 1;
	u64map_t out = {0};
	for (size_t i = 0; i < p->ns; i++) {
		slice_t *s = &p->s[i];
		if (s->flow_out && !u64map_find(&in, s->flow_out))
			s->flow_out = 0;
		if (s->flow_out)
			*u64map_put(&out, s->flow_out, &added) = 1;
	}
	for (size_t i = 0; i < p->ns; i++)
		if (p->s[i].flow_in && !u64map_find(&out, p->s[i].flow_in))
			p->s[i].flow_in = 0;
	u64map_free(&in);
	u64map_free(&out);
}

/* The encoder's pfe_frames_fn: a model stack's frames (ctx: the model). */
static int frames(void *ctx, uint32_t si, frame_t *out, int max)
{
	return stack_view(ctx, si, out, max);
}

static void write_descriptors(pf_t *p, pfe_t *e, uint64_t proc)
{
	model_t *m = p->m;
	char buf[256];
	for (size_t i = 0; i < p->ntr; i++) {
		const track_t *t = &p->tr[i];
		if (t->what == 0) {
			const thread_t *th = &m->thr[t->thread];
			pfe_thread(e, t->uuid, m->pid, th->tid,
			           th->name
			               ? th->name
			               : thread_label(th, buf, sizeof buf));
		} else {
			if (t->what == 1) {
				snprintf(buf, sizeof buf, "waits");
			} else {
				char name[200];
				lock_label(m, &m->lock[t->lock], name,
				           sizeof name);
				snprintf(buf, sizeof buf, "%s%s",
				         t->what == 3 ? "waiters " : "", name);
			}
			pfe_track(e, t->uuid, t->what == 3 ? proc : t->parent,
			          buf, t->what == 3);
		}
		pfe_chunk(e);
	}
}

/* One event's packet: a slice's begin (its name, category, annotation
 * and callstack) or end, or a counter value. */
static void write_event(pf_t *p, pfe_t *e, const tev_t *ev)
{
	model_t *m = p->m;
	char name[256], lk[200];
	if (ev->type == TEV_COUNTER) {
		pfe_counter(e, ev->ts, p->tr[ev->idx].uuid, ev->value);
		return;
	}
	const slice_t *s = &p->s[ev->idx];
	if (ev->type == TEV_END) {
		pfe_slice_end(e, ev->ts, p->tr[s->track].uuid);
		return;
	}
	static const char *const cat[] = {[SL_WAIT] = "wait",
	                                  [SL_HOLD] = "hold",
	                                  [SL_ALLOC] = "allocator",
	                                  [SL_FREE] = "allocator"};
	lock_label(m, &m->lock[s->lock], lk, sizeof lk);
	if (s->kind == SL_WAIT)
		snprintf(name, sizeof name, "wait %s", lk);
	else if (s->kind == SL_HOLD)
		snprintf(name, sizeof name, "%s", lk);
	else if (s->kind == SL_ALLOC)
		snprintf(name, sizeof name, "alloc %" PRIu64 " B", s->a);
	else
		snprintf(name, sizeof name, "free");
	const char *aname = s->kind == SL_WAIT           ? "waiters"
	                    : s->kind == SL_HOLD && s->b ? "contended"
	                                                 : NULL;
	pfe_slice_begin(e, &(pfe_slice_t){.ts = ev->ts,
	                                  .track = p->tr[s->track].uuid,
	                                  .name = name,
	                                  .cat = cat[s->kind],
	                                  .aname = aname,
	                                  .avalue = s->b,
	                                  .stack = s->stack,
	                                  .flow_out = s->flow_out,
	                                  .flow_in = s->flow_in});
}

/* CLOCK_MONOTONIC at the trace's first event (0 when the trace does not
 * say). */
static uint64_t first_mono(const model_t *m)
{
	uint64_t mono = 0;
	if (m->info.have_process) {
		double d =
		    ((double)m->first_tsc - (double)m->info.process.tsc) *
		    m->ns_per_tick;
		double v = (double)m->info.process.mono_ns + d;
		mono = v > 0 ? (uint64_t)(v + 0.5) : 0;
	}
	return mono;
}

/* With no --from/--to: the whole trace when its slices fit, else the
 * window with the most wait whose slices fit. Says which on stderr. */
static int default_window(pf_t *p)
{
	model_t *m = p->m;
	uint64_t cap = p->cap;
	uint64_t dur = model_duration_ns(m);
	p->bin_ns = dur / PF_BINS + 1;
	p->bin_slices = xcalloc(PF_BINS, sizeof *p->bin_slices);
	p->bin_wait = xcalloc(PF_BINS, sizeof *p->bin_wait);
	p->counting = true;
	p->lock_flow = xcalloc(m->nlock + 1, sizeof *p->lock_flow);
	p->pin = xcalloc(m->nthr + 1, sizeof *p->pin);
	int rc = replay(m, on_replay, p);
	free(p->lock_flow);
	free(p->pin);
	p->counting = false;
	uint64_t all = 0;
	for (size_t i = 0; i < PF_BINS; i++)
		all += p->bin_slices[i];
	if (!rc && all <= cap) {
		fprintf(stderr,
		        "mallock: %s: perfetto: the whole trace, 0 to %.3f s "
		        "(%" PRIu64 " slices)\n",
		        m->path, (double)dur / 1e9, all);
	} else if (!rc) {
		/* the widest-wait run of bins with at most PF_MAX_SLICES
		 * slices (two pointers) */
		uint64_t n = 0, w = 0, best = 0;
		size_t lo = 0, blo = 0, bhi = 0;
		for (size_t hi = 0; hi < PF_BINS; hi++) {
			n += p->bin_slices[hi];
			w += p->bin_wait[hi];
			while (n > cap && lo <= hi) {
				n -= p->bin_slices[lo];
				w -= p->bin_wait[lo];
				lo++;
			}
			if (lo <= hi && (w > best || (!best && hi == lo))) {
				best = w;
				blo = lo;
				bhi = hi + 1;
			}
		}
		p->from = blo * p->bin_ns;
		p->to = bhi * p->bin_ns;
		fprintf(stderr,
		        "mallock: %s: perfetto: %" PRIu64
		        " slices are too many; wrote %.3f to %.3f s, the "
		        "window with the most wait (%.3f s) that holds %" PRIu64
		        " (--from/--to choose another)\n",
		        m->path, all, (double)p->from / 1e9,
		        (double)p->to / 1e9, (double)best / 1e9, cap);
	}
	free(p->bin_slices);
	free(p->bin_wait);
	return rc;
}

/* Writes one trace's tracks and events. Returns 0 or 1. */
static int one_trace(pf_t *p, pfe_t *e)
{
	model_t *m = p->m;
	if (!p->r->window && default_window(p))
		return 1;
	p->lock_flow = xcalloc(m->nlock + 1, sizeof *p->lock_flow);
	p->pin = xcalloc(m->nthr + 1, sizeof *p->pin);
	int rc = replay(m, on_replay, p);
	free(p->lock_flow);
	free(p->pin);
	if (rc)
		return rc;
	if (p->full)
		fprintf(stderr,
		        "mallock: %s: perfetto: kept the first %" PRIu64
		        " slices (up to %.3f s); use --from/--to or --lock for "
		        "the rest\n",
		        m->path, p->cap, (double)p->full_at / 1e9);
	pair_flows(p);

	/* Each track's slices in nesting order, then all events by time. */
	uint32_t *ord = xmalloc((p->ns + 1) * sizeof *ord);
	for (size_t i = 0; i < p->ns; i++)
		ord[i] = (uint32_t)i;
	if (p->ns)
		qsort_r(ord, p->ns, sizeof *ord, by_track_start, p->s);
	size_t nev = 0, capev = 2 * p->ns + p->ncnt + 1;
	tev_t *ev = xmalloc(capev * sizeof *ev);
	uint32_t *stk = xmalloc((p->ns + 1) * sizeof *stk);
	size_t depth = 0;
	uint64_t seq = 0;
	for (size_t k = 0; k <= p->ns; k++) {
		slice_t *s = k < p->ns ? &p->s[ord[k]] : NULL;
		while (depth && (!s || p->s[stk[depth - 1]].track != s->track ||
		                 p->s[stk[depth - 1]].t1 <= s->t0)) {
			uint32_t top = stk[--depth];
			ev[nev++] =
			    (tev_t){p->s[top].t1, seq++, top, 0, TEV_END};
		}
		if (!s)
			break;
		if (depth && s->t1 > p->s[stk[depth - 1]].t1)
			s->t1 = p->s[stk[depth - 1]].t1; /* clock rounding */
		ev[nev++] = (tev_t){s->t0, seq++, ord[k], 0, TEV_BEGIN};
		stk[depth++] = ord[k];
	}
	free(stk);
	free(ord);
	/* Waiter counts: per lock, the running sum of +1/-1 at each time. */
	if (p->ncnt)
		qsort(p->cnt, p->ncnt, sizeof *p->cnt, by_time);
	int32_t *cur = xcalloc(m->nlock + 1, sizeof *cur);
	for (size_t i = 0; i < p->ncnt; i++) {
		uint32_t li = p->cnt[i].idx;
		cur[li] += p->cnt[i].value;
		ev[nev++] =
		    (tev_t){p->cnt[i].ts, seq++, track(p, 3, NONE32, li),
		            cur[li], TEV_COUNTER};
	}
	free(cur);
	if (nev)
		qsort(ev, nev, sizeof *ev, by_time);

	uint64_t proc = ++p->next_uuid;
	pfe_sequence(e, first_mono(m), m->nstk, frames, m);
	pfe_process(e, proc, m->pid, m->exe ? path_base(m->exe) : "process");
	write_descriptors(p, e, proc);
	for (size_t i = 0; i < nev && !rc; i++) {
		write_event(p, e, &ev[i]);
		rc = pfe_chunk(e);
	}
	pfe_sequence_end(e);
	free(ev);
	return rc;
}

int report_perfetto(const report_t *r, FILE *out)
{
	pfe_t e;
	pfe_init(&e, out);
	int rc = 0;
	uint64_t uuid = 0, flow = 0;
	for (uint32_t t = 0; t < r->nm && !rc; t++) {
		pf_t p = {.r = r,
		          .m = &r->m[t],
		          .t = t,
		          .from = r->from_ns,
		          .to = r->to_ns ? r->to_ns : UINT64_MAX,
		          .cap = max_slices(),
		          .next_uuid = uuid,
		          .next_flow = flow};
		rc = one_trace(&p, &e);
		uuid = p.next_uuid;
		flow = p.next_flow;
		free(p.s);
		free(p.tr);
		free(p.cnt);
		u64map_free(&p.trmap);
	}
	if (pfe_finish(&e))
		rc = 1;
	return rc;
}
