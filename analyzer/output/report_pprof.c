/*
 * report_pprof.c - `--format=pprof`: a gzip-compressed profile.proto
 * (google/pprof proto/profile.proto) of one metric (--metric):
 *   wait              waiter stacks; contentions/count, delay/nanoseconds
 *                     (Go's block profile)
 *   caused            holder stacks at contended releases, charged with the
 *                     wait they caused; contentions/count,
 *                     delay/nanoseconds, hold/nanoseconds (Go's mutex
 *                     profile)
 *   hold              acquisition sites; holds/count, hold/nanoseconds
 *   alloc-under-lock  allocator calls inside holds by allocation stack (a
 *                     free by its block's), as folded and text count them;
 *                     alloc_objects/count, alloc_space/bytes,
 *                     allocator_calls/count, allocator_time/nanoseconds
 *   cross-thread      blocks freed on another thread, by allocation stack;
 *                     cross_thread_frees/count, cross_thread_bytes/bytes
 * Samples carry the labels `lock` and `thread` (not alloc-under-lock's)
 * and `pid` with several traces. A hold re-taken after a condition wait
 * counts under the site of the hold the wait ended (replay.h), as in
 * JSON's lock holds and the folded output. Locations are the symbolized,
 * user-facing frames (symbols.h stack_view); inlined calls are several lines of
 * one location, callee first. Mappings come from the trace's MODULE records,
 * with build-ids.
 *
 * The lock metrics need each event's thread, which the model does not
 * keep: they come from a second pass over the trace (replay.h), whose sums
 * equal the model's (tests/analyzer/test_pprof.py checks them against the
 * JSON report with the real pprof).
 *
 * report_pprof_delta (report.h) writes the same profile with each sample
 * first passed to a function (`mallock top --pprof-dir` subtracts the
 * previous interval's values); its samples are grouped by a key of what
 * they show, so that one key is one sample in every profile.
 */
#include "protobuf.h"
#include "replay.h"
#include "report.h"
#include "symbols.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define PP_FRAMES 128
#define PP_VALUES 4

/* profile.proto field numbers */
enum {
	PROF_SAMPLE_TYPE = 1,
	PROF_SAMPLE = 2,
	PROF_MAPPING = 3,
	PROF_LOCATION = 4,
	PROF_FUNCTION = 5,
	PROF_STRING_TABLE = 6,
	PROF_TIME_NANOS = 9,
	PROF_DURATION_NANOS = 10,
	PROF_PERIOD_TYPE = 11,
	PROF_PERIOD = 12,
	PROF_COMMENT = 13,
	PROF_DEFAULT_SAMPLE_TYPE = 14,
	VT_TYPE = 1,
	VT_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
	LABEL_KEY = 1,
	LABEL_STR = 2,
	MAP_ID = 1,
	MAP_START = 2,
	MAP_LIMIT = 3,
	MAP_OFFSET = 4,
	MAP_FILENAME = 5,
	MAP_BUILD_ID = 6,
	MAP_HAS_FUNCTIONS = 7,
	MAP_HAS_FILENAMES = 8,
	MAP_HAS_LINE_NUMBERS = 9,
	MAP_HAS_INLINE_FRAMES = 10,
	LOC_ID = 1,
	LOC_MAPPING_ID = 2,
	LOC_ADDRESS = 3,
	LOC_LINE = 4,
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
	FN_ID = 1,
	FN_NAME = 2,
	FN_SYSTEM_NAME = 3,
	FN_FILENAME = 4,
	FN_START_LINE = 5,
};

/* A function: (name, file) string ids. A location: (trace, address,
 * lines, first function). */
typedef struct fnkey {
	uint64_t name, file;
} fnkey_t;
typedef struct lockey {
	uint64_t t, addr, nlines, fn0;
} lockey_t;

/* One sample being summed: (trace, stack, lock, thread) -> values. */
typedef struct psample {
	uint32_t t, stack, lock, thread;
	uint64_t v[PP_VALUES];
} psample_t;

typedef struct pp {
	const report_t *r;
	pb_t b;
	/* string table: hash -> index, with the strings to check collisions */
	char **str;
	size_t nstr, capstr;
	u64map_t strmap, fnmap, locmap, smap;
	uint64_t *mapping_base; /* per trace: the id of its first mapping - 1 */
	psample_t *s;
	size_t ns, caps;
	uint32_t cur; /* trace being replayed */
	int nvalues;
	struct fnkey *fn; /* function id - 1 -> key */
	size_t nfn_, capfn;
	struct lockey *loc; /* location id - 1 -> key */
	size_t nloc_, caploc;
	const pprof_delta_t *delta; /* NULL: report_pprof's samples */
	/* With delta: the samples of one trace grouped by key (sgroup_t) */
	struct sgroup *g;
	size_t ng, capg;
	u64map_t gmap;
} pp_t;

