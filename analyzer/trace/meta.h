/*
 * meta.h - decoding of metadata record bodies (PROCESS, MODULE, STACK,
 * LOCK_NEW, LOCK_NAME, THREAD_NAME, END, NOTE) into structs.
 *
 * Strings point into the record body: they live as long as the chunk buffer
 * the record came from (callers copy what they keep). Trailing bytes after
 * the known fields are ignored (a minor version may add fields).
 */
#ifndef MALLOCK_META_H
#define MALLOCK_META_H

#include "trace_format.h"

typedef struct meta_str {
	const char *s;
	size_t n;
} meta_str_t;

typedef struct meta_process {
	uint64_t pid, ppid, realtime_ns, tsc, mono_ns, tsc_hz, depth, unwinder,
	    flags;
	meta_str_t exe, cmdline, hostname, version;
	uint64_t sample_bytes, max_bytes; /* 1.1; 0 in a 1.0 trace */
	/* 1.4: calls outside locks timed one in N; 1 in an older trace */
	uint64_t time_every;
	/* 1.6: uncontended nests of holds timed one in N; 1 in an older
	 * trace (every hold was timed) */
	uint64_t hold_every;
} meta_process_t;

typedef struct meta_module {
	uint64_t bias, lo, hi;
	meta_str_t path, build_id;
} meta_module_t;

typedef struct meta_stack {
	uint64_t id;
	uint32_t n;
	uint64_t frame[FMT_STACK_MAX];
} meta_stack_t;

typedef struct meta_lock_new {
	uint64_t id, addr, kind, flags;
} meta_lock_new_t;

typedef struct meta_lock_name {
	uint64_t id, flags;
	meta_str_t name;
} meta_lock_name_t;

typedef struct meta_thread_name {
	uint64_t tid;
	meta_str_t name;
} meta_thread_name_t;

typedef struct meta_end {
	uint64_t events, dropped, flags;
} meta_end_t;

typedef struct meta_note {
	uint64_t level;
	meta_str_t text;
} meta_note_t;

/* Each returns 0, or -1 when the body is malformed (a field runs past the
 * body, a string is longer than FMT_STR_MAX, a stack has more than
 * FMT_STACK_MAX frames). None allocates. */
int meta_process(const fmt_record_t *r, meta_process_t *m);
int meta_module(const fmt_record_t *r, meta_module_t *m);
int meta_stack(const fmt_record_t *r, meta_stack_t *m);
int meta_lock_new(const fmt_record_t *r, meta_lock_new_t *m);
int meta_lock_name(const fmt_record_t *r, meta_lock_name_t *m);
int meta_thread_name(const fmt_record_t *r, meta_thread_name_t *m);
int meta_end(const fmt_record_t *r, meta_end_t *m);
int meta_note(const fmt_record_t *r, meta_note_t *m);

#endif
