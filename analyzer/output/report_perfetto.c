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
 *     "free"), with sizes and times as debug annotations;
 *   - a flow from each contended release (the holder's hold slice) to the
 *     hold of the waiter that acquired the lock next;
 *   - a counter track "waiters LOCK" per lock that was waited for.
 * --from/--to (a window in seconds from the trace's first event) and --lock
 * bound its size; past PF_MAX_SLICES slices the rest is left out and
 * stderr says where it stopped.
 *
 * The events come from a second pass over the trace (replay.h), held in
 * memory (bounded as above), then written per track in nesting order and
 * merged by time, since a slice is known only when it ends.
 */
#define _GNU_SOURCE /* qsort_r */
#include "protobuf.h"
#include "replay.h"
#include "report.h"
#include "symbols.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PF_MAX_SLICES 2000000u

/* Perfetto's trace proto field numbers (protos/perfetto/trace/...). */
enum {
	TRACE_PACKET = 1,
	TP_TIMESTAMP = 8,
	TP_SEQ_ID = 10,
	TP_TRACK_EVENT = 11,
	TP_SEQ_FLAGS = 13,
	TP_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT_UUID = 5,
	TD_COUNTER = 8,
	PD_PID = 1,
	PD_PROCESS_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_THREAD_NAME = 5,
	TE_DEBUG_ANNOTATIONS = 4,
	TE_TYPE = 9,
	TE_TRACK_UUID = 11,
	TE_NAME = 23,
	TE_COUNTER_VALUE = 30,
	TE_FLOW_IDS = 47,
	TE_TERMINATING_FLOW_IDS = 48,
	DA_UINT_VALUE = 3,
	DA_STRING_VALUE = 6,
	DA_NAME = 10,
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	TYPE_COUNTER = 4,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
};

enum { SL_WAIT, SL_HOLD, SL_ALLOC, SL_FREE };

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
	uint64_t full_at;
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

static slice_t *add(pf_t *p, uint8_t kind, uint32_t tr, const replay_ev_t *e)
{
	if (e->t0 < p->from || e->t1 > p->to)
		return NULL;
	if (p->ns >= PF_MAX_SLICES) {
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
	p->cnt[p->ncnt] = (tev_t){ts, p->ncnt, li, d, TYPE_COUNTER};
	p->ncnt++;
}

static void on_replay(void *ctx, const replay_ev_t *e)
{
	pf_t *p = ctx;
	slice_t *s;
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
		if (!e->matched || !lock_kept(p, e->lock))
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

static void annotation(pb_t *b, const char *name, uint64_t v, const char *str)
{
	size_t mk = pb_open(b, TE_DEBUG_ANNOTATIONS);
	pb_str(b, DA_NAME, name);
	if (str)
		pb_str(b, DA_STRING_VALUE, str);
	else
		pb_u64(b, DA_UINT_VALUE, v);
	pb_close(b, mk);
}

static void write_descriptors(pf_t *p, pb_t *b, FILE *out, uint64_t proc)
{
	model_t *m = p->m;
	char buf[256];
	for (size_t i = 0; i < p->ntr; i++) {
		const track_t *t = &p->tr[i];
		size_t pk = pb_open(b, TRACE_PACKET);
		pb_u64(b, TP_SEQ_ID, 1);
		size_t td = pb_open(b, TP_TRACK_DESCRIPTOR);
		pb_u64(b, TD_UUID, t->uuid);
		if (t->what == 0) {
			const thread_t *th = &m->thr[t->thread];
			size_t tt = pb_open(b, TD_THREAD);
			pb_u64(b, THD_PID, m->pid);
			pb_u64(b, THD_TID, th->tid);
			pb_str(b, THD_THREAD_NAME,
			       th->name ? th->name
			                : thread_label(th, buf, sizeof buf));
			pb_close(b, tt);
		} else {
			pb_u64(b, TD_PARENT_UUID,
			       t->what == 3 ? proc : t->parent);
			if (t->what == 1) {
				pb_str(b, TD_NAME, "waits");
			} else {
				char name[200];
				lock_label(m, &m->lock[t->lock], name,
				           sizeof name);
				snprintf(buf, sizeof buf, "%s%s",
				         t->what == 3 ? "waiters " : "", name);
				pb_str(b, TD_NAME, buf);
			}
			if (t->what == 3) {
				size_t c = pb_open(b, TD_COUNTER);
				pb_close(b, c);
			}
		}
		pb_close(b, td);
		pb_close(b, pk);
		if (b->n > (1u << 20)) {
			fwrite(b->p, 1, b->n, out);
			pb_reset(b);
		}
	}
}

static void write_event(pf_t *p, pb_t *b, const tev_t *e, char **site)
{
	model_t *m = p->m;
	char name[256], lk[200];
	size_t pk = pb_open(b, TRACE_PACKET);
	pb_u64(b, TP_TIMESTAMP, e->ts);
	pb_u64(b, TP_SEQ_ID, 1);
	size_t te = pb_open(b, TP_TRACK_EVENT);
	pb_u64(b, TE_TYPE, e->type);
	if (e->type == TYPE_COUNTER) {
		pb_u64(b, TE_TRACK_UUID, p->tr[e->idx].uuid);
		pb_i64(b, TE_COUNTER_VALUE, e->value);
	} else {
		const slice_t *s = &p->s[e->idx];
		pb_u64(b, TE_TRACK_UUID, p->tr[s->track].uuid);
		if (e->type == TYPE_SLICE_BEGIN) {
			lock_label(m, &m->lock[s->lock], lk, sizeof lk);
			if (s->kind == SL_WAIT)
				snprintf(name, sizeof name, "wait %s", lk);
			else if (s->kind == SL_HOLD)
				snprintf(name, sizeof name, "%s", lk);
			else if (s->kind == SL_ALLOC)
				snprintf(name, sizeof name,
				         "alloc %" PRIu64 " B", s->a);
			else
				snprintf(name, sizeof name, "free");
			pb_str(b, TE_NAME, name);
			if (s->kind == SL_WAIT) {
				annotation(b, "wait_ns", s->a, NULL);
				annotation(b, "waiters", s->b, NULL);
			} else if (s->kind == SL_HOLD) {
				annotation(b, "hold_ns", s->a, NULL);
				annotation(b, "contended", s->b, NULL);
			} else {
				if (s->kind == SL_ALLOC)
					annotation(b, "size", s->a, NULL);
				annotation(b, "allocator_ns", s->b, NULL);
			}
			if (s->stack != NONE32 && s->kind != SL_HOLD) {
				if (!site[s->stack]) {
					frame_t f;
					char fb[512];
					site[s->stack] = xstrdup(
					    sym_stack_site(m, s->stack, &f)
					        ? frame_label(&f, fb, sizeof fb)
					        : "");
				}
				if (*site[s->stack])
					annotation(b, "site", 0,
					           site[s->stack]);
			}
			if (s->flow_out)
				pb_fixed64(b, TE_FLOW_IDS, s->flow_out);
			if (s->flow_in)
				pb_fixed64(b, TE_TERMINATING_FLOW_IDS,
				           s->flow_in);
		}
	}
	pb_close(b, te);
	pb_close(b, pk);
}

/* Writes one trace's tracks and events. Returns 0 or 1. */
static int one_trace(pf_t *p, pb_t *b, FILE *out)
{
	model_t *m = p->m;
	p->lock_flow = xcalloc(m->nlock + 1, sizeof *p->lock_flow);
	p->pin = xcalloc(m->nthr + 1, sizeof *p->pin);
	int rc = replay(m, on_replay, p);
	free(p->lock_flow);
	free(p->pin);
	if (rc)
		return rc;
	if (p->full)
		fprintf(stderr,
		        "mallock: %s: perfetto: kept the first %u slices "
		        "(up to %.3f s); use --from/--to or --lock for the "
		        "rest\n",
		        m->path, PF_MAX_SLICES, (double)p->full_at / 1e9);
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
			ev[nev++] = (tev_t){p->s[top].t1, seq++, top, 0,
			                    TYPE_SLICE_END};
		}
		if (!s)
			break;
		if (depth && s->t1 > p->s[stk[depth - 1]].t1)
			s->t1 = p->s[stk[depth - 1]].t1; /* clock rounding */
		ev[nev++] = (tev_t){s->t0, seq++, ord[k], 0, TYPE_SLICE_BEGIN};
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
		            cur[li], TYPE_COUNTER};
	}
	free(cur);
	if (nev)
		qsort(ev, nev, sizeof *ev, by_time);

	uint64_t proc = ++p->next_uuid;
	size_t pk = pb_open(b, TRACE_PACKET);
	pb_u64(b, TP_SEQ_ID, 1);
	pb_u64(b, TP_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	size_t td = pb_open(b, TP_TRACK_DESCRIPTOR);
	pb_u64(b, TD_UUID, proc);
	size_t pd = pb_open(b, TD_PROCESS);
	pb_u64(b, PD_PID, m->pid);
	pb_str(b, PD_PROCESS_NAME, m->exe ? path_base(m->exe) : "process");
	pb_close(b, pd);
	pb_close(b, td);
	pb_close(b, pk);
	write_descriptors(p, b, out, proc);
	char **site = xcalloc(m->nstk + 1, sizeof *site);
	for (size_t i = 0; i < nev && !rc; i++) {
		write_event(p, b, &ev[i], site);
		if (b->n > (1u << 20)) {
			if (fwrite(b->p, 1, b->n, out) != b->n)
				rc = 1;
			pb_reset(b);
		}
	}
	for (size_t i = 0; i < m->nstk; i++)
		free(site[i]);
	free(site);
	free(ev);
	return rc;
}

int report_perfetto(const report_t *r, FILE *out)
{
	pb_t b = {0};
	int rc = 0;
	uint64_t uuid = 0, flow = 0;
	for (uint32_t t = 0; t < r->nm && !rc; t++) {
		pf_t p = {.r = r,
		          .m = &r->m[t],
		          .t = t,
		          .from = r->from_ns,
		          .to = r->to_ns ? r->to_ns : UINT64_MAX,
		          .next_uuid = uuid,
		          .next_flow = flow};
		rc = one_trace(&p, &b, out);
		uuid = p.next_uuid;
		flow = p.next_flow;
		free(p.s);
		free(p.tr);
		free(p.cnt);
		u64map_free(&p.trmap);
	}
	if (b.n && fwrite(b.p, 1, b.n, out) != b.n)
		rc = 1;
	pb_free(&b);
	return rc;
}
