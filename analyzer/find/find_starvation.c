/*
 * find_starvation.c - the starvation detector (see detectors.h): per lock and
 * peer role (threads with one entry function, or one name stem), the time
 * the peers behind the role's mean rate of service would have needed, at
 * that rate, for the service they did not get:
 * sum (1 - rate_i / mean rate) x life_i, counted only as far as the trace
 * shows those peers wanting the lock while their peers got it.
 *
 * Invariants (an uneven pool by design was the top
 * finding on real servers):
 * - A peer behind counts only with evidence of demand: on an acquisition
 *   measure, at most its wait for the lock beyond the share of its life
 *   the peers ahead spent waiting (three producers on 2 cores, held back
 *   by the CPU, waited a smaller share than the one ahead, and were
 *   "starvation [medium]"), and nothing when it waited less than
 *   STARVE_MIN_WAIT_PCT of its life (four producers behind on a lock
 *   they waited 0.4 % of their life for: "starvation [low]" in CI); on a
 *   condition-wake
 *   measure, its gap times the share of its acquisitions that got no wake
 *   (it came back and went away without service). A thread that sleeps
 *   waiting for work wanted work, not the lock: it adds nothing.
 * - On wakes, a peer that signals the lock's conditions more than twice as
 *   often as it is woken on them hands work out (varnish's acceptor runs
 *   as a task on a worker thread, one entry function with its workers):
 *   it is no peer of the waiters (varnish 7.1 was "starvation [high]"
 *   6.9 s for that one thread, woken once in 14.5k acquisitions).
 * - A peer behind asleep on the lock's condition for half its life or more
 *   waited for work (an idle pool's worker: MariaDB's tpool after an
 *   attach was "starvation [high]" 7.05 s): it adds nothing; another adds
 *   its unserved share only of the time it was awake.
 * - The score never exceeds the wall-clock time the trace covers for the
 *   peers behind (first event of the earliest to last of the latest, while
 *   recording: a window closed before the threads exit, as after `mallock
 *   attach --duration`, does not lengthen it).
 * - A generic thread trampoline (start_thread, thread_native_entry, a
 *   std::thread state, ...) is not a role: the role is the first frame
 *   inward of it; threads of one entry function with different name stems
 *   are different roles (a runtime's threads all enter one function).
 */
#include "cxxname.h"
#include "detectors.h"

#include "symbols.h"
#include "thresholds.h"
#include "trace_format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Frames every thread of a runtime or a thread library passes through on
 * its way to its own code: never a role. A name matches when it equals an
 * entry or starts with it followed by "<" or "(" or "::"; names in the
 * standard libraries' namespaces are all generic.
 */
static const char *const trampolines[] = {
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "thread_native_entry",
    "java_start",
    "execute_native_thread_routine",
    "g_thread_proxy",
    "_pthread_start",
    "thread_start",
    "ThreadStart",
    "PR_NativeRunThread",
    "_PR_NativeRunThread",
    "__tsan_thread_start_func",
    "asan_thread_start",
    NULL,
};

static bool generic_frame(const char *fn)
{
	static const char *const ns[] = {
	    "std::",       "core::",          "alloc::",
	    "__gnu_cxx::", "boost::detail::", NULL};
	for (int i = 0; ns[i]; i++)
		if (strncmp(fn, ns[i], strlen(ns[i])) == 0)
			return true;
	for (int i = 0; trampolines[i]; i++) {
		size_t n = strlen(trampolines[i]);
		if (strncmp(fn, trampolines[i], n) == 0 &&
		    (fn[n] == 0 || fn[n] == '<' || fn[n] == '(' ||
		     (fn[n] == ':' && fn[n + 1] == ':')))
			return true;
	}
	return false;
}

/*
 * A thread's role: its entry function, the outermost user frame of one of
 * its recorded whole stacks that reaches the thread's start (its outermost
 * frame is in libc, start_thread/clone or __libc_start_main, or is _start;
 * a stack cut at the recording depth does not count), past any generic
 * trampoline (generic_frame). NULL when no stack
 * does (a thread whose acquisitions were all uncontended and which never
 * allocated has only call sites) or when it is not symbolized.
 */
