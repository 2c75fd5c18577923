/*
 * process.h - the process-level records that open a trace (PROCESS, MODULE
 * for every loaded object, THREAD_NAME of the initial thread, queued NOTEs),
 * and the output file's creation (path expansion, child naming).
 */
#ifndef MALLOCK_SHIM_PROCESS_H
#define MALLOCK_SHIM_PROCESS_H

#include <stdint.h>

extern uint64_t g_tsc_hz; /* estimated at init; 0 if unknown */
/* The trace file's absolute path, once created ("" before; a forked child's
 * own path after its first write). For the control status file. */
extern char g_trace_path[1100];
/* The same, as a function (control.c: a child's status names its own
 * trace). */
const char *process_trace_path(void);

/*
 * Creates the trace file for this process. child: a forked or exec'd
 * descendant (".<pid>" is appended when the pattern has no %p). The output
 * directory is fixed at the first call in a process image (an O_PATH fd
 * and the working directory then): a forked child's file goes there even
 * after a chdir, a chroot or the host closing every fd. An existing
 * file or symlink at the path is never opened: the process then writes to
 * "<path>.<pid>" (or "<path>.<pid>.<n>") and says so. Returns 0, or -1 after
 * a warning (recording must then stay off).
 */
int process_open_output(int child);

/* At exit, after the final flush: removes this image's trace file if it
 * recorded nothing (writer_unrecorded: it never had a recording window)
 * and no warning was given (the file would be the only place
 * that says why). A daemonizing launcher that ran paused leaves no empty
 * trace. */
void process_drop_unrecorded(void);

/* Writes PROCESS, MODULEs, the calling thread's THREAD_NAME and the queued
 * notes as the file's first (tid 0) chunks. Caller holds the gate. */
void process_write_header(void);

#endif