/* Samples with one key (delta): the first one's locations and labels,
 * their values summed. */
typedef struct sgroup {
	char *key;
	size_t len;
	size_t first; /* index in pp_t.s */
	uint64_t v[PP_VALUES];
} sgroup_t;

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}

/* A slot of map for key h; *added when new. eq tells whether the value
 * already there is the thing hashed (else the next hash is tried). */
static uint32_t *probe(u64map_t *map, uint64_t h, int *added,
                       bool (*eq)(pp_t *, uint32_t, const void *), pp_t *p,
                       const void *what)
{
	for (;; h++) {
		if (h == U64MAP_EMPTY)
			continue;
		uint32_t *v = u64map_put(map, h, added);
		if (*added || eq(p, *v, what))
			return v;
	}
}

static bool str_eq(pp_t *p, uint32_t i, const void *s)
{
	return strcmp(p->str[i], s) == 0;
}

static uint64_t str_id(pp_t *p, const char *s)
{
	int added;
	if (!s)
		s = "";
	uint32_t *v =
	    probe(&p->strmap, fnv(s, strlen(s), 0xcbf29ce484222325ull), &added,
	          str_eq, p, s);
	if (added) {
		VEC_RESERVE(p->str, p->capstr, p->nstr);
		p->str[p->nstr] = xstrdup(s);
		*v = (uint32_t)p->nstr++;
	}
	return *v;
}

static bool fn_eq(pp_t *p, uint32_t i, const void *k)
{
	return memcmp(&p->fn[i], k, sizeof(fnkey_t)) == 0;
}

static uint64_t function_id(pp_t *p, const frame_t *f)
{
	char buf[512];
	const char *name =
	    f->function ? f->function : frame_label(f, buf, sizeof buf);
	fnkey_t k = {str_id(p, name), str_id(p, f->file)};
	uint32_t start_line = f->start_line;
	int added;
	uint32_t *v =
	    probe(&p->fnmap, fnv(&k, sizeof k, 7), &added, fn_eq, p, &k);
	if (added) {
		VEC_RESERVE(p->fn, p->capfn, p->nfn_);
		p->fn[p->nfn_] = k;
		*v = (uint32_t)p->nfn_++;
		size_t mk = pb_open(&p->b, PROF_FUNCTION);
		pb_u64(&p->b, FN_ID, *v + 1u);
		pb_u64(&p->b, FN_NAME, k.name);
		pb_u64(&p->b, FN_SYSTEM_NAME, k.name);
		pb_u64(&p->b, FN_FILENAME, k.file);
		if (start_line)
			pb_u64(&p->b, FN_START_LINE, start_line);
		pb_close(&p->b, mk);
	}
	return *v + 1u;
}

static bool loc_eq(pp_t *p, uint32_t i, const void *k)
{
	return memcmp(&p->loc[i], k, sizeof(lockey_t)) == 0;
}

static uint64_t mapping_of(const pp_t *p, const model_t *m, uint32_t t,
                           const frame_t *f)
{
	if (!f->module)
		return 0;
	for (size_t i = 0; i < m->nmod; i++)
		if (m->mod[i].path == f->module ||
		    (m->mod[i].path && !strcmp(m->mod[i].path, f->module)))
			return p->mapping_base[t] + i + 1;
	return 0;
}

