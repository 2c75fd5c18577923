/*
 * reader.c - pass 1 (index and validate chunks, calibrate the clock) and
 * pass 2 (k-way merge of the threads' streams by TSC). See reader.h.
 *
 * Invariants:
 * - No size field makes the reader allocate more than the file could hold:
 *   a payload length is checked against the bytes left in the file before a
 *   buffer is sized for it.
 * - Heap order is (key, stream index), so equal keys merge in a
 *   deterministic order. A record's key is its tsc, except a FREE's: the
 *   start of the free (tsc - ticks). A record is stamped when its call
 *   returns, but a freed block may be handed to another thread's malloc
 *   before the free returns (tcmalloc moves it to the central free list,
 *   then goes on releasing others): keyed by its end, that malloc came
 *   first and the free was matched to the new block (a free under one
 *   lock charged to another thread's allocation site). A block's
 *   allocation is stamped before its owner can free it, and it can be
 *   reallocated only after its free began, so the start orders both. The
 *   keys of one stream never go back: a thread's free starts after its
 *   previous record was stamped, and a forged one that does not is keyed
 *   as that record.
 * - An ALLOC_LOCK_WAIT is stamped inside the allocator call it belongs to
 *   (the record after it in its stream), when its futex wait ended: a free
 *   that waits on tcmalloc's central list lock for its second batch has
 *   already handed its own block over in the first. Keyed at that stamp,
 *   it pushed the free's key past the block's next malloc on another
 *   thread. It is keyed at its call's start instead (read ahead in its
 *   chunk), or as its stream's previous record when the call is in the
 *   next chunk; both precede the call.
 * - A REALLOC that frees its old block (reader_realloc_frees) frees it
 *   inside the call and allocates its new block before it returns: the
 *   old block, like a FREE's, may go to another thread's malloc before
 *   the realloc returns, and the new one may have been freed by its last
 *   owner after the realloc began. So it heads its stream twice: as
 *   READER_REALLOC_FREE keyed at its start, then as READER_REALLOC_REST
 *   keyed at its tsc. Every other record is given once, READER_WHOLE.
 * - Each stream holds at most one decoded chunk; its buffer is reused.
 */
#define _GNU_SOURCE /* pread, posix_fadvise */
#include "reader.h"

#include "progress.h"

#include "u64map.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Clock pairs: the earliest and the latest (tsc, ns) seen. */
typedef struct clockspan {
	uint64_t tsc0, ns0, tsc1, ns1;
	int n;
} clockspan_t;

typedef struct rd_chunk {
	uint64_t off; /* file offset of the chunk header */
	uint64_t tsc_base;
	uint32_t len; /* payload_len: the bytes stored */
	uint32_t flags;
	uint32_t seq;
	uint32_t tid;
	uint32_t next; /* next chunk of the same stream, or UINT32_MAX */
} rd_chunk_t;

typedef struct rd_stream {
	uint32_t tid;
	uint32_t first, last; /* chunk indexes */
	uint32_t cur;         /* chunk being decoded, UINT32_MAX when done */
	uint32_t done; /* when done, its last chunk decoded; UINT32_MAX: none */
	uint8_t *buf;
	size_t cap;
	fmt_dec_t dec;
	fmt_record_t rec;   /* the stream's next record (its head) */
	uint64_t key;       /* rec's merge key (see the invariants) */
	reader_part_t part; /* which part of rec heads the stream */
	/* reader_as_sampled's state: locks held, the nest's timing, the
	 * countdowns, the generator, the stream's latest stamp */
	uint32_t depth;
	uint8_t nest;
	uint32_t hold_left, time_left;
	uint64_t rng, last_tsc;
} rd_stream_t;

struct reader {
	const char *path;
	int fd;
	reader_info_t info;
	rd_chunk_t *chunk;
	size_t nchunk, capchunk;
	/* chunks dropped from the index by reader_forget (the file's chunk
	 * i is chunk[i - base]), and the index's size after the last one */
	uint32_t base;
	size_t kept;
	rd_stream_t *st;
	size_t nst, capst;
	u64map_t st_by_tid; /* tid -> stream index */
	uint32_t *heap;
	uint32_t nheap;
	uint32_t pending; /* stream whose head was returned last */
	bool failed;
	uint8_t *zin; /* a compressed chunk as stored, before inflating */
	size_t zcap;
	uint64_t lim_from, lim_until; /* reader_limit: keys kept */
	bool limited;
	uint64_t stop_at; /* reader_stop_at: keys left for later */
	/* pass 1's state, for reader_grow: the clock pairs so far, the
	 * offset of the next chunk, and whether it stopped at an incomplete
	 * chunk (the file's growing edge) rather than a damaged one. */
	clockspan_t clk;
	uint64_t scan_off;
	bool stop_incomplete;
	dev_t dev;
	ino_t ino;
	uint32_t as_sampled; /* reader_as_sampled's n; 0: records as read */
};

