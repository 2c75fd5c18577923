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
 * Size: event names, categories, annotation names, frames and callstacks
 * are interned (InternedData, sent once on the sequence), timestamps are
 * deltas on an incremental clock (64) tied by a clock snapshot to
 * CLOCK_MONOTONIC at the trace's first event (so the trace lines up with a
 * perf capture of the same run), and no annotation repeats a slice's
 * duration: about 30 bytes a slice; deflated in runs of PF_CHUNK bytes
 * (compressed_packets, as Perfetto's tracing service writes them), 4 to
 * 5 bytes a slice.
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
#include "protobuf.h"
#include "replay.h"
#include "report.h"
#include "symbols.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define PF_MAX_SLICES 4000000u
#define PF_BINS 20000u /* for choosing the default window */
#define PF_FRAMES 128
#define PF_CLOCK 64u    /* the sequence's incremental clock */
#define PF_MONOTONIC 3u /* ClockSnapshot.Clock.BuiltinClocks */
/* Packets are written deflated, as the tracing service does: runs of
 * whole packets of at most this many bytes, each deflated into one
 * compressed_packets packet (which must stay under 512 KiB). */
#define PF_CHUNK (384u << 10)

/* Perfetto's trace proto field numbers (protos/perfetto/trace/...). */
enum {
	TRACE_PACKET = 1,
	TP_CLOCK_SNAPSHOT = 6,
	TP_TIMESTAMP = 8,
	TP_SEQ_ID = 10,
	TP_TRACK_EVENT = 11,
	TP_INTERNED_DATA = 12,
	TP_SEQ_FLAGS = 13,
	TP_TIMESTAMP_CLOCK_ID = 58,
	TP_DEFAULTS = 59,
	TP_TRACK_DESCRIPTOR = 60,
	CS_CLOCKS = 1,
	CS_PRIMARY_TRACE_CLOCK = 2,
	CLK_ID = 1,
	CLK_TIMESTAMP = 2,
	CLK_IS_INCREMENTAL = 3,
	DEF_TIMESTAMP_CLOCK_ID = 58,
	ID_EVENT_CATEGORIES = 1,
	ID_EVENT_NAMES = 2,
	ID_DEBUG_ANNOTATION_NAMES = 3,
	ID_FUNCTION_NAMES = 5,
	ID_FRAMES = 6,
	ID_CALLSTACKS = 7,
	ID_SOURCE_PATHS = 18,
	IID = 1,      /* EventName, EventCategory, DebugAnnotationName, ... */
	IID_NAME = 2, /* their name; InternedString.str */
	FRAME_FUNCTION_NAME_ID = 2,
	FRAME_SOURCE_PATH_IID = 5,
	FRAME_LINE_NUMBER = 6,
	CALLSTACK_FRAME_IDS = 2,
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
	TE_CATEGORY_IIDS = 3,
	TE_DEBUG_ANNOTATIONS = 4,
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_TRACK_UUID = 11,
	TE_COUNTER_VALUE = 30,
	TE_FLOW_IDS = 47,
	TE_TERMINATING_FLOW_IDS = 48,
	TE_CALLSTACK_IID = 56,
	DA_NAME_IID = 1,
	DA_UINT_VALUE = 3,
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	TYPE_COUNTER = 4,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	TP_COMPRESSED_PACKETS = 50,
};

/* Interned strings of one kind (names, categories, function names...):
 * string -> iid (from 1). */
typedef struct istr {
	char **s;
	size_t n, cap;
	u64map_t map; /* hash (probed) -> index */
} istr_t;

static uint64_t istr_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* The iid of s; *added when new (then it is to be sent). */
static uint64_t istr_id(istr_t *t, const char *s, bool *added)
{
	for (uint64_t h = istr_hash(s);; h++) {
		if (h == U64MAP_EMPTY)
			continue;
		int a;
		uint32_t *v = u64map_put(&t->map, h, &a);
		if (a) {
			VEC_RESERVE(t->s, t->cap, t->n);
			t->s[t->n] = xstrdup(s);
			*v = (uint32_t)t->n++;
			*added = true;
			return *v + 1u;
		}
		if (!strcmp(t->s[*v], s)) {
			*added = false;
			return *v + 1u;
		}
	}
}

static void istr_free(istr_t *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	u64map_free(&t->map);
}

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
	uint64_t full_at, cap; /* cap: max_slices() */
	/* writing: interned data and the incremental clock */
	istr_t names, cats, anames, fnames, paths, frames;
	uint32_t *callstack; /* per model stack: its iid, 0 not yet sent */
	uint64_t ncallstack, last_ts;
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
	p->cnt[p->ncnt] = (tev_t){ts, p->ncnt, li, d, TYPE_COUNTER};
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
	case REPLAY_HOLD:
		kept = e->matched && lock_kept(p, e->lock);
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

/* Sends s as an interned string of InternedData field `field` in the
 * packet being written (id open at mark), once; returns its iid. */
static uint64_t intern(pb_t *b, istr_t *t, uint32_t field, const char *s,
                       size_t *id)
{
	bool added;
	uint64_t iid = istr_id(t, s, &added);
	if (added) {
		if (!*id)
			*id = pb_open(b, TP_INTERNED_DATA);
		size_t mk = pb_open(b, field);
		pb_u64(b, IID, iid);
		pb_str(b, IID_NAME, s);
		pb_close(b, mk);
	}
	return iid;
}

/* The iid of stack si's interned callstack (0: none), its frames and
 * names sent with it the first time. Frames are root first, as
 * Callstack.frame_ids wants. */
static uint64_t callstack(pf_t *p, pb_t *b, uint32_t si, size_t *id)
{
	if (si == NONE32 || si >= p->m->nstk)
		return 0;
	if (p->callstack[si])
		return p->callstack[si];
	frame_t fr[PF_FRAMES];
	int n = stack_view(p->m, si, fr, PF_FRAMES);
	if (n <= 0)
		return 0;
	uint64_t fid[PF_FRAMES];
	char buf[512], key[1200];
	for (int i = 0; i < n; i++) {
		const char *fn = fr[i].function
		                     ? fr[i].function
		                     : frame_label(&fr[i], buf, sizeof buf);
		snprintf(key, sizeof key, "%s|%s|%u", fn,
		         fr[i].file ? fr[i].file : "", fr[i].line);
		bool added;
		fid[i] = istr_id(&p->frames, key, &added);
		if (!added)
			continue;
		uint64_t fnid =
		    intern(b, &p->fnames, ID_FUNCTION_NAMES, fn, id);
		uint64_t path =
		    fr[i].file
		        ? intern(b, &p->paths, ID_SOURCE_PATHS, fr[i].file, id)
		        : 0;
		if (!*id)
			*id = pb_open(b, TP_INTERNED_DATA);
		size_t mk = pb_open(b, ID_FRAMES);
		pb_u64(b, IID, fid[i]);
		pb_u64(b, FRAME_FUNCTION_NAME_ID, fnid);
		if (path)
			pb_u64(b, FRAME_SOURCE_PATH_IID, path);
		if (fr[i].line)
			pb_u64(b, FRAME_LINE_NUMBER, fr[i].line);
		pb_close(b, mk);
	}
	if (!*id)
		*id = pb_open(b, TP_INTERNED_DATA);
	uint64_t cs = ++p->ncallstack;
	size_t mk = pb_open(b, ID_CALLSTACKS);
	pb_u64(b, IID, cs);
	uint64_t root_first[PF_FRAMES];
	for (int i = 0; i < n; i++)
		root_first[i] = fid[n - 1 - i];
	pb_packed(b, CALLSTACK_FRAME_IDS, root_first, (size_t)n);
	pb_close(b, mk);
	p->callstack[si] = (uint32_t)cs;
	return cs;
}

static void annotation(pb_t *b, uint64_t name_iid, uint64_t v)
{
	size_t mk = pb_open(b, TE_DEBUG_ANNOTATIONS);
	pb_u64(b, DA_NAME_IID, name_iid);
	pb_u64(b, DA_UINT_VALUE, v);
	pb_close(b, mk);
}

/* Writes b's packets deflated into one compressed_packets packet and
 * empties b. Returns 0, or 1 on a write or zlib error. */
static int flush(pb_t *b, FILE *out)
{
	if (!b->n)
		return 0;
	uLongf zn = compressBound((uLong)b->n);
	unsigned char *z = xmalloc(zn);
	int rc = compress2(z, &zn, b->p, (uLong)b->n, 6) != Z_OK;
	pb_reset(b);
	if (!rc) {
		size_t pk = pb_open(b, TRACE_PACKET);
		pb_bytes(b, TP_COMPRESSED_PACKETS, z, zn);
		pb_close(b, pk);
		rc = fwrite(b->p, 1, b->n, out) != b->n;
		pb_reset(b);
	}
	free(z);
	return rc;
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
		if (b->n > PF_CHUNK)
			flush(b, out);
	}
}

