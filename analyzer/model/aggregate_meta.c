/*
 * aggregate_meta.c - the metadata records of a trace into the model
 * (aggregate.h): the process, its modules (deduplicated by a hash of bias
 * and path), stacks, lock identities and names, thread names (and the
 * --thread filter), notes and END. An event record is aggregate.c's.
 *
 * A record that does not decode counts as bad metadata and is otherwise
 * skipped; a type from a later minor version is skipped.
 */
#include "aggregate.h"

#include "lock_names.h"
#include "meta.h"

#include <stdlib.h>
#include <string.h>

static char *copy_str(model_t *m, meta_str_t s)
{
	return arena_strndup(&m->arena, s.s, s.n);
}

bool aggregate_thread_matches(const model_t *m, const thread_t *t)
{
	if (!m->thread_filter)
		return true;
	for (const char **f = m->thread_filter; *f; f++) {
		char *end;
		unsigned long v = strtoul(*f, &end, 10);
		if (!*end && v == t->tid)
			return true;
		if (t->name && strcmp(t->name, *f) == 0)
			return true;
	}
	return false;
}

void aggregate_meta(model_t *m, const fmt_record_t *r)
{
	switch (r->type) {
	case FMT_PROCESS: {
		meta_process_t p;
		if (meta_process(r, &p) < 0)
			goto bad;
		if (m->exe)
			break;
		m->pid = p.pid;
		m->ppid = p.ppid;
		m->tsc_hz = p.tsc_hz;
		m->unwinder = p.unwinder;
		m->depth = p.depth;
		m->exe = copy_str(m, p.exe);
		m->cmdline = copy_str(m, p.cmdline);
		m->hostname = copy_str(m, p.hostname);
		m->version = copy_str(m, p.version);
		m->proc_flags = p.flags;
		m->sample_bytes = p.sample_bytes;
		m->max_bytes = p.max_bytes;
		m->time_every = p.time_every;
		m->hold_every = p.hold_every;
		break;
	}
	case FMT_MODULE: {
		meta_module_t p;
		if (meta_module(r, &p) < 0)
			goto bad;
		/* Deduplicated through a hash of (bias, path), not a scan: a
		 * forged trace of a million MODULE records must not take
		 * quadratic time. */
		uint64_t key = 14695981039346656037ull ^ p.bias;
		for (size_t i = 0; i < p.path.n; i++)
			key = (key ^ (uint8_t)p.path.s[i]) * 1099511628211ull;
		if (key == U64MAP_EMPTY)
			key--;
		int added;
		uint32_t *mi = u64map_put(&m->mod_map, key, &added);
		if (!added) {
			const module_t *o = &m->mod[*mi];
			if (o->bias == p.bias && strlen(o->path) == p.path.n &&
			    memcmp(o->path, p.path.s, p.path.n) == 0)
				return;
		} else {
			*mi = (uint32_t)m->nmod;
		}
		VEC_RESERVE(m->mod, m->capmod, m->nmod);
		module_t *x = &m->mod[m->nmod++];
		memset(x, 0, sizeof *x);
		x->bias = p.bias;
		x->lo = p.lo;
		x->hi = p.hi;
		x->path = copy_str(m, p.path);
		x->build_id_len = p.build_id.n > sizeof x->build_id
		                      ? (uint32_t)sizeof x->build_id
		                      : (uint32_t)p.build_id.n;
		memcpy(x->build_id, p.build_id.s, x->build_id_len);
		char hex[2 * sizeof x->build_id + 1];
		for (uint32_t i = 0; i < x->build_id_len; i++) {
			static const char d[] = "0123456789abcdef";
			hex[2 * i] = d[x->build_id[i] >> 4];
			hex[2 * i + 1] = d[x->build_id[i] & 15];
		}
		hex[2 * x->build_id_len] = 0;
		x->build_id_hex = arena_strdup(&m->arena, hex);
		break;
	}
	case FMT_STACK: {
		static meta_stack_t p; /* 2 KB: not on the stack */
		if (meta_stack(r, &p) < 0)
			goto bad;
		uint32_t si = model_stack(m, p.id);
		if (si == NONE32 || m->stk[si].defined)
			break;
		VEC_RESERVE(m->frames, m->capframes, m->nframes + p.n);
		memcpy(m->frames + m->nframes, p.frame, p.n * sizeof *p.frame);
		m->stk[si].off = (uint32_t)m->nframes;
		m->stk[si].n = p.n;
		m->stk[si].defined = true;
		m->nframes += p.n;
		break;
	}
	case FMT_LOCK_NEW: {
		meta_lock_new_t p;
		if (meta_lock_new(r, &p) < 0)
			goto bad;
		uint32_t li = model_lock(m, p.id); /* may move m->lock */
		lock_t *l = &m->lock[li];
		if (l->defined)
			break;
		l->defined = true;
		l->addr = p.addr;
		l->kind = (uint32_t)p.kind;
		l->flags = (uint32_t)p.flags;
		if (p.kind == FMT_KIND_COND)
			l->is_cond = true;
		else
			lock_find_block(m, l);
		break;
	}
	case FMT_LOCK_NAME: {
		meta_lock_name_t p;
		if (meta_lock_name(r, &p) < 0)
			goto bad;
		uint32_t li = model_lock(m, p.id); /* may move m->lock */
		lock_t *l = &m->lock[li];
		l->name = copy_str(m, p.name);
		l->queue_named = (p.flags & FMT_NAMEF_QUEUE) != 0;
		break;
	}
	case FMT_THREAD_NAME: {
		meta_thread_name_t p;
		if (meta_thread_name(r, &p) < 0)
			goto bad;
		uint32_t ti = model_thread(m, (uint32_t)p.tid);
		thread_t *t = &m->thr[ti];
		t->name = copy_str(m, p.name);
		t->excluded = !aggregate_thread_matches(m, t);
		break;
	}
	case FMT_END: {
		meta_end_t p;
		if (meta_end(r, &p) < 0)
			goto bad;
		m->have_end = true;
		m->end_events += p.events;
		m->end_dropped += p.dropped;
		m->end_clean = (p.flags & FMT_ENDF_CLEAN) != 0;
		break;
	}
	case FMT_NOTE: {
		meta_note_t p;
		if (meta_note(r, &p) < 0)
			goto bad;
		model_note(m, p.level, p.text.s, p.text.n);
		break;
	}
	default:
		break; /* a metadata type from a later minor version: skipped */
	}
	return;
bad:
	m->tot.bad_meta++;
}