/* The location of frames f[0..n) (n - 1 inlined into the last one). */
static uint64_t location_id(pp_t *p, model_t *m, const frame_t *f, int n)
{
	uint64_t fids[PP_FRAMES];
	for (int i = 0; i < n; i++)
		fids[i] = function_id(p, &f[i]);
	lockey_t k = {p->cur, f[n - 1].address, (uint64_t)n, fids[0]};
	int added;
	uint32_t *v =
	    probe(&p->locmap, fnv(&k, sizeof k, 11), &added, loc_eq, p, &k);
	if (!added)
		return *v + 1u;
	VEC_RESERVE(p->loc, p->caploc, p->nloc_);
	p->loc[p->nloc_] = k;
	*v = (uint32_t)p->nloc_++;
	uint64_t id = *v + 1u;
	size_t mk = pb_open(&p->b, PROF_LOCATION);
	pb_u64(&p->b, LOC_ID, id);
	uint64_t map = mapping_of(p, m, p->cur, &f[n - 1]);
	if (map) {
		pb_u64(&p->b, LOC_MAPPING_ID, map);
		pb_u64(&p->b, LOC_ADDRESS, f[n - 1].address);
	}
	for (int i = 0; i < n; i++) { /* callee first, as pprof wants */
		size_t ml = pb_open(&p->b, LOC_LINE);
		pb_u64(&p->b, LINE_FUNCTION_ID, fids[i]);
		if (f[i].line)
			pb_u64(&p->b, LINE_LINE, f[i].line);
		pb_close(&p->b, ml);
	}
	pb_close(&p->b, mk);
	return id;
}

/* Location ids of stack si, leaf first; a pseudo frame when it has none. */
static int stack_locations(pp_t *p, model_t *m, uint32_t si, const char *none,
                           uint64_t *out)
{
	frame_t fr[PP_FRAMES];
	int n = stack_view(m, si, fr, PP_FRAMES), k = 0;
	if (n == 0) {
		memset(fr, 0, sizeof fr[0]);
		fr[0].function = none;
		n = 1;
	}
	for (int i = 0; i < n;) {
		int j = i;
		while (j + 1 < n && fr[j].inlined)
			j++;
		out[k++] = location_id(p, m, &fr[i], j - i + 1);
		i = j + 1;
	}
	return k;
}

static bool sample_eq(pp_t *p, uint32_t i, const void *k)
{
	const psample_t *a = &p->s[i], *b = k;
	return a->t == b->t && a->stack == b->stack && a->lock == b->lock &&
	       a->thread == b->thread;
}

static psample_t *sample(pp_t *p, uint32_t stack, uint32_t lock,
                         uint32_t thread)
{
	psample_t k = {p->cur, stack, lock, thread, {0}};
	int added;
	uint32_t *v =
	    probe(&p->smap, fnv(&k, 16, 13), &added, sample_eq, p, &k);
	if (added) {
		VEC_RESERVE(p->s, p->caps, p->ns);
		p->s[p->ns] = k;
		*v = (uint32_t)p->ns++;
	}
	return &p->s[*v];
}

/* The replay's events, summed as the model sums its pairs. */
static void on_replay(void *ctx, const replay_ev_t *e)
{
	pp_t *p = ctx;
	model_t *m = &p->r->m[p->cur];
	switch (p->r->metric) {
	case METRIC_WAIT:
		if (e->kind == REPLAY_WAIT &&
		    report_class_matches(p->r, m, m->lock[e->lock].cls)) {
			psample_t *s = sample(p, e->stack, e->lock, e->thread);
			s->v[0]++;
			s->v[1] += e->ns;
		}
		break;
	case METRIC_HOLD:
		if (e->kind == REPLAY_HOLD && e->matched &&
		    e->stack != NONE32 &&
		    report_class_matches(p->r, m, m->lock[e->lock].cls)) {
			psample_t *s = sample(p, e->stack, e->lock, e->thread);
			s->v[0]++;
			s->v[1] += e->wns; /* weighted, as the model */
		}
		break;
	case METRIC_CAUSED:
		if ((e->kind != REPLAY_HOLD && e->kind != REPLAY_WAIT) ||
		    !report_class_matches(p->r, m, m->lock[e->lock].cls))
			break;
		if (e->kind == REPLAY_HOLD && e->contended) {
			psample_t *s =
			    sample(p, e->holder_stack, e->lock, e->thread);
			s->v[0]++;
			s->v[2] += e->wns;
		} else if (e->kind == REPLAY_WAIT &&
		           e->holder_thread != NONE32) {
			sample(p, e->holder_stack, e->lock, e->holder_thread)
			    ->v[1] += e->ns;
		}
		break;
	}
}

/* alloc-under-lock: the model's (lock, allocation stack) pairs, as the
 * folded and text outputs count them: a free is charged to the stack that
 * allocated its block (which the replay does not know), and pairs are
 * kept for the innermost holds (aggregate.c's ALLOC_PAIR_LOCKS). No
 * thread label: the pairs do not keep the thread. */
