/*
 * find_allocs.c - the allocation detectors, per allocation site (see
 * detectors.h and sites.h):
 *
 *   cross_thread_free  allocator time (malloc + free) of the blocks freed
 *                      on another thread beyond two median calls each.
 *   alloc_churn        allocator time of the short-lived blocks.
 *   slow_alloc         time of the slow calls beyond the median call, apart
 *                      for calls made with and without a lock held.
 */
#include "detectors.h"

#include "symbols.h"

#include "thresholds.h"

#include <stdio.h>
#include <string.h>

/* Evidence of a site finding: its member stacks valued by what(site). */
static void group_stacks(finding_t *f, model_t *m, const sites_t *S, uint32_t g,
                         ev_t unit, double (*what)(const site_t *, int), int h)
{
	f->stack_unit = unit;
	for (uint32_t k = S->start[g]; k < S->start[g + 1]; k++) {
		uint32_t si = S->order[k];
		double v = what(m->stk[si].site, h);
		if (v > 0)
			finding_add_stack(f, si, v);
	}
	if (f->nstacks)
		f->stack = f->stacks[0];
}

static double v_xfree(const site_t *s, int h)
{
	(void)h;
	return (double)s->xfree_n;
}

static double v_churn(const site_t *s, int h)
{
	(void)h;
	return (double)s->short_n;
}

static double v_slow(const site_t *s, int h)
{
	return (double)s->slow_ns[h] * site_scale(s, h);
}

/*
 * A finding whose time rests on fewer than MIN_TIMED_SAMPLES timed calls
 * (samples) is ranked at most low: its severity is low and its score at
 * most the low band's top (SEV_MEDIUM_PPM of the recording), so that it
 * ranks with the low findings; the score it would have had is kept as
 * evidence (uncapped_score_ns). clamd had two [high] findings, 18% of the
 * recording each, from 2 timed calls scaled by MALLOCK_TIME_EVERY.
 */
static void cap_on_samples(finding_t *f, const model_t *m, double samples)
{
	finding_put(f, EV_TIMED_SAMPLES, samples);
	if (samples >= TH_MIN_TIMED_SAMPLES)
		return;
	double top = (double)model_recorded_ns(m) * TH_SEV_MEDIUM_PPM / 1e6;
	finding_put(f, EV_UNCAPPED_SCORE_NS, f->score);
	if (f->score > top)
		f->score = top;
	if (f->severity > SEV_LOW)
		f->severity = SEV_LOW;
}

/* Whether a time summed over n blocks' calls (two each) is an estimate:
 * the trace left calls untimed (MALLOCK_TIME_EVERY) and fewer than all
 * of these were timed. */
static double estimated(const model_t *m, uint64_t timed, uint64_t n)
{
	return m->tot.untimed_calls && timed < 2 * n;
}

static uint64_t top_size(const site_t *s, uint64_t *count)
{
	int best = 0;
	for (int i = 1; i < SITE_SIZES; i++)
		if (s->size_n[i] > s->size_n[best])
			best = i;
	*count = s->size_n[best];
	return s->size[best];
}

static int nthreads(const uint32_t *thr)
{
	int n = 0;
	for (int i = 0; i < SITE_THREADS; i++)
		n += thr[i] != 0;
	return n;
}

/*
 * The slow path of the allocator in use and how to avoid it, for
 * slow_alloc's advice (tcmalloc's central free list was told to
 * a glibc program).
 */
static void slow_path_of(const model_t *m, const char **path, const char **fix)
{
	const char *alloc = model_allocator(m);
	if (strcmp(alloc, "tcmalloc") == 0) {
		*path = "tcmalloc's central free list, page heap";
		*fix = "give tcmalloc larger thread caches "
		       "(TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES)";
	} else if (strcmp(alloc, "jemalloc") == 0) {
		*path = "jemalloc's arena bins, extents";
		*fix = "give jemalloc more arenas or a larger thread cache "
		       "(MALLOC_CONF narenas, tcache_max)";
	} else if (strcmp(alloc, "mimalloc") == 0) {
		*path = "mimalloc's page and segment allocation";
		*fix = "keep freed pages longer (MIMALLOC_PURGE_DELAY)";
	} else {
		*path = "glibc malloc's arena bins and arena lock, or mmap "
		        "for large blocks";
		*fix =
		    "tune glibc's caches (GLIBC_TUNABLES="
		    "glibc.malloc.tcache_count, glibc.malloc.mmap_threshold, "
		    "glibc.malloc.arena_max)";
	}
}