#define NONE UINT32_MAX

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
	if (fd_read_at(fd, buf, n, off) < 0)
		return -1;
	progress_add(n); /* progress by bytes read */
	return 0;
}

static void clock_pair(clockspan_t *c, uint64_t tsc, uint64_t ns)
{
	if (!tsc || !ns)
		return;
	if (!c->n || tsc < c->tsc0) {
		c->tsc0 = tsc;
		c->ns0 = ns;
	}
	if (!c->n || tsc > c->tsc1) {
		c->tsc1 = tsc;
		c->ns1 = ns;
	}
	c->n++;
}

/* The shortest span of pairs trusted over the PROCESS tsc_hz (1 ms). */
#define CLOCK_MIN_SPAN_NS 1000000u
/* A calibration outside these bounds (a 10 THz or a 1 Hz tick) comes from a
 * damaged or forged trace; it is not used. The bounds also keep every
 * ticks -> ns conversion finite (found by fuzzing: a forged clock pair made
 * ns_per_tick 1e15 and the double -> uint64_t conversions overflowed). */
#define NS_PER_TICK_MIN 1e-4
#define NS_PER_TICK_MAX 1e9

static bool sane(double npt)
{
	return npt >= NS_PER_TICK_MIN && npt <= NS_PER_TICK_MAX;
}

static void calibrate(reader_info_t *in, const clockspan_t *c)
{
	double pairs = 0, hz = 0;
	if (c->n >= 2 && c->tsc1 > c->tsc0 && c->ns1 > c->ns0)
		pairs = (double)(c->ns1 - c->ns0) / (double)(c->tsc1 - c->tsc0);
	if (in->have_process && in->process.tsc_hz)
		hz = 1e9 / (double)in->process.tsc_hz;
	if (sane(pairs) && c->ns1 - c->ns0 >= CLOCK_MIN_SPAN_NS) {
		in->ns_per_tick = pairs;
		in->clock_source = "monotonic pairs";
	} else if (sane(hz)) {
		in->ns_per_tick = hz;
		in->clock_source = "tsc_hz";
	} else {
		in->ns_per_tick = 1.0;
		in->clock_source = "none";
	}
}

static rd_stream_t *stream_for(reader_t *r, uint32_t tid, uint32_t seq,
                               uint32_t chunk_no)
{
	/* A hash, not a scan: a forged file of 48-byte chunks, each of another
	 * thread, would make a scan quadratic. */
	int added;
	uint32_t *v = u64map_put(&r->st_by_tid, tid, &added);
	if (!added) {
		rd_stream_t *s = &r->st[*v];
		uint32_t prev = r->chunk[s->last].seq;
		if (seq != prev + 1)
			r->info.seq_gaps++;
		r->chunk[s->last].next = chunk_no;
		s->last = chunk_no;
		return s;
	}
	*v = (uint32_t)r->nst;
	VEC_RESERVE(r->st, r->capst, r->nst);
	rd_stream_t *s = &r->st[r->nst++];
	memset(s, 0, sizeof *s);
	s->tid = tid;
	s->first = s->last = chunk_no;
	if (seq != 0)
		r->info.seq_gaps++;
	return s;
}

/* After a bad chunk at off: walks the following headers (without CRC) to
 * estimate how many chunks the file holds. Returns the count after off
 * (including the bad one), or 0 when the walk meets garbage. */
static uint32_t count_rest(reader_t *r, uint64_t off)
{
	uint32_t k = 0;
	uint8_t hb[FMT_CHUNK_HEADER_SIZE];
	fmt_chunk_header_t h;
	uint64_t size = r->info.file_size;
	while (off < size) {
		if (size - off < FMT_CHUNK_HEADER_SIZE)
			return k + 1;
		if (read_at(r->fd, hb, sizeof hb, off) < 0 ||
		    fmt_chunk_parse(hb, &h) < 0)
			return 0;
		k++;
		if (h.payload_len > size - off - FMT_CHUNK_HEADER_SIZE)
			return k;
		off += FMT_CHUNK_HEADER_SIZE + h.payload_len;
	}
	return k;
}