static void alloc_pairs(pp_t *p, model_t *m)
{
	const lstab_t *t = &m->ls[LS_ALLOC];
	for (size_t i = 0; i < t->n; i++) {
		const lspair_t *q = &t->v[i];
		const lock_t *l = &m->lock[q->lock];
		if (l->kind == FMT_KIND_FUTEX ||
		    !report_class_matches(p->r, m, l->cls))
			continue;
		psample_t *s = sample(p, q->stack, q->lock, NONE32);
		s->v[0] += q->n2;
		s->v[1] += q->bytes;
		s->v[2] += q->n;
		s->v[3] += q->ns;
	}
}

static void label(pb_t *b, uint64_t key, uint64_t str)
{
	size_t mk = pb_open(b, SAMPLE_LABEL);
	pb_u64(b, LABEL_KEY, key);
	pb_u64(b, LABEL_STR, str);
	pb_close(b, mk);
}

static void write_sample(pp_t *p, model_t *m, const psample_t *s,
                         const uint64_t *v)
{
	char buf[256];
	uint64_t locs[PP_FRAMES];
	int n = stack_locations(p, m, s->stack, "[no stack]", locs);
	size_t mk = pb_open(&p->b, PROF_SAMPLE);
	pb_packed(&p->b, SAMPLE_LOCATION_ID, locs, (size_t)n);
	pb_packed(&p->b, SAMPLE_VALUE, v, (size_t)p->nvalues);
	if (s->lock != NONE32)
		label(&p->b, str_id(p, "lock"),
		      str_id(p, lock_label(m, &m->lock[s->lock], buf,
		                           sizeof buf)));
	if (s->thread != NONE32)
		label(&p->b, str_id(p, "thread"),
		      str_id(p, thread_label(&m->thr[s->thread], buf,
		                             sizeof buf)));
	if (p->r->nm > 1) {
		snprintf(buf, sizeof buf, "%" PRIu64, m->pid);
		label(&p->b, str_id(p, "pid"), str_id(p, buf));
	}
	pb_close(&p->b, mk);
}

/* Appends n bytes of c to the key *k (length *len, capacity *cap). */
static void key_add(char **k, size_t *len, size_t *cap, const char *c, size_t n)
{
	while (*len + n + 1 > *cap) {
		*cap = *cap ? 2 * *cap : 256;
		*k = xrealloc(*k, *cap);
	}
	memcpy(*k + *len, c, n);
	*len += n;
	(*k)[*len] = 0;
}

/* The key of sample s: its frames (address, function, file, line,
 * whether inlined) and what its labels name, by id (the trace's lock id,
 * the thread's tid: a thread named after a profile was written is still
 * the same sample), fields apart by 0x1f; the same in every profile of
 * one process. Allocates *k. */
static void sample_key(pp_t *p, model_t *m, const psample_t *s, char **k,
                       size_t *len)
{
	frame_t fr[PP_FRAMES];
	char buf[512], name[512];
	size_t cap = 0;
	*k = NULL;
	*len = 0;
	int n = stack_view(m, s->stack, fr, PP_FRAMES);
	if (n == 0)
		key_add(k, len, &cap, "[no stack]\x1f", 11);
	for (int i = 0; i < n; i++) {
		const frame_t *f = &fr[i];
		int w = snprintf(
		    buf, sizeof buf, "%" PRIx64 " %s %s %u %d\x1f", f->address,
		    f->function ? f->function
		                : frame_label(f, name, sizeof name),
		    f->file ? f->file : "", (unsigned)f->line, f->inlined);
		key_add(k, len, &cap, buf,
		        w < (int)sizeof buf ? (size_t)w : sizeof buf - 1);
	}
	int w = snprintf(buf, sizeof buf,
	                 "\x1flock %" PRIx64 "\x1fthread %" PRIu32
	                 "\x1fpid %" PRIu64,
	                 s->lock != NONE32 ? m->lock[s->lock].id : 0,
	                 s->thread != NONE32 ? m->thr[s->thread].tid : 0,
	                 p->r->nm > 1 ? m->pid : 0);
	key_add(k, len, &cap, buf,
	        w < (int)sizeof buf ? (size_t)w : sizeof buf - 1);
}

static bool group_eq(pp_t *p, uint32_t i, const void *k)
{
	const sgroup_t *a = &p->g[i], *b = k;
	return a->len == b->len && memcmp(a->key, b->key, a->len) == 0;
}

/* delta: trace t's samples grouped by key (stacks that symbolize alike
 * are one sample), each group passed to delta->fn and written when it
 * says so, with the values it left. */
