/*
 * trace_read.h - a small trace reader for the shim's tests, on top of
 * format/ (fmt_chunk_parse/verify, fmt_decode): walks every record of a
 * trace file and tallies records by type and by thread.
 *
 * Not the analyzer's reader: it is strict (any damage is an error, the
 * tests want none) and keeps everything in fixed tables.
 */
#ifndef MALLOCK_TESTS_TRACE_READ_H
#define MALLOCK_TESTS_TRACE_READ_H

#include "trace_format.h"

#include <stddef.h>
#include <stdint.h>

#define TR_MAX_THREADS 4096

typedef struct tr_thread {
	uint32_t tid;
	char name[64];
	uint64_t by_type[256];
} tr_thread_t;

typedef struct tr_stats {
	uint64_t by_type[256]; /* records of each type, all chunks */
	/* records as stored, by their type byte: a compact form (1.7) or a
	 * hold form (1.8) once as itself, not as the records it stands for */
	uint64_t by_wire[256];
	uint64_t chunks, bytes;
	uint32_t pid, ppid;
	char exe[1024];
	char cmdline[FMT_STR_MAX]; /* argv joined by NUL bytes, as recorded */
	size_t cmdline_len;
	uint64_t alloc_bytes; /* sum of ALLOC sizes */
	int have_end;
	uint64_t end_events, end_dropped, end_flags;
	uint64_t drop_sum; /* sum of DROP counts */
	uint64_t stack_frames_max;
	unsigned nthreads;
	tr_thread_t threads[TR_MAX_THREADS];
	char error[256]; /* first error, empty if none */
} tr_stats_t;

/* Called for each record; h is its chunk's header. Return nonzero to stop. */
typedef int (*tr_cb)(const fmt_chunk_header_t *h, const fmt_record_t *r,
                     void *arg);

/* Walks a trace file. Returns 0, or -1 with a message in err. */
int tr_walk(const char *path, tr_cb cb, void *arg, char *err, size_t errlen);

/* Tallies a trace into *s (zeroed here; large: allocate it statically or on
 * the heap). Returns 0, or -1 with s->error set. */
int tr_stats(const char *path, tr_stats_t *s);

/* The thread entry for tid (NULL if absent). */
tr_thread_t *tr_thread(tr_stats_t *s, uint32_t tid);

/* The type code of a record name ("ALLOC"), or -1. */
int tr_type_code(const char *name);

#endif