static void stop_at(reader_t *r, uint64_t off, const char *why)
{
	r->info.truncated = true;
	r->info.truncated_at = off;
	snprintf(r->info.why, sizeof r->info.why, "%s", why);
}

/* Scans a process-level chunk for PROCESS (the clock pair and tsc_hz). */
static void scan_process(reader_t *r, const fmt_chunk_header_t *h,
                         const uint8_t *payload, clockspan_t *c)
{
	fmt_dec_t d;
	fmt_record_t rec;
	size_t eo;
	fmt_dec_init(&d, h, payload);
	while (fmt_decode(&d, &rec, &eo) > 0) {
		if (rec.type != FMT_PROCESS || r->info.have_process)
			continue;
		if (meta_process(&rec, &r->info.process) == 0) {
			r->info.have_process = true;
			clock_pair(c, r->info.process.tsc,
			           r->info.process.mono_ns);
			if (r->info.process.tsc &&
			    r->info.process.tsc < r->info.tsc_min)
				r->info.tsc_min = r->info.process.tsc;
		}
	}
	/* Strings point into the payload buffer, which is about to go. */
	meta_str_t none = {"", 0};
	r->info.process.exe = r->info.process.cmdline = none;
	r->info.process.hostname = r->info.process.version = none;
}

static int pass1(reader_t *r, char *err, size_t errlen)
{
	uint8_t hb[FMT_CHUNK_HEADER_SIZE];
	uint8_t *buf = NULL, *zbuf = NULL;
	size_t cap = 0, zcap = 0;
	uint64_t off = r->scan_off, size = r->info.file_size;
	clockspan_t *clk = &r->clk;
	char why[160];

	if (!r->info.tsc_min)
		r->info.tsc_min = UINT64_MAX;
	r->stop_incomplete = false;
	while (off < size) {
		fmt_chunk_header_t h;
		uint32_t m = (uint32_t)r->nchunk, mo = r->base + m;
		if (size - off < FMT_CHUNK_HEADER_SIZE) {
			snprintf(why, sizeof why, "chunk %u: incomplete header",
			         mo + 1);
			stop_at(r, off, why);
			r->info.chunks_total = mo + 1;
			r->stop_incomplete = true;
			break;
		}
		if (read_at(r->fd, hb, sizeof hb, off) < 0) {
			snprintf(err, errlen, "read error at byte %llu: %s",
			         (unsigned long long)off, strerror(errno));
			free(buf);
			free(zbuf);
			return 1;
		}
		if (fmt_chunk_parse(hb, &h) < 0) {
			snprintf(why, sizeof why, "chunk %u: bad chunk header",
			         mo + 1);
			stop_at(r, off, why);
			r->info.chunks_total = 0;
			break;
		}
		if (h.payload_len > size - off - FMT_CHUNK_HEADER_SIZE) {
			snprintf(why, sizeof why,
			         "chunk %u: incomplete (%u-byte payload, %llu "
			         "bytes left)",
			         mo + 1, h.payload_len,
			         (unsigned long long)(size - off -
			                              FMT_CHUNK_HEADER_SIZE));
			stop_at(r, off, why);
			r->info.chunks_total = mo + 1;
			r->stop_incomplete = true;
			break;
		}
		/* Never NULL, even for an empty payload: NULL + 0 is undefined,
		 * and zlib's crc32() of a NULL buffer is its initial value, not
		 * the CRC of nothing (found by fuzzing: an empty chunk). */
		if (!buf || h.payload_len > cap) {
			free(buf);
			cap = h.payload_len;
			buf = xmalloc(cap ? cap : 1);
		}
		if (read_at(r->fd, buf, h.payload_len,
		            off + FMT_CHUNK_HEADER_SIZE) < 0) {
			snprintf(err, errlen, "read error at byte %llu",
			         (unsigned long long)off);
			free(buf);
			free(zbuf);
			return 1;
		}
		if (fmt_chunk_verify(hb, &h, buf) < 0) {
			snprintf(why, sizeof why, "chunk %u: CRC mismatch",
			         mo + 1);
			stop_at(r, off, why);
			uint32_t rest = count_rest(r, off);
			r->info.chunks_total = rest ? mo + rest : 0;
			break;
		}
		const uint8_t *recs;
		uint32_t nrecs;
		if (fmt_chunk_inflate(&h, buf, &zbuf, &zcap, &recs, &nrecs) <
		    0) {
			snprintf(why, sizeof why,
			         "chunk %u: corrupt compressed payload",
			         mo + 1);
			stop_at(r, off, why);
			uint32_t rest = count_rest(r, off);
			r->info.chunks_total = rest ? mo + rest : 0;
			break;
		}
		if (h.flags & FMT_CHUNKF_ZSTD)
			r->info.chunks_compressed++;
		if (h.tid == 0) {
			fmt_chunk_header_t hr = h;
			hr.payload_len = nrecs;
			scan_process(r, &hr, recs, clk);
		}
		clock_pair(clk, h.tsc_flush, h.mono_flush_ns);
		if (h.tsc_base && h.tsc_base < r->info.tsc_min)
			r->info.tsc_min = h.tsc_base;
		VEC_RESERVE(r->chunk, r->capchunk, r->nchunk);
		rd_chunk_t *c = &r->chunk[r->nchunk++];
		c->off = off;
		c->tsc_base = h.tsc_base;
		c->len = h.payload_len;
		c->flags = h.flags;
		c->seq = h.seq;
		c->tid = h.tid;
		c->next = NONE;
		stream_for(r, h.tid, h.seq, m);
		off += FMT_CHUNK_HEADER_SIZE + h.payload_len;
	}
	free(buf);
	free(zbuf);
	r->scan_off = off;
	r->info.chunks = r->base + (uint32_t)r->nchunk;
	if (!r->info.truncated)
		r->info.chunks_total = r->info.chunks;
	if (r->info.tsc_min == UINT64_MAX)
		r->info.tsc_min = 0;
	calibrate(&r->info, clk);
	return 0;
}

