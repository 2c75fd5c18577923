/*
 * load.c - the pipeline of one trace (see load.h).
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "load.h"

#include "aggregate.h"
#include "classes.h"
#include "progress.h"
#include "lock_names.h"
#include "reader.h"
#include "symbols.h"
#include "thresholds.h"
#include "util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

const char *truncation_text(const model_t *m, char *buf, size_t len)
{
	const reader_info_t *in = &m->info;
	if (!in->truncated) {
		buf[0] = 0;
		return buf;
	}
	if (in->chunks_total)
		snprintf(buf, len,
		         "trace truncated at byte %llu: %u of %u chunks read "
		         "(%s)",
		         (unsigned long long)in->truncated_at, in->chunks,
		         in->chunks_total, in->why);
	else
		snprintf(buf, len,
		         "trace truncated at byte %llu: %u chunks read (%s)",
		         (unsigned long long)in->truncated_at, in->chunks,
		         in->why);
	return buf;
}

/* The analyzer's own remarks on how the trace was recorded: sampling
 * (counts are scaled), recording windows (holds cut at the marks). */
static void window_notes(model_t *m)
{
	char t[512];
	/* `mallock attach` notes "attached: ..." (shim/control/attach.c). */
	for (size_t i = 0; i < m->nnote; i++)
		if (strncmp(m->note[i].text, "attached:", 9) == 0)
			m->attached = true;
	int n;
	if (m->sample_bytes) {
		n = snprintf(
		    t, sizeof t,
		    "allocations were sampled, one per %llu bytes on "
		    "average (MALLOCK_SAMPLE_BYTES): allocation and "
		    "free counts and bytes are estimates scaled from "
		    "%llu sampled allocations; allocator calls inside "
		    "critical sections (%llu unsampled) and lock events "
		    "are complete",
		    (unsigned long long)m->sample_bytes,
		    (unsigned long long)m->tot.sampled_allocs,
		    (unsigned long long)m->tot.untracked_calls);
		model_note(m, FMT_NOTE_INFO, t, (size_t)n);
	}
	if (m->tot.untimed_calls) {
		n = snprintf(
		    t, sizeof t,
		    "allocator calls outside critical sections were timed "
		    "one in %llu (MALLOCK_TIME_EVERY; %llu not timed): "
		    "their time, slow counts and latency histogram are "
		    "scaled from the timed ones; calls inside critical "
		    "sections were %s",
		    (unsigned long long)m->time_every,
		    (unsigned long long)m->tot.untimed_calls,
		    m->tot.untimed_holds ? "timed as their holds (below)"
		                         : "all timed");
		model_note(m, FMT_NOTE_INFO, t, (size_t)n);
	}
	if (m->as_sampled) {
		n = snprintf(t, sizeof t,
		             "read as if sampled (--as-sampled=%u): this trace "
		             "timed every hold and allocator call, and the "
		             "report estimates from one in %u, as the shim's "
		             "default timing would have",
		             m->as_sampled, m->as_sampled);
		model_note(m, FMT_NOTE_INFO, t, (size_t)n);
	}
	if (m->tot.untimed_holds) {
		uint64_t h = m->tot.holds;
		n = snprintf(
		    t, sizeof t,
		    "lock holds were timed one uncontended nest in %llu "
		    "(MALLOCK_HOLD_EVERY), and every hold from a contended "
		    "acquisition or a condition wake on, to the end of its "
		    "nest: hold times and allocator time and slow calls in "
		    "holds are about, estimated from %llu of %llu timed "
		    "holds, each weighted by the holds it stands for; counts "
		    "and waits are exact",
		    (unsigned long long)m->hold_every,
		    (unsigned long long)(h - m->tot.untimed_holds),
		    (unsigned long long)h);
		model_note(m, FMT_NOTE_INFO, t, (size_t)n);
	}
	if (m->tot.holds_preempted) {
		char d[32];
		n = snprintf(
		    t, sizeof t,
		    "%llu sampled holds were set apart as preemption: each "
		    "took over %llu us and %llux its lock's mean timed hold, "
		    "so it counts once, and the holds it stood for at that "
		    "mean; weighted as they stood for, they would add %s of "
		    "hold time (a lock held that long while its holder is "
		    "descheduled, or by holds truly that long, is "
		    "underestimated by up to as much)",
		    (unsigned long long)m->tot.holds_preempted,
		    (unsigned long long)TH_PREEMPT_NS / 1000,
		    (unsigned long long)TH_HOLD_PREEMPT_X,
		    human_ns(d, sizeof d, (double)m->tot.holds_apart_ns));
		model_note(m, FMT_NOTE_INFO, t, (size_t)n);
	}
	if (m->tot.alloc_preempted) {
		n = snprintf(
		    t, sizeof t,
		    "%llu timed allocator calls were set apart as preemption, "
		    "not allocator slowness (slow_alloc leaves them out): "
		    "%llu moved to another CPU during the call, %llu took over "
		    "%llu us with no wait on the allocator's own lock for a "
		    "block under %llu KiB (likely descheduled)",
		    (unsigned long long)m->tot.alloc_preempted,
		    (unsigned long long)m->tot.alloc_migrated,
		    (unsigned long long)(m->tot.alloc_preempted -
		                         m->tot.alloc_migrated),
		    (unsigned long long)TH_PREEMPT_NS / 1000,
		    (unsigned long long)TH_PREEMPT_MAX_BYTES / 1024);
		if (m->tot.alloc_apart_ns && n > 0 && (size_t)n < sizeof t) {
			char d[32];
			n += snprintf(
			    t + n, sizeof t - (size_t)n,
			    "; those in sampled holds count once there: "
			    "weighted as their holds stood for, they would add "
			    "%s of allocator time in holds",
			    human_ns(d, sizeof d,
			             (double)m->tot.alloc_apart_ns));
			if ((size_t)n >= sizeof t)
				n = (int)sizeof t - 1;
		}
		model_note(m, FMT_NOTE_INFO, t, (size_t)n);
	}
	if ((m->proc_flags & FMT_PROCF_START_PAUSED) || m->tot.pauses ||
	    m->tot.resumes) {
		n = snprintf(t, sizeof t,
		             "recording %s; %llu window%s started, %llu "
		             "stopped; %llu lock hold%s open across a start or "
		             "stop %s not measured",
		             (m->proc_flags & FMT_PROCF_START_PAUSED)
		                 ? "started paused (MALLOCK_START=paused)"
		             : m->attached ? "started at the attach"
		                           : "started with the program",
		             (unsigned long long)m->tot.resumes,
		             m->tot.resumes == 1 ? "" : "s",
		             (unsigned long long)m->tot.pauses,
		             (unsigned long long)m->tot.holds_cut,
		             m->tot.holds_cut == 1 ? "" : "s",
		             m->tot.holds_cut == 1 ? "was" : "were");
		model_note(m, FMT_NOTE_INFO, t, (size_t)n);
	}
}

