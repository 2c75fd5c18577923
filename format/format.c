/*
 * format.c - chunk framing and record decoding of the mallock trace format
 * (see trace_format.h and docs/trace-format.md).
 *
 * Nothing here allocates: the shim calls fmt_chunk_seal() from its hooks, and
 * the reader calls fmt_decode() on buffers it owns.
 */
#include "trace_format.h"

#include <zlib.h>

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

void fmt_file_header(uint8_t out[FMT_FILE_HEADER_SIZE])
{
	memcpy(out, FMT_FILE_MAGIC, FMT_FILE_MAGIC_LEN);
	out[8] = FMT_VERSION_MAJOR;
	out[9] = 0;
	out[10] = FMT_VERSION_MINOR;
	out[11] = 0;
	put32(out + 12, FMT_FILE_HEADER_SIZE);
}

int fmt_file_header_check(const uint8_t *in, size_t n, unsigned *major,
                          unsigned *minor)
{
	if (n < FMT_FILE_HEADER_SIZE ||
	    memcmp(in, FMT_FILE_MAGIC, FMT_FILE_MAGIC_LEN) != 0)
		return -1;
	*major = (unsigned)in[8] | (unsigned)in[9] << 8;
	*minor = (unsigned)in[10] | (unsigned)in[11] << 8;
	if (*major != FMT_VERSION_MAJOR ||
	    get32(in + 12) != FMT_FILE_HEADER_SIZE)
		return -2;
	return 0;
}

static uint32_t chunk_crc(const uint8_t *hdr, const uint8_t *payload,
                          uint32_t len)
{
	uLong c = crc32(0L, Z_NULL, 0);
	c = crc32(c, hdr + 12, FMT_CHUNK_HEADER_SIZE - 12);
	if (len)
		c = crc32(c, payload, len);
	return (uint32_t)c;
}

void fmt_chunk_seal(uint8_t out[FMT_CHUNK_HEADER_SIZE], fmt_chunk_header_t *h,
                    const uint8_t *payload)
{
	h->magic = FMT_CHUNK_MAGIC;
	put32(out + 0, h->magic);
	put32(out + 4, h->payload_len);
	put32(out + 12, h->tid);
	put32(out + 16, h->seq);
	put32(out + 20, h->flags);
	put64(out + 24, h->tsc_base);
	put64(out + 32, h->tsc_flush);
	put64(out + 40, h->mono_flush_ns);
	h->crc32 = chunk_crc(out, payload, h->payload_len);
	put32(out + 8, h->crc32);
}

int fmt_chunk_parse(const uint8_t in[FMT_CHUNK_HEADER_SIZE],
                    fmt_chunk_header_t *h)
{
	h->magic = get32(in + 0);
	h->payload_len = get32(in + 4);
	h->crc32 = get32(in + 8);
	h->tid = get32(in + 12);
	h->seq = get32(in + 16);
	h->flags = get32(in + 20);
	h->tsc_base = get64(in + 24);
	h->tsc_flush = get64(in + 32);
	h->mono_flush_ns = get64(in + 40);
	if (h->magic != FMT_CHUNK_MAGIC ||
	    h->payload_len > FMT_CHUNK_MAX_PAYLOAD)
		return -1;
	return 0;
}

int fmt_chunk_verify(const uint8_t in[FMT_CHUNK_HEADER_SIZE],
                     const fmt_chunk_header_t *h, const uint8_t *payload)
{
	return chunk_crc(in, payload, h->payload_len) == h->crc32 ? 0 : -1;
}

/* The layout of each core type, indexed by type byte (NULL: not a core type).
 */
/* clang-format off */
static const char *const core_layout[0x80] = {
#define FMT_LAYOUT_(name, code, layout) [code] = layout,
	FMT_CORE_RECORDS(FMT_LAYOUT_)
#undef FMT_LAYOUT_
};
/* clang-format on */

const char *fmt_core_layout(unsigned type)
{
	return type < 0x80 ? core_layout[type] : NULL;
}

/* The compact forms (1.7) and the hold forms (1.8), indexed by type byte:
 * wire layout, base, and whether a REL follows the base record. */
/* clang-format off */
static const struct compact {
	const char *layout;
	uint8_t base, hold;
} compact[0x80] = {
#define FMT_COMPACT_(name, code, base, layout) [code] = {layout, FMT_##base, 0},
	FMT_COMPACT_RECORDS(FMT_COMPACT_)
#undef FMT_COMPACT_
#define FMT_HOLD_(name, code, base, layout) [code] = {layout, FMT_##base, 1},
	FMT_HOLD_RECORDS(FMT_HOLD_)
#undef FMT_HOLD_
	[FMT_LOCK_INIT_NEW] = {FMT_LOCK_INIT_NEW_LAYOUT, FMT_LOCK_INIT, 0},
};
/* clang-format on */