/* Where the allocator in use stops serving blocks from a per-thread cache
 * (bytes; 0: not known), with the sentence for blocks above it. */
static uint64_t cache_limit(const model_t *m, const char **what,
                            const char **means)
{
	const char *alloc = model_allocator(m);
	if (strcmp(alloc, "tcmalloc") == 0) {
		*what = "tcmalloc's largest size class (256 KiB)";
		*means = "no thread cache holds them: each comes from the page "
		         "heap under its global lock (pageheap_lock), so "
		         "larger thread caches do not help";
		return 256 * 1024;
	}
	if (strcmp(alloc, "jemalloc") == 0) {
		*what = "jemalloc's thread cache limit (tcache_max, 32 KiB by "
		        "default)";
		*means = "they come from the arena's extents (raise tcache_max "
		         "in MALLOC_CONF to cache them)";
		return 32 * 1024;
	}
	if (strcmp(alloc, "glibc") == 0) {
		*what = "glibc's mmap threshold (128 KiB by default; frees of "
		        "mapped blocks raise it up to 32 MiB)";
		*means =
		    "each may be mapped and unmapped (raise "
		    "glibc.malloc.mmap_threshold in GLIBC_TUNABLES to keep "
		    "them in the heap)";
		return 128 * 1024;
	}
	return 0;
}

static const char *bytes_text(char *buf, size_t len, uint64_t b)
{
	if (b >= 1024 * 1024 && b % (1024 * 1024) == 0)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else if (b >= 1024 && b % 1024 == 0)
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)b);
	return buf;
}

/*
 * slow_alloc's advice from what the site shows: its share of reallocs (a
 * growing buffer), its block sizes against where the allocator in use
 * stops caching per thread, and how many threads allocate there (one
 * thread competes with no one: no arena or cache-size advice). When the
 * sizes straddle that limit, the slow calls' own sizes decide: nine in
 * ten above it, the large blocks; one in ten or fewer, the advice for
 * small blocks; in between, both. Redis's
 * growing reallocs in one thread were told "more arenas"; MariaDB's 2 MB
 * buffers on tcmalloc "larger thread caches".
 */