static void write_deltas(pp_t *p, model_t *m, uint32_t t)
{
	p->ng = 0;
	u64map_free(&p->gmap);
	memset(&p->gmap, 0, sizeof p->gmap);
	for (size_t i = 0; i < p->ns; i++) {
		const psample_t *s = &p->s[i];
		if (s->t != t)
			continue;
		sgroup_t k = {.first = i};
		sample_key(p, m, s, &k.key, &k.len);
		int added;
		uint32_t *v = probe(&p->gmap, fnv(k.key, k.len, 17), &added,
		                    group_eq, p, &k);
		if (added) {
			VEC_RESERVE(p->g, p->capg, p->ng);
			p->g[p->ng] = k;
			*v = (uint32_t)p->ng++;
		} else {
			free(k.key);
		}
		sgroup_t *g = &p->g[*v];
		for (int j = 0; j < p->nvalues; j++)
			g->v[j] += s->v[j];
	}
	for (size_t i = 0; i < p->ng; i++) {
		sgroup_t *g = &p->g[i];
		if (p->delta->fn(p->delta->ctx, g->key, g->len, g->v,
		                 p->nvalues))
			write_sample(p, m, &p->s[g->first], g->v);
		free(g->key);
	}
	p->ng = 0;
}

static void write_samples(pp_t *p, model_t *m, uint32_t t)
{
	if (p->delta) {
		write_deltas(p, m, t);
		return;
	}
	for (size_t i = 0; i < p->ns; i++)
		if (p->s[i].t == t)
			write_sample(p, m, &p->s[i], p->s[i].v);
}

/* The trace's modules, the main executable first (pprof takes the first
 * mapping for the main binary). */
static void write_mappings(pp_t *p, model_t *m, uint32_t t)
{
	size_t first = 0;
	for (size_t i = 0; i < m->nmod; i++)
		if (m->exe && m->mod[i].path && !strcmp(m->mod[i].path, m->exe))
			first = i;
	p->mapping_base[t + 1] = p->mapping_base[t] + m->nmod;
	for (size_t k = 0; k < m->nmod; k++) {
		size_t i = k == 0 ? first : k <= first ? k - 1 : k;
		const module_t *mo = &m->mod[i];
		size_t mk = pb_open(&p->b, PROF_MAPPING);
		pb_u64(&p->b, MAP_ID, p->mapping_base[t] + i + 1);
		pb_u64(&p->b, MAP_START, mo->lo);
		pb_u64(&p->b, MAP_LIMIT, mo->hi);
		/* the file offset of the mapping's first address */
		uint64_t seg = 0, off = 0;
		if (!sym_module_load(m, mo, &seg, &off) || seg > mo->lo) {
			seg = mo->lo;
			off = 0;
		}
		pb_u64(&p->b, MAP_OFFSET, off + (mo->lo - seg));
		pb_u64(&p->b, MAP_FILENAME, str_id(p, mo->path));
		pb_u64(&p->b, MAP_BUILD_ID, str_id(p, mo->build_id_hex));
		bool sym = mo->status == 1;
		pb_u64(&p->b, MAP_HAS_FUNCTIONS, sym);
		pb_u64(&p->b, MAP_HAS_FILENAMES, sym);
		pb_u64(&p->b, MAP_HAS_LINE_NUMBERS, sym);
		pb_u64(&p->b, MAP_HAS_INLINE_FRAMES, sym);
		pb_close(&p->b, mk);
	}
}

static void value_type(pp_t *p, uint32_t field, const char *type,
                       const char *unit)
{
	size_t mk = pb_open(&p->b, field);
	pb_u64(&p->b, VT_TYPE, str_id(p, type));
	pb_u64(&p->b, VT_UNIT, str_id(p, unit));
	pb_close(&p->b, mk);
}

/* Gzips b to out. Returns 0, or 1 on a write or zlib error. */
static int gzip_out(const pb_t *b, FILE *out)
{
	z_stream z = {0};
	unsigned char buf[1 << 16];
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return 1;
	z.next_in = b->p;
	z.avail_in = (uInt)b->n; /* profiles stay far below 4 GiB */
	int zr;
	do {
		z.next_out = buf;
		z.avail_out = sizeof buf;
		zr = deflate(&z, Z_FINISH);
		size_t have = sizeof buf - z.avail_out;
		if (have && fwrite(buf, 1, have, out) != have) {
			deflateEnd(&z);
			return 1;
		}
	} while (zr == Z_OK);
	deflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : 1;
}

int report_pprof(const report_t *r, FILE *out)
{
	return report_pprof_delta(r, NULL, out);
}

