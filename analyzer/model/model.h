/*
 * model.h - what the analyzer knows about one traced process after reading
 * its trace: threads, locks (instances and classes), stacks and allocation
 * sites, (lock, stack) pairs, nested lock pairs, and totals.
 *
 * aggregate.c fills it event by event; classes.c groups lock instances into
 * classes once the trace is read; run.c and the outputs read it.
 *
 * Invariants:
 * - Every time is in nanoseconds: the reader's calibration converts ticks
 *   as events arrive.
 * - Locks, stacks and threads are referenced by dense index (uint32_t) into
 *   their arrays; ids from the trace map to indexes through u64maps, and an
 *   id may be used before the metadata that defines it arrives.
 * - Memory grows with threads, stacks, locks, pairs and live blocks, never
 *   with the number of events. A lock instance keeps counters only: its
 *   wait and hold histograms and its (lock, stack) pairs are kept per site
 *   (lock_group), one for all the instances initialised (or first taken)
 *   at one stack, and summed into classes (82k mutexes took
 *   437 MB).
 * - With m->fold_locks, a destroyed lock nobody holds is folded
 *   (lockfold.c): its counters go to its lock_fold_t, and its record is
 *   dropped at the next compaction unless it is one an output names (its
 *   tuple's first instance, its best by wait, or among the FOLD_KEEP_TOP
 *   best of all folded ones). Compaction keeps the records' order (their
 *   creation order), so memory is bounded by the live locks and the
 *   tuples, not by the instances a window saw.
 */
#ifndef MALLOCK_MODEL_H
#define MALLOCK_MODEL_H

#include "reader.h"
#include "u64map.h"
#include "util.h"

#include <stdbool.h>
#include <stdint.h>

#define NONE32 UINT32_MAX

/* Log2 histogram of durations: bucket i counts values in [2^i, 2^(i+1)) ns
 * (bucket 0 also holds 0 and 1 ns; the last one everything above). */
#define HIST_BUCKETS 40
typedef struct hist {
	uint64_t n[HIST_BUCKETS];
} hist_t;

/* Adds k values of ns. */
static inline void hist_add_n(hist_t *h, uint64_t ns, uint64_t k)
{
	unsigned b = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0u;
	h->n[b < HIST_BUCKETS ? b : HIST_BUCKETS - 1] += k;
}

static inline void hist_add(hist_t *h, uint64_t ns)
{
	hist_add_n(h, ns, 1);
}

/* The value under which a fraction q of the histogram lies (bucket top). */
double hist_quantile(const hist_t *h, double q);

/*
 * Per-lock counters, summed (S) or maxed (M) when instances form a class.
 * X(name, how, doc)
 */
/* clang-format off */
#define LOCK_COUNTERS(X)                                                       \
	X(acq, S, "successful acquisitions (exclusive and shared)")            \
	X(acq_shared, S, "of which shared (rwlock read)")                      \
	X(contended, S, "acquisitions that waited")                            \
	X(try_fail, S, "failed trylocks")                                      \
	X(cond_waits, S, "condition waits that released this mutex")          \
	X(cond_wakes, S, "re-acquisitions after a condition wait")             \
	X(cond_timeouts, S, "condition waits that timed out")                  \
	X(owner_switches, S, "acquisitions by another thread than the last")   \
	X(holds, S, "completed holds")                                         \
	X(holds_timed, S, "of which timed (all but those MALLOCK_HOLD_EVERY "   \
	                  "left untimed)")                                     \
	X(contended_holds, S, "holds during which another thread waited")     \
	X(unmatched_rel, S, "releases of holds that began before recording")   \
	X(wait_ns, S, "total wait of contended acquisitions")                  \
	X(idle_wait_ns, S, "of which waits of holds that ended in a "           \
	                   "condition wait (the thread found no work)")       \
	X(hold_ns, S, "total hold time (timed holds weighted: an estimate "     \
	              "when holds_timed < holds)")                             \
	X(timed_w, S, "holds the timed ones stand for (their weights summed)") \
	X(holds_apart, S, "sampled holds set apart as preemption")             \
	X(holds_apart_ns, S, "hold time those would add at their weight")      \
	X(holds_with_alloc, S, "holds that called the allocator")              \
	X(alloc_calls, S, "allocator calls made while held")                   \
	X(alloc_allocs, S, "of which allocations (malloc/new/realloc)")        \
	X(alloc_ns, S, "allocator time while held")                            \
	X(alloc_slow, S, "slow allocator calls while held")                    \
	X(alloc_lw_ns, S, "allocator-internal lock wait while held")           \
	X(alloc_lw_n, S, "allocator-internal lock waits while held")           \
	X(internal_waits, S, "futex waits on this allocator-internal lock")    \
	X(futex_waits, S, "futex word: waits that slept in the kernel")       \
	X(futex_wakes, S, "futex word: wakes that woke a waiter")              \
	X(futex_woken, S, "futex word: waiters those wakes woke")              \
	X(cond_signals, S, "signals and broadcasts (conds)")                   \
	X(wait_max, M, "longest wait")                                         \
	X(hold_max, M, "longest timed hold")                                   \
	X(max_waiters, M, "most threads waiting at once")