/* "05:20:03 UTC (+1.2 s)": the wall clock of tsc, from the PROCESS
 * record's clock pair, and its offset from the trace's first event. */
static const char *when(const model_t *m, uint64_t tsc, char *buf, size_t len)
{
	const meta_process_t *p = &m->info.process;
	double off = m->first_tsc && tsc > m->first_tsc
	                 ? (double)(tsc - m->first_tsc) * m->ns_per_tick
	                 : 0;
	char a[32];
	if (!m->info.have_process || !p->realtime_ns) {
		snprintf(buf, len, "+%s", human_ns(a, sizeof a, off));
		return buf;
	}
	double rt = (double)p->realtime_ns +
	            ((double)tsc - (double)p->tsc) * m->ns_per_tick;
	time_t s = (time_t)(rt / 1e9);
	struct tm tm;
	char d[40] = "?";
	if (gmtime_r(&s, &tm))
		strftime(d, sizeof d, "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(buf, len, "%s (+%s)", d, human_ns(a, sizeof a, off));
	return buf;
}

const char *recording_text(const model_t *m, char *buf, size_t len)
{
	char t[96];
	size_t n = 0;
	buf[0] = 0;
	/* With no event there is no first time (0, which the clock pair
	 * would turn into the boot time): the PROCESS record, written when
	 * the attached shim started, says when the attach was. */
	uint64_t at = m->first_tsc           ? m->first_tsc
	              : m->info.have_process ? m->info.process.tsc
	                                     : 0;
	if (m->attached && at)
		n += (size_t)snprintf(buf + n, len - n, "attached at %s",
		                      when(m, at, t, sizeof t));
	else if (m->attached)
		n += (size_t)snprintf(buf + n, len - n,
		                      "attached (when: unknown, no event)");
	if (m->have_end || n >= len)
		return buf;
	if (m->paused)
		snprintf(buf + n, len - n,
		         "%swindow closed by ctl at %s; no END record yet: the "
		         "process was still running",
		         n ? "; " : "", when(m, m->pause_tsc, t, sizeof t));
	else if (m->events)
		snprintf(buf + n, len - n,
		         "%sno END record: the process ended without exit() "
		         "or is still running; events after %s may be missing",
		         n ? "; " : "", when(m, m->last_tsc, t, sizeof t));
	else
		snprintf(buf + n, len - n,
		         "%sno END record: the process ended without exit() "
		         "or is still running; no event was written before "
		         "that",
		         n ? "; " : "");
	return buf;
}

uint64_t unended_after_ns(const model_t *m)
{
	if (m->have_end || m->paused || !m->events ||
	    m->last_tsc <= m->first_tsc)
		return 0;
	/* Saturating: a forged tick rate must not overflow the conversion,
	 * which is undefined (found by fuzzing). */
	double ns = (double)(m->last_tsc - m->first_tsc) * m->ns_per_tick;
	if (!(ns >= 0))
		return 0;
	return ns >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)ns;
}

