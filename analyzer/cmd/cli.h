/*
 * cli.h - the `mallock` subcommands. main.c dispatches `mallock NAME ARGS`
 * to cmd_NAME(argc, argv) with argv[0] = NAME. Each returns the process
 * exit status: 0 success, 1 usage or I/O error, 2 a file that is not a
 * mallock trace (or of an unsupported version).
 */
#ifndef MALLOCK_CLI_H
#define MALLOCK_CLI_H

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

#endif
