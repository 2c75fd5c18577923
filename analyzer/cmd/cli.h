/*
 * cli.h - the `mallock` subcommands. main.c dispatches `mallock NAME ARGS`
 * to cmd_NAME(argc, argv) with argv[0] = NAME. Each returns the process
 * exit status, one rule for all (docs/mallock.md): 0 success, 1 a failure
 * while doing the work (I/O, no such process), 2 refused before any work:
 * a usage error (CLI_EXIT_USAGE: an unknown option, a missing or bad
 * value, a missing or extra operand), a file that is not a mallock trace
 * (or of an unsupported version), a process ptrace may not attach to.
 * `record` passes its command's status through (its own: record.c).
 *
 * Every command parses with cli_next over one option table, cli_cmd_t,
 * which also writes its --help (cli_help): the two cannot drift.
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
/* mallock top [options] (PID | --attach PID | -- CMD) (top.c) */
int cmd_top(int argc, char **argv);
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

/* The exit status of a usage error, in every command. */
#define CLI_EXIT_USAGE 2
/* Linux's largest pid_max (PID_MAX_LIMIT). */
#define CLI_PID_MAX 4194304L

/* One option of a command. */
typedef struct cli_opt {
	const char *name;  /* the long name, without "--"; or NULL */
	int key;           /* cli_next's answer: the short letter, or a
	                      value >= 256 for a long-only option; 'h' is
	                      --help, handled by cli_next */
	int arg;           /* 1: it takes a value (--name=V, --name V, -kV) */
	const char *value; /* the value's name in the help ("N", "FILE") */
	const char *help;  /* what it does; "\n" continues on the next line */
} cli_opt_t;

/* One command: its synopsis, options and operands. */
typedef struct cli_cmd {
	const char *name;      /* "report" */
	const char *usage;     /* after "mallock NAME ": "[options] TRACE...";
	                          "\n" separates more synopses */
	const char *intro;     /* text between synopsis and options, or NULL */
	const char *outro;     /* text after the options, or NULL */
	const cli_opt_t *opts; /* ends with an entry of no name and no key */
	const char *operands;  /* what a missing operand is called: "TRACE" */
	int min_operands;
	int max_operands; /* -1: no limit */
	int in_order;     /* 1: the first operand ends the options (getopt's
	                     '+'), so options after it go to a program */
} cli_cmd_t;

/* A parse in progress: {.cmd = &table}. */
typedef struct cli {
	const cli_cmd_t *cmd;
	int started;
	int status; /* after CLI_DONE: what the command returns */
} cli_t;

/* cli_next's answer when the command must return p->status now: --help
 * was printed (0) or a usage error was (CLI_EXIT_USAGE). */
#define CLI_DONE (-2)

/* The next option of argv (getopt_long: optarg holds its value): its key;
 * -1 at the end of the options, when the operands are argv[optind..] and
 * their count is within the table's; or CLI_DONE. Not reentrant. */
int cli_next(cli_t *p, int argc, char **argv);

/* c's --help text, to o. */
void cli_help(const cli_cmd_t *c, FILE *o);

/* Nonzero: --help writes c's options as its man page's OPTIONS list in
 * groff (cli_man) instead of the help (`mallock help --man CMD`, run at
 * build time by packaging/man.cmake). */
extern int cli_help_man;

/* c's options, one .TP paragraph each (label, then its help joined into
 * one line), to o. */
void cli_man(const cli_cmd_t *c, FILE *o);

/* "mallock CMD: " fmt and "try 'mallock CMD --help'" on stderr. Returns
 * CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A value that is not one of those allowed: "mallock CMD: OPT 'VALUE':
 * WANT" and the hint. Returns CLI_EXIT_USAGE. */
int cli_bad_value(const char *cmd, const char *opt, const char *value,
                  const char *want);

/* s as a whole decimal number in min..max into *out: 0; else -1 after the
 * usage error "mallock CMD: OPT 'S': not a whole number from MIN to MAX". */
int cli_number(const char *cmd, const char *opt, const char *s, long min,
               long max, long *out);

#endif
