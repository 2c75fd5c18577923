/*
 * progress.h - progress of a long analysis on stderr: which file, which
 * pass over it (1/2 validates, 2/2 aggregates, 3/3 the second pass of the
 * pprof, Perfetto and HTML outputs) and how many of its bytes were read.
 *
 * Shown only when stderr is a terminal and the process is in its
 * foreground process group (not under a pipe, not in the background),
 * unless forced on or off (--progress, --no-progress); nothing is printed
 * before the analysis has run for about a second (MALLOCK_PROGRESS_DELAY_MS
 * changes that, for tests), then at most four lines a second, each over
 * the last ("\r"), and the line is cleared at the end.
 *
 * Not thread-safe: the analyzer is single-threaded.
 */
#ifndef MALLOCK_PROGRESS_H
#define MALLOCK_PROGRESS_H

#include <stdint.h>

enum { PROGRESS_AUTO, PROGRESS_ON, PROGRESS_OFF };

/* Decides whether to show progress (mode PROGRESS_*) and starts the clock;
 * npasses is how many passes each trace gets (2, or 3). */
void progress_init(int mode, int npasses);
/* A new pass over path (its size is the 100%). */
void progress_pass(const char *path, int pass);
/* n more bytes read (reader.c calls it for every read). */
void progress_add(uint64_t n);
/* Clears the line, if one was printed. */
void progress_done(void);

#endif
