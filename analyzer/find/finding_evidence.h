/*
 * finding_evidence.h - every number a finding can carry as evidence, in one
 * list (FINDING_EVIDENCE): its enum (EV_*), its JSON member name, its unit,
 * the finding kinds that may carry it, and, for the few the HTML page puts
 * in words, the phrase ("%s" is the value in its unit). Finders write
 * evidence by enum (finding_put), every output reads it by enum
 * (finding_ev), and the JSON and HTML names are written from this list, so
 * a misspelt name is a compile error and no name is kept twice.
 *
 * The kinds column bounds a finding's evidence: finding_put refuses a
 * member its kind does not declare, or one it already has, so a finding
 * never holds more members than its kind declares, and unit_evidence checks
 * that every kind's count fits EV_MAX. docs/report-json.md lists the
 * members of each kind; test_evidence_names.py checks it against this list.
 * Included by finding.h, after FINDING_KINDS (the kinds column's FK_*).
 */
#ifndef MALLOCK_FINDING_EVIDENCE_H
#define MALLOCK_FINDING_EVIDENCE_H

/* X(enum, name): the unit of an evidence member, its name in the HTML
 * page's table. */
/* clang-format off */
#define EV_UNITS(X)                                                            \
	X(NS, "ns")        /* nanoseconds */                                   \
	X(COUNT, "count")  /* events, calls, threads, stacks */                \
	X(SHARE, "share")  /* a fraction of a whole, 0 to 1 */                 \
	X(BYTES, "bytes")                                                      \
	X(RATE, "per_s")   /* a count per second */                            \
	X(RATIO, "ratio")  /* a coefficient of variation */                    \
	X(ID, "id")        /* an id from elsewhere in the report */           \
	X(FLAG, "flag")    /* 0 or 1 */

enum ev_unit {
#define EVU_ENUM_(e, name) EVU_##e,
	EV_UNITS(EVU_ENUM_)
#undef EVU_ENUM_
	EVU_COUNT_
};

/* The finding kinds (FINDING_KINDS) that may carry a member, as a mask. */
#define EVK_AUL (1u << FK_ALLOC_UNDER_LOCK)
#define EVK_XTF (1u << FK_CROSS_THREAD_FREE)
#define EVK_CHURN (1u << FK_ALLOC_CHURN)
#define EVK_NEST (1u << FK_NESTED_LOCK)
#define EVK_STARV (1u << FK_STARVATION)
#define EVK_SLOW (1u << FK_SLOW_ALLOC)
#define EVK_FUTEX (1u << FK_FUTEX_LOCK)
#define EVK_CONT (1u << FK_LOCK_CONTENTION)
/* lock_contention's evidence, which an alloc_under_lock or nested_lock
 * finding that explains a contended lock also carries (find_contention.c) */
#define EVK_CONTD (EVK_AUL | EVK_NEST | EVK_CONT)
#define EVK_SITE (EVK_XTF | EVK_CHURN | EVK_SLOW)

/* X(enum, JSON name, unit, kinds, words or NULL), in the order the finders
 * write them (the JSON keeps each finder's order, not this one). */