int reader_open(const char *path, reader_t **out, char *err, size_t errlen)
{
	uint8_t fh[FMT_FILE_HEADER_SIZE];
	struct stat sb;
	unsigned major = 0, minor = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return 1;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		close(fd);
		return 1;
	}
	if (sb.st_size < FMT_FILE_HEADER_SIZE ||
	    read_at(fd, fh, sizeof fh, 0) < 0) {
		snprintf(err, errlen, "not a mallock trace");
		close(fd);
		return 2;
	}
	int rc = fmt_file_header_check(fh, sizeof fh, &major, &minor);
	if (rc == -1) {
		snprintf(err, errlen, "not a mallock trace");
		close(fd);
		return 2;
	}
	if (rc == -2) {
		snprintf(err, errlen, "version %u.%u not supported", major,
		         minor);
		close(fd);
		return 2;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	reader_t *r = xcalloc(1, sizeof *r);
	r->path = path;
	r->fd = fd;
	r->info.file_size = (uint64_t)sb.st_size;
	r->scan_off = FMT_FILE_HEADER_SIZE;
	r->stop_at = UINT64_MAX;
	r->dev = sb.st_dev;
	r->ino = sb.st_ino;
	rc = pass1(r, err, errlen);
	if (rc) {
		reader_close(r);
		return rc;
	}
	reader_rewind(r);
	*out = r;
	return 0;
}

const reader_info_t *reader_info(const reader_t *r)
{
	return &r->info;
}

uint32_t reader_streams(const reader_t *r)
{
	return (uint32_t)r->nst;
}

/* Loads chunk c into stream s (inflated, when it is compressed) and starts
 * decoding it. */
static int load_chunk(reader_t *r, rd_stream_t *s, uint32_t c)
{
	rd_chunk_t *ch = &r->chunk[c];
	fmt_chunk_header_t h = {0};
	h.payload_len = ch->len;
	h.flags = ch->flags;
	h.tsc_base = ch->tsc_base;
	uint8_t **dst = &s->buf;
	size_t *dcap = &s->cap;
	if (ch->flags & FMT_CHUNKF_ZSTD) {
		dst = &r->zin;
		dcap = &r->zcap;
	}
	if (!*dst || ch->len > *dcap) { /* never NULL: see pass1() */
		free(*dst);
		*dcap = ch->len;
		*dst = xmalloc(*dcap ? *dcap : 1);
	}
	if (read_at(r->fd, *dst, ch->len, ch->off + FMT_CHUNK_HEADER_SIZE) < 0)
		return -1;
	const uint8_t *recs;
	uint32_t nrecs;
	if (fmt_chunk_inflate(&h, *dst, &s->buf, &s->cap, &recs, &nrecs) < 0)
		return -1;
	h.payload_len = nrecs;
	fmt_dec_init(&s->dec, &h, recs);
	s->cur = c;
	return 0;
}