const char *blind_text(const model_t *m, char *buf, size_t len)
{
	buf[0] = 0;
	if (!m->events) {
		/* No END: the calls may have been made, their events still
		 * buffered when the process ended (a raw exit_group). */
		if (!m->have_end && !m->paused && m->exe && !m->info.truncated)
			snprintf(buf, len,
			         "no event of this program reached the trace, "
			         "and it has no END record: the process ended "
			         "without exit() (a raw exit_group, SIGKILL) "
			         "before its threads' buffers were written, or "
			         "is still running; the calls may have been "
			         "made");
		/* The shim ran (PROCESS) and wrote END, but no hook was ever
		 * called. */
		else if (m->exe && !m->info.truncated)
			snprintf(
			    buf, len,
			    "mallock saw no allocation and no lock of this "
			    "program: none of the calls it hooks was made "
			    "(a Go runtime, JIT code or raw system calls "
			    "work out of its sight); no events is not no "
			    "contention");
		return buf;
	}
	bool seen = false;
	for (size_t i = 0; i < m->nlock && !seen; i++) {
		const lockstat_t *s = &m->lock[i].s;
		seen = s->acq || s->try_fail || s->cond_waits ||
		       s->cond_wakes || s->cond_signals || s->futex_waits ||
		       s->futex_wakes || s->internal_waits || s->holds ||
		       s->unmatched_rel;
	}
	for (size_t i = 0; i < m->nfold && !seen; i++)
		seen = m->fold[i].s.acq || m->fold[i].s.try_fail ||
		       m->fold[i].s.holds || m->fold[i].s.unmatched_rel;
	/* A JVM: its VM's locks are pthread locks, its Java monitors not. */
	for (size_t i = 0; seen && i < m->nmod; i++)
		if (m->mod[i].path &&
		    strcmp(path_base(m->mod[i].path), "libjvm.so") == 0) {
			snprintf(
			    buf, len,
			    "mallock sees this JVM's pthread locks (HotSpot's "
			    "Mutex and Monitor locks, each thread's ParkEvent) "
			    "and its malloc calls, not its Java monitors "
			    "(synchronized, java.util.concurrent): taken in "
			    "JIT code, their contention shows only as "
			    "ParkEvent condition waits");
			return buf;
		}
	if (seen)
		return buf;
	snprintf(buf, len,
	         "mallock saw no lock of this program: no pthread lock or "
	         "condition call, no futex wait made through syscall(); locks "
	         "taken any other way (a Go runtime, a JVM's monitors and JIT "
	         "code, futex system calls made directly) are invisible to it, "
	         "not uncontended");
	return buf;
}