static const char *thread_entry(model_t *m, const thread_t *t)
{
	const char *inl = NULL;
	for (uint32_t k = 0; k < t->nfirst; k++) {
		const stk_t *st = &m->stk[t->first_stk[k]];
		if (!st->defined || st->n < 2)
			continue;
		const frame_t *fr;
		int nf = sym_addr(m, m->frames[st->off + st->n - 1], &fr);
		const frame_t *root = &fr[nf - 1];
		if (root->fold == SYM_USER &&
		    !(root->function && strcmp(root->function, "_start") == 0))
			continue;
		for (uint32_t i = st->n; i-- > 0;) {
			nf = sym_addr(m, m->frames[st->off + i], &fr);
			const frame_t *f = &fr[nf - 1]; /* the real function */
			if (f->fold != SYM_USER)
				continue;
			if (f->function && strcmp(f->function, "_start") == 0)
				continue;
			if (!f->function)
				break;
			if (generic_frame(f->function))
				continue;
			/* An inlined frame whose enclosing function the debug
			 * info did not give: another stack may name it. */
			if (f->inlined) {
				if (!inl)
					inl = f->function;
				break;
			}
			return f->function;
		}
	}
	return inl;
}

/* The thread's name without its trailing number ("adm-client-3" ->
 * "adm-client") into buf, or NULL: no name, or the process's own name
 * (threads that were never named inherit it). */
static const char *name_stem(const char *name, const char *procname, char *buf,
                             size_t len)
{
	if (!name || !*name || (procname && strcmp(name, procname) == 0))
		return NULL;
	size_t n = strlen(name);
	while (n > 0 && name[n - 1] >= '0' && name[n - 1] <= '9')
		n--;
	while (n > 0 && strchr("-_ .:#/", name[n - 1]))
		n--;
	if (n == 0)
		return NULL;
	snprintf(buf, len, "%.*s", (int)n, name);
	return buf;
}

typedef struct stemref {
	const char *stem;
	uint32_t thread;
} stemref_t;

static int by_stem(const void *a, const void *b)
{
	const stemref_t *x = a, *y = b;
	int c = strcmp(x->stem, y->stem);
	return c ? c : (x->thread > y->thread) - (x->thread < y->thread);
}

/*
 * Roles of every thread (arena strings, NULL: no peers). A thread without a
 * known entry function (no whole stack) takes the entry function of the
 * threads sharing its name stem when they all have the same one (the
 * starved clients of a pool whose lucky members waited once); a name stem
 * whose threads have no entry function at all is a role of its own
 * ("threads named adm-client"); a stem shared by threads of several entry
 * functions gives nothing to the threads without one. Unnamed threads (the
 * process's own name) have no stem. Last, an entry function whose threads
 * carry several name stems is generic (a runtime's one entry, a pool
 * entry running different jobs): its named threads' role becomes the entry
 * and their stem ("thread_main (threads named gc)").
 */
static const char **peer_roles(model_t *m)
{
	const char **role = xcalloc(m->nthr + 1, sizeof *role);
	const char **stem = xcalloc(m->nthr + 1, sizeof *stem);
	stemref_t *st = xmalloc((m->nthr + 1) * sizeof *st);
	const char *procname = NULL;
	char buf[256];
	size_t ns = 0;
	for (size_t i = 0; i < m->nthr; i++)
		if (m->pid && m->thr[i].tid == m->pid)
			procname = m->thr[i].name;
	for (size_t i = 0; i < m->nthr; i++) {
		const thread_t *t = &m->thr[i];
		const char *e = thread_entry(m, t);
		role[i] = e ? arena_strdup(&m->arena, e) : NULL;
		if (m->pid && t->tid == m->pid)
			continue;
		const char *s = name_stem(t->name, procname, buf, sizeof buf);
		if (s) {
			stem[i] = st[ns].stem = arena_strdup(&m->arena, s);
			st[ns].thread = (uint32_t)i;
			ns++;
		}
	}
	if (ns > 1)
		qsort(st, ns, sizeof *st, by_stem);
	for (size_t i = 0, j; i < ns; i = j) {
		const char *e = NULL;
		bool mixed = false;
		for (j = i; j < ns && strcmp(st[j].stem, st[i].stem) == 0;
		     j++) {
			const char *r = role[st[j].thread];
			if (!r)
				continue;
			if (e && strcmp(e, r) != 0)
				mixed = true;
			e = r;
		}
		if (mixed)
			continue;
		if (!e) {
			snprintf(buf, sizeof buf, "threads named %s",
			         st[i].stem);
			e = arena_strdup(&m->arena, buf);
		}
		for (size_t k = i; k < j; k++)
			if (!role[st[k].thread])
				role[st[k].thread] = e;
	}
	/* Generic entries: one role, named threads of several stems. The
	 * named threads sorted by (role, stem); the split role strings are
	 * made before any is replaced. */
	size_t nr = 0;
	for (size_t i = 0; i < ns; i++)
		if (role[st[i].thread] &&
		    strncmp(role[st[i].thread], "threads named ", 14) != 0) {
			st[nr].thread = st[i].thread;
			st[nr].stem = role[st[i].thread];
			nr++;
		}
	if (nr > 1)
		qsort(st, nr, sizeof *st, by_stem);
	const char **split = xcalloc(m->nthr + 1, sizeof *split);
	for (size_t i = 0, j; i < nr; i = j) {
		bool generic = false;
		for (j = i + 1; j < nr && strcmp(st[j].stem, st[i].stem) == 0;
		     j++)
			generic |=
			    strcmp(stem[st[j].thread], stem[st[i].thread]) != 0;
		for (size_t k = i; generic && k < j; k++) {
			uint32_t t = st[k].thread;
			snprintf(buf, sizeof buf, "%s (threads named %s)",
			         role[t], stem[t]);
			split[t] = arena_strdup(&m->arena, buf);
		}
	}
	for (size_t i = 0; i < m->nthr; i++)
		if (split[i])
			role[i] = split[i];
	free(split);
	free(stem);
	free(st);
	return role;
}

