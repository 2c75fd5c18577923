/*
 * check.h - the in-repo test harness: CHECK() records a failure with its
 * file and line and goes on; check_done() prints the tally and returns the
 * exit status CTest reads (0 when every check passed).
 */
#ifndef MALLOCK_CHECK_H
#define MALLOCK_CHECK_H

#include <stdio.h>

static int check_failures_, check_total_;

#define CHECK(cond)                                                            \
	do {                                                                   \
		check_total_++;                                                \
		if (!(cond)) {                                                 \
			check_failures_++;                                     \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
			        __LINE__, #cond);                              \
		}                                                              \
	} while (0)

#define CHECK_EQ_U(a, b)                                                       \
	do {                                                                   \
		unsigned long long a_ = (unsigned long long)(a);               \
		unsigned long long b_ = (unsigned long long)(b);               \
		check_total_++;                                                \
		if (a_ != b_) {                                                \
			check_failures_++;                                     \
			fprintf(                                               \
			    stderr,                                            \
			    "%s:%d: CHECK failed: %s == %s (%llu != %llu)\n",  \
			    __FILE__, __LINE__, #a, #b, a_, b_);               \
		}                                                              \
	} while (0)

static inline int check_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_total_,
	       check_failures_);
	return check_failures_ ? 1 : 0;
}

#endif
