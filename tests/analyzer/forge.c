/*
 * forge.c - writes hostile but well-formed mallock traces of a chosen size,
 * for the analyzer's resource test (test_hostile.py) and the fuzz corpus
 * (docs/fuzzing.md). Each shape aims at one way a forged file made
 * `mallock report` slow, hungry or stuck (docs/reliability.md, "Analyzer"):
 *
 *   flood      ALLOC pointers that all share one home slot under the
 *              analyzer's former fixed hash (8141b96): every u64map insert
 *              scanned the whole cluster, quadratic time.
 *   marks      thread names (a thread each), then MARK records: each MARK
 *              walked every thread, quadratic time.
 *   holds      1024 locks acquired, then allocator calls from a new stack
 *              each (up to BYTES/200 stacks): each call made a (lock,
 *              stack) pair for all 1024 held locks, memory growing with
 *              events (a 23 KB trace needed 500 MB).
 *   rotate     1024 locks held; then the outermost is released and taken
 *              again, over and over (each release scans the held stack).
 *   threads    a thread per chunk, one event each (the reader's streams).
 *   modules    MODULE records at distinct addresses, naming paths that do
 *              not exist or, when PATH is given, distinct spellings of PATH
 *              (the same file): libdw maps the file for each module.
 *   notes      distinct NOTE texts (at most 256 are kept, the rest counted).
 *   module     a MODULE record naming PATH and a stack with frames in it,
 *              then allocator calls up to the size: with PATH a FIFO the
 *              report (symbols on) blocked in open() forever; with PATH a
 *              stripped ELF file (or a link to one), libdw looks for
 *              PATH.debug next to it (and next to the link's target).
 *
 *   forge SHAPE BYTES OUT [PATH]
 *
 * The file is BYTES long give or take one record and the chunk headers.
 * Records are encoded with format/'s encoders (trace_format.h); one tick is
 * one nanosecond, as in mktrace.
 */
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1000u
#define CHUNK_BYTES (1u << 20) /* payload at which a chunk is written */
#define HELD 1024              /* the analyzer's HELD_MAX */

/* One thread's chunk being filled. */
typedef struct tw {
	uint32_t tid, seq;
	uint8_t *buf;
	size_t len;
	uint64_t base, tsc;
	fmt_enc_t enc;
} tw_t;

static FILE *out;
static uint64_t written; /* bytes in the file so far */

static void tw_init(tw_t *t, uint32_t tid)
{
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->tsc = T0;
	t->buf = malloc(CHUNK_BYTES + 4096);
	if (!t->buf) {
		perror("forge");
		exit(1);
	}
}

/* Writes t's chunk (when it has records) and starts a new one. */
static void tw_flush(tw_t *t)
{
	if (!t->len)
		return;
	uint8_t hdr[FMT_CHUNK_HEADER_SIZE];
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)t->len;
	h.tid = t->tid;
	h.seq = t->seq++;
	h.tsc_base = t->base;
	h.tsc_flush = t->tsc;
	h.mono_flush_ns = t->tsc; /* 1 tick = 1 ns */
	fmt_chunk_seal(hdr, &h, t->buf);
	fwrite(hdr, 1, sizeof hdr, out);
	fwrite(t->buf, 1, t->len, out);
	written += sizeof hdr + t->len;
	t->len = 0;
}

/* Room for one more record (at most 4 KB); returns where it goes. */
static uint8_t *tw_room(tw_t *t)
{
	if (t->len >= CHUNK_BYTES)
		tw_flush(t);
	if (!t->len) {
		t->base = t->tsc;
		t->enc.last_tsc = t->tsc;
		t->enc.last_ptr = 0;
	}
	return t->buf + t->len;
}

static void tw_end(tw_t *t, uint8_t *p)
{
	t->len = (size_t)(p - t->buf);
}

/* Bytes written and pending: what the file will hold. */
static uint64_t size_of(const tw_t *a, const tw_t *b)
{
	return written + a->len + b->len + 2 * FMT_CHUNK_HEADER_SIZE;
}

/* A core event's head: type and dt (one tick after the previous). */
static uint8_t *ev(tw_t *t, unsigned type)
{
	uint8_t *p = tw_room(t);
	return fmt_put_head(p, &t->enc, type, ++t->tsc);
}

static void e_alloc(tw_t *t, uint64_t ptr, uint64_t stack)
{
	uint8_t *p = ev(t, FMT_ALLOC);
	p = fmt_put_ptr(p, &t->enc, ptr);
	p = fmt_put_u(p, 64);    /* size */
	p = fmt_put_u(p, stack); /* stack id */
	p = fmt_put_u(p, 10);    /* ticks in the allocator */
	p = fmt_put_u(p, FMT_FN_MALLOC);
	tw_end(t, p);
}