/* clang-format on */

typedef struct lockstat {
#define LOCK_FIELD_(name, how, doc) uint64_t name;
	LOCK_COUNTERS(LOCK_FIELD_)
#undef LOCK_FIELD_
} lockstat_t;

/* dst += src (sums and maxima). */
void lockstat_add(lockstat_t *dst, const lockstat_t *src);

/* Whether s has a hold time to tell: a hold was timed, or there was none
 * (holds none of which was timed are printed as -, not 0). */
static inline bool lockstat_hold_known(const lockstat_t *s)
{
	return s->holds_timed || !s->holds;
}

typedef struct lock {
	uint64_t id, addr;
	uint32_t kind; /* FMT_KIND_*, or LOCK_KIND_UNKNOWN */
	uint32_t flags;
	bool defined, is_cond, queue_cond, queue_named, destroyed;
	/* A futex word some thread both waited on and woke: a lock word,
	 * whose waits are lost time (futex_words in aggregate.c). */
	bool futex_lockish;
	char *name;        /* arena; the user's (mallock_lock_name) */
	const char *label; /* arena; lock_names.c's, when no name */
	uint32_t init_stack, first_site; /* stack indexes, NONE32 if none */
	uint32_t blk_stack, blk_off;     /* the block holding it (in_block) */
	bool in_block;
	uint32_t cls;
	uint32_t last_owner;  /* thread index + 1 */
	uint32_t last_holder; /* LS_HOLDER pair index + 1 */
	uint32_t hist;        /* lockhist index + 1 (lock_hist), 0: none */
	uint32_t cond_mutex;  /* a condition: the mutex its waits release
	                         (lock index + 1), 0 until one was seen */
	/* An allocator's own lock: the least and largest block size of the
	 * allocator calls that waited on it (0, 0: none known; a central
	 * free list's waiters are calls of its size class). */
	uint32_t lw_size_min, lw_size_max;
	uint32_t nheld; /* open holds of it, on any thread */
	bool retired;   /* destroyed and folded (lockfold.c) */
	/* Once the trace is read: its fold tuple's index + 1 when it is
	 * the tuple's first instance and others were dropped into it, whose
	 * counters count for its class (m->fold[fold - 1]); 0 otherwise. */
	uint32_t fold;
	lockstat_t s;
} lock_t;

/* The dropped instances of one fold tuple (lockfold.c): the locks that
 * share kind, init stack, first site, block allocation stack and site
 * group, so one class (classes.c keys by nothing else). */
typedef struct lock_fold {
	uint32_t kind, init_stack, first_site, blk_stack, hist;
	uint32_t next; /* hash chain: next fold index + 1 */
	uint64_t n;    /* instances dropped */
	lockstat_t s;  /* their counters, summed */
} lock_fold_t;

/* Folded instances kept whole because they rank among the best of all
 * folded ones by (wait, acquisitions): at least the instances the JSON
 * lists (report_json.c JSON_LOCKS). */
#define FOLD_KEEP_TOP 64

/* What the instances of one site keep together (lock_group): their wait
 * and hold histograms, and their (lock, stack) pairs, filed under the
 * site's first instance (model_pair). */
