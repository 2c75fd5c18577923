/*
 * test.c - the harness of test.h: counting, reporting, the build-dir
 * context. Reports go to stderr (failures) and stdout (the tally), one line
 * each, so that CTest's --output-on-failure shows them in order.
 */
#define _GNU_SOURCE /* program_invocation_short_name */
#include "test.h"

#include <errno.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef MALLOCK_TEST_BUILD_DIR
#error "tests/lib/CMakeLists.txt defines MALLOCK_TEST_BUILD_DIR"
#endif

test_ctx_t test_ctx = {
    .build = MALLOCK_TEST_BUILD_DIR,
    .source = MALLOCK_TEST_SOURCE_DIR,
};

static int skipped;

static const char *scratch(void)
{
	if (!test_ctx.tmp) {
		const char *t = getenv("TMPDIR");
		test_ctx.tmp = t && *t ? t : "/tmp";
	}
	return test_ctx.tmp;
}

static const char *test_name(void)
{
	if (!test_ctx.name)
		test_ctx.name = program_invocation_short_name;
	return test_ctx.name;
}

static char *join(char *buf, size_t cap, const char *dir, const char *rel)
{
	int n = snprintf(buf, cap, "%s/%s", dir, rel);
	if (!test_check_(__FILE__, __LINE__, n >= 0 && (size_t)n < cap,
	                 "the path fits") &&
	    cap)
		buf[0] = 0;
	return buf;
}

char *test_build_path(char *buf, size_t cap, const char *rel)
{
	return join(buf, cap, test_ctx.build, rel);
}

char *test_tmp_path(char *buf, size_t cap, const char *rel)
{
	return join(buf, cap, scratch(), rel);
}

void test_run_(const char *name, void (*fn)(void))
{
	int before = test_ctx.failures, checks = test_ctx.checks;
	test_ctx.fn = name;
	fn();
	test_ctx.fn = NULL;
	int failed = test_ctx.failures - before;
	if (failed)
		printf("%s: %s: %d of %d checks failed\n", test_name(), name,
		       failed, test_ctx.checks - checks);
	else
		printf("%s: %s: ok (%d checks)\n", test_name(), name,
		       test_ctx.checks - checks);
	fflush(stdout);
}

int test_done(void)
{
	printf("%s: %d checks, %d failed\n", test_name(), test_ctx.checks,
	       test_ctx.failures);
	if (test_ctx.failures)
		return 1;
	return skipped ? TEST_SKIP : 0;
}

int test_skip(const char *why)
{
	printf("%s: skipped: %s\n", test_name(), why);
	skipped = 1;
	return TEST_SKIP;
}

/* Counts a check; on failure prints "file:line: [in fn: ]what" with the
 * values' text vals (may be NULL). Returns ok. */
static int tally(const char *file, int line, int ok, const char *what,
                 const char *vals)
{
	test_ctx.checks++;
	if (ok)
		return 1;
	test_ctx.failures++;
	fflush(stdout);
	fprintf(stderr, "%s:%d: %s%s%sfailed: %s%s%s\n", file, line,
	        test_ctx.fn ? "in " : "", test_ctx.fn ? test_ctx.fn : "",
	        test_ctx.fn ? ": " : "", what, vals ? " " : "",
	        vals ? vals : "");
	return 0;
}

int test_check_(const char *file, int line, int ok, const char *expr)
{
	char what[512];
	snprintf(what, sizeof what, "check(%s)", expr);
	return tally(file, line, ok, what, NULL);
}

static int eq_report(const char *file, int line, int ok, const char *ea,
                     const char *eb, const char *vals)
{
	char what[512];
	snprintf(what, sizeof what, "check_eq(%s, %s)", ea, eb);
	return tally(file, line, ok, what, vals);
}

int test_eq_u_(const char *file, int line, const char *ea, const char *eb,
               unsigned long long a, unsigned long long b)
{
	char v[96];
	snprintf(v, sizeof v, "(%llu != %llu, %#llx != %#llx)", a, b, a, b);
	return eq_report(file, line, a == b, ea, eb, v);
}

int test_eq_i_(const char *file, int line, const char *ea, const char *eb,
               long long a, long long b)
{
	char v[64];
	snprintf(v, sizeof v, "(%lld != %lld)", a, b);
	return eq_report(file, line, a == b, ea, eb, v);
}

int test_eq_d_(const char *file, int line, const char *ea, const char *eb,
               double a, double b)
{
	char v[80];
	snprintf(v, sizeof v, "(%.17g != %.17g)", a, b);
	return eq_report(file, line, a == b, ea, eb, v);
}

int test_eq_s_(const char *file, int line, const char *ea, const char *eb,
               const char *a, const char *b)
{
	int ok = a && b ? strcmp(a, b) == 0 : a == b;
	char v[1024];
	snprintf(v, sizeof v, "(\"%s\" != \"%s\")", a ? a : "(null)",
	         b ? b : "(null)");
	return eq_report(file, line, ok, ea, eb, v);
}

int test_near_(const char *file, int line, const char *ea, const char *eb,
               double a, double b, double tol)
{
	char what[512], v[128];
	snprintf(what, sizeof what, "check_near(%s, %s)", ea, eb);
	snprintf(v, sizeof v, "(%.17g and %.17g differ by %.3g, more than %g)",
	         a, b, fabs(a - b), tol);
	return tally(file, line, fabs(a - b) <= tol, what, v);
}
