/*
 * main.c - the `mallock` command: dispatches to a subcommand (cli.h).
 */
#include "cli.h"
#include "trace_format.h"

#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

/* clang-format off */
#define SUBCOMMANDS(X)                                                         \
	X(record, "run a program with the recorder preloaded")                 \
	X(report, "analyse traces: findings, locks, threads")                  \
	X(diff, "compare two traces (before/after a fix)")                     \
	X(compress, "compress finished traces (zstd, chunk by chunk)")         \
	X(dump, "print every record of a trace, one per line")                 \
	X(ctl, "start/stop recording in a running process (server.md)")        \
	X(top, "a live view of a process's contention (mallock-top.md)")       \
	X(attach, "inject the recorder into a running process (server.md)")    \
	X(detach, "undo an attach: the process runs on as before")
/* clang-format on */

static void usage(FILE *o)
{
	fputs("usage: mallock COMMAND [ARGS]\n\ncommands:\n", o);
#define SUB_USAGE_(name, doc) fprintf(o, "  %-8s %s\n", #name, doc);
	SUBCOMMANDS(SUB_USAGE_)
#undef SUB_USAGE_
	fputs("\n`mallock help COMMAND` (or `mallock COMMAND --help`) for a "
	      "command's options;\n`mallock --version`.\n",
	      o);
}

int main(int argc, char **argv)
{
	/* Set-user-ID or set-group-ID (or file capabilities): `--shim PATH`
	 * and `record` would run any code with those privileges. */
	if (getauxval(AT_SECURE)) {
		fputs("mallock: refusing to run set-user-ID, set-group-ID or "
		      "with file capabilities (AT_SECURE): install it as a "
		      "plain executable\n",
		      stderr);
		return 1;
	}
	if (argc < 2) {
		fputs("mallock: missing COMMAND\ntry 'mallock --help'\n",
		      stderr);
		return CLI_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	/* `mallock` reads and writes files and runs programs for its user:
	 * installed set-ID it would do so with someone else's rights. */
	if (getuid() != geteuid() || getgid() != getegid()) {
		fputs("mallock: refusing to run set-user-ID or set-group-ID\n",
		      stderr);
		return 1;
	}
#define SUB_DISPATCH_(name, doc)                                               \
	if (strcmp(cmd, #name) == 0)                                           \
		return cmd_##name(argc - 1, argv + 1);
	SUBCOMMANDS(SUB_DISPATCH_)
#undef SUB_DISPATCH_
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V") ||
	    !strcmp(cmd, "version")) {
		printf("mallock %s (trace format %d.%d)\n", MALLOCK_VERSION,
		       FMT_VERSION_MAJOR, FMT_VERSION_MINOR);
		return 0;
	}
	/* `mallock help --man CMD`: CMD's options in groff, for its man
	 * page (packaging/man.cmake). */
	if (!strcmp(cmd, "help") && argc == 4 && !strcmp(argv[2], "--man")) {
		cli_help_man = 1;
		argv[2] = argv[3];
		argc = 3;
	}
	if (!strcmp(cmd, "help") && argc == 3) {
		/* `mallock help CMD`: CMD's --help. */
		char *hargv[] = {argv[2], "--help", NULL};
		cmd = argv[2];
#define SUB_HELP_(name, doc)                                                   \
	if (strcmp(cmd, #name) == 0)                                           \
		return cmd_##name(2, hargv);
		SUBCOMMANDS(SUB_HELP_)
#undef SUB_HELP_
		fprintf(stderr,
		        "mallock help: unknown command '%s'\ntry 'mallock "
		        "--help'\n",
		        cmd);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(cmd, "help") && argc > 3) {
		fprintf(stderr,
		        "mallock help: extra operand '%s'\ntry 'mallock "
		        "--help'\n",
		        argv[3]);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") ||
	    !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "mallock: unknown command '%s'\ntry 'mallock --help'\n",
	        cmd);
	return CLI_EXIT_USAGE;
}