typedef struct lockhist {
	hist_t wait, hold;
	uint32_t cls;        /* the class it was summed into (classes_build) */
	uint32_t rep;        /* its first instance: the lock its pairs name */
	uint32_t main_site1; /* lock_main_site's answer + 1, 0 not yet */
	uint64_t key;        /* its key in lhist_map */
} lockhist_t;
#define LOCK_KIND_UNKNOWN 99u

/* Allocation statistics of one stack used as an allocation site. */
#define SITE_THREADS 6
#define SITE_SIZES 4
/* Block sizes above which each allocator stops caching per thread:
 * jemalloc's tcache_max (32 KiB), glibc's mmap threshold (128 KiB),
 * tcmalloc's largest size class (256 KiB). site_t.slow_big counts the slow
 * calls for blocks above each (a free by its block's size). */
#define SITE_BIG_N 3
#define SITE_BIG_LIMITS                                                        \
	{                                                                      \
		32u << 10, 128u << 10, 256u << 10                              \
	}
typedef struct site {
	uint64_t allocs, reallocs, bytes, frees, live;
	uint64_t alloc_ns, free_ns, lw_ns, lw_n;
	uint64_t life_ns, life_max, short_n, short_ns;
	uint64_t xfree_n, xfree_ns, xfree_bytes;
	/* [held]: allocator calls for the site's blocks, made with no lock
	 * held [0] or with one [1]. calls counts every call; timed those
	 * whose time is known (all but the calls MALLOCK_TIME_EVERY left
	 * untimed); lw_h their waits on the allocator's own lock (every
	 * wait is recorded, timed call or not). The slow and preempted
	 * figures count timed calls once each, unweighted: they are samples
	 * that site_scale() turns into estimates. A timed call slower than
	 * SLOW_ALLOC_NS is either preempted (pre_*: it moved to another CPU,
	 * pre_mig, or took over PREEMPT_NS with no allocator-lock wait for
	 * a block under PREEMPT_MAX_BYTES) or slow (slow_*), never both. */
	uint64_t calls[2], timed[2], lw_h[2];
	uint64_t slow_n[2], slow_ns[2], pre_n[2], pre_ns[2], pre_mig[2];
	uint64_t slow_big[2][SITE_BIG_N]; /* [held][limit], slow samples */
	/* timed calls (allocations and frees) among the cross-thread-freed
	 * and the short-lived blocks': the samples of xfree_ns, short_ns */
	uint64_t xfree_timed, short_timed;
	uint64_t size[SITE_SIZES], size_n[SITE_SIZES]; /* most frequent sizes */
	uint32_t athr[SITE_THREADS], fthr[SITE_THREADS]; /* thread idx + 1 */
	uint64_t athr_n[SITE_THREADS], fthr_n[SITE_THREADS];
} site_t;

/* What a site's timed calls [held] stand for: calls / timed (1 when every
 * call was timed, 0 when none was). A count of timed calls times this
 * estimates the count among all calls and never exceeds calls. */
static inline double site_scale(const site_t *s, int h)
{
	return s->timed[h] ? (double)s->calls[h] / (double)s->timed[h] : 0;
}

typedef struct stack {
	uint64_t id;
	uint32_t n, off; /* frames in model.frames[off..off+n) */
	bool defined;
	site_t *site; /* allocated when the stack is first an allocation site */
} stk_t;

/* (lock, stack) pairs, one table per kind. X(name, doc of n, ns, ns2) */
/* clang-format off */
#define LS_KINDS(X)                                                            \
	X(WAITER, "contention points: waiter stacks; n waits, ns wait")        \
	X(HOLDER, "contending points: holder stacks at a contended release; "  \
	          "n holds, ns hold, ns2 wait caused")                         \
	X(ACQSITE, "acquisition sites; n holds, ns hold")                     \
	X(ALLOC, "allocator calls in holds by allocation stack; n calls, "     \
	         "ns allocator time, ns2 allocator lock wait, n2 allocs, "     \
	         "n3 slow")                                                    \
	X(HOLDALLOC, "allocator calls in holds by the hold's acquisition "     \
	             "site; n calls, ns allocator time, ns2 of it in frees, "  \
	             "n2 allocs, n3 holds")
/* clang-format on */
/* clang-format off */
enum ls_kind {
#define LS_ENUM_(name, doc) LS_##name,
	LS_KINDS(LS_ENUM_)
#undef LS_ENUM_
	LS_NKINDS
};
/* clang-format on */