int report_pprof_delta(const report_t *r, const pprof_delta_t *d, FILE *out)
{
	static const char *const types[][PP_VALUES][2] = {
	    [METRIC_WAIT] = {{"contentions", "count"},
	                     {"delay", "nanoseconds"}},
	    [METRIC_HOLD] = {{"holds", "count"}, {"hold", "nanoseconds"}},
	    [METRIC_CAUSED] = {{"contentions", "count"},
	                       {"delay", "nanoseconds"},
	                       {"hold", "nanoseconds"}},
	    [METRIC_ALLOC_UNDER_LOCK] = {{"alloc_objects", "count"},
	                                 {"alloc_space", "bytes"},
	                                 {"allocator_calls", "count"},
	                                 {"allocator_time", "nanoseconds"}},
	    [METRIC_CROSS_THREAD] = {{"cross_thread_frees", "count"},
	                             {"cross_thread_bytes", "bytes"}},
	};
	static const char *const dflt[] = {
	    [METRIC_WAIT] = "delay",
	    [METRIC_HOLD] = "hold",
	    [METRIC_CAUSED] = "delay",
	    [METRIC_ALLOC_UNDER_LOCK] = "allocator_time",
	    [METRIC_CROSS_THREAD] = "cross_thread_frees"};
	pp_t p = {.r = r, .delta = d};
	int rc = 0;
	str_id(&p, ""); /* string_table[0] must be "" */
	p.mapping_base = xcalloc(r->nm + 1, sizeof *p.mapping_base);
	for (int i = 0; i < PP_VALUES && types[r->metric][i][0]; i++) {
		value_type(&p, PROF_SAMPLE_TYPE, types[r->metric][i][0],
		           types[r->metric][i][1]);
		p.nvalues = i + 1;
	}
	value_type(&p, PROF_PERIOD_TYPE, types[r->metric][0][0],
	           types[r->metric][0][1]);
	pb_u64(&p.b, PROF_PERIOD, 1);
	pb_u64(&p.b, PROF_DEFAULT_SAMPLE_TYPE, str_id(&p, dflt[r->metric]));
	uint64_t dur = 0;
	for (uint32_t t = 0; t < r->nm && !rc; t++) {
		model_t *m = &r->m[t];
		p.cur = t;
		write_mappings(&p, m, t);
		if (model_duration_ns(m) > dur)
			dur = model_duration_ns(m);
		if (r->metric == METRIC_CROSS_THREAD) {
			for (size_t i = 0; i <= m->nstk; i++) {
				const site_t *s = i < m->nstk
				                      ? m->stk[i].site
				                      : &m->nostack_site;
				if (!s || !s->xfree_n)
					continue;
				psample_t *x = sample(
				    &p, i < m->nstk ? (uint32_t)i : NONE32,
				    NONE32, NONE32);
				x->v[0] += s->xfree_n;
				x->v[1] += s->xfree_bytes;
			}
		} else if (r->metric == METRIC_ALLOC_UNDER_LOCK) {
			alloc_pairs(&p, m);
		} else {
			rc = replay(m, on_replay, &p);
		}
		write_samples(&p, m, t);
	}
	if (d) {
		pb_u64(&p.b, PROF_TIME_NANOS, d->time_ns);
		pb_u64(&p.b, PROF_DURATION_NANOS, d->duration_ns);
	} else {
		if (r->nm && r->m[0].info.have_process)
			pb_u64(&p.b, PROF_TIME_NANOS,
			       r->m[0].info.process.realtime_ns);
		pb_u64(&p.b, PROF_DURATION_NANOS, dur);
	}
	pb_u64(&p.b, PROF_COMMENT,
	       str_id(&p, d && d->comment ? d->comment
	                                  : "mallock report --format=pprof"));
	for (size_t i = 0; i < p.nstr; i++)
		pb_str(&p.b, PROF_STRING_TABLE, p.str[i]);
	if (!rc)
		rc = gzip_out(&p.b, out);
	for (size_t i = 0; i < p.nstr; i++)
		free(p.str[i]);
	free(p.str);
	u64map_free(&p.strmap);
	u64map_free(&p.fnmap);
	u64map_free(&p.locmap);
	u64map_free(&p.smap);
	u64map_free(&p.gmap);
	free(p.g);
	free(p.s);
	free(p.mapping_base);
	free(p.fn);
	free(p.loc);
	pb_free(&p.b);
	return rc;
}