/* The start of the allocator call after s's head (an ALLOC_LOCK_WAIT or
 * an ALLOC_MIGRATED, which belong to it),
 * read ahead in its chunk: the first core record that is not another wait.
 * UINT64_MAX when that record is not an allocator call, 0 when the chunk
 * ends first (or is malformed: advance() reports it). */
static uint64_t call_start(const rd_stream_t *s)
{
	fmt_dec_t d = s->dec;
	fmt_record_t rec;
	size_t eo;
	while (fmt_decode(&d, &rec, &eo) > 0) {
		uint64_t ticks;
		if (FMT_IS_META(rec.type) || rec.type == FMT_ALLOC_LOCK_WAIT ||
		    rec.type == FMT_ALLOC_MIGRATED)
			continue;
		if (rec.type == FMT_ALLOC)
			ticks = rec.f[FMT_ALLOC_TICKS];
		else if (rec.type == FMT_FREE)
			ticks = rec.f[FMT_FREE_TICKS];
		else if (rec.type == FMT_REALLOC)
			ticks = rec.f[FMT_REALLOC_TICKS];
		else
			return UINT64_MAX;
		return rec.tsc - (ticks < rec.tsc ? ticks : 0);
	}
	return 0;
}

enum { NEST_UNTIMED, NEST_SAMPLED, NEST_EXACT };

/* A gap of 1 to 2n - 1 draws (mean n), as the shim's countdowns draw
 * them (shim/core/sample.c), from a generator seeded by the thread. */
static uint32_t gap(rd_stream_t *s, uint32_t n)
{
	if (!s->rng)
		s->rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)s->tid << 1 | 1);
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return 1 + (uint32_t)(s->rng % (2ull * n - 1));
}

/* Whether a countdown runs out at this draw (the next gap then begins). */
static bool due(rd_stream_t *s, uint32_t *left, uint32_t n)
{
	if (!*left)
		*left = gap(s, n);
	if (--*left)
		return false;
	*left = gap(s, n);
	return true;
}

/*
 * reader_as_sampled: s's head record as the shim's default timing would
 * have written it, from a trace that timed every hold and call. A nest of
 * holds begun by an uncontended acquisition is timed one in n (its
 * acquisitions become the sampled forms, standing for n) or not at all
 * (the untimed forms, stamped with the stream's previous stamp, as are its
 * uncontended releases, and its allocator calls lose their ticks); a
 * contended acquisition or a condition wake makes the rest of its nest
 * exact, as in the shim (lock_hooks.c). Of the allocator calls outside
 * holds, one in n keeps its ticks; an untimed free is stamped at its
 * start, as the shim stamps one.
 */
static void as_sampled(const reader_t *r, rd_stream_t *s)
{
	fmt_record_t *x = &s->rec;
	uint32_t n = r->as_sampled;
	unsigned f = 0;
	switch (x->type) {
	case FMT_PROCESS:
		/* Its last two fields, time_every and hold_every, say n: 1
		 * each (one byte), as reader_as_sampled's caller checked. */
		if (x->body >= s->buf &&
		    x->body + x->body_len <= s->buf + s->cap &&
		    x->body_len >= 2 && x->body[x->body_len - 1] == 1 &&
		    x->body[x->body_len - 2] == 1) {
			uint8_t *b = s->buf + (x->body - s->buf);
			b[x->body_len - 1] = b[x->body_len - 2] = (uint8_t)n;
		}
		return;
	case FMT_ACQ:
	case FMT_ACQ_SHARED:
		if (!s->depth)
			s->nest = due(s, &s->hold_left, n) ? NEST_SAMPLED
			                                   : NEST_UNTIMED;
		s->depth++;
		if (s->nest == NEST_UNTIMED) {
			x->type = x->type == FMT_ACQ ? FMT_ACQ_UNTIMED
			                             : FMT_ACQ_SHARED_UNTIMED;
			if (s->last_tsc)
				x->tsc = s->last_tsc;
		} else if (s->nest == NEST_SAMPLED) {
			x->type = x->type == FMT_ACQ ? FMT_ACQ_SAMPLED
			                             : FMT_ACQ_SHARED_SAMPLED;
		}
		break;
	case FMT_ACQ_WAIT:
	case FMT_ACQ_SHARED_WAIT:
	case FMT_COND_WAKE:
		s->nest = NEST_EXACT;
		s->depth++;
		break;
	case FMT_REL:
		if (s->depth && s->nest == NEST_UNTIMED && s->last_tsc)
			x->tsc = s->last_tsc;
		/* fall through */
	case FMT_REL_CONTENDED:
	case FMT_COND_WAIT:
		if (s->depth)
			s->depth--;
		break;
	case FMT_ALLOC:
		f = FMT_ALLOC_TICKS;
		break;
	case FMT_FREE:
		f = FMT_FREE_TICKS;
		break;
	case FMT_REALLOC:
		f = FMT_REALLOC_TICKS;
		break;
	default:
		break;
	}
	if (f && x->f[f]) {
		bool untimed = s->depth ? s->nest == NEST_UNTIMED
		                        : !due(s, &s->time_left, n);
		if (untimed) {
			if (x->type == FMT_FREE && x->f[f] < x->tsc)
				x->tsc -= x->f[f];
			x->f[f] = 0;
		}
	}
	if (x->tsc > s->last_tsc)
		s->last_tsc = x->tsc;
}