typedef struct lspair {
	uint32_t lock, stack; /* lock: its site's first instance (model_pair) */
	uint64_t n, ns, ns2, n2, n3;
	uint64_t bytes; /* LS_ALLOC: bytes asked for by its allocations */
} lspair_t;

typedef struct lstab {
	u64map_t map; /* lock << 32 | stack -> index */
	lspair_t *v;
	size_t n, cap;
	/* By lock (model_index_pairs): order[] holds pair indexes sorted by
	 * lock, then ns (highest first); lock i's are order[start[i] ..
	 * start[i + 1]). NULL until indexed. */
	uint32_t *order, *start;
	u64cache_t cache; /* lock << 32 | stack -> index, before the group */
} lstab_t;

/* A lock taken while another is held. */
typedef struct nest {
	uint32_t outer, inner; /* lock indexes */
	uint32_t site;         /* the inner acquisition's stack (the first) */
	uint64_t n, inner_contended, inner_wait_ns;
	uint64_t inner_hold_ns; /* of the inner holds, the parts while the
	                           outer lock was held */
	uint64_t try_fail;      /* failed trylocks of the inner lock while the
	                           outer was held (a successful one is an
	                           acquisition like any other) */
	/* Folded (lockfold.c): a side's lock was dropped and it names its
	 * tuple's first instance instead, its pairs summed; up and down
	 * count its n by whether the inner lock's address was above or
	 * below the outer's (the instances' addresses are gone). */
	bool mixed;
	uint64_t up, down;
} nest_t;

/* One thread's use of one lock (for starvation). */
typedef struct lockthr {
	uint32_t lock, thread;
	uint64_t acq, wakes, contended, wait_ns, try_fail, timeouts;
	uint64_t sleep_ns;    /* condition waits with this lock, until woken */
	uint64_t futex_wakes; /* FUTEX_WAKEs of this word by this thread */
	uint64_t signals;     /* signals and broadcasts of the conditions
	                         waited on with this lock, by this thread */
} lockthr_t;

#define THREAD_FIRST_STACKS 4

typedef struct held {
	uint32_t lock, site; /* site: stack index of the acquisition */
	uint32_t nest;       /* nest index + 1 (outer lock held at acquire),
	                        0 once the outer lock is released */
	uint32_t snap;       /* thread's sums at acquire: index in snap[] */
	uint64_t tsc;
	uint64_t wait_ns; /* the acquisition's wait */
	/* What the hold's length stands for (hold_weight() in aggregate.c):
	 * 1, MALLOCK_HOLD_EVERY for a sampled one, 0 when it was not timed
	 * (its stamps are not its times). */
	uint32_t w;
	/* Re-taken by a condition wake: the site of the hold the wait ended
	 * (+1; 0 none), which the hold continues: the hold's site for the
	 * acquisition-site statistics. */
	uint32_t resite1;
} held_t;

/* A thread's allocator calls made while it held at least one lock, summed
 * (aggregate.c): a hold's share is the difference between the sums at its
 * end and at its start, charged to its lock when it ends. */
/* A sampled hold set apart as preemption (model_t.apart). */
typedef struct hold_apart {
	uint64_t tsc; /* its acquisition's */
	uint32_t thread;
	uint64_t wns; /* the time it counts for: itself once, the holds it
	                 stood for at its lock's mean */
} hold_apart_t;

static inline uint64_t model_apart_key(uint32_t thread, uint64_t tsc)
{
	return tsc * 0x9e3779b97f4a7c15ull ^ thread;
}

typedef struct holdsum {
	uint64_t calls, allocs, ns, slow, lw_ns, lw_n;
	uint64_t free_ns; /* of ns, in frees */
} holdsum_t;

