/*
 * fd_hooks.c - closefrom and close_range (and syscall(SYS_close_range),
 * through futex_hook.c): a daemon that closes every descriptor it did not
 * open (varnish's manager after dropping privileges, many at start) closes
 * all of them but the shim's own (prim_fds_kept: the trace, its output
 * directory, the control directory and page), which stay open at their high
 * numbers. Without this the trace is reopened by its path at the next
 * write, which fails when the process has meanwhile become a user that
 * cannot open it (a seteuid() switch leaves the root-owned file behind).
 *
 * Invariants:
 * - Every other descriptor of the range is closed, as the call asked, and
 *   the return value and errno are those the host would see (the range is
 *   closed in pieces around the shim's fds with the close_range system
 *   call; a call that fails in the first piece, e.g. ENOSYS on a kernel
 *   before 5.9 or EINVAL, is made again unchanged through the real
 *   function, so the host gets its own result and the shim's fds may go:
 *   the writer then reopens the trace by path as before).
 * - CLOSE_RANGE_CLOEXEC only marks descriptors close-on-exec, which the
 *   shim's already are: such a call is passed through unchanged.
 * - A number of ours the host has reused (dup2 onto it) is the host's: it
 *   is closed like any other (prim_fds_kept checks each fd's identity).
 * - Nothing is recorded; only fstat and the close_range system call.
 */
#include "hook.h"
#include "prim.h"
#include "real.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static long sys_close_range(unsigned first, unsigned last, unsigned flags)
{
	return real.syscall(SYS_close_range, (long)first, (long)last,
	                    (long)flags, 0L, 0L, 0L);
}

/* Closes [first, last] but the shim's fds. Returns 0, 1 (the first piece
 * failed: nothing was closed, the caller makes the host's call unchanged)
 * or -1 with errno (a later piece failed). */
static int close_around(unsigned first, unsigned last, unsigned flags)
{
	int keep[PRIM_KEEP_N];
	int n = prim_fds_kept(keep);
	unsigned lo = first;
	int pieces = 0;
	for (int i = 0; i < n && lo <= last; i++) {
		unsigned k = (unsigned)keep[i];
		if (k < lo || k > last)
			continue;
		if (k > lo) {
			if (sys_close_range(lo, k - 1, flags) != 0)
				return pieces ? -1 : 1;
			pieces++;
		}
		if (k == ~0u)
			return 0;
		lo = k + 1;
	}
	if (lo > last)
		return 0;
	if (sys_close_range(lo, last, flags) != 0)
		return pieces ? -1 : 1;
	return 0;
}

long fd_close_range_syscall(long first, long last, long flags)
{
	int saved = errno;
	if (!(flags & CLOSE_RANGE_CLOEXEC) && first >= 0 && first <= last &&
	    (unsigned long)last <= ~0u) {
		int r = close_around((unsigned)first, (unsigned)last,
		                     (unsigned)flags);
		if (r == 0)
			errno = saved;
		if (r <= 0)
			return r;
	}
	return sys_close_range((unsigned)first, (unsigned)last,
	                       (unsigned)flags);
}

HOOK_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	if (unlikely(!real_usable() || !real.close_range)) {
		errno = ENOSYS;
		return -1;
	}
	int saved = errno;
	if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last) {
		int r = close_around(first, last, (unsigned)flags);
		if (r == 0)
			errno = saved;
		if (r <= 0)
			return r;
	}
	return real.close_range(first, last, flags);
}

HOOK_EXPORT void closefrom(int lowfd)
{
	if (unlikely(!real_usable() || !real.closefrom))
		return;
	int saved = errno;
	if (lowfd >= 0 && close_around((unsigned)lowfd, ~0u, 0) == 0) {
		errno = saved;
		return;
	}
	real.closefrom(lowfd);
}
