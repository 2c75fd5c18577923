/*
 * inject.h - calls a function inside another running process with ptrace,
 * without gdb (`mallock attach`, `mallock detach`).
 *
 * One thread of the target is seized and interrupted; its registers and its
 * whole extended FPU state (XSAVE area, at the size the kernel reports) are
 * saved; the call runs on that thread, below its stack's red zone, and
 * returns to address 0, where the fault stops it; everything is then
 * restored, and a system call the thread was blocked in restarts. The other
 * threads keep running, as they do under gdb's default scheduling.
 *
 * x86-64 Linux only. gdb is not used because gdb 13 cannot restore the
 * registers of a thread on kernels whose XSAVE area is larger than gdb
 * knows ("Couldn't write extended state status: Bad address"), which leaves
 * the target aborting; and so that no debugger parses the target's files
 * with the operator's privileges.
 */
#ifndef MALLOCK_INJECT_H
#define MALLOCK_INJECT_H

#include <stddef.h>
#include <sys/types.h>

/* What inj_dlcall() returns besides 0 (done). */
enum { INJ_FAILED = 1, INJ_REFUSED = 2 };

/*
 * In process pid: h = dlopen(lib, RTLD_NOW|RTLD_NODELETE), then
 * fn = dlsym(h, sym), then answer = fn(sarg, iarg) (a function returning a
 * NUL-ended string; sarg may be NULL). The answer is copied to answer
 * (at most n bytes, NUL-ended). Returns 0, INJ_FAILED (err says why: the
 * call failed, dlopen's own error, the process exited) or INJ_REFUSED (the
 * kernel refused ptrace). err gets one line without the program's name.
 * timeout_s bounds the whole call.
 */
int inj_dlcall(pid_t pid, const char *lib, const char *sym, const char *sarg,
               long iarg, int timeout_s, char *answer, size_t n, char *err,
               size_t en);

#endif