typedef struct thread {
	uint32_t tid, parent;
	char *name; /* arena */
	bool started, exited, excluded, seen;
	bool busy; /* on model.busy (holds or pending state) */
	uint64_t first_tsc, last_tsc, events, dropped;
	/* Its first and last event while recording was on (not after a
	 * pause mark): the time the trace covers for it. A window closed
	 * long before the thread's exit must not lengthen it. */
	uint64_t rec_first_tsc, rec_last_tsc;
	uint64_t allocs, frees, bytes, alloc_ns, acq, contended, wait_ns;
	uint64_t cond_waits, cond_signals, xfrees, sleep_ns, cond_sleep_tsc;
	uint64_t futex_waits; /* FUTEX_WAITs (futex words) */
	held_t *held;
	size_t nheld, capheld;
	/* snap[0]: the running sums (holdsum_t); snap[1..nsnap): their values
	 * at acquisitions still held. NULL until the first acquisition. */
	holdsum_t *snap;
	size_t nsnap, capsnap;
	uint64_t pend_lw_ns, pend_lw_n; /* ALLOC_LOCK_WAITs before next call */
	uint32_t pend_lw_lock; /* the last one's lock index + 1, or 0 */
	bool pend_mig; /* the next allocator call moved to another CPU */
	/* The weight of a timed allocator call made in the thread's current
	 * nest of holds: its latest acquisition's (held_t.w, 1 for an
	 * untimed one: a timed call there was timed by the shim's exact
	 * clock); see call_weight() in aggregate_alloc.c. */
	uint32_t hold_w;
	uint32_t cond_site1;      /* at a condition wait: its hold's site + 1 */
	uint32_t lt_lock, lt_idx; /* one-entry cache into lockthr */
	/* Its first distinct whole stacks (of contended acquisitions and
	 * allocations; an uncontended acquisition records only its call
	 * site): the thread's entry function, its role for starvation, is
	 * their outermost user frame, read once the trace is symbolized. */
	uint32_t first_stk[THREAD_FIRST_STACKS];
	uint32_t nfirst;
	const char *role;
} thread_t;

typedef struct module {
	uint64_t bias, lo, hi;
	char *path, *build_id_hex; /* arena */
	uint8_t build_id[64];
	uint32_t build_id_len;
	int status; /* 0 not checked, 1 symbolized, -1 missing, -2 build-id
	               mismatch */
} module_t;

typedef struct note {
	uint64_t level;
	char *text;
	uint32_t count;
} note_t;

/* A live block: where and when it was allocated. */
/* A lock's block is found by looking back from its address up to
 * LOCK_BLOCK_REACH bytes for a block start, and past that among the
 * BIGBLK_RING large blocks last allocated or found holding a lock
 * (model_t.bigblk; lock_names.h). */
#define LOCK_BLOCK_REACH 4096
/* The look back's first candidates (addr, addr - 8, ...), whose live-map
 * slots aggregate.c asks for when it reads a LOCK_NEW ahead. */
#define LOCK_LOOK_FIRST 4
#define BIGBLK_RING 32

typedef struct block {
	uint64_t tsc, size;
	uint32_t stack, thread; /* indexes */
	uint32_t alloc_ns;      /* saturating at BLOCK_NS_MAX */
	uint32_t next_free;     /* slot free list */
} block_t;
/* block_t.alloc_ns: its top bit says the allocation was timed (ticks > 0);
 * the other 31 bits hold its weighted ns, saturating. */
#define BLOCK_TIMED 0x80000000u
#define BLOCK_NS_MAX 0x7fffffffu

typedef struct lockclass {
	uint32_t rep;  /* the instance with most wait (then acquisitions) */
	uint32_t site; /* stack index of the class site, NONE32 if none */
	uint64_t key;
	uint32_t ninst, kind;
	bool queue, by_init;
	const char *name;
	lockstat_t s;
	hist_t wait_hist, hold_hist; /* of its instances' sites */
	/* The site's owner when the site is an init wrapper (classes.c,
	 * class_owner): its first caller outside the wrapper, as a recorded
	 * address and the index of the (inlined) frame there. */
	bool has_owner;
	uint8_t owner_inl;
	uint64_t owner_addr;
	/* Where the lock's object was made (classes.c, lock_maker): the
	 * creator's call of the constructor and the creator's caller, part
	 * of the key; by_maker: the owner shown is one of them, as the
	 * factory (base_key, the key without them) made several classes. */
	bool has_maker, by_maker;
	uint64_t base_key, made_addr, caller_addr;
} lockclass_t;