typedef struct peer {
	const lockthr_t *lt;
	const char *role; /* arena; NULL: no peers */
	double first_ns;  /* the thread's first event while recording */
	double span_ns;   /* its first to last event while recording */
	double service, rate;
} peer_t;

/* Sort context of by_lock_role (qsort has no context argument). */
static const lockthr_t *sort_lt;
static const char *const *sort_role;

/* lockthr indexes by lock, then role, then thread. */
static int by_lock_role(const void *a, const void *b)
{
	const lockthr_t *x = &sort_lt[*(const uint32_t *)a];
	const lockthr_t *y = &sort_lt[*(const uint32_t *)b];
	if (x->lock != y->lock)
		return x->lock < y->lock ? -1 : 1;
	int c = strcmp(sort_role[x->thread], sort_role[y->thread]);
	if (c)
		return c;
	return x->thread < y->thread ? -1 : x->thread > y->thread;
}

/*
 * One role's peers on one lock: p[0..k). The measure of service: on a lock
 * the role waits on with a condition variable (its peers were woken, not by
 * a timeout, STARVE_MIN_OPS times or more), the wakes (what a waiter waits
 * for: an answer, an item, a slot); otherwise the successful acquisitions.
 * Rates (service per ns of the thread's life) are compared, so a thread
 * that lived half the run is not starved for doing half the work.
 */
/* A peer that signals the lock's conditions more than twice as often as
 * it is woken on them hands work out: wakes are not its service. */
static bool hands_work_out(const lockthr_t *lt)
{
	return lt->signals > 2 * lt->wakes;
}