const char *fmt_compact_layout(unsigned type, unsigned *base)
{
	if (type - FMT_REL_LAST_DT < FMT_DT_CODES) {
		*base = FMT_REL;
		return "k";
	}
	if (type - FMT_ACQ_LAST_DT < FMT_DT_CODES) {
		*base = FMT_ACQ;
		return "ku";
	}
	if (type >= 0x80 || !compact[type].layout)
		return NULL;
	*base = compact[type].base;
	return compact[type].layout;
}

int fmt_is_hold(unsigned type)
{
	return type < 0x80 && compact[type].hold;
}

void fmt_dec_init(fmt_dec_t *d, const fmt_chunk_header_t *h,
                  const uint8_t *payload)
{
	d->start = d->p = payload;
	d->end = payload + h->payload_len;
	d->tsc = h->tsc_base;
	d->last_ptr = 0;
	d->last_lock = 0;
	d->last_new = 0;
	d->pair_end = NULL;
}

/* Reads the varint at q, which at least FMT_VARINT_MAX bytes follow (no
 * bound to check). Returns the byte after it, or NULL when it is longer
 * than FMT_VARINT_MAX bytes. The value is fmt_get_u()'s. */
static inline const uint8_t *get_u_inbounds(const uint8_t *q, uint64_t *out)
{
	uint64_t b = *q++;
	if (b < 0x80) {
		*out = b;
		return q;
	}
	uint64_t v = b & 0x7f;
	for (unsigned shift = 7; shift < 70; shift += 7) {
		b = *q++;
		v |= (b & 0x7f) << shift;
		if (b < 0x80) {
			*out = v;
			return q;
		}
	}
	return NULL;
}

/* Field i of a core record of layout L (a string literal), read at q into
 * r->f[i] when L has such a field: every test folds to a constant, so each
 * type's case below is straight-line code for its own layout. */
#define FMT_LETTER_(L, i) ((L)[(i) < sizeof(L) ? (i) : 0])
#define FMT_FIELD_INBOUNDS_(L, i)                                              \
	if ((i) + 1 < sizeof(L)) {                                             \
		if (!(q = get_u_inbounds(q, &v)))                              \
			return 0;                                              \
		if (FMT_LETTER_(L, i) == 'p') {                                \
			v = last_ptr + (uint64_t)fmt_unzigzag(v);              \
			last_ptr = v;                                          \
		} else if (FMT_LETTER_(L, i) == 'r') {                         \
			v = r->f[(i) ? (i)-1 : 0] + (uint64_t)fmt_unzigzag(v); \
			last_ptr = v;                                          \
		}                                                              \
		r->f[i] = v;                                                   \
	}
_Static_assert(FMT_EVENT_MAX >= 1 + 6 * FMT_VARINT_MAX,
               "a record of dt and five fields fits in FMT_EVENT_MAX");

/* fmt_decode() of a core record of type r->type that lies wholly before
 * d->end (FMT_EVENT_MAX bytes or more left): the same fields, read
 * without a bound check per byte, by a case per type of the layout table.
 * Returns 1, or 0 when a varint is too long; then d is as it was, for the
 * checked path to report. */
static int decode_core_inbounds(fmt_dec_t *d, fmt_record_t *r)
{
	const uint8_t *q = d->p;
	uint64_t v, last_ptr = d->last_ptr;

	if (!(q = get_u_inbounds(q, &v)))
		return 0;
	uint64_t tsc = d->tsc + v;
	switch (r->type) {
/* clang-format off */
#define FMT_CASE_(name, code, layout)                                          \
	case code: {                                                           \
		_Static_assert(sizeof(layout) <= 6, "at most five fields");    \
		FMT_FIELD_INBOUNDS_(layout, 0) FMT_FIELD_INBOUNDS_(layout, 1)  \
		FMT_FIELD_INBOUNDS_(layout, 2) FMT_FIELD_INBOUNDS_(layout, 3)  \
		FMT_FIELD_INBOUNDS_(layout, 4)                                 \
		r->nf = sizeof(layout) - 1;                                    \
		break;                                                         \
	}
	FMT_CORE_RECORDS(FMT_CASE_)
#undef FMT_CASE_
	/* clang-format on */
	default:
		return 0;
	}
	r->tsc = d->tsc = tsc;
	d->last_ptr = last_ptr;
	if (FMT_LOCK_RECORD(r->type))
		d->last_lock = r->f[0];
	d->p = q;
	return 1;
}
#undef FMT_FIELD_INBOUNDS_

