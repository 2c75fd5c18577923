/*
 * progress.c - see progress.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "progress.h"

#include "util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct {
	bool on, shown;
	int npasses, pass;
	uint64_t start_ns, next_ns, delay_ns;
	uint64_t done, total;
	const char *path;
} P;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void progress_init(int mode, int npasses)
{
	P.on = mode == PROGRESS_ON ||
	       (mode == PROGRESS_AUTO && isatty(STDERR_FILENO) &&
	        tcgetpgrp(STDERR_FILENO) == getpgrp());
	P.npasses = npasses;
	P.start_ns = now_ns();
	const char *d = getenv("MALLOCK_PROGRESS_DELAY_MS");
	P.delay_ns = (d ? strtoull(d, NULL, 10) : 1000) * 1000000u;
	P.next_ns = P.start_ns + P.delay_ns;
}

void progress_pass(const char *path, int pass)
{
	struct stat st;
	P.path = path;
	P.pass = pass;
	P.done = 0;
	P.total = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
	/* a new pass shows at once (past the first delay) */
	P.next_ns = P.start_ns + P.delay_ns;
}

void progress_add(uint64_t n)
{
	P.done += n;
	if (!P.on || !P.path)
		return;
	uint64_t t = now_ns();
	if (t < P.next_ns)
		return;
	P.next_ns = t + 250000000u;
	double pct = P.total ? 100.0 * (double)P.done / (double)P.total : 0;
	fprintf(stderr,
	        "\rmallock: %s: pass %d/%d, %.0f%% (%.1f of %.1f MB)\033[K",
	        path_base(P.path), P.pass, P.npasses, pct > 100 ? 100 : pct,
	        (double)P.done / 1e6, (double)P.total / 1e6);
	fflush(stderr);
	P.shown = true;
}

void progress_done(void)
{
	if (P.shown)
		fputs("\r\033[K", stderr);
	P.shown = false;
	P.path = NULL;
}
