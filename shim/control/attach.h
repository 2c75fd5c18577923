/*
 * attach.h - the shim loaded into a process that is already running
 * (`mallock attach PID`, analyzer/cmd/attach.c; docs/server.md, "Attach").
 *
 * The attach command has gdb call dlopen() on libmallock.so inside the
 * target, then mallock_attach_impl() (attach.c). Loaded that way the shim
 * is not in the global symbol scope, so none of its hooks is called until
 * mallock_attach_impl() rewrites the GOT slots of the loaded modules to
 * point at them.
 *
 * Invariants:
 * - A shim loaded after libc (dlopen, not LD_PRELOAD) does not start from
 *   its constructor: it stays inert (g_off keeps SHIM_OFF_INIT, no file is
 *   created) until mallock_attach_impl() starts it with its output path.
 * - Attach happens at most once per process, and never into a process
 *   whose shim was preloaded (that one is controlled by `mallock ctl`).
 * - Every slot redirected is remembered (slot, old value, hook) until
 *   mallock_detach_impl() gives each back, if it still holds the hook.
 *   The library stays mapped (RTLD_NODELETE): a hook still running in
 *   another thread at detach returns normally, unrecorded.
 * - Modules loaded after the attach are redirected by the first flush
 *   that sees the loader's count of loaded objects (dlpi_adds) grow
 *   (attach_after_flush, the one call site: writer_flush), once ld.so has
 *   relocated them; their calls before that flush are not recorded.
 */
#ifndef MALLOCK_SHIM_ATTACH_H
#define MALLOCK_SHIM_ATTACH_H

/* Nonzero while and after mallock_attach_impl() started the shim: init.c
 * then applies attach_config(), does not set MALLOCK_PARENT_PID (setenv in a
 * running multi-threaded process is unsafe, and children do not inherit the
 * shim anyway) and skips the statically-linked-allocator check (its test,
 * "malloc is not ours in the global scope", is always true here). */
extern int g_attached;

/* Nonzero when the shim was loaded after libc (dlopen'ed into a running
 * process) rather than preloaded. Allocation-free (dl_iterate_phdr). */
int attach_loaded_late(void);

/* At init, right after config_load(): the output path and duration given
 * to mallock_attach_impl() replace MALLOCK_OUTPUT and MALLOCK_DURATION. */
void attach_config(void);

/*
 * Exported, called by gdb inside the target (the name is mallock_*, so the
 * exported-symbol test accepts it). Starts the shim with the trace at
 * output (a pattern as MALLOCK_OUTPUT: %p, %e, %%; absolute paths are best:
 * the target's working directory is not the caller's) and a recording
 * window of duration_s seconds (0: no limit), then redirects the GOT slots.
 * Returns a static one-line message for the caller to print:
 *   "ok PATCHED MODULES SKIPPED TRACE_PATH[\tDETAIL]" or "error WHY".
 */
const char *mallock_attach_impl(const char *output, int duration_s);

/*
 * Exported, called by gdb (`mallock detach PID`): gives every redirected
 * slot its old value back, writes the rest of the trace and its END, and
 * stops recording for good (the control signal's handler and the status
 * file are removed). Returns "ok RESTORED CHANGED TRACE_PATH" or
 * "error WHY" (not attached, already detached).
 */
const char *mallock_detach_impl(void);

/* After a flush (writer_flush; gate BUSY): when objects were loaded since
 * the last look, redirects their slots as the attach did, and names them
 * in NOTEs. A no-op unless attached and not detached; never waits (another
 * thread patching: the next flush looks again). */
void attach_after_flush(void);
/* Nonzero in a process the shim was attached to and not detached from:
 * attach_after_flush() may have work. */
int attach_active(void);

#endif