/* fmt_decode() of a compact record (1.7) at d->p (after its type byte),
 * as its base record. Returns 1, or -1 when malformed (d not moved). */
static int decode_compact(fmt_dec_t *d, fmt_record_t *r, const char *layout,
                          unsigned base, uint64_t dt_add)
{
	const uint8_t *q = d->p;
	/* Bound checks per byte only near the payload's end. */
	int room = d->end - q >= FMT_EVENT_MAX;
	uint64_t v, dt, last_ptr = d->last_ptr;
	unsigned nf = 0;

	if (room ? !(q = get_u_inbounds(q, &dt)) : fmt_get_u(&q, d->end, &dt))
		return -1;
	dt += dt_add;
	for (const char *l = layout; *l; l++) {
		switch (*l) {
		case '0':
			v = 0;
			break;
		case 'k':
			v = d->last_lock;
			break;
		default:
			if (room ? !(q = get_u_inbounds(q, &v))
			         : fmt_get_u(&q, d->end, &v))
				return -1;
			if (*l == 'q') {
				v = last_ptr + ((uint64_t)fmt_unzigzag(v) << 4);
				last_ptr = v;
			} else if (*l == 'z') {
				v <<= 4;
			}
		}
		r->f[nf++] = v;
	}
	r->type = base;
	r->nf = nf;
	r->tsc = d->tsc += dt;
	d->last_ptr = last_ptr;
	if (FMT_LOCK_RECORD(base))
		d->last_lock = r->f[0];
	d->p = q;
	return 1;
}
#undef FMT_LETTER_

/* The second record of the record of two at d->p: the release of a hold
 * form's lock (1.8), which its acquisition made the chunk's last lock, or
 * the LOCK_INIT of a LOCK_INIT_NEW (1.9), whose id is the chunk's last new
 * id; at the same time. d->p moves past the record. */
static int pair_second(fmt_dec_t *d, fmt_record_t *r)
{
	r->wire = *d->p;
	r->tsc = d->tsc;
	r->body = NULL;
	r->body_len = 0;
	if (r->wire == FMT_LOCK_INIT_NEW) {
		r->type = FMT_LOCK_INIT;
		r->f[FMT_LOCK_INIT_LOCK] = d->last_new;
		r->f[FMT_LOCK_INIT_STACK] = d->init_stack;
		r->nf = 2;
	} else {
		r->type = FMT_REL;
		r->f[FMT_REL_LOCK] = d->last_lock;
		r->nf = 1;
	}
	d->p = d->pair_end;
	d->pair_end = NULL;
	return 1;
}

/* The first record of the LOCK_INIT_NEW at rec (1.9; d->p after its type
 * byte): its LOCK_NEW, with the body built in d->new_body; d->p stays at
 * rec until pair_second() returns the LOCK_INIT. Returns 1, or -1 when
 * malformed (d not moved). */
static int decode_init_new(fmt_dec_t *d, fmt_record_t *r, const uint8_t *rec)
{
	const uint8_t *q = d->p;
	uint64_t dt, v[4];
	if (fmt_get_u(&q, d->end, &dt) < 0)
		return -1;
	for (int i = 0; i < 4; i++)
		if (fmt_get_u(&q, d->end, &v[i]) < 0)
			return -1;
	uint64_t id = d->last_new + 1 + (uint64_t)fmt_unzigzag(v[0]);
	uint64_t addr = d->last_ptr + (uint64_t)fmt_unzigzag(v[1]);
	uint8_t *b = d->new_body;
	b = fmt_put_u(b, id);
	b = fmt_put_u(b, addr);
	b = fmt_put_u(b, v[2]);
	b = fmt_put_u(b, FMT_LOCKF_INIT);
	r->type = FMT_LOCK_NEW;
	r->body = d->new_body;
	r->body_len = (size_t)(b - d->new_body);
	/* as a LOCK_NEW before the LOCK_INIT: metadata, not advancing time */
	r->tsc = d->tsc;
	d->tsc += dt;
	d->last_new = d->last_lock = id;
	d->init_stack = v[3];
	d->pair_end = q;
	d->p = rec;
	return 1;
}