static void e_free(tw_t *t, uint64_t ptr)
{
	uint8_t *p = ev(t, FMT_FREE);
	p = fmt_put_ptr(p, &t->enc, ptr);
	p = fmt_put_u(p, 10);
	tw_end(t, p);
}

static void e_acq(tw_t *t, uint64_t lock)
{
	uint8_t *p = ev(t, FMT_ACQ);
	p = fmt_put_u(p, lock);
	p = fmt_put_u(p, 0); /* no call site */
	tw_end(t, p);
}

static void e_rel(tw_t *t, uint64_t lock)
{
	uint8_t *p = ev(t, FMT_REL);
	p = fmt_put_u(p, lock);
	tw_end(t, p);
}

static void e_mark(tw_t *t, unsigned what)
{
	uint8_t *p = ev(t, FMT_MARK);
	p = fmt_put_u(p, what);
	tw_end(t, p);
}

/* A metadata record: type, varint length, body. */
static void meta(tw_t *t, unsigned type, const uint8_t *body, size_t n)
{
	uint8_t *p = tw_room(t);
	*p++ = (uint8_t)type;
	p = fmt_put_u(p, n);
	memcpy(p, body, n);
	tw_end(t, p + n);
}

static void m_process(tw_t *t)
{
	uint8_t b[256], *p = b;
	p = fmt_put_u(p, 4242); /* pid */
	p = fmt_put_u(p, 1);
	p = fmt_put_u(p, 1700000000000000000ull);
	p = fmt_put_u(p, T0); /* tsc and mono_ns: 1 tick = 1 ns */
	p = fmt_put_u(p, T0);
	p = fmt_put_u(p, 1000000000); /* tsc_hz */
	p = fmt_put_u(p, 16);
	p = fmt_put_u(p, FMT_UNWIND_FP);
	p = fmt_put_u(p, 0);
	p = fmt_put_str(p, "/usr/bin/forged", 15);
	p = fmt_put_str(p, "forged", 6);
	p = fmt_put_str(p, "host", 4);
	p = fmt_put_str(p, "forge", 5);
	meta(t, FMT_PROCESS, b, (size_t)(p - b));
}

static void m_module(tw_t *t, const char *path, uint64_t lo, uint64_t hi)
{
	uint8_t b[FMT_STR_MAX + 64], *p = b;
	p = fmt_put_u(p, lo); /* bias */
	p = fmt_put_u(p, lo);
	p = fmt_put_u(p, hi);
	p = fmt_put_str(p, path, strlen(path));
	p = fmt_put_str(p, "", 0); /* no build-id */
	meta(t, FMT_MODULE, b, (size_t)(p - b));
}

static void m_stack(tw_t *t, uint64_t id, uint64_t f0, uint64_t f1)
{
	uint8_t b[64], *p = b;
	p = fmt_put_u(p, id);
	p = fmt_put_u(p, 2);
	p = fmt_put_u(p, f0);
	p = fmt_put_s(p, (int64_t)(f1 - f0));
	meta(t, FMT_STACK, b, (size_t)(p - b));
}

static void m_text(tw_t *t, unsigned type, uint64_t num, const char *s)
{
	uint8_t b[256], *p = b;
	p = fmt_put_u(p, num);
	p = fmt_put_str(p, s, strlen(s));
	meta(t, type, b, (size_t)(p - b));
}

/* ---- the former fixed hash of u64map.h (8141b96), inverted ---- */

#define OLD_MUL 0xff51afd7ed558ccdull

/* The key whose 64-bit hash state, before the cut to 32 bits, is h: each
 * step (k ^= k >> 33, k *= OLD_MUL) is invertible, and x ^ (x >> 33) is
 * its own inverse on 64 bits. */
static uint64_t old_hash_preimage(uint64_t h)
{
	/* Newton's iteration for the inverse mod 2^64 */
	uint64_t inv = OLD_MUL;
	for (int i = 0; i < 6; i++)
		inv *= 2 - OLD_MUL * inv;
	uint64_t k = h ^ (h >> 33);
	k *= inv;
	return k ^ (k >> 33);
}

/* Spelling number i (of 16384) of path: its directory, 14 components "."
 * or "" (the bits of i), then its base name. "/d/./prog" and "/d//prog"
 * name the same file. */
