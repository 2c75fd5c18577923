/*
 * note.h - warnings: one line on stderr ("mallock: ..."), and a NOTE record
 * in the trace for each, so that the report can say what the shim saw.
 *
 * Invariant: notes are kept in a fixed static table (NOTE_MAX entries of
 * NOTE_LEN bytes); later ones are counted but not stored. Never allocates.
 */
#ifndef MALLOCK_SHIM_NOTE_H
#define MALLOCK_SHIM_NOTE_H

#include <stddef.h>

#define NOTE_MAX 32
#define NOTE_LEN 240

/* Prints "mallock: <formatted>\n" on stderr and queues a NOTE (warning).
 * Thread-safe (slot reserved with an atomic counter); never allocates for
 * the formats the shim uses (%s %d %u %ld %lu %zu). */
void shim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* As shim_warn, but an informational note, printed only with
 * MALLOCK_VERBOSE >= 1. */
void shim_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Calls fn(level, text, len, arg) for each queued note not yet taken, in
 * order, and marks them taken. Caller: the writer, under its process-chunk
 * lock.
 */
void note_take(void (*fn)(unsigned level, const char *text, size_t len,
                          void *arg),
               void *arg);

/* Copies the text of every warning queued so far (taken or not), each
 * after prefix, into out (NUL-terminated, cut at a whole warning). Any
 * context; never allocates. */
void note_warnings(char *out, size_t cap, const char *prefix);

/* Forgets the taken/queued state (fork child: its trace is new and should
 * not repeat its parent's notes). */
void note_reset(void);

/* How many warnings (shim_warn) since start or the last note_reset. */
unsigned note_warning_count(void);

#endif
