/*
 * perfetto_enc.h - the packet layer of `--format=perfetto`: Perfetto
 * TracePackets (protos/perfetto/trace/...) of track descriptors, slices
 * and counter values, written the compact way Perfetto's own SDK writes
 * them. report_perfetto.c decides what the slices are; this file only
 * encodes them.
 *
 * Size: event names, categories, annotation names, frames and callstacks
 * are interned (InternedData, sent once per sequence, in the packet of the
 * first event that uses them), timestamps are deltas on an incremental
 * clock (PFE_CLOCK) tied by a clock snapshot to CLOCK_MONOTONIC, and the
 * packets are deflated in runs of whole packets of at most PFE_CHUNK bytes,
 * each run one compressed_packets packet (as Perfetto's tracing service
 * writes them; Perfetto requires each under 512 KiB).
 *
 * Invariants: every packet is on trusted sequence 1; one sequence per
 * pfe_sequence() call, whose first packet clears the incremental state, so
 * the interned ids and the clock start again on each; events are written
 * in time order (the deltas are unsigned); a packet is never split across
 * two compressed_packets runs. Every call may allocate (exits on out of
 * memory, like util.h); only pfe_chunk and pfe_finish write to the file.
 */
#ifndef MALLOCK_PERFETTO_ENC_H
#define MALLOCK_PERFETTO_ENC_H

#include "protobuf.h"
#include "symbols.h"
#include "u64map.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Packets are written deflated in runs of at most this many bytes. */
#define PFE_CHUNK (384u << 10)
/* The deepest callstack sent: deeper stacks lose their outer frames. */
#define PFE_FRAMES 128

/* Interned strings of one kind (names, categories, function names...):
 * string -> iid (from 1). */
typedef struct pfe_istr {
	char **s;
	size_t n, cap;
	u64map_t map; /* hash (probed) -> index */
} pfe_istr_t;

/* The frames of stack `stack` (innermost first) into out, at most max:
 * their number, or <= 0 for none. */
typedef int (*pfe_frames_fn)(void *ctx, uint32_t stack, frame_t *out, int max);

typedef struct pfe {
	pb_t b; /* whole packets not yet written */
	FILE *out;
	pfe_istr_t names, cats, anames, fnames, paths, frames;
	uint32_t *callstack; /* per stack: its iid, 0 not yet sent */
	size_t nstacks;
	uint64_t ncallstack, last_ts;
	pfe_frames_fn frames_fn;
	void *frames_ctx;
} pfe_t;

/* A slice's begin. */
typedef struct pfe_slice {
	uint64_t ts;    /* on the sequence's clock, ns */
	uint64_t track; /* the uuid of its track */
	const char *name, *cat;
	const char *aname; /* a debug annotation's name, NULL for none */
	uint64_t avalue;   /* ... and its value */
	uint32_t stack;    /* its callstack; >= nstacks for none */
	uint64_t flow_out, flow_in; /* flow ids, 0 for none */
} pfe_slice_t;

/* An encoder writing to out, with nothing buffered. */
void pfe_init(pfe_t *e, FILE *out);
/* Starts a new sequence: its first packet (incremental state cleared, the
 * incremental clock the default one, a clock snapshot saying its 0 is
 * mono_ns on CLOCK_MONOTONIC). Callstacks are of stacks 0..nstacks-1,
 * whose frames fn gives. Ends with pfe_sequence_end. */
void pfe_sequence(pfe_t *e, uint64_t mono_ns, size_t nstacks, pfe_frames_fn fn,
                  void *ctx);
/* Forgets the sequence's interned data (frees it). */
void pfe_sequence_end(pfe_t *e);

/* Track descriptors: a process; a thread of pid; a named track under
 * parent, a counter track when counter. */
void pfe_process(pfe_t *e, uint64_t uuid, uint64_t pid, const char *name);
void pfe_thread(pfe_t *e, uint64_t uuid, uint64_t pid, uint64_t tid,
                const char *name);
void pfe_track(pfe_t *e, uint64_t uuid, uint64_t parent, const char *name,
               bool counter);

/* Events, each one packet, in time order; what they refer to is interned
 * in the same packet when new. */
void pfe_slice_begin(pfe_t *e, const pfe_slice_t *s);
void pfe_slice_end(pfe_t *e, uint64_t ts, uint64_t track);
void pfe_counter(pfe_t *e, uint64_t ts, uint64_t track, int64_t value);

/* Writes the buffered packets as one compressed_packets packet when they
 * are more than PFE_CHUNK bytes. 0, or 1 on a write or zlib error. */
int pfe_chunk(pfe_t *e);
/* Writes what is buffered and frees the encoder. 0, or 1 on an error. */
int pfe_finish(pfe_t *e);

#endif
