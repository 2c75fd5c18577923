/*
 * unit_output_path.c - unit test of the shim's trace path expansion,
 * config_output_path (shim/core/config.h): %p -> pid, %e -> executable name,
 * %% -> %, any other % kept; ".<pid>" appended for a child when the
 * pattern has no %p; a result that does not fit (the terminating NUL
 * included) is -1 with out empty, and nothing is written past cap.
 *
 * Built from shim/core/config.c alone, with the two shim functions it calls
 * (prim_getenv, shim_warn) stubbed here: no preload, no process.
 */
#include "test.h"
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *prim_getenv(const char *name)
{
	return getenv(name);
}

void shim_warn(const char *fmt, ...)
{
	(void)fmt;
}

#define CANARY 0x5a

/* Expands pattern into a buffer of cap bytes followed by canaries; checks
 * the return, the result and that nothing was written past cap. */
static void expect(const char *pattern, uint32_t pid, const char *exe,
                   int child, size_t cap, const char *want)
{
	char buf[CONFIG_PATH_MAX + 16];
	memset(buf, CANARY, sizeof buf);
	snprintf(g_cfg.output, sizeof g_cfg.output, "%s", pattern);
	int rc = config_output_path(buf, cap, pid, exe, child);
	if (want) {
		check_eq(rc, 0);
		if (rc == 0 && !check_eq(buf, want))
			fprintf(stderr, "  the pattern was '%s'\n", pattern);
	} else {
		check_eq(rc, -1);
		check_eq(buf[0], 0);
	}
	for (size_t i = cap; i < sizeof buf; i++)
		if (buf[i] != CANARY) {
			check(!"written past cap");
			break;
		}
}

int main(void)
{
	/* The default pattern, and every directive. */
	expect("mallock.%e.%p.trace", 42, "svc", 0, 256,
	       "mallock.svc.42.trace");
	expect("/tmp/t.%p.%p", 7, "x", 0, 256, "/tmp/t.7.7");
	expect("%e", 1, "a-b.c", 0, 256, "a-b.c");
	expect("%p", 4294967295u, "x", 0, 256, "4294967295");
	/* %% is one %, and the letter after it is plain text. */
	expect("a%%p", 42, "x", 0, 256, "a%p");
	expect("100%%", 42, "x", 0, 256, "100%");
	/* Other % sequences stay as written, a trailing % too. */
	expect("a%q%", 42, "x", 0, 256, "a%q%");
	/* A child: ".<pid>" only when the pattern has no %p (a %% p is not
	 * a pid). */
	expect("t.%p", 42, "x", 1, 256, "t.42");
	expect("t.trace", 42, "x", 1, 256, "t.trace.42");
	expect("a%%p", 42, "x", 1, 256, "a%p.42");
	expect("t.trace", 42, "x", 0, 256, "t.trace");
	/* Room: exactly enough (text + NUL), one byte short. */
	expect("abc", 1, "x", 0, 4, "abc");
	expect("abc", 1, "x", 0, 3, NULL);
	expect("a.%p", 123, "x", 0, 6, "a.123");
	expect("a.%p", 123, "x", 0, 5, NULL);
	expect("%e", 1, "abcdef", 0, 7, "abcdef");
	expect("%e", 1, "abcdef", 0, 6, NULL);
	expect("abc", 42, "x", 1, 7, "abc.42");
	expect("abc", 42, "x", 1, 6, NULL);
	/* The longest pattern config_load accepts, with a long name. */
	char big[CONFIG_PATH_MAX];
	memset(big, 'p', sizeof big - 1);
	big[sizeof big - 1] = 0;
	expect(big, 1, "x", 0, CONFIG_PATH_MAX, big);
	expect(big, 1, "x", 1, CONFIG_PATH_MAX, NULL);
	return test_done();
}
