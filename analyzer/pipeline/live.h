/*
 * live.h - `mallock top`'s engine: the window of a growing trace, seen
 * again every interval through the same pipeline as `mallock report`
 * (reader, model, classes, finders), and what changed since the last
 * look.
 *
 * The engine keeps the reader (its index, each thread's place) and the
 * model between polls: each poll reads only the chunks written whole
 * since the last (the reader stops at the first incomplete one), keeps
 * the events of the window (from its start) up to a watermark (until)
 * below which every thread's events are on disk (the caller passes now
 * minus the shim's flush deadline; a thread that makes no call does not
 * hold it back, the flush deadline has its buffer written by the
 * others), and merges the threads' streams by time as the report does,
 * so no event is applied out of order; the records from the watermark
 * on stay at the heads of their streams for the next poll. An event
 * that arrives after its interval was shown (a thread idle past the
 * deadline while every other was idle too) is applied at the next poll,
 * before that poll's events, and counted in its interval.
 *
 * What ends a model for the report (the holds still open, lock folds,
 * lock classes, names, findings) cannot be undone, so the running model
 * is never ended: a child process (fork) ends its copy-on-write copy,
 * with the metadata records past the watermark a re-read would give it,
 * and sends the view back. The result is the view load_trace of the
 * window up to the watermark would give, but for the clock: the model
 * converts ticks to ns with the calibration of its first poll, where a
 * re-read calibrates with every clock pair written since (a difference
 * of parts per million).
 *
 * What a poll keeps (live_view_t) is a copy of the named rows, owned by
 * the view: memory is the running model (bounded by threads, locks,
 * stacks and live blocks: model.h; never the events), the reader's index
 * (one small entry per chunk) and two views; a look's child adds the
 * pages it writes. When the file is replaced or cut (another trace at
 * the path) the engine reads it again from its start; when no child can
 * be started, the poll re-reads the window in-process (load_trace).
 */
#ifndef MALLOCK_LIVE_H
#define MALLOCK_LIVE_H

#include "model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LIVE_NAME 160

/* One lock class, named as `mallock report` names it. */
typedef struct live_lock {
	uint64_t key; /* the class key (lockclass_t.key): same across polls */
	char name[LIVE_NAME]; /* lock_label of its representative */
	char site[LIVE_NAME]; /* the class's site, "" when none */
	uint32_t kind, ninst;
	bool queue;
	lockstat_t win; /* since the window opened */
	lockstat_t ivl; /* the last interval: win minus the previous poll's */
	/* ivl.wait_max is exact when the window's maximum grew in the
	 * interval; otherwise it is the top of the highest bucket the
	 * interval's waits filled (an upper bound): then this is true. */
	bool ivl_max_bound;
	hist_t wait_hist;
} live_lock_t;

/* Allocator calls in holds of one class, by the allocation site of the
 * blocks (LS_ALLOC pairs summed over the class's locks). */
typedef struct live_site {
	uint64_t cls_key;
	char lock[LIVE_NAME], site[LIVE_NAME];
	uint64_t calls, allocs, ns, lw_ns;     /* window */
	uint64_t icalls, iallocs, ins, ilw_ns; /* the last interval */
} live_site_t;

/* One finding of the window so far, from findings_compute. */
typedef struct live_find {
	char kind[24], severity[8];
	char lock[LIVE_NAME], site[LIVE_NAME];
	char summary[400];
	double score_ns;
} live_find_t;

/* One thread of the window: its own counters (thread_t), and the
 * interval's, their difference from the previous poll's by tid. */
typedef struct live_thread {
	uint32_t tid;
	char name[32]; /* "" when the trace names none */
	bool exited;
	uint64_t events, acq, contended, wait_ns, allocs, frees, alloc_ns;
	uint64_t ievents, iacq, icontended, iwait_ns, iallocs, ifrees,
	    ialloc_ns;
} live_thread_t;

typedef struct live_view {
	uint64_t pid;
	char exe[64];
	uint64_t until_mono_ns; /* the watermark of this poll */
	double age_s;           /* the window's age at the watermark */
	double ivl_s;           /* since the previous poll's watermark */
	uint32_t threads;       /* threads with events, not exited */
	uint64_t events, ievents, dropped, idropped;
	bool have_end;   /* the trace's END record: the process ended */
	char trunc[200]; /* "" or why reading stopped before the file's end
	                    other than an incomplete last chunk */
	live_lock_t *lock;
	size_t nlock;
	live_site_t *site;
	size_t nsite;
	live_find_t *find;
	size_t nfind;
	live_thread_t *thr; /* by wait in the interval, then the window */
	size_t nthr;
} live_view_t;

