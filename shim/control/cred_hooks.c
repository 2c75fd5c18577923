/*
 * cred_hooks.c - setuid, setreuid, setresuid: a process started as root
 * that becomes another user for good (MariaDB --user, web server workers)
 * moves its control page into that user's directory first (control.h), so
 * `mallock ctl` works for root and for that user alike, and gives its trace
 * file to that user, so that the process can still reopen it by its path
 * when the host closes every fd after the drop (writer.c).
 *
 * Invariant: the real call is always made, with the caller's arguments and
 * errno; the move is attempted only while the process is still root, and
 * only for a change of the real and effective uid together (a temporary
 * seteuid() switch is not a drop). Nothing is recorded.
 */
#include "control.h"
#include "hook.h"
#include "writer.h"

#include <errno.h>
#include <unistd.h>

/* The page moves when euid 0 becomes `to` (not 0, not "unchanged"). */
static void before_drop(uid_t to)
{
	if (to == (uid_t)-1 || to == 0 || geteuid() != 0)
		return;
	int saved = errno;
	tls_t *t = &shim_tls;
	uint8_t gate = gate_hold(t);
	ctl_cred_drop((uint32_t)to);
	writer_cred_drop((uint32_t)to);
	gate_restore(t, gate);
	errno = saved;
}

static int no_real(void)
{
	errno = ENOSYS;
	return -1;
}

HOOK_EXPORT int setuid(uid_t uid)
{
	if (unlikely(!real_usable() || !real.setuid))
		return no_real();
	before_drop(uid);
	return real.setuid(uid);
}

HOOK_EXPORT int setreuid(uid_t ruid, uid_t euid)
{
	if (unlikely(!real_usable() || !real.setreuid))
		return no_real();
	if (ruid == euid)
		before_drop(euid);
	return real.setreuid(ruid, euid);
}

HOOK_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
	if (unlikely(!real_usable() || !real.setresuid))
		return no_real();
	if (ruid == euid)
		before_drop(euid);
	return real.setresuid(ruid, euid, suid);
}