/* Totals of one process. X(name, json name) */
/* clang-format off */
#define MODEL_TOTALS(X)                                                        \
	X(allocs, "allocations")                                               \
	X(frees, "frees")                                                      \
	X(reallocs, "reallocs")                                                \
	X(bytes, "allocated_bytes")                                            \
	X(acq, "lock_acquisitions")                                            \
	X(contended, "contended_acquisitions")                                 \
	X(wait_ns, "lock_wait_ns")                                             \
	X(xfrees, "cross_thread_frees")                                        \
	X(unknown_frees, "unknown_frees")                                      \
	X(alloc_ns, "allocator_ns")                                            \
	X(alloc_lw_ns, "allocator_lock_wait_ns")                               \
	X(alloc_lw_n, "allocator_lock_waits")                                  \
	X(alloc_slow, "slow_allocator_calls")                                  \
	X(alloc_preempted, "preempted_allocator_calls")                        \
	X(alloc_apart_ns, "preempted_allocator_ns_set_apart")                  \
	X(alloc_migrated, "migrated_allocator_calls")                          \
	X(alloc_calls_in_holds, "allocator_calls_in_holds")                    \
	X(dropped, "dropped_events")                                           \
	X(pauses, "recording_pauses")                                          \
	X(resumes, "recording_resumes")                                        \
	X(holds_cut, "holds_cut_by_pause")                                     \
	X(sampled_allocs, "sampled_allocations")                               \
	X(untracked_calls, "unsampled_allocator_calls_in_holds")               \
	X(untimed_calls, "untimed_allocator_calls")                            \
	X(holds, "lock_holds")                                                 \
	X(untimed_holds, "untimed_holds")                                      \
	X(holds_preempted, "sampled_holds_set_apart")                          \
	X(holds_apart_ns, "sampled_holds_set_apart_ns")                        \
	X(futex_waits, "futex_waits")                                          \
	X(futex_wait_ns, "futex_wait_ns")                                      \
	X(futex_lost_ns, "futex_lock_wait_ns")                                 \
	X(futex_wakes, "futex_wakes")                                          \
	X(bad_meta, "malformed_metadata")
/* clang-format on */

typedef struct totals {
#define TOT_FIELD_(name, json) uint64_t name;
	MODEL_TOTALS(TOT_FIELD_)
#undef TOT_FIELD_
} totals_t;