/* One event's packet. Its timestamp is the delta from the last one on
 * the incremental clock; the names, category, annotation names and
 * callstack it refers to are interned in the same packet when new. */
static void write_event(pf_t *p, pb_t *b, const tev_t *e)
{
	model_t *m = p->m;
	char name[256], lk[200];
	size_t pk = pb_open(b, TRACE_PACKET);
	pb_u64(b, TP_TIMESTAMP, e->ts - p->last_ts);
	p->last_ts = e->ts;
	pb_u64(b, TP_SEQ_ID, 1);
	size_t id = 0; /* the packet's InternedData, once opened */
	uint64_t name_iid = 0, cat_iid = 0, cs = 0, a_iid = 0;
	const slice_t *s = e->type == TYPE_COUNTER ? NULL : &p->s[e->idx];
	if (s && e->type == TYPE_SLICE_BEGIN) {
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
			snprintf(name, sizeof name, "alloc %" PRIu64 " B",
			         s->a);
		else
			snprintf(name, sizeof name, "free");
		name_iid = intern(b, &p->names, ID_EVENT_NAMES, name, &id);
		cat_iid =
		    intern(b, &p->cats, ID_EVENT_CATEGORIES, cat[s->kind], &id);
		cs = callstack(p, b, s->stack, &id);
		if (s->kind == SL_WAIT)
			a_iid = intern(b, &p->anames, ID_DEBUG_ANNOTATION_NAMES,
			               "waiters", &id);
		else if (s->kind == SL_HOLD && s->b)
			a_iid = intern(b, &p->anames, ID_DEBUG_ANNOTATION_NAMES,
			               "contended", &id);
	}
	if (id)
		pb_close(b, id);
	size_t te = pb_open(b, TP_TRACK_EVENT);
	pb_u64(b, TE_TYPE, e->type);
	if (!s) {
		pb_u64(b, TE_TRACK_UUID, p->tr[e->idx].uuid);
		pb_i64(b, TE_COUNTER_VALUE, e->value);
	} else {
		pb_u64(b, TE_TRACK_UUID, p->tr[s->track].uuid);
		if (e->type == TYPE_SLICE_BEGIN) {
			pb_u64(b, TE_NAME_IID, name_iid);
			pb_u64(b, TE_CATEGORY_IIDS, cat_iid);
			if (a_iid)
				annotation(b, a_iid, s->b);
			if (cs)
				pb_u64(b, TE_CALLSTACK_IID, cs);
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

/* The first packet: incremental state cleared, the sequence's default
 * clock the incremental one, and the clock snapshot that ties it (0 at
 * the trace's first event) to CLOCK_MONOTONIC. */
static void write_clock(pf_t *p, pb_t *b)
{
	const model_t *m = p->m;
	uint64_t mono = 0;
	if (m->info.have_process) {
		double d =
		    ((double)m->first_tsc - (double)m->info.process.tsc) *
		    m->ns_per_tick;
		double v = (double)m->info.process.mono_ns + d;
		mono = v > 0 ? (uint64_t)(v + 0.5) : 0;
	}
	size_t pk = pb_open(b, TRACE_PACKET);
	pb_u64(b, TP_SEQ_ID, 1);
	pb_u64(b, TP_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	size_t d = pb_open(b, TP_DEFAULTS);
	pb_u64(b, DEF_TIMESTAMP_CLOCK_ID, PF_CLOCK);
	pb_close(b, d);
	size_t cs = pb_open(b, TP_CLOCK_SNAPSHOT);
	size_t c = pb_open(b, CS_CLOCKS);
	pb_u64(b, CLK_ID, PF_MONOTONIC);
	pb_u64(b, CLK_TIMESTAMP, mono);
	pb_close(b, c);
	c = pb_open(b, CS_CLOCKS);
	pb_u64(b, CLK_ID, PF_CLOCK);
	pb_u64(b, CLK_TIMESTAMP, 0);
	pb_u64(b, CLK_IS_INCREMENTAL, 1);
	pb_close(b, c);
	pb_u64(b, CS_PRIMARY_TRACE_CLOCK, PF_MONOTONIC);
	pb_close(b, cs);
	pb_close(b, pk);
	p->last_ts = 0;
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
static int one_trace(pf_t *p, pb_t *b, FILE *out)
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
	write_clock(p, b);
	size_t pk = pb_open(b, TRACE_PACKET);
	pb_u64(b, TP_SEQ_ID, 1);
	size_t td = pb_open(b, TP_TRACK_DESCRIPTOR);
	pb_u64(b, TD_UUID, proc);
	size_t pd = pb_open(b, TD_PROCESS);
	pb_u64(b, PD_PID, m->pid);
	pb_str(b, PD_PROCESS_NAME, m->exe ? path_base(m->exe) : "process");
	pb_close(b, pd);
	pb_close(b, td);
	pb_close(b, pk);
	write_descriptors(p, b, out, proc);
	p->callstack = xcalloc(m->nstk + 1, sizeof *p->callstack);
	for (size_t i = 0; i < nev && !rc; i++) {
		write_event(p, b, &ev[i]);
		if (b->n > PF_CHUNK)
			rc = flush(b, out);
	}
	free(p->callstack);
	istr_free(&p->names);
	istr_free(&p->cats);
	istr_free(&p->anames);
	istr_free(&p->fnames);
	istr_free(&p->paths);
	istr_free(&p->frames);
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
		          .cap = max_slices(),
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
	if (flush(&b, out))
		rc = 1;
	pb_free(&b);
	return rc;
}