/* Advances s to its next record. Returns 1, 0 when the stream is done, -1
 * on a malformed record or read error (the reader is then marked). */
static int advance(reader_t *r, rd_stream_t *s)
{
	for (;;) {
		size_t eo = 0;
		int rc = fmt_decode(&s->dec, &s->rec, &eo);
		if (rc > 0) {
			uint64_t back = 0;
			if (r->as_sampled > 1)
				as_sampled(r, s);
			s->part = READER_WHOLE;
			if (s->rec.type == FMT_FREE)
				back = s->rec.f[FMT_FREE_TICKS];
			else if (s->rec.type == FMT_REALLOC &&
			         reader_realloc_frees(&s->rec)) {
				back = s->rec.f[FMT_REALLOC_TICKS];
				s->part = READER_REALLOC_FREE;
			}
			uint64_t key =
			    s->rec.tsc - (back < s->rec.tsc ? back : 0);
			if (s->rec.type == FMT_ALLOC_LOCK_WAIT ||
			    s->rec.type == FMT_ALLOC_MIGRATED) {
				uint64_t start = call_start(s);
				if (start < key)
					key = start;
			}
			if (key >
			    s->key) /* a forged free may start too early */
				s->key = key;
			return 1;
		}
		if (rc < 0) {
			char why[160];
			const rd_chunk_t *ch = &r->chunk[s->cur];
			uint64_t at = ch->off + FMT_CHUNK_HEADER_SIZE + eo;
			if (ch->flags & FMT_CHUNKF_ZSTD) {
				/* eo counts decompressed bytes: no file offset.
				 */
				at = ch->off;
				snprintf(
				    why, sizeof why,
				    "chunk %u (thread %u): malformed record "
				    "(type 0x%02x) at byte %zu of its "
				    "decompressed records",
				    r->base + s->cur + 1, ch->tid,
				    s->dec.start[eo], eo);
			} else
				snprintf(
				    why, sizeof why,
				    "chunk %u (thread %u): malformed record "
				    "(type 0x%02x) at byte %llu",
				    r->base + s->cur + 1, ch->tid,
				    s->dec.start[eo], (unsigned long long)at);
			stop_at(r, at, why);
			r->failed = true;
			return -1;
		}
		uint32_t next = s->cur == NONE ? NONE : r->chunk[s->cur].next;
		if (next == NONE) {
			s->done = s->cur;
			s->cur = NONE;
			return 0;
		}
		if (load_chunk(r, s, next) < 0) {
			stop_at(r, r->chunk[next].off, "read error");
			r->failed = true;
			return -1;
		}
	}
}

static inline int before(const reader_t *r, uint32_t a, uint32_t b)
{
	uint64_t ta = r->st[a].key, tb = r->st[b].key;
	return ta < tb || (ta == tb && a < b);
}