static void slow_advice(const model_t *m, finding_t *f, const site_t *s, int h,
                        const char *slow_path, const char *slow_fix)
{
	char sn[256], a[32], b[32], often[96];
	finding_site_name(f, sn, sizeof sn);
	/* the share of the timed calls: of all calls, an estimate */
	double share = ratio((double)s->slow_n[h], (double)s->timed[h]);
	const char *ones =
	    s->timed[h] < s->calls[h] ? "timed slow ones" : "slow ones";
	if (share >= 0.1)
		snprintf(often, sizeof often, "often take the slow path");
	else
		snprintf(often, sizeof often,
		         "take the slow path in %.1f%% of the calls",
		         100 * share);
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < SITE_SIZES; i++)
		if (s->size_n[i]) {
			lo = s->size[i] < lo ? s->size[i] : lo;
			hi = s->size[i] > hi ? s->size[i] : hi;
		}
	double re =
	    ratio((double)s->reallocs, (double)(s->allocs + s->reallocs));
	const char *what = NULL, *means = NULL;
	uint64_t lim = cache_limit(m, &what, &means);
	static const uint64_t limits[SITE_BIG_N] = SITE_BIG_LIMITS;
	uint64_t big = 0, slow = s->slow_n[h];
	double slow_est = (double)slow * site_scale(s, h);
	for (int i = 0; i < SITE_BIG_N; i++)
		if (limits[i] == lim) {
			big = s->slow_big[h][i];
			finding_put(f, EV_SLOW_CALLS_ABOVE_CACHE_LIMIT,
			            (double)big);
		}
	int nthr = nthreads(s->athr);
	finding_put(f, EV_REALLOC_SHARE, re);
	finding_put(f, EV_ALLOCATING_THREADS, nthr);
	finding_put(f, EV_SIZE_MIN, lo == UINT64_MAX ? 0 : (double)lo);
	finding_put(f, EV_SIZE_MAX, (double)hi);
	const char *locked = h ? " while a lock is held" : "";
	if (s->reallocs && 2 * (double)s->reallocs >= slow_est) {
		snprintf(
		    f->advice, sizeof f->advice,
		    "Allocator calls for %s %s%s, and it grows blocks with "
		    "realloc (%llu reallocs for %s%.0f slow calls): growth "
		    "copies are the likely slow calls; reserve the final "
		    "size up front, or grow by doubling%s.",
		    sn, often, locked, (unsigned long long)s->reallocs,
		    s->timed[h] < s->calls[h] ? "about " : "", slow_est,
		    h ? ", before taking the lock" : "");
	} else if (lim && hi && lo > lim) {
		snprintf(f->advice, sizeof f->advice,
		         "Allocator calls for %s %s%s: its blocks "
		         "(%s%s%s) are above %s, so %s; reuse the blocks (one "
		         "per thread or per object) or allocate them once.",
		         sn, often, locked, bytes_text(a, sizeof a, lo),
		         hi != lo ? " to " : "",
		         hi != lo ? bytes_text(b, sizeof b, hi) : "", what,
		         means);
	} else if (lim && hi > lim && 10 * big >= 9 * slow) {
		snprintf(f->advice, sizeof f->advice,
		         "Allocator calls for %s %s%s, for blocks of %s to "
		         "%s: %llu of the %llu %s were above %s, so "
		         "%s; reuse the large blocks (one per thread or per "
		         "object) or allocate them once.",
		         sn, often, locked, bytes_text(a, sizeof a, lo),
		         bytes_text(b, sizeof b, hi), (unsigned long long)big,
		         (unsigned long long)slow, ones, what, means);
	} else if (lim && hi > lim && 10 * big > slow) {
		snprintf(f->advice, sizeof f->advice,
		         "Allocator calls for %s %s%s, for blocks of %s to "
		         "%s: %llu of the %llu %s were above %s, so "
		         "%s; the others were smaller blocks (%s): reuse the "
		         "large blocks or allocate them once, and reuse the "
		         "small objects or reserve capacity.",
		         sn, often, locked, bytes_text(a, sizeof a, lo),
		         bytes_text(b, sizeof b, hi), (unsigned long long)big,
		         (unsigned long long)slow, ones, what, means,
		         slow_path);
	} else if (h) {
		snprintf(f->advice, sizeof f->advice,
		         "Allocator calls for %s %s while a lock "
		         "is held: allocate before locking, or pre-allocate.",
		         sn, often);
	} else if (nthr <= 1) {
		snprintf(f->advice, sizeof f->advice,
		         "Allocator calls for %s %s (%s), made by "
		         "one thread, which competes with no other for the "
		         "allocator: they are refills of its caches; reuse "
		         "objects or reserve capacity.",
		         sn, often, slow_path);
	} else {
		snprintf(f->advice, sizeof f->advice,
		         "Allocator calls for %s %s (%s): reuse "
		         "objects, reserve capacity, or %s.",
		         sn, often, slow_path, slow_fix);
	}
}

/* The qualified name in a demangled function name, past its return type
 * ("void std::vector<int>::_M_realloc_insert<int>(...)" ->
 * "std::vector<int>::..."): the last space at template depth 0 before the
 * parameters. NULL for NULL. */
static const char *qualified_name(const char *fn)
{
	if (!fn)
		return NULL;
	const char *start = fn;
	int depth = 0;
	for (const char *c = fn; *c; c++) {
		if (*c == '<')
			depth++;
		else if (*c == '>')
			depth--;
		else if (depth == 0 && *c == '(' && c > fn)
			break;
		else if (depth == 0 && *c == ' ')
			start = c + 1;
	}
	return start;
}

/*
 * The C++ standard container a stack allocates for, from its frames
 * (inlined ones included), innermost first: "std::map or std::set" and
 * the other node-based ones (*node true), "std::vector" and the other
 * contiguous ones (*node false), or NULL when no frame names one. Node's
 * churn of 24-byte std::vector buffers was "(a node-based container?)"
 * by their size alone.
 */
