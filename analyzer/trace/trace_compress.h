/*
 * trace_compress.h - rewrites a finished trace with its chunks compressed
 * (zstd, trace format 1.2), outside the traced process: `mallock compress`
 * and the end of `mallock record`.
 *
 * Invariants:
 * - Nothing is lost. Every good chunk is stored compressed when that makes
 *   it smaller (verified by decompressing it again) and as it was
 *   otherwise, with its header fields kept and its CRC computed over what
 *   is written. From the first chunk a reader would stop at (cut short,
 *   CRC mismatch, corrupt frame), the rest of the file is copied byte for
 *   byte: a reader stops at the same chunk, and the bytes after it are all
 *   still there.
 * - The file is replaced atomically: a temporary file beside it, fsync,
 *   rename, fsync of the directory. Its mode and owner are kept. If the
 *   file changed while it was read, the temporary file is dropped and the
 *   trace is left as it was.
 * - A trace some process still has open (its writer is alive: a server
 *   between `mallock ctl` windows, a forked child that outlived `mallock
 *   record`) is never rewritten in place: it would go on writing to the
 *   old file. A compressed copy to another path is allowed.
 */
#ifndef MALLOCK_TRACE_COMPRESS_H
#define MALLOCK_TRACE_COMPRESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TC_LEVEL_DEFAULT 3 /* docs/performance.md, "Where compression runs" */
#define TC_LEVEL_MIN 1
#define TC_LEVEL_MAX 19

typedef enum tc_outcome {
	TC_REWRITTEN, /* the trace (or the copy) is compressed */
	TC_UNCHANGED, /* no chunk got smaller: left as it was */
	TC_LIVE,      /* a process may still write it: left as it was */
	TC_CHANGED,   /* it grew or changed while read: left as it was */
} tc_outcome_t;

typedef struct tc_result {
	tc_outcome_t outcome;
	uint64_t bytes_in, bytes_out; /* file sizes before and after */
	uint64_t events;              /* core events in the good chunks */
	uint32_t chunks, packed; /* good chunks, of them stored compressed */
	int bad;                 /* a bad chunk ended the good prefix */
	uint64_t bad_at;         /* its offset in the input */
	uint64_t tail;           /* bytes from there copied as they were */
	char why[96];            /* what was wrong there */
	pid_t writer;            /* TC_LIVE: the process (0: unknown) */
} tc_result_t;

/*
 * Compresses the trace at path with zstd level `level`. out NULL: in
 * place (refused with TC_LIVE when a process has the file open); else the
 * compressed copy is written to out (a new file, mode 0600; an existing
 * regular file there is replaced) and path is only read. Returns 0 with
 * *r filled, 2 when path is not a mallock trace or of an unsupported
 * version, 1 on another error; err (errlen bytes) then holds one line
 * without the path. Allocates and frees its own buffers.
 */
int tc_compress(const char *path, const char *out, int level, tc_result_t *r,
                char *err, size_t errlen);

/*
 * The pid of a process that has the file (dev, ino) open, found in
 * /proc/<pid>/fd; else `hint` when that pid exists but its descriptors
 * cannot be read; else 0.
 */
pid_t tc_writer_alive(dev_t dev, ino_t ino, pid_t hint);

/* Formats n bytes as "35.1 MB" (decimal units) into buf; returns buf. */
char *tc_size(char *buf, size_t len, uint64_t n);

/* " (2.66 B/event)", or "" when events is 0, into buf; returns buf. */
char *tc_per_event(char *buf, size_t len, uint64_t bytes, uint64_t events);

/* Prints what tc_compress did to path in one line on stderr (two when a
 * bad chunk ended the good prefix), each line starting with prefix.
 * Returns 1 when the trace was left as it was because a process may still
 * write it, else 0. */
int tc_say(const char *prefix, const char *path, const tc_result_t *r,
           double secs);

/* Installs handlers for SIGINT, SIGTERM and SIGHUP that remove the
 * temporary file being written, then die of the signal. */
void tc_signals(void);

#endif
