/*
 * cli.h - the `mallock` subcommands. main.c dispatches `mallock NAME ARGS`
 * to cmd_NAME(argc, argv) with argv[0] = NAME. Each returns the process
 * exit status: 0 success, 1 usage or I/O error, 2 a file that is not a
 * mallock trace (or of an unsupported version).
 */
#ifndef MALLOCK_CLI_H
#define MALLOCK_CLI_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* mallock record [options] -- CMD ARGS... (record.c) */
int cmd_record(int argc, char **argv);
/* mallock report [options] TRACE... (report.c) */
int cmd_report(int argc, char **argv);
/* mallock diff [options] BEFORE AFTER (diff.c) */
int cmd_diff(int argc, char **argv);
/* mallock compress [--level N] [-o OUT] TRACE... (trace_compress.c) */
int cmd_compress(int argc, char **argv);
/* mallock dump [--merged] TRACE (dump.c) */
int cmd_dump(int argc, char **argv);
/* mallock ctl start|stop|status PID (ctl.c) */
int cmd_ctl(int argc, char **argv);
/* mallock attach [-o FILE] [--duration S] PID (attach.c); its exit status 2
 * means "ptrace refused", not a file problem. */
int cmd_attach(int argc, char **argv);
int cmd_detach(int argc, char **argv);

/* Where libmallock.so is, relative to the directory of the `mallock`
 * executable: installed (the shim is a preload library, not one to link
 * against, so it lives in a directory of its own), and in the build tree. */
#define MALLOCK_SHIM_INSTALLED "../lib/mallock/libmallock.so"
#define MALLOCK_SHIM_BUILD "../lib/libmallock.so"
/* The first of those that exists, resolved, into out (n bytes): 0, or -1
 * (record.c). */
int find_shim(char *out, size_t n);

/* The exit status of a bad option value (a number that is not one, or out
 * of range) in report, record and compress; attach, detach and ctl exit 1,
 * their 2 meaning "ptrace refused". */
#define CLI_EXIT_BAD_VALUE 2
/* Linux's largest pid_max (PID_MAX_LIMIT). */
#define CLI_PID_MAX 4194304L

/* s as a whole decimal number in min..max into *out: 0; else -1 after one
 * line on stderr, "mallock CMD: OPT 'S': not a whole number from MIN to
 * MAX". Inline: report.c is also in the fuzz target's library. */
static inline int cli_number(const char *cmd, const char *opt, const char *s,
                             long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < min || v > max) {
		fprintf(stderr,
		        "mallock %s: %s '%s': not a whole number from %ld to "
		        "%ld\n",
		        cmd, opt, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

#endif