typedef struct model {
	const char *path;
	reader_info_t info;
	/* The reader_limit the model was read with (`mallock top`'s window),
	 * 0 and 0 when none: replay() reads the same events. */
	uint64_t lim_from_tsc, lim_until_tsc;
	double ns_per_tick;
	uint64_t slow_ticks;  /* allocator call slower than this is slow */
	uint64_t churn_ticks; /* block freed sooner than this is short-lived */
	uint64_t skew_ticks;  /* REUSE_SKEW_NS in ticks */
	arena_t arena;

	/* process */
	uint64_t pid, ppid, tsc_hz, unwinder, depth;
	uint64_t proc_flags;   /* PROCESS flags (FMT_PROCF_*) */
	uint64_t sample_bytes; /* MALLOCK_SAMPLE_BYTES; 0: every allocation */
	uint64_t max_bytes;    /* MALLOCK_MAX_BYTES; 0: no cap */
	uint64_t time_every;   /* MALLOCK_TIME_EVERY (call_weight()); 1: all */
	uint64_t hold_every;   /* MALLOCK_HOLD_EVERY (hold_weight()); 1: all */
	uint32_t as_sampled;   /* load_opts_t's: read as if sampled; 0: not */
	double wcarry;         /* fraction carried by sample_count() */
	uint64_t free_n;       /* frees counted by the last block_free() */
	char *exe, *cmdline, *hostname, *version;
	bool have_end, end_clean;
	bool paused;        /* the last MARK paused recording (window closed) */
	bool attached;      /* recorded by `mallock attach` (its NOTE) */
	uint64_t pause_tsc; /* the last pause */
	/* Recorded time: the windows' lengths (MARK pause/resume), the last one
	 * open until the last event (model_recorded_ns). */
	uint64_t rec_ticks, rec_since;
	uint64_t end_events, end_dropped;
	uint64_t first_tsc, last_tsc, events;

	thread_t *thr;
	size_t nthr, capthr;
	u64map_t thr_by_tid;
	uint32_t *thr_of_stream;
	uint32_t nstream; /* reader streams thr_of_stream covers */
	/* Threads that may hold a lock or have pending state (a condition
	 * sleep, allocator lock waits): a MARK ends only theirs. */
	uint32_t *busy;
	size_t nbusy, capbusy;

	lock_t *lock;
	size_t nlock, caplock;
	u64map_t lock_by_id;
	u64cache_t lock_cache; /* id -> index, of lock_by_id */
	lockhist_t *lhist;
	size_t nlhist, caplhist;
	/* Folding (lockfold.c): on when the outputs need no instance a fold
	 * drops (aggregate()'s caller says). */
	bool fold_locks;
	lock_fold_t *fold;
	size_t nfold, capfold;
	u64map_t fold_map; /* tuple hash -> fold index (chain head) */
	size_t nretired;   /* retired records since the last compaction */
	uint64_t folded;   /* instances dropped, in all */
	uint64_t fold_compactions;
	size_t lock_peak;   /* most records m->lock held at once */
	u64map_t lhist_map; /* init (else first) stack index, or top bit |
	                       lock index -> lhist index */

	stk_t *stk;
	size_t nstk, capstk;
	u64map_t stk_by_id;
	u64cache_t stk_cache; /* id -> index, of stk_by_id */
	uint64_t *frames;
	size_t nframes, capframes;

	lstab_t ls[LS_NKINDS];

	nest_t *nest;
	size_t nnest, capnest;
	u64map_t nest_map;

	lockthr_t *lt;
	size_t nlt, caplt;
	u64map_t lt_map;

	block_t *blk;
	size_t nblk, capblk;
	uint32_t blk_free; /* free slot list head + 1 */
	u64map_t live;
	/* A live block whose address another ALLOC took: its free is due,
	 * merged late by the clock skew between CPUs (aggregate_alloc.c). */
	u64map_t displaced;
	/* The starts of the latest blocks larger than LOCK_BLOCK_REACH
	 * (lock_names.h) allocated or found holding a lock, a ring: the locks
	 * of an array made in one of them are found past that reach. */
	uint64_t bigblk[BIGBLK_RING];
	/* The sampled holds set apart as preemption (aggregate.c
	 * hold_preempted), by model_apart_key(thread, acquisition tsc): the
	 * time each counts for, so that the replay weighs them as the model
	 * did. Few: one per preemption inside a sampled hold. */
	u64map_t apart_map;
	hold_apart_t *apart;
	size_t napart, capapart;
	/* No block live at bigblk[k] is larger than bigsize[k] (the size of
	 * the block the entry was written for, raised by a later large block
	 * at that start): a lock past it needs no look-up (lock_names.c). */
	uint64_t bigsize[BIGBLK_RING];
	uint32_t nbigblk; /* entries written, the next is % BIGBLK_RING */

	module_t *mod;
	size_t nmod, capmod;
	u64map_t mod_map; /* hash of (bias, path) -> module index */
	note_t *note;
	size_t nnote, capnote;

	hist_t alloc_hist; /* every allocator call's duration */
	/* calls without a stack, frees of unknown blocks */
	site_t nostack_site;
	totals_t tot;

	lockclass_t *cls;
	size_t ncls;

	const char **thread_filter; /* NULL-terminated tids or names, or NULL */
	struct symtab *sym;
} model_t;

/* The time the model counted for thread's sampled hold acquired at tsc
 * when it set the hold apart as preemption, else NULL. */
static inline const uint64_t *model_hold_apart(const model_t *m,
                                               uint32_t thread, uint64_t tsc)
{
	const uint32_t *v =
	    u64map_find(&m->apart_map, model_apart_key(thread, tsc));
	if (!v || m->apart[*v].tsc != tsc || m->apart[*v].thread != thread)
		return NULL;
	return &m->apart[*v].wns;
}

/* model_stack() and model_lock() past their caches (model.c). */
uint32_t model_stack_slow(model_t *m, uint64_t id);
uint32_t model_lock_slow(model_t *m, uint64_t id);

/* Index of the stack with id (creating an undefined entry). id 0 maps to
 * NONE32. May allocate. Inline: the per-event loop calls it for most
 * events, and its cache answers almost all of them. */