static const char *stack_container(model_t *m, uint32_t si, bool *node)
{
	static const struct {
		const char *prefix, *name;
		bool node;
	} known[] = {
	    {"std::_Rb_tree<", "std::map or std::set", true},
	    {"std::_Rb_tree_node<", "std::map or std::set", true},
	    {"std::__detail::_Hash_node<",
	     "std::unordered_map or std::unordered_set", true},
	    {"std::_List_node<", "std::list", true},
	    {"std::_Fwd_list_node<", "std::forward_list", true},
	    {"std::map<", "std::map or std::set", true},
	    {"std::set<", "std::map or std::set", true},
	    {"std::multimap<", "std::map or std::set", true},
	    {"std::multiset<", "std::map or std::set", true},
	    {"std::_Hashtable<", "std::unordered_map or std::unordered_set",
	     true},
	    {"std::__detail::_Hash", "std::unordered_map or std::unordered_set",
	     true},
	    {"std::__cxx11::list<", "std::list", true},
	    {"std::__cxx11::_List_base<", "std::list", true},
	    {"std::list<", "std::list", true},
	    {"std::_List_base<", "std::list", true},
	    {"std::forward_list<", "std::forward_list", true},
	    {"std::_Fwd_list_base<", "std::forward_list", true},
	    {"std::vector<", "std::vector", false},
	    {"std::_Vector_base<", "std::vector", false},
	    {"std::__cxx11::basic_string<", "std::string", false},
	    {"std::basic_string<", "std::string", false},
	    {"std::deque<", "std::deque", false},
	    {"std::_Deque_base<", "std::deque", false},
	};
	/* Frames inlined from the standard headers have short names
	 * ("_M_get_node", "insert"): their header tells the container; the
	 * outermost one before the caller's code is the most precise
	 * (stl_multiset.h over stl_tree.h). */
	static const struct {
		const char *file, *name;
		bool node;
	} hdr[] = {
	    {"stl_tree.h", "std::map or std::set", true},
	    {"stl_map.h", "std::map", true},
	    {"stl_multimap.h", "std::multimap", true},
	    {"stl_set.h", "std::set", true},
	    {"stl_multiset.h", "std::multiset", true},
	    {"hashtable.h", "std::unordered_map or std::unordered_set", true},
	    {"hashtable_policy.h", "std::unordered_map or std::unordered_set",
	     true},
	    {"unordered_map.h", "std::unordered_map", true},
	    {"unordered_set.h", "std::unordered_set", true},
	    {"stl_list.h", "std::list", true},
	    {"forward_list.h", "std::forward_list", true},
	    {"stl_vector.h", "std::vector", false},
	    {"vector.tcc", "std::vector", false},
	    {"basic_string.h", "std::string", false},
	    {"basic_string.tcc", "std::string", false},
	    {"stl_deque.h", "std::deque", false},
	    {"deque.tcc", "std::deque", false},
	};
	if (si == NONE32 || !m->stk[si].defined)
		return NULL;
	const stk_t *st = &m->stk[si];
	const char *found = NULL;
	for (uint32_t i = 0; i < st->n; i++) {
		const frame_t *fr;
		int k = sym_addr(m, m->frames[st->off + i], &fr);
		for (int j = 0; j < k; j++) {
			const char *file = fr[j].file;
			if (file && strstr(file, "/include/c++/")) {
				const char *b = strrchr(file, '/') + 1;
				for (size_t e = 0; e < sizeof hdr / sizeof *hdr;
				     e++)
					if (strcmp(b, hdr[e].file) == 0) {
						found = hdr[e].name;
						*node = hdr[e].node;
					}
				continue;
			}
			if (found)
				return found;
			const char *q = qualified_name(fr[j].function);
			/* An allocator's frame names its value type: a node
			 * type tells the container; an element type does not.
			 */
			static const char *const alloc_pfx[] = {
			    "std::__new_allocator<",
			    "__gnu_cxx::new_allocator<", "std::allocator<",
			    "std::allocator_traits<std::allocator<"};
			for (size_t e = 0; q && e < 4; e++)
				if (strncmp(q, alloc_pfx[e],
				            strlen(alloc_pfx[e])) == 0)
					q += strlen(alloc_pfx[e]);
			for (size_t e = 0;
			     q && e < sizeof known / sizeof *known; e++)
				if (strncmp(q, known[e].prefix,
				            strlen(known[e].prefix)) == 0) {
					*node = known[e].node;
					return known[e].name;
				}
		}
	}
	return found;
}

/* The container of the stacks of group g that made the most of its
 * short-lived blocks, with their share of them in *share; NULL when no
 * frame names one. */
static const char *container_of(model_t *m, const sites_t *S, uint32_t g,
                                bool *node, double *share)
{
	const char *best = NULL;
	uint64_t n = 0, all = 0;
	for (uint32_t k = S->start[g]; k < S->start[g + 1]; k++) {
		uint32_t si = S->order[k];
		uint64_t v = m->stk[si].site->short_n;
		bool nd = false;
		const char *c = v ? stack_container(m, si, &nd) : NULL;
		all += v;
		if (!c)
			continue;
		if (!best || strcmp(best, c) == 0) {
			best = c;
			*node = nd;
			n += v;
		}
	}
	*share = all ? (double)n / (double)all : 0;
	return best;
}

