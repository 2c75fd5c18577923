/*
 * compress.c - `mallock compress [--level=N] [-o OUT] TRACE...`: the
 * command over trace_compress.h's engine.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "trace_compress.h"
#include "util.h"

#include <getopt.h> /* optarg, optind */
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* The range's figures are trace_compress.h's TC_LEVEL_*. */
static const cli_opt_t compress_opts[] = {
    {"level", 256, 1, "N", "zstd level 1..19 (default 3)"},
    {"output", 'o', 1, "OUT",
     "write a compressed copy to OUT (one TRACE) and\nleave TRACE as it "
     "is; allowed while a process\nstill writes it"},
    {"help", 'h', 0, NULL, "this help"},
    {0}};

static const cli_cmd_t compress_cli = {
    .name = "compress",
    .usage = "[--level=N] [-o OUT] TRACE...",
    .outro = "Each TRACE is rewritten in place (a temporary file beside it, "
             "then\nrename), chunk by chunk: what `mallock report` reads "
             "is unchanged.\n",
    .opts = compress_opts,
    .operands = "TRACE",
    .min_operands = 1,
    .max_operands = -1,
};

_Static_assert(TC_LEVEL_MIN == 1 && TC_LEVEL_MAX == 19 && TC_LEVEL_DEFAULT == 3,
               "compress_opts' help gives the levels");

int cmd_compress(int argc, char **argv)
{
	int level = TC_LEVEL_DEFAULT, c;
	const char *out = NULL;
	cli_t cli = {.cmd = &compress_cli};
	while ((c = cli_next(&cli, argc, argv)) != -1) {
		long v;
		if (c == CLI_DONE)
			return cli.status;
		if (c == 'o')
			out = optarg;
		else if (c == 256 && cli_number("compress", "--level", optarg,
		                                TC_LEVEL_MIN, TC_LEVEL_MAX, &v))
			return CLI_EXIT_USAGE;
		else if (c == 256)
			level = (int)v;
	}
	int i = optind;
	if (out && argc - i != 1)
		return cli_usage_error("compress",
		                       "-o takes one TRACE, not "
		                       "%d",
		                       argc - i);
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