#define FINDING_EVIDENCE(X)                                                    \
	/* a contended lock: find_contention.c, find_locks.c */                \
	X(LOCK_WAIT_NS, "lock_wait_ns", NS,                                    \
	  EVK_CONTD | EVK_STARV | EVK_FUTEX, "waiters lost %s")                \
	X(IDLE_WAIT_NS, "idle_wait_ns", NS, EVK_CONTD, NULL)                   \
	X(CONTENDED, "contended", COUNT, EVK_CONTD,                            \
	  "%s contended acquisitions")                                         \
	X(ACQUISITIONS, "acquisitions", COUNT, EVK_CONTD, NULL)                \
	X(SHARED_ACQUISITIONS, "shared_acquisitions", COUNT, EVK_CONTD, NULL)  \
	X(CONTENDED_SHARE, "contended_share", SHARE, EVK_CONTD, NULL)          \
	X(MAX_WAITERS, "max_waiters", COUNT, EVK_CONTD, NULL)                  \
	X(WAIT_MAX_NS, "wait_max_ns", NS, EVK_CONTD | EVK_FUTEX,               \
	  "the longest wait %s")                                               \
	X(INSTANCES, "instances", COUNT, EVK_CONTD, NULL)                      \
	X(THREADS, "threads", COUNT, EVK_CONTD | EVK_STARV, NULL)              \
	X(WAITING_THREADS, "waiting_threads", COUNT, EVK_CONTD | EVK_FUTEX,    \
	  "%s waiting threads")                                                \
	X(HOLDS, "holds", COUNT, EVK_CONTD, NULL)                              \
	/* only when fewer than holds (MALLOCK_HOLD_EVERY): the hold and   \
	 * allocator figures are then estimates from the timed holds */      \
	X(TIMED_HOLDS, "timed_holds", COUNT, EVK_CONTD, NULL)                  \
	/* only when some were: sampled holds set apart as preemption, and  \
	 * the hold time they would add at their weight */                   \
	X(HOLDS_SET_APART, "holds_set_apart", COUNT, EVK_CONTD, NULL)          \
	X(HOLDS_SET_APART_NS, "holds_set_apart_ns", NS, EVK_CONTD, NULL)       \
	X(HOLD_NS, "hold_ns", NS, EVK_CONTD, NULL)                             \
	X(HOLD_MEDIAN_NS, "hold_median_ns", NS, EVK_CONTD,                     \
	  "a median hold of %s")                                               \
	X(HOLD_P99_NS, "hold_p99_ns", NS, EVK_CONTD, "p99 %s")                 \
	X(HOLD_MAX_NS, "hold_max_ns", NS, EVK_CONTD, NULL)                     \
	X(ALLOCATOR_NS_IN_HOLDS, "allocator_ns_in_holds", NS, EVK_CONTD, NULL) \
	X(ALLOCATOR_SHARE_OF_HOLD, "allocator_share_of_hold", SHARE,           \
	  EVK_CONTD, "holders spent %s of their hold time in the allocator")   \
	X(ALLOCATOR_LOCK_WAIT_NS_IN_HOLDS, "allocator_lock_wait_ns_in_holds",  \
	  NS, EVK_CONTD, NULL)                                                 \
	X(INNER_LOCK_HOLD_NS, "inner_lock_hold_ns", NS, EVK_CONTD, NULL)       \
	X(INNER_LOCK_WAIT_NS, "inner_lock_wait_ns", NS, EVK_CONTD, NULL)       \
	X(INNER_LOCK_SHARE_OF_HOLD, "inner_lock_share_of_hold", SHARE,         \
	  EVK_CONTD, NULL)                                                     \
	X(COND_WAITS, "cond_waits", COUNT, EVK_CONTD, NULL)                    \
	X(OWN_WORK_SHARE, "own_work_share", SHARE, EVK_CONTD, NULL)            \
	X(HOLDER_STACKS, "holder_stacks", COUNT, EVK_CONTD, NULL)              \
	X(TOP_HOLDER_WAIT_CAUSED_NS, "top_holder_wait_caused_ns", NS,          \
	  EVK_CONTD, NULL)                                                     \
	X(TOP_HOLDER_SHARE, "top_holder_share", SHARE, EVK_CONTD,              \
	  "the worst holder caused %s of the wait")                            \
	X(WAITER_STACKS, "waiter_stacks", COUNT, EVK_CONTD | EVK_FUTEX, NULL)  \
	/* alloc_under_lock: find_locks.c */                                   \
	X(HOLDS_WITH_ALLOC, "holds_with_alloc", COUNT, EVK_AUL, NULL)          \
	X(CALLS, "calls", COUNT, EVK_AUL | EVK_SLOW, NULL)                     \
	X(ALLOCS, "allocs", COUNT, EVK_AUL | EVK_CHURN, NULL)                  \
	X(FREES, "frees", COUNT, EVK_AUL | EVK_XTF, NULL)                      \
	X(SITE_ALLOCATOR_NS, "site_allocator_ns", NS, EVK_AUL, NULL)           \
	X(SITE_SHARE_OF_HOLD, "site_share_of_hold", SHARE, EVK_AUL, NULL)      \
	X(CALLS_WITHOUT_STACK, "calls_without_stack", COUNT, EVK_AUL, NULL)    \
	X(ALLOCATOR_NS_WITHOUT_STACK, "allocator_ns_without_stack", NS,        \
	  EVK_AUL, NULL)                                                       \
	X(SLOW_CALLS, "slow_calls", COUNT, EVK_AUL | EVK_SLOW,                 \
	  "%s slow allocator calls")                                           \
	X(ALLOCATOR_LOCK_WAIT_NS, "allocator_lock_wait_ns", NS,                \
	  EVK_AUL | EVK_SLOW, "%s of it waiting on the allocator's own lock")  \
	X(QUEUE_LIKE, "queue_like", FLAG, EVK_AUL, NULL)                       \
	X(GIVES_BACK_NS, "gives_back_ns", NS, EVK_AUL,                         \
	  "fixing it gives back up to about %s")                               \
	X(STACKS, "stacks", COUNT, EVK_AUL | EVK_SITE, NULL)                   \
	X(SITES, "sites", COUNT, EVK_AUL, NULL)                                \
	X(FREE_SHARE, "free_share", SHARE, EVK_AUL, NULL)                      \
	X(FREE_NS_IN_HOLDS, "free_ns_in_holds", NS, EVK_AUL, NULL)             \
	X(FREE_HOLD_SITES, "free_hold_sites", COUNT, EVK_AUL, NULL)            \
	X(FREE_NS_AT_HOLD_SITE, "free_ns_at_hold_site", NS, EVK_AUL, NULL)     \
	X(ALLOC_SITES_FOLDED, "alloc_sites_folded", COUNT, EVK_AUL, NULL)      \
	/* nested_lock: find_locks.c */                                        \
	X(INVERSION, "inversion", FLAG, EVK_NEST, NULL)                        \
	X(NESTED_ACQUISITIONS, "nested_acquisitions", COUNT, EVK_NEST,         \
	  "%s nested acquisitions")                                            \
	X(INNER_WAIT_NS_WHILE_OUTER_HELD, "inner_wait_ns_while_outer_held",    \
	  NS, EVK_NEST,                                                        \
	  "%s waiting on the inner lock while holding the outer one")          \
	X(INNER_HOLD_NS_WHILE_OUTER_HELD, "inner_hold_ns_while_outer_held",    \
	  NS, EVK_NEST, NULL)                                                  \
	X(INNER_WAIT_IN_ITS_FINDING, "inner_wait_in_its_finding", FLAG,       \
	  EVK_NEST, NULL)                                                      \
	X(INNER_CONTENDED_WHILE_OUTER_HELD,                                    \
	  "inner_contended_while_outer_held", COUNT, EVK_NEST, NULL)           \
	X(INNER_TRY_FAILURES_WHILE_OUTER_HELD,                                 \
	  "inner_try_failures_while_outer_held", COUNT, EVK_NEST, NULL)        \
	X(REVERSE_NESTED_ACQUISITIONS, "reverse_nested_acquisitions", COUNT,   \
	  EVK_NEST, NULL)                                                      \
	X(REVERSE_INNER_WAIT_NS_WHILE_OUTER_HELD,                              \
	  "reverse_inner_wait_ns_while_outer_held", NS, EVK_NEST, NULL)        \
	X(REVERSE_INNER_HOLD_NS_WHILE_OUTER_HELD,                              \
	  "reverse_inner_hold_ns_while_outer_held", NS, EVK_NEST, NULL)        \
	X(REVERSE_INNER_CONTENDED_WHILE_OUTER_HELD,                            \
	  "reverse_inner_contended_while_outer_held", COUNT, EVK_NEST, NULL)   \
	X(REVERSE_INNER_TRY_FAILURES_WHILE_OUTER_HELD,                         \
	  "reverse_inner_try_failures_while_outer_held", COUNT, EVK_NEST,      \
	  NULL)                                                                \
	X(OUTER_WAIT_NS, "outer_wait_ns", NS, EVK_NEST,                        \
	  "waiters on the outer lock lost %s")                                 \
	X(OUTER_CONTENDED, "outer_contended", COUNT, EVK_NEST, NULL)           \
	X(INNER_WAIT_NS, "inner_wait_ns", NS, EVK_NEST, NULL)                  \
	X(INNER_CONTENDED, "inner_contended", COUNT, EVK_NEST, NULL)           \
	X(OUTER_HOLD_SHARE_IN_INNER, "outer_hold_share_in_inner", SHARE,       \
	  EVK_NEST, "%s of the outer lock's hold time spent in the inner one") \
	X(INNER_LOCKS, "inner_locks", COUNT, EVK_NEST, NULL)                   \
	X(NESTED_ASCENDING_ADDRESS, "nested_ascending_address", COUNT,         \
	  EVK_NEST, NULL)                                                      \
	X(NESTED_DESCENDING_ADDRESS, "nested_descending_address", COUNT,       \
	  EVK_NEST, NULL)                                                      \
	X(INNER_ACQUISITIONS, "inner_acquisitions", COUNT, EVK_NEST, NULL)     \
	/* allocation sites: find_allocs.c */                                  \
	X(CROSS_THREAD_FREES, "cross_thread_frees", COUNT, EVK_XTF,            \
	  "%s blocks freed by another thread")                                 \
	X(SHARE, "share", SHARE, EVK_XTF, NULL)                                \
	X(BYTES, "bytes", BYTES, EVK_XTF, NULL)                                \
	X(ALLOCATOR_NS, "allocator_ns", NS, EVK_XTF | EVK_CHURN,               \
	  "%s in the allocator")                                               \
	X(ALLOCATOR_NS_ESTIMATED, "allocator_ns_estimated", FLAG,              \
	  EVK_XTF | EVK_CHURN, NULL)                                           \
	X(ALLOCATING_THREADS, "allocating_threads", COUNT,                     \
	  EVK_XTF | EVK_SLOW, "%s allocating threads")                         \
	X(FREEING_THREADS, "freeing_threads", COUNT, EVK_XTF,                  \
	  "%s freeing threads")                                                \
	X(TIMED_SAMPLES, "timed_samples", COUNT, EVK_SITE, NULL)               \
	X(UNCAPPED_SCORE_NS, "uncapped_score_ns", NS, EVK_SITE, NULL)          \
	X(SHORT_LIVED, "short_lived", COUNT, EVK_CHURN,                        \
	  "%s short-lived blocks")                                             \
	X(RATE_PER_S, "rate_per_s", RATE, EVK_CHURN,                           \
	  "%s allocations a second")                                           \
	X(SIZE, "size", BYTES, EVK_CHURN, NULL)                                \
	X(SIZE_SHARE, "size_share", SHARE, EVK_CHURN, NULL)                    \
	X(MEAN_LIFETIME_NS, "mean_lifetime_ns", NS, EVK_CHURN, NULL)           \
	X(NODE_CONTAINER, "node_container", FLAG, EVK_CHURN, NULL)             \
	X(LOCK_HELD, "lock_held", FLAG, EVK_SLOW, NULL)                        \
	X(SLOW_SHARE, "slow_share", SHARE, EVK_SLOW, NULL)                     \
	X(SLOW_NS, "slow_ns", NS, EVK_SLOW, "%s in slow calls")                \
	X(MEAN_SLOW_NS, "mean_slow_ns", NS, EVK_SLOW, NULL)                    \
	X(MEDIAN_CALL_NS, "median_call_ns", NS, EVK_SLOW,                      \
	  "a median call takes %s")                                            \
	X(THRESHOLD_NS, "threshold_ns", NS, EVK_SLOW, NULL)                    \
	X(TIMED_CALLS, "timed_calls", COUNT, EVK_SLOW, NULL)                   \
	X(TIMED_SLOW_CALLS, "timed_slow_calls", COUNT, EVK_SLOW, NULL)         \
	X(ESTIMATED, "estimated", FLAG, EVK_SLOW, NULL)                        \
	X(PREEMPTED_CALLS, "preempted_calls", COUNT, EVK_SLOW, NULL)           \
	X(PREEMPTED_NS, "preempted_ns", NS, EVK_SLOW, NULL)                    \
	X(MIGRATED_CALLS, "migrated_calls", COUNT, EVK_SLOW, NULL)             \
	X(SLOW_CALLS_ABOVE_CACHE_LIMIT, "slow_calls_above_cache_limit", COUNT, \
	  EVK_SLOW, NULL)                                                      \
	X(REALLOC_SHARE, "realloc_share", SHARE, EVK_SLOW, NULL)               \
	X(SIZE_MIN, "size_min", BYTES, EVK_SLOW, NULL)                         \
	X(SIZE_MAX, "size_max", BYTES, EVK_SLOW, NULL)                         \
	/* starvation: find_starvation.c */                                    \
	X(LOCK_ID, "lock_id", ID, EVK_STARV, NULL)                             \
	X(THREADS_WITH_NO_ACQUISITION, "threads_with_no_acquisition", COUNT,   \
	  EVK_STARV, NULL)                                                     \
	X(ACQUISITIONS_CV, "acquisitions_cv", RATIO, EVK_STARV, NULL)          \
	X(MEAN_WAIT_CV, "mean_wait_cv", RATIO, EVK_STARV, NULL)                \
	X(COND_WAITERS_GROUP, "cond_waiters_group", FLAG, EVK_STARV, NULL)     \
	X(SERVICE_BY_COND_WAKES, "service_by_cond_wakes", FLAG, EVK_STARV,     \
	  NULL)                                                                \
	X(PRODUCERS_LEFT_OUT, "producers_left_out", COUNT, EVK_STARV, NULL)    \
	X(SERVICE_TOTAL, "service_total", COUNT, EVK_STARV, NULL)              \
	X(SERVICE_MIN, "service_min", COUNT, EVK_STARV, NULL)                  \
	X(SERVICE_MAX, "service_max", COUNT, EVK_STARV, NULL)                  \
	X(ROLE_ACQUISITIONS, "role_acquisitions", COUNT, EVK_STARV, NULL)      \
	X(ROLE_COND_WAKES, "role_cond_wakes", COUNT, EVK_STARV, NULL)          \
	X(THREADS_BEHIND, "threads_behind", COUNT, EVK_STARV,                  \
	  "%s threads served less than their share")                           \
	X(SERVICE_SHORTFALL, "service_shortfall", COUNT, EVK_STARV,            \
	  "%s acquisitions short of an even share")                            \
	X(BEHIND_LOCK_WAIT_NS, "behind_lock_wait_ns", NS, EVK_STARV, NULL)     \
	X(AHEAD_LOCK_WAIT_SHARE, "ahead_lock_wait_share", SHARE, EVK_STARV,    \
	  NULL)                                                                \
	X(BEHIND_COND_SLEEP_NS, "behind_cond_sleep_ns", NS, EVK_STARV, NULL)   \
	X(LOST_NS, "lost_ns", NS, EVK_STARV, "%s lost by the threads behind")  \
	X(UNWEIGHTED_LOST_NS, "unweighted_lost_ns", NS, EVK_STARV, NULL)       \
	X(COVERED_NS, "covered_ns", NS, EVK_STARV | EVK_FUTEX, NULL)           \
	/* futex_lock: find_futex.c */                                         \
	X(LOCK_WORD_CLASSES, "lock_word_classes", COUNT, EVK_FUTEX, NULL)      \
	X(LOCK_WORDS, "lock_words", COUNT, EVK_FUTEX, NULL)                    \
	X(FUTEX_WAITS, "futex_waits", COUNT, EVK_FUTEX, "%s futex waits")      \
	X(MEAN_WAIT_NS, "mean_wait_ns", NS, EVK_FUTEX, NULL)                   \
	X(FUTEX_WAKES, "futex_wakes", COUNT, EVK_FUTEX, NULL)                  \
	X(FUTEX_WOKEN, "futex_woken", COUNT, EVK_FUTEX, NULL)                  \
	X(WAKING_THREADS, "waking_threads", COUNT, EVK_FUTEX, NULL)            \
	X(WAKER_STACKS, "waker_stacks", COUNT, EVK_FUTEX, NULL)

typedef enum ev {
#define EV_ENUM_(e, name, unit, kinds, words) EV_##e,
	FINDING_EVIDENCE(EV_ENUM_)
#undef EV_ENUM_
	EV_COUNT_,
	EV_NONE = EV_COUNT_ /* no member (finding_t's stack_unit) */
} ev_t;
/* clang-format on */

/* The member's JSON name, its unit (enum ev_unit), the kinds that may
 * carry it (a mask of 1 << FK_*), its phrase for the HTML page or NULL. */
const char *ev_name(ev_t e);
int ev_unit(ev_t e);
unsigned ev_kinds(ev_t e);
const char *ev_words(ev_t e);
const char *ev_unit_name(int unit);
/* How many members a finding of kind may carry. */
int ev_kind_count(int kind);

#endif