/* The monotonic time ns as a TSC of r's trace, by its PROCESS record's
 * clock pair; 0 for 0 or without a pair (no bound). */
static uint64_t mono_tsc(const reader_info_t *in, uint64_t ns)
{
	if (!ns || !in->have_process || !in->process.mono_ns ||
	    !(in->ns_per_tick > 0))
		return 0;
	double t = (double)in->process.tsc +
	           ((double)ns - (double)in->process.mono_ns) / in->ns_per_tick;
	return t <= 0                        ? 1
	       : t >= 18446744073709549568.0 ? UINT64_MAX
	                                     : (uint64_t)t;
}

uint64_t load_mono_tsc(const reader_t *r, uint64_t ns)
{
	return mono_tsc(reader_info(r), ns);
}

static void limit_mono(reader_t *r, uint64_t from, uint64_t until,
                       uint64_t lim[2])
{
	uint64_t u = load_mono_tsc(r, until);
	lim[0] = load_mono_tsc(r, from);
	lim[1] = u ? u : UINT64_MAX;
	reader_limit(r, lim[0], lim[1]);
}

int load_trace(const char *path, model_t *m, findings_t *f,
               const load_opts_t *o)
{
	reader_t *r;
	char err[256];
	progress_pass(path, 1);
	int rc = reader_open(path, &r, err, sizeof err);
	memset(m, 0, sizeof *m);
	if (rc) {
		progress_done();
		fprintf(stderr, "mallock: %s: %s\n", path, err);
		return rc;
	}
	if (o->as_sampled) {
		const meta_process_t *p = &reader_info(r)->process;
		if (!reader_info(r)->have_process || p->time_every != 1 ||
		    p->hold_every != 1) {
			progress_done();
			fprintf(
			    stderr,
			    "mallock: %s: --as-sampled needs a trace that "
			    "timed every hold and call (recorded with "
			    "MALLOCK_TIME_EVERY=1); this one timed one in "
			    "%llu\n",
			    path,
			    (unsigned long long)(p->hold_every > p->time_every
			                             ? p->hold_every
			                             : p->time_every));
			reader_close(r);
			return 2;
		}
		reader_as_sampled(r, o->as_sampled);
	}
	uint64_t lim[2] = {0, 0};
	if (o->from_mono_ns || o->until_mono_ns)
		limit_mono(r, o->from_mono_ns, o->until_mono_ns, lim);
	progress_pass(path, 2);
	aggregate(m, r, path, o->fold_locks, o->thread_filter);
	m->as_sampled = o->as_sampled;
	m->lim_from_tsc = lim[0];
	m->lim_until_tsc = lim[1];
	progress_done();
	reader_close(r);
	return load_finish(m, f, o);
}

int load_finish(model_t *m, findings_t *f, const load_opts_t *o)
{
	char tr[400];
	if (m->info.truncated && !m->info.chunks) {
		/* A report of nothing is no report: the damage is the
		 * answer. */
		fprintf(stderr, "mallock: %s: no chunk could be read: %s\n",
		        m->path, truncation_text(m, tr, sizeof tr));
		model_free(m);
		memset(m, 0, sizeof *m);
		return 1;
	}
	window_notes(m);
	model_index_pairs(m);
	if (m->info.truncated && !o->quiet)
		fprintf(stderr, "mallock: %s: %s\n", m->path,
		        truncation_text(m, tr, sizeof tr));
	sym_open(m, o->symbols, o->debug_dirs);
	lock_names(m);
	classes_build(m);
	thread_activity(m);
	if (f)
		findings_compute(m, f);
	sym_missing_notes(m);
	return 0;
}

void load_free(model_t *m)
{
	sym_close(m);
	model_free(m);
}
