/*
 * lock_names.c - names for the locks nobody named (see lock_names.h).
 *
 * Invariants:
 * - A label is only what the trace shows: a symbol of the recorded module
 *   whose range holds the address, a block that was live and held the
 *   address when the lock was first seen, or a recorded stack.
 * - The user's name (l->name) is never replaced; lock_label shows it first.
 * - A lock with no init in the trace is named by its main acquisition site
 *   (lock_main_site), not the first one seen: two windows of one process
 *   name it alike.
 */
#include "lock_names.h"

#include "classes.h"
#include "symbols.h"
#include "trace_format.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void in_block(model_t *m, lock_t *l, uint64_t start, uint32_t slot)
{
	const block_t *b = &m->blk[slot];
	l->blk_stack = b->stack;
	l->blk_off = (uint32_t)(l->addr - start);
	l->in_block = true;
	if (b->size <= LOCK_BLOCK_REACH)
		return;
	/* An array of locks: the next ones are past the reach. */
	for (uint32_t k = 0; k < BIGBLK_RING; k++)
		if (m->bigblk[k] == start)
			return;
	m->bigsize[m->nbigblk % BIGBLK_RING] = b->size;
	m->bigblk[m->nbigblk++ % BIGBLK_RING] = start;
}

/* Look-back candidates whose map slots are fetched together: the first
 * LOCK_LOOK_FIRST (model.h: lock_new_prefetch has asked for their slots
 * already, and a lock made inside a fresh message lies within them), then
 * LOOK_BATCH at a time. */
#define LOOK_BATCH 8

void lock_find_block(model_t *m, lock_t *l)
{
	if (!l->addr || !m->live.n)
		return;
	/* A large block's locks: an array of a thousand stripes (40 KB of
	 * mutexes) lies mostly past the reach of the look back. */
	for (uint32_t k = 0; k < BIGBLK_RING; k++) {
		uint64_t start = m->bigblk[k];
		/* Past bigsize[k], no block live at start holds the lock:
		 * the look-up (a cache miss in a map of megabytes) is spared.
		 */
		if (!start || l->addr < start ||
		    l->addr - start >= m->bigsize[k])
			continue;
		const uint32_t *v = u64map_find(&m->live, start);
		if (v && l->addr - start < m->blk[*v].size) {
			in_block(m, l, start, *v);
			return;
		}
	}
	/* Blocks start 8-byte aligned with every allocator mallock hooks.
	 * The candidates' slots are asked for a batch at a time: each is
	 * a cache miss of its own, and they overlap instead of stalling the
	 * look back one after the other. Each candidate's hash is computed
	 * once, for its prefetch and its find. */
	uint64_t a = l->addr & ~7ull;
	uint64_t last = a < LOCK_BLOCK_REACH ? a : LOCK_BLOCK_REACH;
	uint32_t h[LOOK_BATCH];
	uint64_t batch = 8 * LOCK_LOOK_FIRST;
	for (uint64_t from = 0; from <= last;
	     from += batch, batch = 8 * LOOK_BATCH) {
		uint64_t to = from + batch - 8;
		if (to > last)
			to = last;
		for (uint64_t back = from, k = 0; back <= to; back += 8, k++) {
			h[k] = u64map_hash(a - back);
			prefetch_line(&m->live.slot[h[k] & m->live.mask]);
		}
		for (uint64_t back = from, k = 0; back <= to; back += 8, k++) {
			const uint32_t *v =
			    u64map_find_h(&m->live, a - back, h[k]);
			if (!v)
				continue;
			if (l->addr - (a - back) < m->blk[*v].size)
				in_block(m, l, a - back, *v);
			return; /* the nearest block start below: in it or
			         * in none */
		}
	}
}

void lock_names(model_t *m)
{
	char buf[700], site[512];
	frame_t fr;
	for (size_t i = 0; i < m->nlock; i++) {
		lock_t *l = &m->lock[i];
		if (l->name || l->is_cond || l->kind == FMT_KIND_COND)
			continue;
		uint64_t off = 0, tc = 0;
		uint32_t ts; /* the site that names a lock with no init */
		const char *sym = l->addr ? sym_data(m, l->addr, &off) : NULL;
		if (l->addr && sym_tc_central(m, l->addr, &tc)) {
			/* The size class's byte size is tcmalloc's run-time
			 * size map, not in the file: the Locks table gives the
			 * block sizes of the calls that waited on it. */
			snprintf(buf, sizeof buf,
			         "tcmalloc::Static::central_cache_[%" PRIu64
			         "]",
			         tc);
		} else if (sym) {
			if (off)
				snprintf(buf, sizeof buf, "%s+0x%" PRIx64, sym,
				         off);
			else
				snprintf(buf, sizeof buf, "%s", sym);
		} else if (l->in_block) {
			if (sym_stack_site(m, l->blk_stack, &fr))
				frame_label(&fr, site, sizeof site);
			else
				snprintf(site, sizeof site, "an unknown site");
			snprintf(buf, sizeof buf,
			         "%s at +0x%x in a block from %s",
			         lock_kind_word(l->kind), l->blk_off, site);
		} else if (l->kind != FMT_KIND_ALLOC_INTERNAL &&
		           l->init_stack != NONE32 &&
		           stack_owner(m, l->init_stack, &fr)) {
			frame_label(&fr, site, sizeof site);
			snprintf(buf, sizeof buf, "%s initialised in %s",
			         lock_kind_word(l->kind), site);
		} else if (l->kind != FMT_KIND_ALLOC_INTERNAL &&
		           ((l->init_stack != NONE32 &&
		             sym_stack_site(m, l->init_stack, &fr)) ||
		            ((ts = l->kind == FMT_KIND_FUTEX
		                       ? l->first_site
		                       : lock_main_site(m, l)) != NONE32 &&
		             sym_stack_site(m, ts, &fr)))) {
			frame_label(&fr, site, sizeof site);
			snprintf(buf, sizeof buf, "%s %s %s",
			         lock_kind_word(l->kind),
			         l->init_stack != NONE32 &&
			                 sym_stack_site(m, l->init_stack, &fr)
			             ? "initialised in"
			         : l->kind == FMT_KIND_FUTEX
			             ? "first waited on in"
			             : "taken in",
			         site);
		} else {
			continue;
		}
		l->label = arena_strdup(&m->arena, buf);
	}
}
