/*
 * meta.c - decodes metadata record bodies field by field, in the order
 * trace_format.h's FMT_META_RECORDS lists them. Bounds are checked on every
 * field; nothing allocates.
 */
#include "meta.h"

typedef struct cur {
	const uint8_t *p, *end;
	int bad;
} cur_t;

static uint64_t u(cur_t *c)
{
	uint64_t v = 0;
	if (!c->bad && fmt_get_u(&c->p, c->end, &v) < 0)
		c->bad = 1;
	return v;
}

static meta_str_t str(cur_t *c)
{
	meta_str_t s = {"", 0};
	if (!c->bad &&
	    (fmt_get_str(&c->p, c->end, &s.s, &s.n) < 0 || s.n > FMT_STR_MAX)) {
		c->bad = 1;
		s.s = "";
		s.n = 0;
	}
	return s;
}

static cur_t open_body(const fmt_record_t *r)
{
	cur_t c = {r->body, r->body + r->body_len, 0};
	return c;
}

int meta_process(const fmt_record_t *r, meta_process_t *m)
{
	cur_t c = open_body(r);
	m->pid = u(&c);
	m->ppid = u(&c);
	m->realtime_ns = u(&c);
	m->tsc = u(&c);
	m->mono_ns = u(&c);
	m->tsc_hz = u(&c);
	m->depth = u(&c);
	m->unwinder = u(&c);
	m->flags = u(&c);
	m->exe = str(&c);
	m->cmdline = str(&c);
	m->hostname = str(&c);
	m->version = str(&c);
	/* 1.1 fields: absent from a 1.0 trace. */
	m->sample_bytes = c.p < c.end ? u(&c) : 0;
	m->max_bytes = c.p < c.end ? u(&c) : 0;
	/* 1.4: before it, every allocator call was timed. */
	m->time_every = c.p < c.end ? u(&c) : 1;
	if (!m->time_every)
		m->time_every = 1;
	/* 1.6: before it, every hold was timed. */
	m->hold_every = c.p < c.end ? u(&c) : 1;
	if (!m->hold_every)
		m->hold_every = 1;
	return c.bad ? -1 : 0;
}

int meta_module(const fmt_record_t *r, meta_module_t *m)
{
	cur_t c = open_body(r);
	m->bias = u(&c);
	m->lo = u(&c);
	m->hi = u(&c);
	m->path = str(&c);
	m->build_id = str(&c);
	return c.bad ? -1 : 0;
}

int meta_stack(const fmt_record_t *r, meta_stack_t *m)
{
	cur_t c = open_body(r);
	m->id = u(&c);
	uint64_t n = u(&c);
	if (c.bad || n > FMT_STACK_MAX)
		return -1;
	m->n = (uint32_t)n;
	uint64_t prev = 0;
	for (uint32_t i = 0; i < m->n; i++) {
		uint64_t v = u(&c);
		prev = i == 0 ? v : prev + (uint64_t)fmt_unzigzag(v);
		m->frame[i] = prev;
	}
	return c.bad ? -1 : 0;
}

int meta_lock_new(const fmt_record_t *r, meta_lock_new_t *m)
{
	cur_t c = open_body(r);
	m->id = u(&c);
	m->addr = u(&c);
	m->kind = u(&c);
	m->flags = u(&c);
	return c.bad ? -1 : 0;
}

int meta_lock_name(const fmt_record_t *r, meta_lock_name_t *m)
{
	cur_t c = open_body(r);
	m->id = u(&c);
	m->flags = u(&c);
	m->name = str(&c);
	return c.bad ? -1 : 0;
}

int meta_thread_name(const fmt_record_t *r, meta_thread_name_t *m)
{
	cur_t c = open_body(r);
	m->tid = u(&c);
	m->name = str(&c);
	return c.bad ? -1 : 0;
}

int meta_end(const fmt_record_t *r, meta_end_t *m)
{
	cur_t c = open_body(r);
	m->events = u(&c);
	m->dropped = u(&c);
	m->flags = u(&c);
	return c.bad ? -1 : 0;
}

int meta_note(const fmt_record_t *r, meta_note_t *m)
{
	cur_t c = open_body(r);
	m->level = u(&c);
	m->text = str(&c);
	return c.bad ? -1 : 0;
}
