/*
 * perfetto_enc.c - Perfetto TracePackets: track descriptors, slices and
 * counter values with interned names and callstacks, incremental
 * timestamps, deflated into compressed_packets runs (perfetto_enc.h).
 *
 * Invariants: an interned string or callstack is sent in the packet of the
 * first event that refers to it, inside that packet's one InternedData,
 * written before its TrackEvent; a frame is sent before the callstack that
 * names it, and a function name or source path before the frame.
 */
#include "perfetto_enc.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define PFE_CLOCK 64u    /* the sequence's incremental clock */
#define PFE_MONOTONIC 3u /* ClockSnapshot.Clock.BuiltinClocks */

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

static uint64_t istr_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* The iid of s; *added when new (then it is to be sent). */
static uint64_t istr_id(pfe_istr_t *t, const char *s, bool *added)
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

static void istr_free(pfe_istr_t *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	u64map_free(&t->map);
	memset(t, 0, sizeof *t);
}

/* Sends s as an interned string of InternedData field `field` in the
 * packet being written (id open at mark), once; returns its iid. */
static uint64_t intern(pb_t *b, pfe_istr_t *t, uint32_t field, const char *s,
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
static uint64_t callstack(pfe_t *e, uint32_t si, size_t *id)
{
	pb_t *b = &e->b;
	if (si >= e->nstacks)
		return 0;
	if (e->callstack[si])
		return e->callstack[si];
	frame_t fr[PFE_FRAMES];
	int n = e->frames_fn(e->frames_ctx, si, fr, PFE_FRAMES);
	if (n <= 0)
		return 0;
	uint64_t fid[PFE_FRAMES];
	char buf[512], key[1200];
	for (int i = 0; i < n; i++) {
		const char *fn = fr[i].function
		                     ? fr[i].function
		                     : frame_label(&fr[i], buf, sizeof buf);
		snprintf(key, sizeof key, "%s|%s|%u", fn,
		         fr[i].file ? fr[i].file : "", fr[i].line);
		bool added;
		fid[i] = istr_id(&e->frames, key, &added);
		if (!added)
			continue;
		uint64_t fnid =
		    intern(b, &e->fnames, ID_FUNCTION_NAMES, fn, id);
		uint64_t path =
		    fr[i].file
		        ? intern(b, &e->paths, ID_SOURCE_PATHS, fr[i].file, id)
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
	uint64_t cs = ++e->ncallstack;
	size_t mk = pb_open(b, ID_CALLSTACKS);
	pb_u64(b, IID, cs);
	uint64_t root_first[PFE_FRAMES];
	for (int i = 0; i < n; i++)
		root_first[i] = fid[n - 1 - i];
	pb_packed(b, CALLSTACK_FRAME_IDS, root_first, (size_t)n);
	pb_close(b, mk);
	e->callstack[si] = (uint32_t)cs;
	return cs;
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

void pfe_init(pfe_t *e, FILE *out)
{
	memset(e, 0, sizeof *e);
	e->out = out;
}

void pfe_sequence(pfe_t *e, uint64_t mono_ns, size_t nstacks, pfe_frames_fn fn,
                  void *ctx)
{
	pb_t *b = &e->b;
	size_t pk = pb_open(b, TRACE_PACKET);
	pb_u64(b, TP_SEQ_ID, 1);
	pb_u64(b, TP_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	size_t d = pb_open(b, TP_DEFAULTS);
	pb_u64(b, DEF_TIMESTAMP_CLOCK_ID, PFE_CLOCK);
	pb_close(b, d);
	size_t cs = pb_open(b, TP_CLOCK_SNAPSHOT);
	size_t c = pb_open(b, CS_CLOCKS);
	pb_u64(b, CLK_ID, PFE_MONOTONIC);
	pb_u64(b, CLK_TIMESTAMP, mono_ns);
	pb_close(b, c);
	c = pb_open(b, CS_CLOCKS);
	pb_u64(b, CLK_ID, PFE_CLOCK);
	pb_u64(b, CLK_TIMESTAMP, 0);
	pb_u64(b, CLK_IS_INCREMENTAL, 1);
	pb_close(b, c);
	pb_u64(b, CS_PRIMARY_TRACE_CLOCK, PFE_MONOTONIC);
	pb_close(b, cs);
	pb_close(b, pk);
	e->last_ts = 0;
	e->nstacks = nstacks;
	e->callstack = xcalloc(nstacks + 1, sizeof *e->callstack);
	e->ncallstack = 0;
	e->frames_fn = fn;
	e->frames_ctx = ctx;
}

void pfe_sequence_end(pfe_t *e)
{
	free(e->callstack);
	e->callstack = NULL;
	e->nstacks = 0;
	istr_free(&e->names);
	istr_free(&e->cats);
	istr_free(&e->anames);
	istr_free(&e->fnames);
	istr_free(&e->paths);
	istr_free(&e->frames);
}

void pfe_process(pfe_t *e, uint64_t uuid, uint64_t pid, const char *name)
{
	pb_t *b = &e->b;
	size_t pk = pb_open(b, TRACE_PACKET);
	pb_u64(b, TP_SEQ_ID, 1);
	size_t td = pb_open(b, TP_TRACK_DESCRIPTOR);
	pb_u64(b, TD_UUID, uuid);
	size_t pd = pb_open(b, TD_PROCESS);
	pb_u64(b, PD_PID, pid);
	pb_str(b, PD_PROCESS_NAME, name);
	pb_close(b, pd);
	pb_close(b, td);
	pb_close(b, pk);
}

void pfe_thread(pfe_t *e, uint64_t uuid, uint64_t pid, uint64_t tid,
                const char *name)
{
	pb_t *b = &e->b;
	size_t pk = pb_open(b, TRACE_PACKET);
	pb_u64(b, TP_SEQ_ID, 1);
	size_t td = pb_open(b, TP_TRACK_DESCRIPTOR);
	pb_u64(b, TD_UUID, uuid);
	size_t tt = pb_open(b, TD_THREAD);
	pb_u64(b, THD_PID, pid);
	pb_u64(b, THD_TID, tid);
	pb_str(b, THD_THREAD_NAME, name);
	pb_close(b, tt);
	pb_close(b, td);
	pb_close(b, pk);
}

void pfe_track(pfe_t *e, uint64_t uuid, uint64_t parent, const char *name,
               bool counter)
{
	pb_t *b = &e->b;
	size_t pk = pb_open(b, TRACE_PACKET);
	pb_u64(b, TP_SEQ_ID, 1);
	size_t td = pb_open(b, TP_TRACK_DESCRIPTOR);
	pb_u64(b, TD_UUID, uuid);
	pb_u64(b, TD_PARENT_UUID, parent);
	pb_str(b, TD_NAME, name);
	if (counter) {
		size_t c = pb_open(b, TD_COUNTER);
		pb_close(b, c);
	}
	pb_close(b, td);
	pb_close(b, pk);
}

/* Opens an event's packet at ts: its timestamp the delta from the last
 * one on the incremental clock. Returns the packet's mark. */
static size_t event_open(pfe_t *e, uint64_t ts)
{
	pb_t *b = &e->b;
	size_t pk = pb_open(b, TRACE_PACKET);
	pb_u64(b, TP_TIMESTAMP, ts - e->last_ts);
	e->last_ts = ts;
	pb_u64(b, TP_SEQ_ID, 1);
	return pk;
}

void pfe_slice_begin(pfe_t *e, const pfe_slice_t *s)
{
	pb_t *b = &e->b;
	size_t pk = event_open(e, s->ts);
	size_t id = 0; /* the packet's InternedData, once opened */
	uint64_t name_iid = intern(b, &e->names, ID_EVENT_NAMES, s->name, &id);
	uint64_t cat_iid =
	    intern(b, &e->cats, ID_EVENT_CATEGORIES, s->cat, &id);
	uint64_t cs = callstack(e, s->stack, &id);
	uint64_t a_iid = s->aname
	                     ? intern(b, &e->anames, ID_DEBUG_ANNOTATION_NAMES,
	                              s->aname, &id)
	                     : 0;
	if (id)
		pb_close(b, id);
	size_t te = pb_open(b, TP_TRACK_EVENT);
	pb_u64(b, TE_TYPE, TYPE_SLICE_BEGIN);
	pb_u64(b, TE_TRACK_UUID, s->track);
	pb_u64(b, TE_NAME_IID, name_iid);
	pb_u64(b, TE_CATEGORY_IIDS, cat_iid);
	if (a_iid) {
		size_t mk = pb_open(b, TE_DEBUG_ANNOTATIONS);
		pb_u64(b, DA_NAME_IID, a_iid);
		pb_u64(b, DA_UINT_VALUE, s->avalue);
		pb_close(b, mk);
	}
	if (cs)
		pb_u64(b, TE_CALLSTACK_IID, cs);
	if (s->flow_out)
		pb_fixed64(b, TE_FLOW_IDS, s->flow_out);
	if (s->flow_in)
		pb_fixed64(b, TE_TERMINATING_FLOW_IDS, s->flow_in);
	pb_close(b, te);
	pb_close(b, pk);
}

void pfe_slice_end(pfe_t *e, uint64_t ts, uint64_t track)
{
	pb_t *b = &e->b;
	size_t pk = event_open(e, ts);
	size_t te = pb_open(b, TP_TRACK_EVENT);
	pb_u64(b, TE_TYPE, TYPE_SLICE_END);
	pb_u64(b, TE_TRACK_UUID, track);
	pb_close(b, te);
	pb_close(b, pk);
}

void pfe_counter(pfe_t *e, uint64_t ts, uint64_t track, int64_t value)
{
	pb_t *b = &e->b;
	size_t pk = event_open(e, ts);
	size_t te = pb_open(b, TP_TRACK_EVENT);
	pb_u64(b, TE_TYPE, TYPE_COUNTER);
	pb_u64(b, TE_TRACK_UUID, track);
	pb_i64(b, TE_COUNTER_VALUE, value);
	pb_close(b, te);
	pb_close(b, pk);
}

int pfe_chunk(pfe_t *e)
{
	return e->b.n > PFE_CHUNK ? flush(&e->b, e->out) : 0;
}

int pfe_finish(pfe_t *e)
{
	int rc = flush(&e->b, e->out);
	pb_free(&e->b);
	return rc;
}