static void starve_group(model_t *m, peer_t *p, size_t k, findings_t *out)
{
	double wakes = 0, acq = 0, maxspan = 0, cacq = 0;
	for (size_t i = 0; i < k; i++) {
		const lockthr_t *lt = p[i].lt;
		wakes += (double)(lt->wakes - lt->timeouts);
		acq += (double)lt->acq;
		maxspan = fmax(maxspan, p[i].span_ns);
		if (!hands_work_out(lt))
			cacq += (double)lt->acq; /* a consumer's */
	}
	/* Wakes are the service where the role comes for them: one wake in
	 * every few of its consumers' acquisitions. A role that takes the
	 * lock mostly for other work (MariaDB's tpool workers took a task's
	 * mutex 1031 times, reference counting, and were woken on its
	 * condition 112 times) is measured by its acquisitions. */
	bool by_wakes = wakes >= TH_STARVE_MIN_OPS &&
	                wakes * 100 >= cacq * TH_STARVE_MIN_WAKE_PCT;
	/* Peers: those that lived long enough to be compared. */
	size_t n = 0, producers = 0;
	double total = 0, rsum = 0;
	for (size_t i = 0; i < k; i++) {
		if (p[i].span_ns * 100 < maxspan * TH_STARVE_PARTICIPANT_PCT ||
		    p[i].span_ns <= 0)
			continue;
		/* On wakes, a peer that signals the lock's conditions more
		 * than twice as often as it is woken hands work out (varnish's
		 * acceptor, a pool task on a worker thread): wakes are not
		 * its service. */
		if (by_wakes && hands_work_out(p[i].lt)) {
			producers++;
			continue;
		}
		const lockthr_t *lt = p[i].lt;
		p[i].service = by_wakes ? (double)(lt->wakes - lt->timeouts)
		                        : (double)lt->acq;
		p[i].rate = p[i].service / p[i].span_ns;
		total += p[i].service;
		rsum += p[i].rate;
		p[n++] = p[i];
	}
	if (n < TH_STARVE_MIN_PEERS || total < TH_STARVE_MIN_OPS ||
	    total < (double)n * TH_STARVE_MIN_MEAN_OPS)
		return;
	double mu = rsum / (double)n;
	/* The share of their life the peers at or above the mean rate spent
	 * waiting for the lock: a peer behind that waited no larger share
	 * was held back by something else (the CPU: more runnable threads
	 * than cores), not by the lock. */
	double awt = 0, aspan = 0;
	for (size_t i = 0; i < n; i++)
		if (p[i].rate >= mu) {
			awt += (double)p[i].lt->wait_ns;
			aspan += p[i].span_ns;
		}
	double ahead_share = aspan > 0 ? awt / aspan : 0;
	double sq = 0, lost = 0, short_ops = 0;
	double pwait = 0, psleep = 0, smin = HUGE_VAL, smax = 0, gross = 0;
	double first = HUGE_VAL, last = 0;
	int zeros = 0, behind = 0;
	double wsum = 0, wsq = 0;
	int wk = 0;
	for (size_t i = 0; i < n; i++) {
		double d = p[i].rate - mu;
		sq += d * d;
		smin = fmin(smin, p[i].service);
		smax = fmax(smax, p[i].service);
		if (p[i].lt->acq) {
			double w =
			    (double)p[i].lt->wait_ns / (double)p[i].lt->acq;
			wsum += w;
			wsq += w * w;
			wk++;
		}
		if (p[i].rate < mu) {
			const lockthr_t *lt = p[i].lt;
			zeros += p[i].service == 0;
			/* The time this peer would have needed, at the
			 * role's mean rate, for the service it did not get,
			 * as far as it showed it wanted the lock: its wait
			 * for it, or its visits that got no wake. */
			double gap = (1 - p[i].rate / mu) * p[i].span_ns;
			gross += gap;
			if (by_wakes) {
				/* Asleep on the condition: waiting for work,
				 * not for the lock. */
				double awake =
				    1 - (double)lt->sleep_ns / p[i].span_ns;
				gap *= lt->acq > lt->wakes && awake > 0.5
				           ? (double)(lt->acq - lt->wakes) /
				                 (double)lt->acq * awake
				           : 0;
			} else if ((double)lt->wait_ns * 100 <
			           TH_STARVE_MIN_WAIT_PCT * p[i].span_ns)
				gap = 0; /* not starving: barely waited */
			else
				gap = fmin(gap, fmax(0, (double)lt->wait_ns -
				                            ahead_share *
				                                p[i].span_ns));
			lost += gap;
			first = fmin(first, p[i].first_ns);
			last = fmax(last, p[i].first_ns + p[i].span_ns);
			short_ops += mu * p[i].span_ns - p[i].service;
			pwait += (double)p[i].lt->wait_ns;
			psleep += (double)p[i].lt->sleep_ns;
			behind++;
		}
	}
	double cv = sqrt(sq / (double)n) / mu;
	double wcv = 0;
	if (wk >= 2 && wsum > 0) {
		double wm = wsum / wk;
		wcv = sqrt(fmax(0, wsq / wk - wm * wm)) / wm;
	}
	if (!behind || (cv * 100 < TH_STARVE_CV_PCT && !zeros) || lost <= 0)
		return;
	/* Never more than the wall-clock time the trace covers for the
	 * peers behind. */
	double covered = last > first ? last - first : 0;
	const lock_t *l = &m->lock[p[0].lt->lock];
	finding_t *f = finding_add(out, m, FK_STARVATION, fmin(lost, covered));
	f->cls = l->cls;
	f->lock = p[0].lt->lock;
	f->stack = m->cls[l->cls].site;
	finding_put(f, EV_LOCK_ID, (double)l->id);
	finding_put(f, EV_THREADS, (double)n);
	finding_put(f, EV_THREADS_WITH_NO_ACQUISITION, zeros);
	finding_put(f, EV_ACQUISITIONS_CV, cv);
	finding_put(f, EV_MEAN_WAIT_CV, wcv);
	finding_put(f, EV_COND_WAITERS_GROUP, by_wakes);
	finding_put(f, EV_LOCK_WAIT_NS, (double)l->s.wait_ns);
	finding_put(f, EV_SERVICE_BY_COND_WAKES, by_wakes);
	finding_put(f, EV_PRODUCERS_LEFT_OUT, (double)producers);
	finding_put(f, EV_SERVICE_TOTAL, total);
	finding_put(f, EV_SERVICE_MIN, smin);
	finding_put(f, EV_SERVICE_MAX, smax);
	finding_put(f, EV_ROLE_ACQUISITIONS, acq);
	finding_put(f, EV_ROLE_COND_WAKES, wakes);
	finding_put(f, EV_THREADS_BEHIND, behind);
	finding_put(f, EV_SERVICE_SHORTFALL, short_ops);
	finding_put(f, EV_BEHIND_LOCK_WAIT_NS, pwait);
	finding_put(f, EV_AHEAD_LOCK_WAIT_SHARE, ahead_share);
	finding_put(f, EV_BEHIND_COND_SLEEP_NS, psleep);
	finding_put(f, EV_LOST_NS, lost);
	finding_put(f, EV_UNWEIGHTED_LOST_NS, gross);
	finding_put(f, EV_COVERED_NS, covered);
	char a[128], role[256], range[128];
	/* Prose: the role's short C++ name, with its parameters (overloads
	 * may share a name); JSON's name fields keep the full one. */
	cxx_short(p[0].role, role, sizeof role, true);
	const char *what = by_wakes ? "condition wakes" : "acquisitions";
	if (smin == smax)
		snprintf(range, sizeof range, "%s: %.0f each, at unequal rates",
		         what, smin);
	else
		snprintf(range, sizeof range,
		         "%s from %.0f to %.0f, %d with none", what, smin, smax,
		         zeros);
	const char *why =
	    by_wakes ? ", and the ones behind came back for it without being "
	               "served: some are passed over again and again; admit "
	               "work in order (FIFO or earliest-deadline-first), or "
	               "give each thread its own queue."
	             : " and the ones behind waited for it while their peers "
	               "took it: the lock lets a releasing thread take it "
	               "again before a waiter runs; hand it over in order (a "
	               "ticket or queued lock), or shorten the holds.";
	snprintf(f->advice, sizeof f->advice,
	         "The %zu threads running %s get very unequal shares of %s "
	         "(%s)%s",
	         n, role, lock_label(m, l, a, sizeof a), range, why);
}

