/*
 * note.c - the warning channel (note.h): stderr line plus queued NOTE text.
 */
#include "note.h"

#include "trace_format.h"
#include "config.h"
#include "prim.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static struct {
	_Atomic int ready; /* 1 when text is complete */
	unsigned level;
	size_t len;
	char text[NOTE_LEN];
} notes[NOTE_MAX];
static _Atomic unsigned note_next;
static _Atomic unsigned note_warns; /* warnings since start or fork */
static unsigned note_taken;

static void note_vadd(unsigned level, int print, const char *fmt, va_list ap)
{
	char line[NOTE_LEN + 16];
	int n = vsnprintf(line + 9, NOTE_LEN, fmt, ap);
	if (n < 0)
		return;
	size_t len = (size_t)n < NOTE_LEN ? (size_t)n : NOTE_LEN - 1;
	if (print) {
		memcpy(line, "mallock: ", 9);
		line[9 + len] = '\n';
		prim_stderr(line, 9 + len + 1);
	}
	unsigned i = atomic_fetch_add(&note_next, 1);
	if (i >= NOTE_MAX)
		return;
	notes[i].level = level;
	notes[i].len = len;
	memcpy(notes[i].text, line + 9, len);
	atomic_store_explicit(&notes[i].ready, 1, memory_order_release);
}

void shim_warn(const char *fmt, ...)
{
	va_list ap;
	atomic_fetch_add(&note_warns, 1);
	va_start(ap, fmt);
	note_vadd(FMT_NOTE_WARN, 1, fmt, ap);
	va_end(ap);
}

void shim_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	note_vadd(FMT_NOTE_INFO, g_cfg.verbose >= 1, fmt, ap);
	va_end(ap);
}

void note_warnings(char *out, size_t cap, const char *prefix)
{
	unsigned end = atomic_load(&note_next);
	if (end > NOTE_MAX)
		end = NOTE_MAX;
	size_t n = 0, pl = strlen(prefix);
	for (unsigned i = 0; i < end && cap; i++) {
		if (!atomic_load_explicit(&notes[i].ready,
		                          memory_order_acquire) ||
		    notes[i].level != FMT_NOTE_WARN)
			continue;
		if (n + pl + notes[i].len + 1 > cap)
			break;
		memcpy(out + n, prefix, pl);
		memcpy(out + n + pl, notes[i].text, notes[i].len);
		n += pl + notes[i].len;
	}
	if (cap)
		out[n] = 0;
}

void note_take(void (*fn)(unsigned, const char *, size_t, void *), void *arg)
{
	unsigned end = atomic_load(&note_next);
	if (end > NOTE_MAX)
		end = NOTE_MAX;
	while (note_taken < end &&
	       atomic_load_explicit(&notes[note_taken].ready,
	                            memory_order_acquire)) {
		fn(notes[note_taken].level, notes[note_taken].text,
		   notes[note_taken].len, arg);
		note_taken++;
	}
}

void note_reset(void)
{
	for (unsigned i = 0; i < NOTE_MAX; i++)
		atomic_store(&notes[i].ready, 0);
	atomic_store(&note_next, 0);
	atomic_store(&note_warns, 0);
	note_taken = 0;
}

unsigned note_warning_count(void)
{
	return atomic_load(&note_warns);
}
