/*
 * reader.h - the streaming, validating trace reader.
 *
 * Pass 1 (reader_open) walks the file once: it checks the file header,
 * then each chunk's header, length and CRC, and indexes the good ones
 * (offset, thread, sequence, base TSC). It stops at the first bad or
 * incomplete chunk and records where ("trace truncated at byte N: M of K
 * chunks read"). It also gathers the clock pairs (TSC, CLOCK_MONOTONIC ns)
 * of PROCESS and of every chunk header and calibrates TSC -> ns.
 *
 * Pass 2 (reader_next) merges the threads' streams by event TSC (a k-way
 * merge over a binary heap of streams), decoding one chunk per thread at a
 * time: memory is one chunk buffer per thread plus the index (one small
 * entry per chunk), never proportional to the number of events.
 *
 * A malformed record inside a CRC-valid chunk stops pass 2 there: the
 * reader marks the trace truncated and says where.
 */
#ifndef MALLOCK_READER_H
#define MALLOCK_READER_H

#include "meta.h"
#include "trace_format.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct reader reader_t;

/* Which part of its record an event is: a REALLOC that frees its old
 * block (reader_realloc_frees) is given twice, first its free of old at
 * the call's start, then the rest (its new block) at its end. */
typedef enum reader_part {
	READER_WHOLE,        /* every other record */
	READER_REALLOC_FREE, /* the free of old; keyed at tsc - ticks */
	READER_REALLOC_REST, /* the same record again, at its tsc */
} reader_part_t;

/* One merged event: the record and the thread stream it came from. */
typedef struct reader_ev {
	const fmt_record_t *rec;
	uint32_t stream; /* dense index, 0..reader_streams()-1 */
	uint32_t tid;
	reader_part_t part;
} reader_ev_t;

/* Whether a REALLOC record frees its old block inside the call: it moved
 * it (new != old), or realloc(p, 0) freed it (new 0, size 0). One that
 * kept the block in place or failed (new 0, size > 0) does not. */
static inline bool reader_realloc_frees(const fmt_record_t *r)
{
	uint64_t old = r->f[FMT_REALLOC_OLD], new_ = r->f[FMT_REALLOC_NEW];
	return old && new_ != old && (new_ || r->f[FMT_REALLOC_SIZE] == 0);
}

/* What pass 1 found. */
typedef struct reader_info {
	uint64_t file_size;
	uint32_t chunks;       /* good chunks indexed */
	uint32_t chunks_total; /* chunks the file seems to hold, 0 if unknown */
	uint32_t chunks_compressed; /* of chunks, zstd-compressed ones (1.2) */
	bool truncated;
	uint64_t truncated_at;    /* byte offset where reading stopped */
	char why[160];            /* what was wrong there */
	double ns_per_tick;       /* calibrated clock */
	const char *clock_source; /* "monotonic pairs", "tsc_hz", "none" */
	bool have_process;
	meta_process_t process; /* strings NOT valid after reader_open */
	uint64_t tsc_min;       /* earliest TSC seen (PROCESS or chunk base) */
	uint32_t seq_gaps;      /* chunks missing from a thread's sequence */
} reader_info_t;

/*
 * Opens path and runs pass 1. Returns 0 with *out set (even for a truncated
 * trace: check info->truncated), 2 when the file is not a mallock trace or
 * of an unsupported version, 1 on an I/O error; on error err (errlen bytes)
 * holds the one-line message without the "mallock: FILE: " prefix.
 * Allocates the reader; free it with reader_close().
 */
int reader_open(const char *path, reader_t **out, char *err, size_t errlen);

const reader_info_t *reader_info(const reader_t *r);
uint32_t reader_streams(const reader_t *r);

/*
 * Pass 2: the next event in TSC order (a FREE, and a REALLOC's free of its
 * old block (READER_REALLOC_FREE), at its start, tsc - ticks: reader.c says
 * why; its tsc is still its end, so the tsc of successive events may step
 * back by a call's duration). Returns 1 with *ev set (valid
 * until the next call), 0 at the end, -1 when a malformed record stopped the
 * read (reader_info() then says truncated, where and why).
 */
int reader_next(reader_t *r, reader_ev_t *ev);

/* Keeps pass 2 to the events keyed in [from_tsc, until_tsc) (`mallock
 * top`: a window opened in a trace that holds earlier ones, cut at the
 * watermark below which every thread's events are written); metadata
 * records are all given whatever their time. 0, UINT64_MAX: no limit. */
void reader_limit(reader_t *r, uint64_t from_tsc, uint64_t until_tsc);

/* Leaves the records keyed at or after tsc (metadata too) for later: at
 * the first of them pass 2 returns 0 and keeps it at the head of its
 * stream; after a higher stop (UINT64_MAX: none, the default) or
 * reader_grow it goes on from there. `mallock top`'s engine applies a
 * growing trace up to a watermark this way, look after look. */
void reader_stop_at(reader_t *r, uint64_t tsc);

/*
 * Pass 1 again over what was appended to the file since (chunks written
 * whole; a last chunk still incomplete stays for the next call), then
 * pass 2 goes on over the new chunks: a stream read to its end takes up
 * its next chunk, a new thread's stream joins the merge. Called between
 * reader_next calls that returned 0 (never one that returned an event).
 * The clock is calibrated again with the new chunks' pairs. Returns 0
 * (nothing new counts too, or a read stopped by damage, which stays
 * stopped), 1 when the path is no longer the file read so far (replaced,
 * or shorter: to be read again from the start), -1 on an I/O error.
 */
int reader_grow(reader_t *r);

/*
 * Pass 2 over a trace that timed every hold and allocator call
 * (MALLOCK_TIME_EVERY=1), as if the shim had timed one uncontended nest of
 * holds in n and one allocator call outside holds in n (its default
 * timing with MALLOCK_TIME_EVERY=n): the records as that shim would have
 * written them (reader.c as_sampled), PROCESS saying time_every and
 * hold_every n. `mallock report --as-sampled=N`: the estimates of one
 * execution beside its exact figures. n from 2 to 127; starts pass 2 over.
 */
void reader_as_sampled(reader_t *r, uint32_t n);

/* Starts pass 2 over from the beginning (of the chunks not forgotten). */
void reader_rewind(reader_t *r);

/*
 * Drops from the chunk index the chunks pass 2 will not read again (each
 * stream's before the one it reads or read last), once min_new chunks
 * were indexed since the last call: `mallock top`'s index stays the size
 * of what is unread, not of the file. reader_rewind and reader_walk then
 * see only the chunks kept; messages and reader_info still count the
 * file's chunks. Returns the chunks dropped.
 */
size_t reader_forget(reader_t *r, size_t min_new);

/* File-order walk for `mallock dump`: calls fn for each good chunk's header
 * and then for each of its records (rec NULL for the header call). Returns
 * 0, or -1 at a malformed record (after calling fn for the records before
 * it; *err_off is its file offset). */
typedef void (*reader_walk_fn)(void *ctx, uint32_t chunk_no,
                               const fmt_chunk_header_t *h, uint64_t off,
                               const fmt_record_t *rec);
int reader_walk(reader_t *r, reader_walk_fn fn, void *ctx, uint64_t *err_off);

void reader_close(reader_t *r);

#endif
