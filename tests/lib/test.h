/*
 * test.h - the C tests' one harness (tests/lib/, in the manner of jemalloc's
 * test/include/test/test.h). A failed check names the file, the line, the
 * test function it ran in, the expression and, for eq and near, both values;
 * it is counted and the test goes on. test_done() prints the tally and
 * returns the exit status CTest reads: 0 when every check passed, 1 when
 * one failed, TEST_SKIP (77) when test_skip() said why the test cannot run.
 *
 *   check(cond)            cond is true
 *   check_eq(a, b)         a == b: integers (signed or unsigned, printed as
 *                          such), doubles (exactly), or strings (strcmp; a
 *                          NULL string equals only NULL). Pointers other
 *                          than strings do not compile: use check().
 *   check_near(a, b, tol)  |a - b| <= tol, as doubles
 *   test_run(fn)           runs void fn(void) as the current test: its
 *                          failures name it, and a line says how it went
 *
 * The build-dir context (test_ctx): the build and source trees this test
 * binary was built from (compile definitions set by tests/lib's CMake
 * target), and a scratch directory ($TMPDIR, else /tmp) for the files a
 * test writes. A test is named by its binary's base name.
 */
#ifndef MALLOCK_TEST_H
#define MALLOCK_TEST_H

#include <stddef.h>
#include <stdio.h>

#define TEST_SKIP 77

typedef struct test_ctx {
	const char *name;   /* the test binary's base name (set on first use) */
	const char *build;  /* CMAKE_BINARY_DIR */
	const char *source; /* CMAKE_SOURCE_DIR */
	const char *tmp;    /* scratch directory, no trailing '/' */
	const char *fn;     /* the test function running (test_run), or NULL */
	int checks, failures;
} test_ctx_t;

extern test_ctx_t test_ctx;

/* Writes dir/rel into buf (cap bytes); dir is the build tree (test_build)
 * or the scratch directory (test_tmp). Returns buf; a path that does not
 * fit is a failed check and an empty string. */
char *test_build_path(char *buf, size_t cap, const char *rel);
char *test_tmp_path(char *buf, size_t cap, const char *rel);

/* Runs fn as the current test and prints "name: fn: ok" or how many of
 * its checks failed. */
void test_run_(const char *name, void (*fn)(void));
#define test_run(fn) test_run_(#fn, fn)

/* The tally, and the exit status (0, 1, or TEST_SKIP after test_skip). */
int test_done(void);
/* Says why the test cannot run here (a missing prerequisite, nothing
 * else); returns TEST_SKIP for main to return. */
int test_skip(const char *why);

/* ---- the checks: each counts one check, reports and counts a failure,
 * and returns whether it passed ---- */
int test_check_(const char *file, int line, int ok, const char *expr);
int test_eq_u_(const char *file, int line, const char *ea, const char *eb,
               unsigned long long a, unsigned long long b);
int test_eq_i_(const char *file, int line, const char *ea, const char *eb,
               long long a, long long b);
int test_eq_d_(const char *file, int line, const char *ea, const char *eb,
               double a, double b);
int test_eq_s_(const char *file, int line, const char *ea, const char *eb,
               const char *a, const char *b);
int test_near_(const char *file, int line, const char *ea, const char *eb,
               double a, double b, double tol);

#define check(cond) test_check_(__FILE__, __LINE__, !!(cond), #cond)

/* (a) + 0 turns arrays into pointers and small integers into int, so
 * that one type name covers each family. */
#define test_eq_fn_(a)                                                         \
	_Generic((a) + 0,                                                      \
	    char *: test_eq_s_,                                                \
	    const char *: test_eq_s_,                                          \
	    float: test_eq_d_,                                                 \
	    double: test_eq_d_,                                                \
	    long double: test_eq_d_,                                           \
	    int: test_eq_i_,                                                   \
	    long: test_eq_i_,                                                  \
	    long long: test_eq_i_,                                             \
	    default: test_eq_u_)
#define check_eq(a, b) test_eq_fn_(a)(__FILE__, __LINE__, #a, #b, (a), (b))

#define check_near(a, b, tol)                                                  \
	test_near_(__FILE__, __LINE__, #a, #b, (double)(a), (double)(b),       \
	           (double)(tol))

#endif
