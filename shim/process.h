/*
 * process.h - the process-level records that open a trace (PROCESS, MODULE
 * for every loaded object, THREAD_NAME of the initial thread, queued NOTEs),
 * and the output file's creation (path expansion, child naming).
 */
#ifndef MALLOCK_SHIM_PROCESS_H
#define MALLOCK_SHIM_PROCESS_H

#include <stdint.h>

extern uint64_t g_tsc_hz; /* estimated at init; 0 if unknown */
/* The trace file's path, once created ("" before; a forked child's own path
 * after its first write). For the control status file. */
extern char g_trace_path[1100];

/*
 * Creates the trace file for this process. child: a forked or exec'd
 * descendant (".<pid>" is appended when the pattern has no %p). An existing
 * file or symlink at the path is never opened: the process then writes to
 * "<path>.<pid>" (or "<path>.<pid>.<n>") and says so. Returns 0, or -1 after
 * a warning (recording must then stay off).
 */
int process_open_output(int child);

/* Writes PROCESS, MODULEs, the calling thread's THREAD_NAME and the queued
 * notes as the file's first (tid 0) chunks. Caller holds the gate. */
void process_write_header(void);

#endif
