/*
 * common.h - what every bundled test app shares: option parsing, clocks,
 * CPU accounting, thread start/join, a stop flag and a small PRNG.
 *
 * The apps reproduce published bug reports (Apache Kudu, Apache Ozone;
 * docs/testapps.md cites each); each one is a main file plus this helper.
 * Nothing here takes a lock or allocates on a hot path, so a trace of an
 * app shows the app's own pattern and not the harness's. Usable from C11 and
 * C++17.
 *
 * Conventions every app follows (docs/testapps.md):
 *   - `--name=value` or `--name value`; `--help` prints the options, exit 0;
 *   - an invalid option prints one line on stderr and exits 2;
 *   - the run is bounded by `--duration SECONDS` (a float), every thread is
 *     joined, the result block goes to stdout, exit 0.
 */
#ifndef TESTAPPS_COMMON_H
#define TESTAPPS_COMMON_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- options ---------------------------------------------------------- */

enum app_opt_kind {
	APP_OPT_INT,    /* value points to an int */
	APP_OPT_DOUBLE, /* value points to a double */
	APP_OPT_CHOICE, /* value points to an int: the index into choices */
};

struct app_opt {
	const char *name; /* long name without the leading "--" */
	enum app_opt_kind kind;
	void *value;                /* holds the default on entry */
	double min, max;            /* accepted range (INT and DOUBLE) */
	const char *const *choices; /* CHOICE: NULL-terminated list */
	const char *help;
};

struct app_info {
	const char *name;    /* program name used in messages */
	const char *summary; /* printed first by --help; may span lines */
	struct app_opt *opts;
	size_t nopts;
};

/* Builders, usable in an automatic array initializer from C and C++. */
struct app_opt app_opt_int(const char *name, int *value, int min, int max,
                           const char *help);
struct app_opt app_opt_double(const char *name, double *value, double min,
                              double max, const char *help);
struct app_opt app_opt_choice(const char *name, int *value,
                              const char *const *choices, const char *help);

/*
 * Parses argv against app->opts. Returns only when every argument was valid.
 * `--help` prints the summary and options and exits 0; anything invalid prints
 * "NAME: what was wrong (try --help)" on stderr and exits 2. Never allocates.
 */
void app_parse_args(const struct app_info *app, int argc, char **argv);

/* Prints "NAME: message" on stderr and exits with status 1 (a runtime failure).
 */
void app_die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/* ---- clocks and CPU --------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t app_now_ns(void);

/* Sleeps ns (relative) or until abs_ns on CLOCK_MONOTONIC; restarts on EINTR.
 */
void app_sleep_ns(uint64_t ns);
void app_sleep_until_ns(uint64_t abs_ns);

/*
 * Condition variables that time out on CLOCK_MONOTONIC, and the absolute
 * timespec for "rel_ns from now" to pass to pthread_cond_timedwait on them.
 */
void app_cond_init_monotonic(pthread_cond_t *cond);
struct timespec app_timespec_after(uint64_t rel_ns);

/* Process CPU time (all threads, from getrusage) and context switches. */
struct app_cpu {
	double user_us;
	double sys_us;
	double ctx_switches; /* voluntary + involuntary */
};
struct app_cpu app_cpu_now(void);
/* end - start, field by field. */
struct app_cpu app_cpu_diff(struct app_cpu end, struct app_cpu start);

/* ---- threads and the stop flag ---------------------------------------- */

/*
 * Starts a joinable thread running fn(arg) and names it "ROLE-INDEX" (the
 * first 15 chars, as Linux allows) so traces and top show the role. Dies on
 * failure.
 */
pthread_t app_thread_start(void *(*fn)(void *), void *arg, const char *role,
                           int index);
void app_thread_join(pthread_t thread);

/*
 * Set once when the measured run is over; worker loops poll it. A plain int
 * read and written with relaxed atomic builtins: a flag, never a lock.
 */
extern int app_stop_flag;
static inline int app_stopping(void)
{
	return __atomic_load_n(&app_stop_flag, __ATOMIC_RELAXED);
}
static inline void app_request_stop(void)
{
	__atomic_store_n(&app_stop_flag, 1, __ATOMIC_RELAXED);
}

/* A hint to the CPU inside a spin-wait loop. */
static inline void app_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Marks a function whose name a stack must show (a report's ground truth):
 * never inlined, never cloned into a renamed copy (foo.constprop.0). The
 * build also passes -fno-optimize-sibling-calls so no caller frame vanishes.
 */
#if defined(__clang__)
#define APP_NOINLINE __attribute__((noinline))
#else
#define APP_NOINLINE __attribute__((noinline, noclone))
#endif

/* ---- randomness -------------------------------------------------------- */

/* xorshift64*: per-thread state, never zero. Seed with app_rand_seed(). */
static inline uint64_t app_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(2685821657736338717);
}
/* A deterministic, non-zero seed derived from salt (a thread index, say). */
uint64_t app_rand_seed(uint64_t salt);

#ifdef __cplusplus
}
#endif
#endif /* TESTAPPS_COMMON_H */
