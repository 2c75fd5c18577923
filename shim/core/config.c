/*
 * config.c - MALLOCK_* environment parsing and the output path expansion.
 *
 * Invariant: never allocates (getenv and fixed buffers only), so it can run
 * at any point of init.
 */
#include "config.h"

#include "note.h"
#include "prim.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
config_t g_cfg = {
#define CONFIG_DEF_(env, field, def, lo, hi) .field = def,
	CONFIG_NUMBERS(CONFIG_DEF_)
#undef CONFIG_DEF_
	.unwind = CONFIG_UNWIND_LIBUNWIND,
	.output = "mallock.%e.%p.trace",
	.signal = 0, /* MALLOCK_SIGNAL: none unless asked (control.h) */
};
/* clang-format on */

static int parse_long(const char *s, long lo, long hi, long *out);

/* Signals MALLOCK_SIGNAL may name: the program's own signals, not the
 * fatal ones (fatal.c) nor those the kernel uses for job control. */
static int signal_allowed(int sig)
{
	switch (sig) {
	case SIGUSR1:
	case SIGUSR2:
	case SIGHUP:
	case SIGURG:
	case SIGWINCH:
	case SIGPWR:
		return 1;
	default:
		return sig >= SIGRTMIN && sig <= SIGRTMAX;
	}
}

/* MALLOCK_SIGNAL: USR2, SIGUSR2, RTMIN+3, a number, or none/0. */
static void load_signal(void)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {
	    {"USR1", SIGUSR1}, {"USR2", SIGUSR2},   {"HUP", SIGHUP},
	    {"URG", SIGURG},   {"WINCH", SIGWINCH}, {"PWR", SIGPWR},
	};
	const char *s = prim_getenv("MALLOCK_SIGNAL");
	if (!s)
		return;
	const char *n = strncmp(s, "SIG", 3) == 0 ? s + 3 : s;
	long v = -1;
	if (!strcmp(s, "none") || !strcmp(s, "0")) {
		g_cfg.signal = 0;
		return;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(n, names[i].name))
			v = names[i].sig;
	if (!strncmp(n, "RTMIN", 5)) {
		long k = 0;
		if (!n[5])
			v = SIGRTMIN;
		else if (n[5] == '+' && parse_long(n + 6, 0, 64, &k) == 0)
			v = SIGRTMIN + k;
	}
	if (v < 0 && parse_long(s, 1, 64, &v) != 0)
		v = -1;
	if (v > 0 && signal_allowed((int)v)) {
		g_cfg.signal = (int)v;
		return;
	}
	g_cfg.signal = 0;
	shim_warn("MALLOCK_SIGNAL=%.64s: not USR1, USR2, HUP, URG, WINCH, PWR, "
	          "RTMIN+N, their number, or none; no control signal",
	          s);
}

/* Parses a whole decimal number in [lo, hi] into *out; 0 or -1. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	if (!*s || *s == ' ' || *s == '+' || *s == '-')
		return -1;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void load_number(const char *name, long lo, long hi, long *field)
{
	const char *s = prim_getenv(name);
	long v;
	if (!s)
		return;
	if (parse_long(s, lo, hi, &v) == 0) {
		*field = v;
		return;
	}
	shim_warn("%s=%.64s: not a whole number in %ld..%ld; using %ld", name,
	          s, lo, hi, *field);
}

void config_load(void)
{
#define CONFIG_LOAD_(env, field, def, lo, hi)                                  \
	load_number("MALLOCK_" #env, lo, hi, &g_cfg.field);
	CONFIG_NUMBERS(CONFIG_LOAD_)
#undef CONFIG_LOAD_
	if (!g_cfg.hold_every)
		g_cfg.hold_every = g_cfg.time_every;

	const char *u = prim_getenv("MALLOCK_UNWIND");
	if (u) {
		if (!strcmp(u, "libunwind"))
			g_cfg.unwind = CONFIG_UNWIND_LIBUNWIND;
		else if (!strcmp(u, "fp"))
			g_cfg.unwind = CONFIG_UNWIND_FP;
		else if (!strcmp(u, "none"))
			g_cfg.unwind = CONFIG_UNWIND_NONE;
		else
			shim_warn("MALLOCK_UNWIND=%.64s: not libunwind, fp or "
			          "none; using libunwind",
			          u);
	}

	const char *st = prim_getenv("MALLOCK_START");
	if (st) {
		if (!strcmp(st, "paused"))
			g_cfg.start_paused = 1;
		else if (strcmp(st, "recording"))
			shim_warn(
			    "MALLOCK_START=%.64s: not recording or paused; "
			    "using recording",
			    st);
	}
	load_signal();
	if (g_cfg.max_bytes && g_cfg.max_bytes < (1L << 20)) {
		shim_warn("MALLOCK_MAX_BYTES=%ld: less than 1 MiB; using 1 MiB",
		          g_cfg.max_bytes);
		g_cfg.max_bytes = 1L << 20;
	}
	const char *cd = prim_getenv("MALLOCK_CTL_DIR");
	if (cd) {
		if (cd[0] != '/' || strlen(cd) >= CONFIG_PATH_MAX - 64)
			shim_warn("MALLOCK_CTL_DIR=%.64s: not an absolute path "
			          "shorter than %d bytes; using the default",
			          cd, CONFIG_PATH_MAX - 64);
		else
			strcpy(g_cfg.ctl_dir, cd);
	}

	const char *ex = prim_getenv("MALLOCK_EXE");
	if (ex && *ex) {
		if (strchr(ex, '/') || strlen(ex) >= sizeof g_cfg.exe)
			shim_warn("MALLOCK_EXE=%.64s: not an executable name "
			          "(no '/', under %zu bytes); recording every "
			          "program",
			          ex, sizeof g_cfg.exe);
		else
			strcpy(g_cfg.exe, ex);
	}

	const char *o = prim_getenv("MALLOCK_OUTPUT");
	if (o) {
		/* Leave room for the expansion of %p/%e and a ".<pid>" suffix.
		 */
		if (!*o)
			shim_warn("MALLOCK_OUTPUT is empty; using %s",
			          g_cfg.output);
		else if (strlen(o) >= CONFIG_PATH_MAX - 300)
			shim_warn("MALLOCK_OUTPUT=%.64s...: longer than %d "
			          "bytes; using %s",
			          o, CONFIG_PATH_MAX - 300, g_cfg.output);
		else
			strcpy(g_cfg.output, o);
	}
}

int config_output_path(char *out, size_t cap, uint32_t pid, const char *exe,
                       int child)
{
	size_t n = 0;
	int has_pid = 0;
	char tmp[32];
	for (const char *s = g_cfg.output; *s; s++) {
		const char *add = s;
		size_t len = 1;
		if (s[0] == '%' && s[1] == 'p') {
			len = (size_t)snprintf(tmp, sizeof tmp, "%u", pid);
			add = tmp;
			has_pid = 1;
			s++;
		} else if (s[0] == '%' && s[1] == 'e') {
			add = exe;
			len = strlen(exe);
			s++;
		} else if (s[0] == '%' && s[1] == '%') {
			s++;
		}
		if (n + len >= cap)
			goto toolong;
		memcpy(out + n, add, len);
		n += len;
	}
	if (child && !has_pid) {
		size_t len = (size_t)snprintf(tmp, sizeof tmp, ".%u", pid);
		if (n + len >= cap)
			goto toolong;
		memcpy(out + n, tmp, len);
		n += len;
	}
	out[n] = 0;
	return 0;
toolong:
	out[0] = 0;
	return -1;
}