typedef struct live {
	const char *path;
	uint64_t from_mono_ns; /* the window's start; 0: the trace's */
	bool symbols;
	/* every poll re-reads the window (load_trace) instead of keeping
	 * the model: the engine's former way, kept to check it against */
	bool reread;
	int polls;
	live_view_t prev, cur;
	/* Called by each poll with the window's model and the view just
	 * made, before the model is freed (top's --pprof-dir profiles);
	 * NULL: none. In the process that ends the model (a look's
	 * child; top's own process when a look re-reads the window). */
	void (*on_model)(void *ctx, model_t *m, const live_view_t *v);
	void *on_model_ctx;
	struct reader *rd; /* the running model's reader, or NULL */
	model_t *m;        /* the running model (never ended), or NULL */
	bool behind; /* live_advance stopped at max_records, short of until */
	/* the running model's stacks (and modules) whose frames this
	 * process looked up for the looks' children to inherit */
	size_t warm_stacks, warm_mods;
	/* the reader's index drops the chunks read once this many were
	 * added (reader_forget); 0: LIVE_FORGET_MIN */
	size_t forget_min;
	size_t forgot; /* chunks the index dropped so far */
} live_t;

#define LIVE_FORGET_MIN 4096

/* What live_poll sorts the classes by: the interval's value, then the
 * window's. */
enum live_sort { LIVE_SORT_WAIT, LIVE_SORT_HOLD, LIVE_SORT_ALLOC };

/*
 * Reads lv->path's window up to until_mono_ns into lv->cur (the previous
 * view moves to lv->prev) and computes the interval's differences: applies
 * the new chunks (live_advance) and has a child process end the model
 * (live_finish); until_mono_ns never goes back from one poll to the next.
 * Classes
 * sorted by sort, sites by allocator time in holds in the interval, then
 * the window, findings by score, threads by wait in the interval and then
 * the window. Returns 0; 1 when the trace cannot be
 * read (a line on stderr, "mallock: PATH: what"); 2 when it is not a
 * mallock trace. Allocates; free with live_free().
 */
int live_poll(live_t *lv, uint64_t until_mono_ns, int sort);

/*
 * Looks up, in this process, the frames of the running model's stacks not
 * looked up yet, with a table closed at once: the files stay in the
 * symbolizer's pool (dwpool.h) with libdw's decoded debug information and
 * names, so that a look's child, which inherits them through fork, does
 * not decode them again at every look (about 0.1 s a look on svcqueue).
 * After max_ns (0: no limit) it stops, the rest left for the next call.
 * live_poll calls it before its fork; a caller that forks its own child
 * for live_finish calls it first. Nothing when symbols are off.
 */
void live_warm(live_t *lv, uint64_t max_ns);
void live_free(live_t *lv);

/*
 * live_poll's two halves, for a caller that runs the second in a process
 * of its own (cmd/top.c's screen). live_advance applies to the running
 * model the chunks written since the last poll, up to until_mono_ns (the
 * file read again from its start when it was replaced or cut): 0, or 1
 * or 2 as live_poll. max_records (0: no limit) stops it after that many
 * records with lv->behind set, so that the caller serves its keys between
 * steps: called again (same until_mono_ns) it goes on. live_finish ends the
 * running model and makes its view lv->cur as live_poll does, returning as
 * live_poll: the model is then gone (the next live_advance would read the
 * window again), so it is called in a forked child, on the child's copy.
 */
int live_advance(live_t *lv, uint64_t until_mono_ns, uint64_t max_records);
int live_finish(live_t *lv, uint64_t until_mono_ns, int sort);

/*
 * A poll run in another process of the same executable (the screen's
 * looks: cmd/top.c forks one so that its keys are served meanwhile, and
 * q need not wait for a look): the child polls its copy of lv and sends
 * lv->cur as bytes, the parent takes them back into its own lv.
 * live_pack writes v to fd (the structs' own bytes: both ends are one
 * executable): 0, or an errno value. live_unpack reads what live_pack
 * wrote, buf of len bytes, into v: 0, or -1 when len does not match
 * (v is then empty); allocates: free with live_view_free, or hand v to
 * live_push. live_push makes v lv's current view, the current one its
 * previous, as live_poll does; v is taken (zeroed).
 */
int live_pack(const live_view_t *v, int fd);
int live_unpack(live_view_t *v, const void *buf, size_t len);
void live_push(live_t *lv, live_view_t *v);
void live_view_free(live_view_t *v);

#endif