/* Peers are sorted as 4-byte lockthr indexes and made into peer_t one
 * group at a time: a peer_t per (lock, thread) took 48 bytes for each of
 * the 4M pairs of a million per-connection locks. */
void find_starvation(model_t *m, findings_t *out)
{
	if (!m->nlt)
		return;
	const char **role = peer_roles(m);
	uint32_t *ix = xmalloc(m->nlt * sizeof *ix);
	size_t nix = 0;
	for (size_t i = 0; i < m->nlt; i++) {
		const lockthr_t *lt = &m->lt[i];
		/* A futex word shows waits and wakes, never who got it. */
		if (m->lock[lt->lock].cls == NONE32 ||
		    m->thr[lt->thread].excluded || !role[lt->thread] ||
		    m->lock[lt->lock].kind == FMT_KIND_FUTEX)
			continue;
		ix[nix++] = (uint32_t)i;
	}
	sort_lt = m->lt;
	sort_role = role;
	if (nix > 1)
		qsort(ix, nix, sizeof *ix, by_lock_role);
	sort_lt = NULL;
	sort_role = NULL;
	peer_t *p = NULL;
	size_t cap = 0;
	for (size_t i = 0, j; i < nix; i = j) {
		const lockthr_t *lt = &m->lt[ix[i]];
		for (j = i + 1;
		     j < nix && m->lt[ix[j]].lock == lt->lock &&
		     strcmp(role[m->lt[ix[j]].thread], role[lt->thread]) == 0;
		     j++)
			;
		VEC_RESERVE(p, cap, j - i);
		for (size_t k = 0; k < j - i; k++) {
			const lockthr_t *e = &m->lt[ix[i + k]];
			const thread_t *t = &m->thr[e->thread];
			memset(&p[k], 0, sizeof p[k]);
			p[k].lt = e;
			p[k].role = role[e->thread];
			/* Its recorded life: a thread seen only while
			 * paused has none. */
			p[k].first_ns =
			    t->rec_first_tsc > m->first_tsc
			        ? (double)(t->rec_first_tsc - m->first_tsc) *
			              m->ns_per_tick
			        : 0;
			p[k].span_ns =
			    t->rec_last_tsc > t->rec_first_tsc
			        ? (double)(t->rec_last_tsc - t->rec_first_tsc) *
			              m->ns_per_tick
			        : 0;
		}
		starve_group(m, p, j - i, out);
	}
	free(p);
	free(ix);
	free(role);
}