int fmt_decode(fmt_dec_t *d, fmt_record_t *r, size_t *err_off)
{
	const uint8_t *rec = d->p;
	uint64_t v;

	if (d->pair_end)
		return pair_second(d, r);
	if (d->p >= d->end)
		return 0;
	r->type = r->wire = *d->p++;
	r->nf = 0;
	r->body = NULL;
	r->body_len = 0;
	if (FMT_IS_META(r->type)) {
		if (fmt_get_u(&d->p, d->end, &v) < 0 ||
		    v > (uint64_t)(d->end - d->p))
			goto bad;
		r->body = d->p;
		r->body_len = (size_t)v;
		r->tsc = d->tsc;
		d->p += v;
		return 1;
	}
	const char *layout = core_layout[r->type];
	if (!layout) {
		unsigned j = r->type - FMT_REL_LAST_DT;
		unsigned k = r->type - FMT_ACQ_LAST_DT;
		if (j < FMT_DT_CODES) {
			if (decode_compact(d, r, "k", FMT_REL,
			                   (uint64_t)(j + 1) << 7) > 0)
				return 1;
		} else if (k < FMT_DT_CODES) {
			if (decode_compact(d, r, "ku", FMT_ACQ,
			                   (uint64_t)(k + 1) << 7) > 0)
				return 1;
		} else if (r->type == FMT_LOCK_INIT_NEW) {
			if (decode_init_new(d, r, rec) > 0)
				return 1;
		} else if (compact[r->type].layout) {
			const struct compact *c = &compact[r->type];
			if (decode_compact(d, r, c->layout, c->base, 0) > 0) {
				if (c->hold) { /* its REL comes next */
					d->pair_end = d->p;
					d->p = rec;
				}
				return 1;
			}
		}
		goto bad;
	}
	/* The common case: the whole record is inside the payload. */
	if (d->end - rec >= FMT_EVENT_MAX && decode_core_inbounds(d, r))
		return 1;
	if (fmt_get_u(&d->p, d->end, &v) < 0)
		goto bad;
	d->tsc += v;
	r->tsc = d->tsc;
	for (const char *l = layout; *l; l++) {
		if (fmt_get_u(&d->p, d->end, &v) < 0)
			goto bad;
		if (*l == 'p') {
			v = d->last_ptr + (uint64_t)fmt_unzigzag(v);
			d->last_ptr = v;
		} else if (*l == 'r') {
			v = r->f[r->nf - 1] + (uint64_t)fmt_unzigzag(v);
			d->last_ptr = v;
		}
		r->f[r->nf++] = v;
	}
	if (FMT_LOCK_RECORD(r->type))
		d->last_lock = r->f[0];
	return 1;
bad:
	*err_off = (size_t)(rec - d->start);
	d->p = d->end;
	return -1;
}

int fmt_get_str(const uint8_t **p, const uint8_t *end, const char **s,
                size_t *n)
{
	uint64_t len;
	if (fmt_get_u(p, end, &len) < 0 || len > (uint64_t)(end - *p))
		return -1;
	*s = (const char *)*p;
	*n = (size_t)len;
	*p += len;
	return 0;
}

const char *fmt_type_name(unsigned type)
{
	if (type - FMT_REL_LAST_DT < FMT_DT_CODES)
		return "REL_LAST_DT";
	if (type - FMT_ACQ_LAST_DT < FMT_DT_CODES)
		return "ACQ_LAST_DT";
	switch (type) {
#define FMT_NAME_(name, code, layout)                                          \
	case code:                                                             \
		return #name;
		FMT_CORE_RECORDS(FMT_NAME_)
		FMT_META_RECORDS(FMT_NAME_)
#undef FMT_NAME_
#define FMT_CNAME_(name, code, base, layout)                                   \
	case code:                                                             \
		return #name;
		FMT_COMPACT_RECORDS(FMT_CNAME_)
		FMT_HOLD_RECORDS(FMT_CNAME_)
#undef FMT_CNAME_
	case FMT_LOCK_INIT_NEW:
		return "LOCK_INIT_NEW";
	}
	return NULL;
}

const char *fmt_field_name(unsigned type, unsigned i)
{
#define FMT_FNAME_(rec, idx, field, name)                                      \
	if (type == FMT_##rec && i == idx)                                     \
		return name;
	FMT_CORE_FIELDS(FMT_FNAME_)
#undef FMT_FNAME_
	return NULL;
}

const char *fmt_alloc_fn_name(unsigned fn)
{
	switch (fn) {
#define FMT_FN_NAME_(name, code, str)                                          \
	case code:                                                             \
		return str;
		FMT_ALLOC_FNS(FMT_FN_NAME_)
#undef FMT_FN_NAME_
	}
	return "?";
}

const char *fmt_lock_kind_name(unsigned kind)
{
	switch (kind) {
#define FMT_KIND_NAME_(name, code, str)                                        \
	case code:                                                             \
		return str;
		FMT_LOCK_KINDS(FMT_KIND_NAME_)
#undef FMT_KIND_NAME_
	}
	return "?";
}