static void sift_down(reader_t *r, uint32_t i)
{
	uint32_t n = r->nheap, *h = r->heap;
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		if (l < n && before(r, h[l], h[m]))
			m = l;
		if (l + 1 < n && before(r, h[l + 1], h[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

void reader_as_sampled(reader_t *r, uint32_t n)
{
	r->as_sampled = n;
	reader_rewind(r);
}

void reader_rewind(reader_t *r)
{
	free(r->heap);
	r->heap = xmalloc((r->nst + 1) * sizeof *r->heap);
	r->nheap = 0;
	r->pending = NONE;
	r->failed = false;
	for (uint32_t i = 0; i < r->nst; i++) {
		rd_stream_t *s = &r->st[i];
		s->cur = NONE;
		s->done = NONE;
		s->key = 0;
		s->depth = s->hold_left = s->time_left = 0;
		s->rng = s->last_tsc = 0;
		if (load_chunk(r, s, s->first) < 0 || advance(r, s) <= 0)
			continue;
		r->heap[r->nheap++] = i;
	}
	for (uint32_t i = r->nheap / 2; i-- > 0;)
		sift_down(r, i);
}

static int next_any(reader_t *r, reader_ev_t *ev)
{
	if (r->failed)
		return -1;
	if (r->pending != NONE) {
		rd_stream_t *s = &r->st[r->pending];
		if (s->part == READER_REALLOC_FREE) {
			/* The same REALLOC again, now at its end. */
			s->part = READER_REALLOC_REST;
			if (s->rec.tsc > s->key)
				s->key = s->rec.tsc;
		} else {
			int rc = advance(r, s);
			if (rc < 0)
				return -1;
			if (rc == 0)
				r->heap[0] = r->heap[--r->nheap];
		}
		r->pending = NONE;
		/* The stream just advanced stays first for runs of events
		 * (3.5 on average in a svcqueue trace, 19 in a batcher one):
		 * its children are compared here, and sift_down() is called
		 * only when one of them now comes first. */
		uint32_t *h = r->heap;
		if ((r->nheap > 1 && before(r, h[1], h[0])) ||
		    (r->nheap > 2 && before(r, h[2], h[0])))
			sift_down(r, 0);
	}
	if (!r->nheap)
		return 0;
	uint32_t top = r->heap[0];
	r->pending = top;
	ev->rec = &r->st[top].rec;
	ev->stream = top;
	ev->tid = r->st[top].tid;
	ev->part = r->st[top].part;
	return 1;
}

void reader_limit(reader_t *r, uint64_t from_tsc, uint64_t until_tsc)
{
	r->lim_from = from_tsc;
	r->lim_until = until_tsc;
	r->limited = from_tsc || until_tsc != UINT64_MAX;
}

void reader_stop_at(reader_t *r, uint64_t tsc)
{
	r->stop_at = tsc;
}

int reader_next(reader_t *r, reader_ev_t *ev)
{
	int rc;
	while ((rc = next_any(r, ev)) > 0) {
		uint64_t key = r->st[ev->stream].key;
		if (key >= r->stop_at) {
			/* Left at the head of its stream, unread. */
			r->pending = NONE;
			return 0;
		}
		if (!r->limited || FMT_IS_META(ev->rec->type))
			return rc;
		if (key >= r->lim_from && key < r->lim_until)
			return rc;
	}
	return rc;
}

static void sift_up(reader_t *r, uint32_t i)
{
	uint32_t *h = r->heap;
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!before(r, h[i], h[p]))
			return;
		uint32_t t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

int reader_grow(reader_t *r)
{
	struct stat sb, pb;
	if (fstat(r->fd, &sb) < 0)
		return -1;
	if (stat(r->path, &pb) < 0 || pb.st_dev != r->dev ||
	    pb.st_ino != r->ino || (uint64_t)sb.st_size < r->info.file_size)
		return 1; /* replaced or cut: not the file read so far */
	if ((uint64_t)sb.st_size == r->info.file_size ||
	    (r->info.truncated && !r->stop_incomplete) || r->failed)
		return 0;
	size_t nst = r->nst;
	r->info.file_size = (uint64_t)sb.st_size;
	r->info.truncated = false;
	r->info.truncated_at = 0;
	r->info.why[0] = 0;
	char err[160];
	if (pass1(r, err, sizeof err))
		return -1;
	if (r->nst > nst) {
		r->heap = xrealloc(r->heap, (r->nst + 1) * sizeof *r->heap);
		for (size_t i = nst; i < r->nst; i++) {
			r->st[i].cur = NONE;
			r->st[i].done = NONE;
		}
	}
	/* The streams off the heap with a chunk now: those done with their
	 * last one, and the new ones. */
	bool *on = xcalloc(r->nst + 1, sizeof *on);
	for (uint32_t k = 0; k < r->nheap; k++)
		on[r->heap[k]] = true;
	for (uint32_t i = 0; i < r->nst; i++) {
		rd_stream_t *s = &r->st[i];
		uint32_t c = i >= nst          ? s->first
		             : s->done == NONE ? NONE
		                               : r->chunk[s->done].next;
		if (on[i] || c == NONE || s->cur != NONE)
			continue;
		s->done = NONE;
		if (load_chunk(r, s, c) < 0) {
			stop_at(r, r->chunk[c].off, "read error");
			r->failed = true;
			break;
		}
		if (advance(r, s) <= 0)
			continue;
		r->heap[r->nheap++] = i;
		sift_up(r, r->nheap - 1);
	}
	free(on);
	return 0;
}

size_t reader_forget(reader_t *r, size_t min_new)
{
	if (r->nchunk < r->kept + min_new || !r->nchunk)
		return 0;
	uint32_t *map = xmalloc(r->nchunk * sizeof *map);
	for (size_t i = 0; i < r->nchunk; i++)
		map[i] = NONE;
	/* Each stream's chunks from the one it reads (or read last: its
	 * next is taken up by reader_grow; or its first, not begun) on. */
	for (uint32_t i = 0; i < r->nst; i++) {
		const rd_stream_t *s = &r->st[i];
		uint32_t c = s->cur != NONE    ? s->cur
		             : s->done != NONE ? s->done
		                               : s->first;
		for (; c != NONE && map[c] == NONE; c = r->chunk[c].next)
			map[c] = 0;
	}
	uint32_t n = 0;
	for (uint32_t i = 0; i < r->nchunk; i++)
		if (map[i] != NONE) {
			map[i] = n;
			r->chunk[n++] = r->chunk[i];
		}
	for (uint32_t i = 0; i < n; i++)
		if (r->chunk[i].next != NONE)
			r->chunk[i].next = map[r->chunk[i].next];
	for (uint32_t i = 0; i < r->nst; i++) {
		rd_stream_t *s = &r->st[i];
		uint32_t c = s->cur != NONE    ? s->cur
		             : s->done != NONE ? s->done
		                               : s->first;
		s->first = map[c];
		s->last = map[s->last];
		if (s->cur != NONE)
			s->cur = map[s->cur];
		if (s->done != NONE)
			s->done = map[s->done];
	}
	free(map);
	size_t dropped = r->nchunk - n;
	r->base += (uint32_t)dropped;
	r->nchunk = n;
	r->kept = n;
	if (r->capchunk > 2 * n + 1024) { /* the pages given back */
		r->capchunk = 2 * n + 1024;
		r->chunk = xrealloc(r->chunk, r->capchunk * sizeof *r->chunk);
	}
	return dropped;
}

int reader_walk(reader_t *r, reader_walk_fn fn, void *ctx, uint64_t *err_off)
{
	uint8_t *buf = NULL, *zbuf = NULL;
	size_t cap = 0, zcap = 0;
	int ret = 0;
	for (uint32_t i = 0; i < r->nchunk && !ret; i++) {
		rd_chunk_t *c = &r->chunk[i];
		uint8_t hb[FMT_CHUNK_HEADER_SIZE];
		fmt_chunk_header_t h;
		if (read_at(r->fd, hb, sizeof hb, c->off) < 0 ||
		    fmt_chunk_parse(hb, &h) < 0) {
			*err_off = c->off;
			ret = -1;
			break;
		}
		VEC_RESERVE(buf, cap, h.payload_len);
		if (read_at(r->fd, buf, h.payload_len,
		            c->off + FMT_CHUNK_HEADER_SIZE) < 0) {
			*err_off = c->off;
			ret = -1;
			break;
		}
		fn(ctx, i, &h, c->off, NULL);
		const uint8_t *recs;
		uint32_t nrecs;
		if (fmt_chunk_inflate(&h, buf, &zbuf, &zcap, &recs, &nrecs) <
		    0) {
			*err_off = c->off;
			ret = -1;
			break;
		}
		fmt_chunk_header_t hr = h;
		hr.payload_len = nrecs;
		fmt_dec_t d;
		fmt_record_t rec;
		size_t eo;
		int rc;
		fmt_dec_init(&d, &hr, recs);
		while ((rc = fmt_decode(&d, &rec, &eo)) > 0)
			fn(ctx, i, &h, c->off, &rec);
		if (rc < 0) {
			*err_off = c->off + FMT_CHUNK_HEADER_SIZE + eo;
			ret = -1;
		}
	}
	free(buf);
	free(zbuf);
	return ret;
}

void reader_close(reader_t *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nst; i++)
		free(r->st[i].buf);
	free(r->st);
	u64map_free(&r->st_by_tid);
	free(r->chunk);
	free(r->heap);
	free(r->zin);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}
