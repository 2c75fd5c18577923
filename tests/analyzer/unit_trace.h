/*
 * unit_trace.h - a small trace builder for the analyzer's unit tests: one
 * chunk at a time, written with format/'s encoders in whatever file order a
 * test needs. (mktrace.c writes whole scenarios; this writes exactly the
 * records a unit test names.) Times are ticks; a chunk's clock pair is
 * (its last tsc, that tsc as ns) unless the test sets it; files go to the
 * harness's scratch directory (test.h). Includers define _GNU_SOURCE first
 * (mkstemp, fdopen).
 */
#ifndef MALLOCK_UNIT_TRACE_H
#define MALLOCK_UNIT_TRACE_H

#include "test.h"
#include "trace_format.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ut_chunk {
	uint32_t tid, seq;
	uint64_t base, last;
	uint64_t flush_tsc, flush_ns; /* 0: last, last */
	fmt_enc_t enc;
	size_t len;
	uint8_t buf[1 << 16];
} ut_chunk_t;

/* Starts an empty chunk of thread tid (0: the process chunk). */
static inline void ut_begin(ut_chunk_t *c, uint32_t tid, uint32_t seq,
                            uint64_t tsc_base)
{
	memset(c, 0, sizeof *c);
	c->tid = tid;
	c->seq = seq;
	c->base = c->last = tsc_base;
	c->enc.last_tsc = tsc_base;
}

/* Encodes the fields f of a core event of type at p, by the format's
 * layout table; returns the end. (mktrace.c uses it too.) */
static inline uint8_t *ut_put_fields(uint8_t *p, fmt_enc_t *enc, unsigned type,
                                     const uint64_t *f)
{
	int i = 0;
	for (const char *l = fmt_core_layout(type); *l; l++, i++) {
		if (*l == 'p')
			p = fmt_put_ptr(p, enc, f[i]);
		else if (*l == 'r') {
			p = fmt_put_s(p, (int64_t)(f[i] - f[i - 1]));
			enc->last_ptr = f[i];
		} else
			p = fmt_put_u(p, f[i]);
	}
	return p;
}

/* One core event, fields in wire order (unused ones ignored). */
static inline void ut_ev(ut_chunk_t *c, unsigned type, uint64_t tsc,
                         uint64_t f0, uint64_t f1, uint64_t f2, uint64_t f3,
                         uint64_t f4)
{
	uint64_t f[5] = {f0, f1, f2, f3, f4};
	uint8_t *p = fmt_put_head(c->buf + c->len, &c->enc, type, tsc);
	p = ut_put_fields(p, &c->enc, type, f);
	c->len = (size_t)(p - c->buf);
	if (tsc > c->last)
		c->last = tsc;
}

/* One metadata record with a prepared body. */
static inline void ut_meta(ut_chunk_t *c, unsigned type, const uint8_t *body,
                           size_t n)
{
	uint8_t *p = c->buf + c->len;
	*p++ = (uint8_t)type;
	p = fmt_put_u(p, n);
	memcpy(p, body, n);
	c->len = (size_t)(p + n - c->buf);
}

/* STACK id with frames fr[0..n) (leaf first). */
static inline void ut_stack(ut_chunk_t *c, uint64_t id, int n,
                            const uint64_t *fr)
{
	uint8_t b[512], *p = b;
	p = fmt_put_u(p, id);
	p = fmt_put_u(p, (uint64_t)n);
	for (int i = 0; i < n; i++)
		p = i == 0 ? fmt_put_u(p, fr[0])
		           : fmt_put_s(p, (int64_t)(fr[i] - fr[i - 1]));
	ut_meta(c, FMT_STACK, b, (size_t)(p - b));
}

static inline void ut_lock_new(ut_chunk_t *c, uint64_t id, uint64_t addr,
                               uint64_t kind, uint64_t flags)
{
	uint8_t b[64], *p = b;
	p = fmt_put_u(p, id);
	p = fmt_put_u(p, addr);
	p = fmt_put_u(p, kind);
	p = fmt_put_u(p, flags);
	ut_meta(c, FMT_LOCK_NEW, b, (size_t)(p - b));
}

static inline void ut_lock_name(ut_chunk_t *c, uint64_t id, uint64_t flags,
                                const char *name)
{
	uint8_t b[256], *p = b;
	p = fmt_put_u(p, id);
	p = fmt_put_u(p, flags);
	p = fmt_put_str(p, name, strlen(name));
	ut_meta(c, FMT_LOCK_NAME, b, (size_t)(p - b));
}

/* PROCESS of pid with its clock pair (tsc, mono_ns) and tsc_hz (0: none). */
static inline void ut_process(ut_chunk_t *c, uint64_t pid, uint64_t tsc,
                              uint64_t mono_ns, uint64_t tsc_hz)
{
	uint8_t b[256], *p = b;
	p = fmt_put_u(p, pid);
	p = fmt_put_u(p, 1);
	p = fmt_put_u(p, 1700000000000000000ull);
	p = fmt_put_u(p, tsc);
	p = fmt_put_u(p, mono_ns);
	p = fmt_put_u(p, tsc_hz);
	p = fmt_put_u(p, 16);
	p = fmt_put_u(p, FMT_UNWIND_FP);
	p = fmt_put_u(p, 0);
	p = fmt_put_str(p, "/unit", 5);
	p = fmt_put_str(p, "unit", 4);
	p = fmt_put_str(p, "host", 4);
	p = fmt_put_str(p, "unit", 4);
	ut_meta(c, FMT_PROCESS, b, (size_t)(p - b));
}

/* A new trace file (file header written); *path gets its name. */
static inline FILE *ut_open(char *path, size_t len)
{
	test_tmp_path(path, len, "mallock-unit-XXXXXX");
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!f) {
		perror(path);
		exit(1);
	}
	uint8_t h[FMT_FILE_HEADER_SIZE];
	fmt_file_header(h);
	fwrite(h, 1, sizeof h, f);
	return f;
}

/* Seals c and appends it to f. */
static inline void ut_write(FILE *f, const ut_chunk_t *c)
{
	uint8_t hb[FMT_CHUNK_HEADER_SIZE];
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)c->len;
	h.tid = c->tid;
	h.seq = c->seq;
	h.tsc_base = c->base;
	h.tsc_flush = c->flush_tsc ? c->flush_tsc : c->last;
	h.mono_flush_ns = c->flush_tsc ? c->flush_ns : c->last;
	fmt_chunk_seal(hb, &h, c->buf);
	fwrite(hb, 1, sizeof hb, f);
	fwrite(c->buf, 1, c->len, f);
}

#endif