static inline uint32_t model_stack(model_t *m, uint64_t id)
{
	uint32_t c = u64cache_get(&m->stk_cache, id);
	if (c) /* ids 0 and U64MAP_EMPTY are never cached */
		return c - 1;
	return model_stack_slow(m, id);
}

/* Index of the lock with id (creating it). May allocate. */
static inline uint32_t model_lock(model_t *m, uint64_t id)
{
	uint32_t c = u64cache_get(&m->lock_cache, id);
	if (c)
		return c - 1;
	return model_lock_slow(m, id);
}

/* Index of the thread with tid (creating it). May allocate. */
uint32_t model_thread(model_t *m, uint32_t tid);
/* The site group lock l belongs to (an lhist index): its init stack's,
 * else its first acquisition stack's (chosen at its first use), else its
 * own. A class is a function of that stack (classes.c), so a group's
 * instances are one class. May allocate. */
uint32_t lock_group(model_t *m, lock_t *l);
/* The wait (which 0) or hold (1) histogram of l's site group. */
hist_t *lock_hist(model_t *m, lock_t *l, int which);

/* Pair of kind k for (lock, stack); created zeroed. The pair is kept for
 * the lock's site group: its lock is the group's first instance, so
 * memory grows with sites, not instances (82k mutexes made a
 * pair per mutex, thread and stack). May allocate. */
lspair_t *model_pair_slow(model_t *m, int k, uint32_t lock, uint32_t stack);

/* model_pair() inline: its cache answers almost every call. */
static inline lspair_t *model_pair(model_t *m, int k, uint32_t lock,
                                   uint32_t stack)
{
	lstab_t *t = &m->ls[k];
	uint32_t c = u64cache_get(&t->cache, (uint64_t)lock << 32 | stack);
	if (c)
		return &t->v[c - 1];
	return model_pair_slow(m, k, lock, stack);
}

/* Adds a note (a shim NOTE, or the analyzer's own remark); repeated texts
 * are counted once. Copies s. At most MODEL_NOTES_MAX distinct texts are
 * kept (a forged trace may hold millions): the last one says so and counts
 * the rest. */
#define MODEL_NOTES_MAX 256
void model_note(model_t *m, uint64_t level, const char *s, size_t n);

/* Indexes each pair table by lock (lstab_t order/start). Call once the
 * trace is read; may allocate. */
void model_index_pairs(model_t *m);
/* The pairs of kind k of lock li, highest ns first: returns their number
 * and sets *idx to their indexes into m->ls[k].v. Needs model_index_pairs. */
size_t model_lock_pairs(const model_t *m, int k, uint32_t li,
                        const uint32_t **idx);

/* Wall-clock span of the trace's events. */
static inline uint64_t model_duration_ns(const model_t *m)
{
	if (m->last_tsc <= m->first_tsc)
		return 0;
	double ns = (double)(m->last_tsc - m->first_tsc) * m->ns_per_tick;
	return ns < 18446744073709549568.0 ? (uint64_t)ns : UINT64_MAX;
}

/* The time recording was on: the span less the time between a MARK pause
 * and the next resume (a ctl window, an attach's --duration, events after
 * it until the exit). Rates and severities are per recorded time. */
static inline uint64_t model_recorded_ns(const model_t *m)
{
	if (!m->tot.pauses)
		return model_duration_ns(m);
	double ns = (double)m->rec_ticks * m->ns_per_tick;
	return ns < 18446744073709549568.0 ? (uint64_t)ns : UINT64_MAX;
}

/* The allocator the traced program used, from its MODULE records (or the
 * shim's note that it records a linked-in tcmalloc through MallocHook):
 * "tcmalloc", "jemalloc", "mimalloc", or "glibc" (none of those loaded). */
const char *model_allocator(const model_t *m);

/* The word for a lock kind (FMT_KIND_*) in text: "mutex", "rwlock"...,
 * and "lock" when the trace never said (LOCK_KIND_UNKNOWN). Static. */
const char *lock_kind_word(uint32_t kind);

/* Display name of a lock: its user name, else its label (lock_names.h),
 * else kind@addr. Writes into buf. */
const char *lock_label(const model_t *m, const lock_t *l, char *buf,
                       size_t len);
/* Display name of a thread: "name (tid)" or "tid". */
const char *thread_label(const thread_t *t, char *buf, size_t len);

void model_free(model_t *m);

#endif
