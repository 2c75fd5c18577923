/*
 * thresholds.h - every threshold the findings use, in one place. Each is
 * documented here, in docs/mallock-report.md ("Thresholds"), and printed by
 * `mallock report --thresholds`, all from this one list.
 *
 * X(name, value, unit, meaning)
 */
#ifndef MALLOCK_THRESHOLDS_H
#define MALLOCK_THRESHOLDS_H

/* clang-format off */
#define THRESHOLDS(X)                                                          \
	X(SLOW_ALLOC_NS, 1000, "ns",                                           \
	  "an allocator call (malloc, free, realloc...) slower than this is "  \
	  "slow (its fast path takes tens of ns)")                             \
	X(SLOW_MIN_CALLS, 10, "calls",                                         \
	  "slow_alloc: fewest slow calls from one site (held or not)")         \
	X(SLOW_MIN_SHARE_PPM, 1000, "ppm",                                     \
	  "slow_alloc: fewest slow calls as a share of the site's calls")      \
	X(MIN_TIMED_SAMPLES, 30, "calls",                                      \
	  "cross_thread_free, alloc_churn, slow_alloc: a finding whose time "  \
	  "rests on fewer timed allocator calls (MALLOCK_TIME_EVERY) is at "   \
	  "most low, whatever its score")                                      \
	X(PREEMPT_NS, 100000, "ns",                                            \
	  "slow_alloc: a timed call this slow with no wait on the "            \
	  "allocator's own lock, for a block under PREEMPT_MAX_BYTES, is "     \
	  "counted as likely preemption, not allocator time")                  \
	X(HOLD_PREEMPT_X, 8, "x",                                              \
	  "a sampled hold (MALLOCK_HOLD_EVERY) at least PREEMPT_NS long and "  \
	  "this many times its lock's mean timed hold is counted once, as "    \
	  "likely preemption; the holds it stood for, at that mean")           \
	X(PREEMPT_MAX_BYTES, 131072, "bytes",                                  \
	  "slow_alloc: blocks this large or larger may be mapped, copied or "  \
	  "zeroed by the allocator: their slow calls are never preemption "    \
	  "by time alone")                                                     \
	X(AUL_MIN_SHARE_PPM, 100, "ppm",                                       \
	  "alloc_under_lock: least share of the lock's hold time that its "    \
	  "allocator calls must take")                                         \
	X(AUL_FREE_SHARE_PCT, 80, "%",                                         \
	  "alloc_under_lock: frees taking at least this share of the "         \
	  "allocator time in the holds get advice to free after unlocking "    \
	  "alone; allocations taking it, to allocate outside alone; "          \
	  "between, both")                                                     \
	X(CHURN_LIFETIME_NS, 1000000, "ns",                                    \
	  "alloc_churn: a block freed sooner than this after its allocation "  \
	  "is short-lived")                                                    \
	X(CHURN_MIN_BLOCKS, 1000, "blocks",                                    \
	  "alloc_churn: fewest short-lived blocks from one site")              \
	X(CHURN_MIN_RATE, 10000, "blocks/s",                                   \
	  "alloc_churn: fewest short-lived blocks per second of trace")        \
	X(CHURN_SIZE_SHARE_PCT, 50, "%",                                       \
	  "alloc_churn: least share of the site's blocks having its most "     \
	  "frequent size")                                                     \
	X(CHURN_NODE_MAX_BYTES, 256, "bytes",                                  \
	  "alloc_churn: with no container named in the stack, blocks this "   \
	  "small are small objects to reuse; larger: a buffer per call")      \
	X(XFREE_MIN, 100, "frees",                                             \
	  "cross_thread_free: fewest frees on another thread than the "        \
	  "allocating one, from one site")                                     \
	X(XFREE_MIN_SHARE_PCT, 10, "%",                                        \
	  "cross_thread_free: least share of the site's frees")               \
	X(NEST_MIN, 10, "times",                                               \
	  "nested_lock: fewest acquisitions of the inner lock inside the "     \
	  "outer one")                                                         \
	X(STARVE_MIN_PEERS, 3, "threads",                                      \
	  "starvation: fewest peers (threads with the same entry function "    \
	  "using the lock) to compare")                                        \
	X(STARVE_MIN_OPS, 100, "operations",                                   \
	  "starvation: fewest operations of service (cond wakes, else "        \
	  "acquisitions) the peers got together; also the wakes that make "    \
	  "cond wakes the measure")                                            \
	X(STARVE_MIN_MEAN_OPS, 10, "operations",                               \
	  "starvation: fewest operations of service per peer on average")      \
	X(STARVE_CV_PCT, 50, "%",                                              \
	  "starvation: least coefficient of variation of the peers' rates "    \
	  "of service (unless a peer got none)")                               \
	X(STARVE_PARTICIPANT_PCT, 10, "%",                                     \
	  "starvation: a peer is compared when its life in the trace is at "   \
	  "least this share of the longest-lived peer's")                      \
	X(STARVE_MIN_WAKE_PCT, 25, "%",                                        \
	  "starvation: cond wakes are the measure of service only when they "  \
	  "number this share of the role's consumers' acquisitions or more")   \
	X(STARVE_MIN_WAIT_PCT, 5, "%",                                         \
	  "starvation (by acquisitions): a peer behind counts only when it "   \
	  "waited for the lock this share of its life or more")                \
	X(FUTEX_MIN_WAITS, 10, "waits",                                        \
	  "futex_lock: fewest waits on a class's lock words (a few sleeps "    \
	  "in the kernel are no contention)")                                  \
	X(FUTEX_MIN_LOST_PPM, 1000, "ppm",                                     \
	  "futex_lock: least time lost on a class's lock words as a share "   \
	  "of the trace's duration")                                           \
	X(CONT_MIN_WAITS, 10, "waits",                                         \
	  "lock_contention: fewest contended acquisitions of a class; also "  \
	  "the holders' waits on the allocator's own lock that leave the "     \
	  "lock to alloc_under_lock")                                          \
	X(CONT_MIN_LOST_PPM, 1000, "ppm",                                      \
	  "lock_contention: least wait lost on a class (not counting waits "   \
	  "that ended in a condition wait) as a share of the recorded time")  \
	X(CONT_ALLOC_SHARE_PCT, 5, "%",                                        \
	  "lock_contention: a contended class whose holders spend this share " \
	  "of their hold time in the allocator is named by one "               \
	  "alloc_under_lock finding, scored as lock_contention would be")    \
	X(CONT_NEST_SHARE_PCT, 5, "%",                                         \
	  "lock_contention: a contended class whose holders spend this share " \
	  "of their hold time holding inner locks is named by its nested_lock "\
	  "finding (it outside), scored at least as lock_contention would be") \
	X(CONT_TAIL_X, 8, "x",                                                 \
	  "lock_contention advice: a p99 hold this many times the median is "  \
	  "a few long holds (shorten the holder's critical section)")         \
	X(CONT_DOMINANT_PCT, 50, "%",                                          \
	  "lock_contention advice: one holder stack causing this share of "    \
	  "the wait dominates")                                                \
	X(CONT_MANY_THREADS, 3, "threads",                                     \
	  "lock_contention advice: short holds by this many threads or more "  \
	  "call for sharding or batching")                                     \
	X(CONT_SHARED_PCT, 50, "%",                                            \
	  "lock_contention advice: an rwlock with this share of shared "       \
	  "acquisitions is read-mostly")                                       \
	X(CONT_INNER_PCT, 30, "%",                                             \
	  "lock_contention advice: holds spending this share holding other "   \
	  "locks say so")                                                      \
	X(SEV_HIGH_PPM, 100000, "ppm",                                         \
	  "severity high: score at least this share of the trace's duration")  \
	X(SEV_MEDIUM_PPM, 10000, "ppm", "severity medium: likewise")           \
	X(SEV_LOW_PPM, 1000, "ppm", "severity low: likewise; below: info")
/* clang-format on */

enum threshold {
#define TH_ENUM_(name, value, unit, doc) TH_##name = value,
	THRESHOLDS(TH_ENUM_)
#undef TH_ENUM_
};

#endif