void find_alloc_sites(model_t *m, const sites_t *S, findings_t *out)
{
	double dur_s = (double)model_recorded_ns(m) / 1e9;
	const char *slow_path, *slow_fix;
	slow_path_of(m, &slow_path, &slow_fix);
	double median = hist_quantile(&m->alloc_hist, 0.5) / 2;
	char sn[256];
	for (uint32_t g = 0; g < S->ng; g++) {
		const site_t *s = &S->g[g].s;
		uint32_t si = S->g[g].rep;
		/* cross_thread_free */
		double xexcess =
		    (double)s->xfree_ns - 2.0 * (double)s->xfree_n * median;
		if (s->xfree_n >= TH_XFREE_MIN &&
		    s->xfree_n * 100 >= s->frees * TH_XFREE_MIN_SHARE_PCT) {
			finding_t *f = finding_add(out, m, FK_CROSS_THREAD_FREE,
			                           xexcess > 0 ? xexcess : 0);
			f->stack = si;
			finding_set_lines(f, S->g[g].line, S->g[g].nline);
			group_stacks(f, m, S, g, EV_CROSS_THREAD_FREES, v_xfree,
			             0);
			finding_put(f, EV_CROSS_THREAD_FREES,
			            (double)s->xfree_n);
			finding_put(f, EV_FREES, (double)s->frees);
			finding_put(
			    f, EV_SHARE,
			    ratio((double)s->xfree_n, (double)s->frees));
			finding_put(f, EV_BYTES, (double)s->xfree_bytes);
			finding_put(f, EV_ALLOCATOR_NS, (double)s->xfree_ns);
			finding_put(f, EV_ALLOCATOR_NS_ESTIMATED,
			            estimated(m, s->xfree_timed, s->xfree_n));
			finding_put(f, EV_ALLOCATING_THREADS,
			            nthreads(s->athr));
			finding_put(f, EV_FREEING_THREADS, nthreads(s->fthr));
			finding_put(f, EV_STACKS, f->stacks_total);
			cap_on_samples(f, m, (double)s->xfree_timed);
			snprintf(
			    f->advice, sizeof f->advice,
			    "Blocks allocated at %s are freed by another "
			    "thread, which defeats per-thread caches: free "
			    "them where they were allocated, move the "
			    "objects by value, or recycle them through a "
			    "per-thread pool.",
			    finding_site_name(f, sn, sizeof sn));
		}
		/* alloc_churn */
		uint64_t nsize;
		uint64_t size = top_size(s, &nsize);
		uint64_t allocs = s->allocs + s->reallocs;
		if (s->short_n >= TH_CHURN_MIN_BLOCKS && dur_s > 0 &&
		    (double)s->short_n / dur_s >= TH_CHURN_MIN_RATE &&
		    nsize * 100 >= allocs * TH_CHURN_SIZE_SHARE_PCT) {
			finding_t *f = finding_add(out, m, FK_ALLOC_CHURN,
			                           (double)s->short_ns);
			f->stack = si;
			finding_set_lines(f, S->g[g].line, S->g[g].nline);
			group_stacks(f, m, S, g, EV_SHORT_LIVED, v_churn, 0);
			finding_put(f, EV_SHORT_LIVED, (double)s->short_n);
			finding_put(f, EV_ALLOCS, (double)allocs);
			finding_put(f, EV_RATE_PER_S,
			            (double)s->short_n / dur_s);
			finding_put(f, EV_SIZE, (double)size);
			finding_put(f, EV_SIZE_SHARE,
			            ratio((double)nsize, (double)allocs));
			finding_put(
			    f, EV_MEAN_LIFETIME_NS,
			    ratio((double)s->life_ns, (double)s->frees));
			finding_put(f, EV_ALLOCATOR_NS, (double)s->short_ns);
			finding_put(f, EV_ALLOCATOR_NS_ESTIMATED,
			            estimated(m, s->short_timed, s->short_n));
			finding_put(f, EV_STACKS, f->stacks_total);
			cap_on_samples(f, m, (double)s->short_timed);
			/* The container the stack allocates for, when a
			 * frame names one; else what the size shows, and
			 * what to check. */
			bool node = false;
			double cshare = 0;
			const char *cont =
			    container_of(m, S, g, &node, &cshare);
			if (cshare < 0.05)
				cont = NULL; /* a few stray blocks */
			char why[256];
			if (cont && cshare <= 0.5)
				snprintf(
				    why, sizeof why,
				    "(%.0f%% of them a %s's %s, the rest "
				    "made by the site itself): %s, and keep "
				    "the others for reuse (a per-thread free "
				    "list or pool).",
				    100 * cshare, cont,
				    node ? "nodes" : "buffers",
				    node ? "give the container a pool or "
				           "use open addressing"
				         : "reserve the container once and "
				           "reuse it");
			else if (cont && node)
				snprintf(
				    why, sizeof why,
				    "(the nodes of a %s): use open "
				    "addressing or a pre-allocated pool, or "
				    "reuse the objects.",
				    cont);
			else if (cont)
				snprintf(why, sizeof why,
				         "(a %s's buffer made for each use): "
				         "keep one and reuse it (clear() keeps "
				         "its capacity), or reserve it once up "
				         "front.",
				         cont);
			else if (size <= TH_CHURN_NODE_MAX_BYTES)
				snprintf(
				    why, sizeof why,
				    "(small objects; no frame names a "
				    "container): reuse them through a "
				    "per-thread free list or pool; if a "
				    "container makes them, reserve its "
				    "storage up front (a vector) or give it "
				    "a pool (a linked container's nodes).");
			else
				snprintf(
				    why, sizeof why,
				    "(a buffer made for each call?): keep "
				    "one per thread or per object and reuse "
				    "it, or size it once up front.");
			finding_put(f, EV_NODE_CONTAINER, cont && node);
			snprintf(f->advice, sizeof f->advice,
			         "%llu-byte blocks from %s live less than %.1f "
			         "ms at %.0f/s %s",
			         (unsigned long long)size,
			         finding_site_name(f, sn, sizeof sn),
			         TH_CHURN_LIFETIME_NS / 1e6,
			         (double)s->short_n / dur_s, why);
		}
		/* slow_alloc, by whether a lock was held: estimates from the
		 * timed calls (site_scale), preemption set apart */
		for (int h = 0; h < 2; h++) {
			uint64_t calls = s->calls[h];
			double k = site_scale(s, h);
			double slow = (double)s->slow_n[h] * k;
			double slow_ns = (double)s->slow_ns[h] * k;
			if (slow < TH_SLOW_MIN_CALLS ||
			    slow * 1e6 < (double)calls * TH_SLOW_MIN_SHARE_PPM)
				continue;
			double excess = slow_ns - slow * median;
			if (excess <= 0)
				continue;
			finding_t *f =
			    finding_add(out, m, FK_SLOW_ALLOC, excess);
			f->stack = si;
			finding_set_lines(f, S->g[g].line, S->g[g].nline);
			group_stacks(f, m, S, g, EV_SLOW_NS, v_slow, h);
			finding_put(f, EV_LOCK_HELD, h);
			finding_put(f, EV_SLOW_CALLS, slow);
			finding_put(f, EV_CALLS, (double)calls);
			finding_put(
			    f, EV_SLOW_SHARE,
			    ratio((double)s->slow_n[h], (double)s->timed[h]));
			finding_put(f, EV_SLOW_NS, slow_ns);
			finding_put(
			    f, EV_MEAN_SLOW_NS,
			    ratio((double)s->slow_ns[h], (double)s->slow_n[h]));
			finding_put(f, EV_MEDIAN_CALL_NS, median);
			finding_put(f, EV_ALLOCATOR_LOCK_WAIT_NS,
			            (double)s->lw_h[h]);
			finding_put(f, EV_THRESHOLD_NS, TH_SLOW_ALLOC_NS);
			finding_put(f, EV_STACKS, f->stacks_total);
			finding_put(f, EV_TIMED_CALLS, (double)s->timed[h]);
			finding_put(f, EV_TIMED_SLOW_CALLS,
			            (double)s->slow_n[h]);
			finding_put(f, EV_ESTIMATED, s->timed[h] < calls);
			finding_put(f, EV_PREEMPTED_CALLS, (double)s->pre_n[h]);
			finding_put(f, EV_PREEMPTED_NS, (double)s->pre_ns[h]);
			finding_put(f, EV_MIGRATED_CALLS,
			            (double)s->pre_mig[h]);
			slow_advice(m, f, s, h, slow_path, slow_fix);
			cap_on_samples(f, m, (double)s->slow_n[h]);
		}
	}
}
