/*
 * compress.c - `mallock compress [--level N] [-o OUT] TRACE...`: the
 * command over trace_compress.h's engine.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "trace_compress.h"
#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static void compress_usage(FILE *f)
{
	fprintf(f,
	        "usage: mallock compress [--level N] [-o OUT] TRACE...\n"
	        "  --level N   zstd level %d..%d (default %d)\n"
	        "  -o OUT      write a compressed copy to OUT (one TRACE) and "
	        "leave\n"
	        "              TRACE as it is; allowed while a process still "
	        "writes it\n"
	        "Each TRACE is rewritten in place (a temporary file beside it, "
	        "then\n"
	        "rename), chunk by chunk: what `mallock report` reads is "
	        "unchanged.\n",
	        TC_LEVEL_MIN, TC_LEVEL_MAX, TC_LEVEL_DEFAULT);
}

int cmd_compress(int argc, char **argv)
{
	int level = TC_LEVEL_DEFAULT, i = 1;
	const char *out = NULL;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			compress_usage(stdout);
			return 0;
		} else if (strcmp(a, "--level") == 0 && i + 1 < argc) {
			long v;
			if (cli_number("compress", "--level", argv[++i],
			               TC_LEVEL_MIN, TC_LEVEL_MAX, &v))
				return CLI_EXIT_BAD_VALUE;
			level = (int)v;
		} else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
			out = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr,
			        "mallock compress: unknown or incomplete "
			        "option '%s'\n",
			        a);
			compress_usage(stderr);
			return 1;
		} else {
			break;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "mallock compress: no trace given\n");
		compress_usage(stderr);
		return 1;
	}
	if (out && argc - i != 1) {
		fprintf(stderr, "mallock compress: -o takes one TRACE\n");
		return 1;
	}
	tc_signals();
	int status = 0;
	for (; i < argc; i++) {
		char err[PATH_MAX + 160];
		tc_result_t r;
		double t0 = mono_seconds();
		int rc = tc_compress(argv[i], out, level, &r, err, sizeof err);
		if (rc) {
			fprintf(stderr, "mallock compress: %s: %s\n", argv[i],
			        err);
			if (rc > status)
				status = rc;
			continue;
		}
		if (tc_say("mallock compress: ", out ? out : argv[i], &r,
		           mono_seconds() - t0) &&
		    !status)
			status = 1;
	}
	return status;
}