static void spell(char *buf, size_t len, const char *path, uint64_t i)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = (size_t)(base - path);
	if (n + strlen(base) + 2 * 14 + 2 > len)
		n = 0; /* too long to respell: the path as is */
	memcpy(buf, path, n);
	if (n)
		for (int b = 0; b < 14; b++)
			n +=
			    (size_t)sprintf(buf + n, (i >> b) & 1 ? "./" : "/");
	snprintf(buf + n, len - n, "%s", base);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fputs("usage: forge flood|marks|holds|rotate|threads|modules|"
		      "notes|module BYTES OUT [PATH]\n",
		      stderr);
		return 1;
	}
	const char *shape = argv[1], *path = argc > 4 ? argv[4] : "";
	uint64_t bytes = strtoull(argv[2], NULL, 0);
	out = fopen(argv[3], "wb");
	if (!out) {
		perror(argv[3]);
		return 1;
	}
	uint8_t fh[FMT_FILE_HEADER_SIZE];
	fmt_file_header(fh);
	fwrite(fh, 1, sizeof fh, out);
	written = sizeof fh;

	tw_t proc, t;
	tw_init(&proc, 0);
	tw_init(&t, 7);
	m_process(&proc);
	if (!strcmp(shape, "module")) {
		m_module(&proc, path, 0x400000, 0x500000);
		m_stack(&proc, 1, 0x401234, 0x401300);
	}
	tw_flush(&proc); /* the PROCESS record leads the file */
	uint64_t i = 0;
	if (!strcmp(shape, "flood")) {
		while (size_of(&proc, &t) < bytes)
			e_alloc(&t, old_hash_preimage(++i << 32 | 0x5a5a), 0);
	} else if (!strcmp(shape, "marks")) {
		/* A quarter of the file names threads (a thread costs the
		 * model about 300 bytes), the rest MARKs. */
		while (size_of(&proc, &t) < bytes / 4)
			m_text(&proc, FMT_THREAD_NAME, 100000 + i++, "t");
		while (size_of(&proc, &t) < bytes)
			e_mark(&t, i++ & 1 ? FMT_MARK_RESUME : FMT_MARK_PAUSE);
	} else if (!strcmp(shape, "holds") || !strcmp(shape, "rotate")) {
		for (i = 0; i < HELD; i++)
			e_acq(&t, 1 + i);
		/* A stack costs the model about 1 KB (its allocation site,
		 * run.c's tables): one per 200 bytes of file. */
		uint64_t nstacks = bytes / 200 + 1;
		for (i = 0; size_of(&proc, &t) < bytes; i++) {
			if (shape[0] == 'h') {
				e_alloc(&t, 0x10000 + 64 * i, 1 + i % nstacks);
				e_free(&t, 0x10000 + 64 * i);
			} else {
				e_rel(&t, 1 + i % HELD); /* the outermost */
				e_acq(&t, 1 + i % HELD); /* now the innermost */
			}
		}
	} else if (!strcmp(shape, "threads")) {
		while (written < bytes) {
			t.tid = (uint32_t)++i + 7; /* a new thread per chunk */
			t.seq = 0;
			e_alloc(&t, 0x10000 + 16 * i, 0);
			tw_flush(&t);
		}
	} else if (!strcmp(shape, "modules")) {
		char name[FMT_STR_MAX];
		while (size_of(&proc, &t) < bytes) {
			if (*path)
				spell(name, sizeof name, path, i);
			else
				snprintf(name, sizeof name,
				         "/nonexistent/forged/lib%llu.so",
				         (unsigned long long)i);
			uint64_t lo = 0x100000 + 0x1000 * i++;
			m_module(&proc, name, lo, lo + 0x1000);
		}
	} else if (!strcmp(shape, "notes")) {
		char text[64];
		while (size_of(&proc, &t) < bytes) {
			snprintf(text, sizeof text, "forged note %llu",
			         (unsigned long long)i++);
			m_text(&proc, FMT_NOTE, FMT_NOTE_WARN, text);
		}
	} else if (!strcmp(shape, "module")) {
		for (i = 0; size_of(&proc, &t) < bytes; i++) {
			e_alloc(&t, 0x10000 + 64 * (i % 4096), 1);
			e_free(&t, 0x10000 + 64 * (i % 4096));
		}
	} else {
		fprintf(stderr, "forge: unknown shape %s\n", shape);
		return 1;
	}
	tw_flush(&proc);
	tw_flush(&t);
	free(proc.buf);
	free(t.buf);
	if (fclose(out) != 0) {
		perror(argv[3]);
		return 1;
	}
	return 0;
}
