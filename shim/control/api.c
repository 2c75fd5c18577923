/*
 * api.c - the annotation API of include/mallock.h: mallock_lock_name_impl
 * (LOCK_NAME) and mallock_recording_impl (pause/resume, MARK records).
 *
 * Both work while recording is paused (naming a lock then is not lost); both
 * are no-ops once the shim is stopped or inert.
 */
#include "control.h" /* the window API: ctl_window_started, _stopped */
#include "hook.h"

#include <string.h>

/* Like hook_enter(), ignoring the pause bit. */
static int api_enter(tls_t *t)
{
	if (atomic_load(&g_off) & ~(SHIM_OFF_PAUSED | SHIM_OFF_CTL))
		return 0;
	return gate_take(t);
}

HOOK_EXPORT void mallock_lock_name_impl(const void *lock, const char *name,
                                        int queue_like)
{
	tls_t *t = &shim_tls;
	if (!lock || !name || !api_enter(t))
		return;
	lock_ent_t *e = lockmap_get(t, lock, FMT_KIND_MUTEX);
	if (e) {
		uint8_t body[2 * FMT_VARINT_MAX + 64 + FMT_VARINT_MAX],
		    *p = body;
		p = fmt_put_u(p, atomic_load(&e->id));
		p = fmt_put_u(p, queue_like ? FMT_NAMEF_QUEUE : 0);
		p = fmt_put_str(p, name, strnlen(name, 63));
		writer_meta(t, FMT_LOCK_NAME, body, (size_t)(p - body));
	}
	hook_leave(t);
}

HOOK_EXPORT int mallock_recording_impl(int on)
{
	tls_t *t = &shim_tls;
	int prev = !(atomic_load(&g_off) & SHIM_OFF_PAUSED);
	if (on && !prev) {
		if (atomic_load(&g_off) & SHIM_OFF_CAPPED)
			return prev; /* MALLOCK_MAX_BYTES: off for good */
		/* The window's epoch and deadline (control.h); the MARK's
		 * time is read before any event of the window. */
		uint64_t tsc = prim_tsc();
		ctl_window_started(tsc);
		atomic_fetch_and(&g_off, ~SHIM_OFF_PAUSED);
		if (api_enter(t)) {
			rec_u(t, FMT_MARK, tsc, FMT_MARK_RESUME);
			hook_leave(t);
		}
	} else if (!on && prev) {
		if (api_enter(t)) {
			rec_u(t, FMT_MARK, prim_tsc(), FMT_MARK_PAUSE);
			hook_leave(t);
		}
		atomic_fetch_or(&g_off, SHIM_OFF_PAUSED);
		ctl_window_stopped();
	}
	return prev;
}
