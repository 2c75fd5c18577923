/*
 * config.h - the shim's settings, read once from MALLOCK_* environment
 * variables (docs/configuration.md lists them). Strict parsing: a value that
 * is not entirely a number in range, or an unknown word, gets a one-line
 * warning ("mallock: MALLOCK_X=...: <why>; using <default>") and the default.
 *
 * Invariant: g_cfg is written only by config_load() (at init, single-
 * threaded) and read-only afterwards.
 */
#ifndef MALLOCK_SHIM_CONFIG_H
#define MALLOCK_SHIM_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_PATH_MAX 1024

/* X(env suffix, field, default, min, max) for the numeric settings. */
/* clang-format off */
#define CONFIG_NUMBERS(X)                                                      \
	X(STACK_DEPTH, depth, 16, 1, 64)                                       \
	X(STACK_CACHE, stack_cache, 1, 0, 1)                                   \
	X(SPIN_NS, spin_ns, 0, 0, 100000)                                       \
	X(FOLLOW_EXEC, follow_exec, 1, 0, 1)                                   \
	X(BUFFER_KB, buffer_kb, 64, 4, 16384)                                  \
	X(FLUSH_MS, flush_ms, 200, 0, 3600000)                                \
	X(VERBOSE, verbose, 0, 0, 2)                                           \
	X(SAMPLE_BYTES, sample_bytes, 0, 0, 1L << 40)                          \
	X(DURATION, duration, 0, 0, 31536000)                                  \
	X(MAX_BYTES, max_bytes, 0, 0, LONG_MAX)                                 \
	X(COMPRESS, compress, 0, 0, 1)                                         \
	X(TIME_EVERY, time_every, 16, 1, 1L << 20)                             \
	X(HOLD_EVERY, hold_every, 0, 0, 1L << 20)
/* clang-format on */
/* MALLOCK_HOLD_EVERY 0 (its default) is MALLOCK_TIME_EVERY's value:
 * config_load resolves it, so that g_cfg.hold_every is at least 1; 1 times
 * every hold. */

/* Unwinders, with their PROCESS-record codes from trace_format.h. */
enum config_unwind {
	CONFIG_UNWIND_LIBUNWIND = 0,
	CONFIG_UNWIND_FP = 1,
	CONFIG_UNWIND_NONE = 2
};

typedef struct config {
#define CONFIG_FIELD_(env, field, def, lo, hi) long field;
	CONFIG_NUMBERS(CONFIG_FIELD_)
#undef CONFIG_FIELD_
	int unwind;                    /* enum config_unwind */
	char output[CONFIG_PATH_MAX];  /* MALLOCK_OUTPUT, unexpanded */
	int start_paused;              /* MALLOCK_START=paused */
	int signal;                    /* MALLOCK_SIGNAL; 0: none */
	char ctl_dir[CONFIG_PATH_MAX]; /* MALLOCK_CTL_DIR, or "" */
	char exe[256];                 /* MALLOCK_EXE: record only this
	                                  program (executable name), or "" */
} config_t;

extern config_t g_cfg;

/* Reads the environment into g_cfg; warns (shim_warn) about bad values.
 * May call getenv only; never allocates. */
void config_load(void);

/*
 * Expands g_cfg.output into out: %p -> pid, %e -> executable name, %% -> %.
 * When child is nonzero and the pattern has no %p, ".<pid>" is appended (a
 * child never writes into its parent's file). Returns 0, or -1 when the
 * result does not fit (out is then empty).
 */
int config_output_path(char *out, size_t cap, uint32_t pid, const char *exe,
                       int child);

#endif
