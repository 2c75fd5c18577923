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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

config_t g_cfg = {
#define CONFIG_DEF_(env, field, def, lo, hi) .field = def,
	CONFIG_NUMBERS(CONFIG_DEF_)
#undef CONFIG_DEF_
	.unwind = CONFIG_UNWIND_LIBUNWIND,
	.output = "mallock.%e.%p.trace",
};

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

	const char *o = prim_getenv("MALLOCK_OUTPUT");
	if (o) {
		/* Leave room for the expansion of %p/%e and a ".<pid>" suffix. */
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
