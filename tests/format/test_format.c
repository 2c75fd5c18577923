/*
 * test_format.c - unit tests of format/: varint and zigzag round-trips,
 * chunk seal/parse/verify, fmt_decode of every core type (encoded with
 * fmt_put_*), metadata framing, and a corrupt CRC or bad varint detected;
 * the compact forms (1.7): each chosen when its conditions hold, decoded
 * as its base record, cut records refused; the hold forms (1.8): decoded
 * as an acquisition and a REL, cut ones refused whole.
 */
#include "test.h"
#include "trace_format.h"

#include <stdint.h>
#include <string.h>

static void test_varints(void)
{
	static const uint64_t vals[] = {0,
	                                1,
	                                127,
	                                128,
	                                255,
	                                300,
	                                16383,
	                                16384,
	                                UINT32_MAX,
	                                (uint64_t)1 << 63,
	                                UINT64_MAX - 1,
	                                UINT64_MAX};
	for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
		uint8_t buf[FMT_VARINT_MAX + 2];
		uint8_t *e = fmt_put_u(buf, vals[i]);
		check(e - buf <= FMT_VARINT_MAX);
		const uint8_t *p = buf;
		uint64_t v = 0;
		check(fmt_get_u(&p, e, &v) == 0);
		check_eq(v, vals[i]);
		check(p == e);
		/* one byte short: fails */
		p = buf;
		check(fmt_get_u(&p, e - 1, &v) == -1);
	}
	static const int64_t svals[] = {
	    0,   1,         -1,        63,        -64,      64,
	    -65, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
	for (size_t i = 0; i < sizeof svals / sizeof *svals; i++) {
		check(fmt_unzigzag(fmt_zigzag(svals[i])) == svals[i]);
		uint8_t buf[FMT_VARINT_MAX];
		uint8_t *e = fmt_put_s(buf, svals[i]);
		const uint8_t *p = buf;
		uint64_t v = 0;
		check(fmt_get_u(&p, e, &v) == 0);
		check(fmt_unzigzag(v) == svals[i]);
	}
	check_eq(fmt_zigzag(-1), 1);
	check_eq(fmt_zigzag(1), 2);
	/* 11 continuation bytes: too long */
	uint8_t bad[12];
	memset(bad, 0x80, sizeof bad);
	const uint8_t *p = bad;
	uint64_t v;
	check(fmt_get_u(&p, bad + sizeof bad, &v) == -1);
}

static void test_file_header(void)
{
	uint8_t h[FMT_FILE_HEADER_SIZE];
	unsigned ma = 9, mi = 9;
	fmt_file_header(h);
	check(fmt_file_header_check(h, sizeof h, &ma, &mi) == 0);
	check_eq(ma, FMT_VERSION_MAJOR);
	check_eq(mi, FMT_VERSION_MINOR);
	check(fmt_file_header_check(h, sizeof h - 1, &ma, &mi) == -1);
	h[8] = FMT_VERSION_MAJOR + 1;
	check(fmt_file_header_check(h, sizeof h, &ma, &mi) == -2);
	check_eq(ma, FMT_VERSION_MAJOR + 1);
	h[0] ^= 1;
	check(fmt_file_header_check(h, sizeof h, &ma, &mi) == -1);
}

/*
 * The core layouts as docs/trace-format.md documents them (written out here,
 * not taken from FMT_CORE_RECORDS: the round trip below encodes and decodes
 * with the same table, so a field added, dropped or reordered there would
 * pass it). p: pointer, r: pointer as a delta of the previous one, u: varint.
 */
static void test_documented_layouts(void)
{
	static const struct {
		unsigned code;
		const char *layout;
	} doc[] = {
	    {0x01, "puuuu"}, {0x02, "pu"},   {0x03, "pruuu"}, {0x04, "uu"},
	    {0x05, "uu"},    {0x06, "uuuu"}, {0x07, "uuuu"},  {0x08, "uu"},
	    {0x09, "u"},     {0x0a, "uu"},   {0x0b, "uu"},    {0x0c, "uuu"},
	    {0x0d, "uu"},    {0x0e, "uu"},   {0x0f, "u"},     {0x10, ""},
	    {0x11, "u"},     {0x12, "uu"},   {0x13, "u"},     {0x14, "u"},
	    {0x15, "uuu"},   {0x16, "uuu"},  {0x17, "uu"},    {0x18, "uu"},
	    {0x19, "uu"},    {0x1a, "uu"},   {0x1b, "uu"},
	};
	unsigned n = 0;
#define T_(name, code, l) n++;
	FMT_CORE_RECORDS(T_)
#undef T_
	check_eq(n, sizeof doc / sizeof *doc);
	for (size_t i = 0; i < sizeof doc / sizeof *doc; i++) {
		const char *l = fmt_core_layout(doc[i].code);
		check(l && !strcmp(l, doc[i].layout));
	}
}

/* FMT_CORE_FIELDS names every layout letter of every core type, once and
 * in order: indices run 0, 1, ... per record, one name per letter. */
static void test_field_names(void)
{
	unsigned next[0x80] = {0};
#define T_(rec, i, field, name)                                                \
	check_eq(i, next[FMT_##rec]);                                          \
	next[FMT_##rec]++;                                                     \
	check_eq(fmt_field_name(FMT_##rec, i), name);
	FMT_CORE_FIELDS(T_)
#undef T_
#define T_(name, code, l)                                                      \
	check_eq(next[code], strlen(l));                                       \
	check(fmt_field_name(code, (unsigned)strlen(l)) == NULL);
	FMT_CORE_RECORDS(T_)
#undef T_
	check_eq(fmt_field_name(FMT_ALLOC, FMT_ALLOC_SIZE), "size");
	check(fmt_field_name(FMT_NOTE, 0) == NULL);
}

/* Every core type, with field values that exercise the pointer deltas. */
static void test_core_roundtrip(void)
{
	static const unsigned types[] = {
#define T_(name, code, l) code,
	    FMT_CORE_RECORDS(T_)
#undef T_
	};
	uint8_t payload[4096];
	uint64_t want[sizeof types / sizeof *types][7];
	uint64_t want_tsc[sizeof types / sizeof *types];
	fmt_enc_t enc = {1000, 0, 0, 0};
	uint8_t *p = payload;
	uint64_t tsc = 1000;
	for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
		unsigned t = types[i];
		tsc += 17 * i + 3;
		want_tsc[i] = tsc;
		p = fmt_put_head(p, &enc, t, tsc);
		int k = 0;
		for (const char *l = fmt_core_layout(t); *l; l++, k++) {
			uint64_t v = 0x7f0000001000ull +
			             (uint64_t)(i * 64 + (unsigned)k);
			if (*l == 'u')
				v = (uint64_t)k * 1000003u + i;
			want[i][k] = v;
			if (*l == 'p')
				p = fmt_put_ptr(p, &enc, v);
			else if (*l == 'r') {
				p = fmt_put_s(p, (int64_t)(v - want[i][k - 1]));
				enc.last_ptr = v;
			} else
				p = fmt_put_u(p, v);
		}
		/* a metadata record between core events */
		*p++ = FMT_NOTE;
		uint8_t body[32], *b = body;
		b = fmt_put_u(b, FMT_NOTE_WARN);
		b = fmt_put_str(b, "hi", 2);
		p = fmt_put_u(p, (uint64_t)(b - body));
		memcpy(p, body, (size_t)(b - body));
		p += b - body;
	}
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)(p - payload);
	h.tid = 42;
	h.seq = 3;
	h.tsc_base = 1000;
	h.tsc_flush = tsc;
	h.mono_flush_ns = 123456789;
	uint8_t hb[FMT_CHUNK_HEADER_SIZE];
	fmt_chunk_seal(hb, &h, payload);
	fmt_chunk_header_t g;
	check(fmt_chunk_parse(hb, &g) == 0);
	check_eq(g.magic, FMT_CHUNK_MAGIC);
	check_eq(g.tid, 42);
	check_eq(g.seq, 3);
	check_eq(g.payload_len, h.payload_len);
	check_eq(g.tsc_base, 1000);
	check_eq(g.tsc_flush, tsc);
	check_eq(g.mono_flush_ns, 123456789);
	check(fmt_chunk_verify(hb, &g, payload) == 0);

	fmt_dec_t d;
	fmt_record_t r;
	size_t eo;
	fmt_dec_init(&d, &g, payload);
	for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
		check(fmt_decode(&d, &r, &eo) == 1);
		check_eq(r.type, types[i]);
		check_eq(r.tsc, want_tsc[i]);
		check_eq(r.nf, strlen(fmt_core_layout(types[i])));
		for (unsigned k = 0; k < r.nf; k++)
			check_eq(r.f[k], want[i][k]);
		check(fmt_type_name(r.type) != NULL);
		check(fmt_decode(&d, &r, &eo) == 1);
		check_eq(r.type, FMT_NOTE);
		const uint8_t *q = r.body;
		uint64_t lvl = 0;
		const char *s;
		size_t n;
		check(fmt_get_u(&q, r.body + r.body_len, &lvl) == 0);
		check_eq(lvl, FMT_NOTE_WARN);
		check(fmt_get_str(&q, r.body + r.body_len, &s, &n) == 0);
		check(n == 2 && memcmp(s, "hi", 2) == 0);
	}
	check(fmt_decode(&d, &r, &eo) == 0);

	/* corrupt one payload byte: the CRC catches it */
	payload[h.payload_len / 2] ^= 0x10;
	check(fmt_chunk_verify(hb, &g, payload) == -1);
	payload[h.payload_len / 2] ^= 0x10;
	/* corrupt a header byte covered by the CRC */
	hb[13] ^= 1;
	check(fmt_chunk_parse(hb, &g) == 0);
	check(fmt_chunk_verify(hb, &g, payload) == -1);
	hb[13] ^= 1;
	/* bad magic, oversized payload */
	hb[0] ^= 1;
	check(fmt_chunk_parse(hb, &g) == -1);
	hb[0] ^= 1;
	uint8_t big[FMT_CHUNK_HEADER_SIZE];
	memcpy(big, hb, sizeof big);
	big[7] = 0x7f;
	check(fmt_chunk_parse(big, &g) == -1);
}

static void test_malformed_records(void)
{
	fmt_chunk_header_t h = {0};
	fmt_dec_t d;
	fmt_record_t r;
	size_t eo = 99;
	/* unterminated varint in an ALLOC, after one good REL */
	uint8_t a[] = {FMT_REL, 5, 1, FMT_ALLOC, 1, 2, 0xff, 0xff};
	h.payload_len = sizeof a;
	fmt_dec_init(&d, &h, a);
	check(fmt_decode(&d, &r, &eo) == 1);
	check(fmt_decode(&d, &r, &eo) == -1);
	check_eq(eo, 3);
	/* unknown core type */
	uint8_t b[] = {0x7e, 0};
	h.payload_len = sizeof b;
	fmt_dec_init(&d, &h, b);
	check(fmt_decode(&d, &r, &eo) == -1);
	check_eq(eo, 0);
	/* metadata length past the payload */
	uint8_t c[] = {FMT_NOTE, 50, 1, 2};
	h.payload_len = sizeof c;
	fmt_dec_init(&d, &h, c);
	check(fmt_decode(&d, &r, &eo) == -1);
	/* unknown metadata type: skipped by length */
	uint8_t e[] = {0xf0, 2, 9, 9, FMT_REL, 0, 1};
	h.payload_len = sizeof e;
	fmt_dec_init(&d, &h, e);
	check(fmt_decode(&d, &r, &eo) == 1);
	check_eq(r.body_len, 2);
	check(fmt_decode(&d, &r, &eo) == 1);
	check_eq(r.type, FMT_REL);
	check(fmt_decode(&d, &r, &eo) == 0);
	/* string longer than its body */
	uint8_t s[] = {10, 'a'};
	const uint8_t *q = s;
	const char *str;
	size_t n;
	check(fmt_get_str(&q, s + sizeof s, &str, &n) == -1);
	check_eq(fmt_alloc_fn_name(FMT_FN_NEW), "operator new");
	check_eq(fmt_lock_kind_name(FMT_KIND_RWLOCK), "rwlock");
}

/* The compact forms (1.7) as docs/trace-format.md documents them. */
static void test_documented_compact(void)
{
	static const struct {
		unsigned code, base;
		const char *layout;
	} doc[] = {
	    {0x1c, FMT_ALLOC, "quuu0"},
	    {0x1d, FMT_ALLOC, "quu00"},
	    {0x1e, FMT_FREE, "qu"},
	    {0x1f, FMT_FREE, "q0"},
	    {0x20, FMT_COND_SIGNAL, "u0"},
	    {0x21, FMT_ACQ, "ku"},
	    {0x22, FMT_ACQ_SHARED, "ku"},
	    {0x23, FMT_ACQ_UNTIMED, "ku"},
	    {0x24, FMT_ACQ_SHARED_UNTIMED, "ku"},
	    {0x25, FMT_ACQ_SAMPLED, "ku"},
	    {0x26, FMT_ACQ_SHARED_SAMPLED, "ku"},
	    {0x27, FMT_REL, "k"},
	    {0x28, FMT_LOCK_DESTROY, "k"},
	    {0x29, FMT_REL, "k"},
	    {0x38, FMT_ALLOC, "qzuu0"},
	    {0x39, FMT_ALLOC, "qzu00"},
	    {0x3a, FMT_ACQ, "ku"},
	};
	unsigned n = 0;
#define T_(name, code, base, l) n++;
	FMT_COMPACT_RECORDS(T_)
#undef T_
	check_eq(n, sizeof doc / sizeof *doc);
	for (size_t i = 0; i < sizeof doc / sizeof *doc; i++) {
		unsigned base = 0;
		const char *l = fmt_compact_layout(doc[i].code, &base);
		check(l && !strcmp(l, doc[i].layout));
		check_eq(base, doc[i].base);
		/* one letter per field of the base record */
		check_eq(strlen(l), strlen(fmt_core_layout(base)));
		check(fmt_core_layout(doc[i].code) == NULL);
		check(fmt_type_name(doc[i].code) != NULL);
	}
	unsigned base;
	/* the dt groups' other codes */
	for (unsigned c = 0x2a; c <= 0x37; c++) {
		check(fmt_compact_layout(c, &base) != NULL);
		check_eq(base, FMT_REL);
		check_eq(fmt_type_name(c), "REL_LAST_DT");
	}
	for (unsigned c = 0x3b; c <= 0x48; c++) {
		check(fmt_compact_layout(c, &base) != NULL);
		check_eq(base, FMT_ACQ);
		check_eq(fmt_type_name(c), "ACQ_LAST_DT");
	}
	check(fmt_compact_layout(FMT_ALLOC, &base) == NULL);
	check(fmt_compact_layout(0x4e, &base) == NULL);
	check(fmt_type_name(0x4e) == NULL);
	check(fmt_compact_layout(0x80, &base) == NULL);
}

/* The hold forms (1.8) as docs/trace-format.md documents them. */
static void test_documented_holds(void)
{
	static const struct {
		unsigned code, base;
		const char *layout, *name;
	} doc[] = {
	    {0x49, FMT_ACQ_UNTIMED, "uu", "HOLD_UNTIMED"},
	    {0x4a, FMT_ACQ_SHARED_UNTIMED, "uu", "HOLD_SHARED_UNTIMED"},
	    {0x4b, FMT_ACQ_UNTIMED, "ku", "HOLD_UNTIMED_LAST"},
	    {0x4c, FMT_ACQ_SHARED_UNTIMED, "ku", "HOLD_SHARED_UNTIMED_LAST"},
	};
	unsigned n = 0;
#define T_(name, code, base, l) n++;
	FMT_HOLD_RECORDS(T_)
#undef T_
	check_eq(n, sizeof doc / sizeof *doc);
	for (size_t i = 0; i < sizeof doc / sizeof *doc; i++) {
		unsigned base = 0;
		const char *l = fmt_compact_layout(doc[i].code, &base);
		check(l && !strcmp(l, doc[i].layout));
		check_eq(base, doc[i].base);
		check_eq(strlen(l), strlen(fmt_core_layout(base)));
		check(fmt_core_layout(doc[i].code) == NULL);
		check(fmt_is_hold(doc[i].code));
		check_eq(fmt_type_name(doc[i].code), doc[i].name);
	}
	check(!fmt_is_hold(FMT_ACQ_UNTIMED));
	check(!fmt_is_hold(FMT_ACQ_UNTIMED_LAST));
	check(!fmt_is_hold(FMT_REL_LAST));
	check(!fmt_is_hold(0x4e));
	check(!fmt_is_hold(FMT_LOCK_INIT_NEW));
	check(!fmt_is_hold(0xc9));
}

/* The hold forms (1.8): fmt_put_hold between other lock records, each
 * decoded as its acquisition and a REL of the same lock at the same time
 * (wire: the hold form's code, on both); the chunk's last lock is the
 * hold's afterwards; the decoder stays at the hold form until its REL is
 * returned (so a reader that notes offsets sees one record); a cut hold
 * form is refused whole, at its offset. */
static void test_hold_roundtrip(void)
{
	uint8_t payload[256];
	fmt_enc_t enc = {1000, 0, 0, 0};
	uint8_t *p = payload, *at[8];
	int n = 0;
	at[n++] = p; /* 0: a hold of lock 3, not the last lock (0) */
	p = fmt_put_hold(p, &enc, 0, 1000, 3, 7);
	check_eq(*at[0], FMT_HOLD_UNTIMED);
	check_eq(enc.last_lock, 3);
	at[n++] = p; /* 1: again, now the last lock; dt 5 */
	p = fmt_put_hold(p, &enc, 0, 1005, 3, 8);
	check_eq(*at[1], FMT_HOLD_UNTIMED_LAST);
	at[n++] = p; /* 2: a REL of the last lock */
	p = fmt_put_lockrec(p, &enc, FMT_REL, 1005, 3, 0, 0);
	check_eq(*at[2], FMT_REL_LAST);
	at[n++] = p; /* 3: shared, of another lock, with a large one */
	p = fmt_put_hold(p, &enc, 1, 1006, UINT64_MAX, UINT64_MAX);
	check_eq(*at[3], FMT_HOLD_SHARED_UNTIMED);
	at[n++] = p; /* 4: shared, the last lock */
	p = fmt_put_hold(p, &enc, 1, 1006, UINT64_MAX, 2);
	check_eq(*at[4], FMT_HOLD_SHARED_UNTIMED_LAST);
	at[n++] = p; /* 5: an acquisition of the last lock: the hold's */
	p = fmt_put_lockrec(p, &enc, FMT_ACQ_UNTIMED, 1006, UINT64_MAX, 1, 4);
	check_eq(*at[5], FMT_ACQ_UNTIMED_LAST);
	size_t len = (size_t)(p - payload);
	static const struct {
		unsigned type, wire;
		uint64_t tsc, lock, site;
	} want[] = {
	    {FMT_ACQ_UNTIMED, FMT_HOLD_UNTIMED, 1000, 3, 7},
	    {FMT_REL, FMT_HOLD_UNTIMED, 1000, 3, 0},
	    {FMT_ACQ_UNTIMED, FMT_HOLD_UNTIMED_LAST, 1005, 3, 8},
	    {FMT_REL, FMT_HOLD_UNTIMED_LAST, 1005, 3, 0},
	    {FMT_REL, FMT_REL_LAST, 1005, 3, 0},
	    {FMT_ACQ_SHARED_UNTIMED, FMT_HOLD_SHARED_UNTIMED, 1006, UINT64_MAX,
	     UINT64_MAX},
	    {FMT_REL, FMT_HOLD_SHARED_UNTIMED, 1006, UINT64_MAX, 0},
	    {FMT_ACQ_SHARED_UNTIMED, FMT_HOLD_SHARED_UNTIMED_LAST, 1006,
	     UINT64_MAX, 2},
	    {FMT_REL, FMT_HOLD_SHARED_UNTIMED_LAST, 1006, UINT64_MAX, 0},
	    {FMT_ACQ_UNTIMED, FMT_ACQ_UNTIMED_LAST, 1006, UINT64_MAX, 4},
	};
	/* the record each decoded one comes from */
	static const int from[] = {0, 0, 1, 1, 2, 3, 3, 4, 4, 5};
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)len;
	h.tsc_base = 1000;
	fmt_dec_t d;
	fmt_record_t r;
	size_t eo;
	fmt_dec_init(&d, &h, payload);
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		check(d.p == at[from[i]]);
		check(fmt_decode(&d, &r, &eo) == 1);
		check_eq(r.type, want[i].type);
		check_eq(r.wire, want[i].wire);
		check_eq(r.tsc, want[i].tsc);
		check_eq(r.f[0], want[i].lock);
		check_eq(r.nf, r.type == FMT_REL ? 1 : 2);
		if (r.type != FMT_REL)
			check_eq(r.f[1], want[i].site);
		check_eq(d.last_lock, want[i].lock);
	}
	check(fmt_decode(&d, &r, &eo) == 0);
	/* Cut inside a record: the records before it decode (a hold form's
	 * two), the cut one is refused at its offset. */
	for (size_t cut = 1; cut < len; cut++) {
		h.payload_len = (uint32_t)cut;
		fmt_dec_init(&d, &h, payload);
		size_t whole = 0, recs = 0;
		while (whole + 1 < (size_t)n &&
		       (size_t)(at[whole + 1] - payload) <= cut)
			whole++;
		for (size_t i = 0; i < sizeof want / sizeof *want; i++)
			recs += (size_t)from[i] < whole;
		for (size_t k = 0; k < recs; k++)
			check(fmt_decode(&d, &r, &eo) == 1);
		if ((size_t)(at[whole] - payload) < cut) {
			check(fmt_decode(&d, &r, &eo) == -1);
			check_eq(eo, (size_t)(at[whole] - payload));
		} else {
			check(fmt_decode(&d, &r, &eo) == 0);
		}
	}
}

/* One record of the compact round trip: what is encoded (base type and
 * fields), and the type byte the encoder must choose. */
typedef struct crec {
	unsigned type, wire;
	uint64_t tsc, f[5];
} crec_t;

/* Encodes rs[] with the fmt_put_* encoders (other types as the shim
 * writes them, keeping the chunk's last lock), then decodes the payload
 * and checks each record is its base record with the same fields, and
 * that every truncation inside the payload is refused or ends on a record
 * boundary. */
static void compact_roundtrip(const crec_t *rs, size_t n)
{
	uint8_t payload[4096];
	size_t at[64];
	fmt_enc_t enc = {1000, 0, 0, 0};
	uint8_t *p = payload;
	check(n <= 64);
	for (size_t i = 0; i < n; i++) {
		const crec_t *c = &rs[i];
		at[i] = (size_t)(p - payload);
		uint8_t *s = p;
		switch (c->type) {
		case FMT_ALLOC:
			p = fmt_put_alloc(p, &enc, c->tsc, c->f[0], c->f[1],
			                  c->f[2], c->f[3], c->f[4]);
			break;
		case FMT_FREE:
			p = fmt_put_free(p, &enc, c->tsc, c->f[0], c->f[1]);
			break;
		case FMT_COND_SIGNAL:
			p = fmt_put_signal(p, &enc, c->tsc, c->f[0], c->f[1]);
			break;
		default:
			if (FMT_LOCK_RECORD(c->type) &&
			    strlen(fmt_core_layout(c->type)) <= 2) {
				p = fmt_put_lockrec(
				    p, &enc, c->type, c->tsc, c->f[0],
				    strlen(fmt_core_layout(c->type)) == 2,
				    c->f[1]);
				break;
			}
			p = fmt_put_head(p, &enc, c->type, c->tsc);
			for (size_t k = 0; k < strlen(fmt_core_layout(c->type));
			     k++)
				p = fmt_put_u(p, c->f[k]);
			if (FMT_LOCK_RECORD(c->type))
				enc.last_lock = c->f[0];
		}
		check(p - s <= FMT_EVENT_MAX);
		if (*s != c->wire)
			fprintf(stderr, "record %zu: type byte %#x, want %#x\n",
			        i, *s, c->wire);
		check_eq(*s, c->wire);
	}
	size_t len = (size_t)(p - payload);
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)len;
	h.tsc_base = 1000;
	fmt_dec_t d;
	fmt_record_t r;
	size_t eo;
	fmt_dec_init(&d, &h, payload);
	for (size_t i = 0; i < n; i++) {
		const crec_t *c = &rs[i];
		check(fmt_decode(&d, &r, &eo) == 1);
		check_eq(r.type, c->type);
		check_eq(r.tsc, c->tsc);
		check_eq(r.nf, strlen(fmt_core_layout(c->type)));
		for (unsigned k = 0; k < r.nf && k < 5; k++)
			check_eq(r.f[k], c->f[k]);
	}
	check(fmt_decode(&d, &r, &eo) == 0);
	/* Cut anywhere: the records before the cut decode, the one it cuts
	 * is refused at its offset (the checked path, near the end). */
	for (size_t cut = 1; cut < len; cut++) {
		h.payload_len = (uint32_t)cut;
		fmt_dec_init(&d, &h, payload);
		size_t i = 0, whole = 0;
		while (i < n && at[i] < cut &&
		       (i + 1 == n ? len : at[i + 1]) <= cut)
			i++, whole++;
		for (size_t k = 0; k < whole; k++)
			check(fmt_decode(&d, &r, &eo) == 1);
		if (whole < n && at[whole] < cut) {
			check(fmt_decode(&d, &r, &eo) == -1);
			check_eq(eo, at[whole]);
		} else {
			check(fmt_decode(&d, &r, &eo) == 0);
		}
	}
}

static void test_compact_roundtrip(void)
{
	const uint64_t P = 0x7f00deadb000ull, M = UINT64_MAX;
	const crec_t rs[] = {
	    /* first pointer of the chunk: a delta from 0 */
	    {FMT_ALLOC, FMT_ALLOC_MALLOC, 1010, {P, 65, 3, 21, FMT_FN_MALLOC}},
	    /* delta 0, untimed */
	    {FMT_FREE, FMT_FREE_UNTIMED, 1010, {P, 0}},
	    {FMT_ALLOC, FMT_ALLOC_MALLOC_UNTIMED, 1031, {P, 63, 3, 0, 0}},
	    /* sizes in units of 16 */
	    {FMT_ALLOC, FMT_ALLOC_MALLOC_UNTIMED_SIZE16, 1031, {P, 0, 3, 0, 0}},
	    {FMT_ALLOC, FMT_ALLOC_MALLOC_SIZE16, 1031, {P, 64, 3, 2, 0}},
	    {FMT_ALLOC, FMT_ALLOC_MALLOC_SIZE16, 1031, {P, M - 15, 3, 2, 0}},
	    {FMT_ALLOC, FMT_ALLOC_MALLOC, 1031, {P, M, 3, 2, 0}},
	    /* negative deltas, timed */
	    {FMT_ALLOC,
	     FMT_ALLOC_MALLOC_SIZE16,
	     1052,
	     {P - 4096, 512, 4, 1, 0}},
	    {FMT_FREE, FMT_FREE_ALIGNED, 1073, {P - 4096 - 16, 7}},
	    /* unaligned pointer: the base records */
	    {FMT_ALLOC, FMT_ALLOC, 1094, {P + 8, 24, 5, 0, 0}},
	    {FMT_FREE, FMT_FREE, 1095, {P + 8 + 16 + 1, 0}},
	    /* aligned delta from an unaligned pointer: compact again */
	    {FMT_FREE, FMT_FREE_UNTIMED, 1096, {P + 8 + 16 + 1 - 32, 0}},
	    /* another fn: the base record, though aligned */
	    {FMT_ALLOC, FMT_ALLOC, 1097, {P + 9, 8, 5, 3, FMT_FN_CALLOC}},
	    /* an unsampled call under a lock (pointer 0) */
	    {FMT_ALLOC, FMT_ALLOC, 1098, {0, 8, 6, 0, 0}},
	    {FMT_ALLOC, FMT_ALLOC_MALLOC_UNTIMED, 1098, {16, 8, 6, 0, 0}},
	    /* deltas of extreme magnitude, in both directions */
	    {FMT_ALLOC,
	     FMT_ALLOC_MALLOC,
	     1099,
	     {0x8000000000000010ull, M, M, M, 0}},
	    {FMT_FREE, FMT_FREE_ALIGNED, 1099, {0x10, M}},
	    {FMT_FREE, FMT_FREE_UNTIMED, 1100, {0xfffffffffffffff0ull, 0}},
	    {FMT_FREE, FMT_FREE_UNTIMED, 1101, {0x7ffffffffffffff0ull, 0}},
	    /* the largest dt */
	    {FMT_FREE, FMT_FREE_UNTIMED, 1101 + ((uint64_t)1 << 62), {0, 0}},
	};
	compact_roundtrip(rs, sizeof rs / sizeof *rs);

	const uint64_t T = 5000;
	const crec_t ls[] = {
	    /* at a chunk's start the last lock is 0 */
	    {FMT_REL, FMT_REL_LAST, T, {0}},
	    {FMT_ACQ, FMT_ACQ, T + 1, {5, 2}},
	    {FMT_ALLOC, FMT_ALLOC_MALLOC_SIZE16, T + 2, {P, 64, 3, 21, 0}},
	    /* a release's dt of 128 to 2047 in its type byte */
	    {FMT_REL, FMT_REL_LAST_DT + 1, T + 300, {5}},
	    {FMT_REL, FMT_REL_LAST, T + 427, {5}},
	    {FMT_REL, FMT_REL_LAST_DT, T + 555, {5}},
	    {FMT_REL, FMT_REL_LAST_DT + 14, T + 555 + 2047, {5}},
	    {FMT_REL, FMT_REL_LAST, T + 555 + 2047 + 2048, {5}},
	    {FMT_REL, FMT_REL_LAST, T + 555 + 2047 + 2048, {5}},
	    {FMT_REL, FMT_REL_LAST_DT + 7, T + 555 + 2047 + 2048 + 1024, {5}},
	    {FMT_ACQ, FMT_ACQ_LAST, T + 9000, {5, 2}},
	    /* an acquisition's too */
	    {FMT_ACQ, FMT_ACQ_LAST_DT, T + 9128, {5, 2}},
	    {FMT_ACQ, FMT_ACQ_LAST_DT + 14, T + 9128 + 2047, {5, M}},
	    {FMT_ACQ, FMT_ACQ_LAST, T + 9128 + 2047 + 2048, {5, 3}},
	    {FMT_ACQ, FMT_ACQ_LAST, T + 9128 + 2047 + 2048 + 127, {5, 3}},
	    {FMT_ACQ,
	     FMT_ACQ_LAST_DT + 2,
	     T + 9128 + 2047 + 2048 + 127 + 511,
	     {5, 3}},
	    /* the other acquisitions' _LAST forms */
	    {FMT_ACQ_SHARED, FMT_ACQ_SHARED, T + 15001, {6, 9}},
	    {FMT_ACQ_SHARED, FMT_ACQ_SHARED_LAST, T + 15001, {6, 9}},
	    {FMT_ACQ_UNTIMED, FMT_ACQ_UNTIMED_LAST, T + 15001, {6, 1}},
	    {FMT_ACQ_SHARED_UNTIMED,
	     FMT_ACQ_SHARED_UNTIMED_LAST,
	     T + 15001,
	     {6, 1}},
	    {FMT_ACQ_SAMPLED, FMT_ACQ_SAMPLED_LAST, T + 15002, {6, 1}},
	    {FMT_ACQ_SHARED_SAMPLED,
	     FMT_ACQ_SHARED_SAMPLED_LAST,
	     T + 15003,
	     {6, M}},
	    /* records whose lock is not the last lock's: it stays */
	    {FMT_TRY_FAIL, FMT_TRY_FAIL, T + 15004, {7, 2}},
	    {FMT_COND_WAIT, FMT_COND_WAIT, T + 15005, {8, 7}},
	    {FMT_COND_WAKE, FMT_COND_WAKE, T + 15006, {8, 7, 0}},
	    {FMT_REL, FMT_REL_LAST, T + 15007, {6}},
	    /* a contended acquisition and release name the lock, and it
	     * becomes the last */
	    {FMT_ACQ_WAIT, FMT_ACQ_WAIT, T + 16000, {M, 11, 900, 2}},
	    {FMT_REL_CONTENDED, FMT_REL_CONTENDED, T + 16001, {M, 11}},
	    {FMT_REL, FMT_REL_LAST, T + 16002, {M}},
	    {FMT_LOCK_INIT, FMT_LOCK_INIT, T + 16003, {9, 12}},
	    {FMT_ACQ, FMT_ACQ_LAST, T + 16004, {9, 2}},
	    {FMT_REL, FMT_REL_LAST, T + 16005, {9}},
	    {FMT_LOCK_DESTROY, FMT_LOCK_DESTROY_LAST, T + 16006, {9}},
	    {FMT_LOCK_DESTROY, FMT_LOCK_DESTROY, T + 16007, {4}},
	    {FMT_REL, FMT_REL, T + 16008, {5}},
	    /* signals: flags 0 is the compact form */
	    {FMT_COND_SIGNAL, FMT_COND_SIGNAL_ONE, T + 16009, {8, 0}},
	    {FMT_COND_SIGNAL,
	     FMT_COND_SIGNAL,
	     T + 16010,
	     {8, FMT_SIGF_BROADCAST}},
	    {FMT_COND_SIGNAL, FMT_COND_SIGNAL_ONE, T + 16011, {M, 0}},
	};
	compact_roundtrip(ls, sizeof ls / sizeof *ls);
}

/* One record of the LOCK_INIT_NEW round trip (1.9): an init_new, or
 * another record of type kind, and what the decoder must return. */
typedef struct irec {
	unsigned type; /* FMT_LOCK_INIT_NEW, FMT_ALLOC, FMT_FREE, ... */
	unsigned wire;
	uint64_t tsc, id, addr, kind, stack;
} irec_t;

/* Encodes rs[] into one chunk from a fresh encoder, decodes it, checks
 * each LOCK_INIT_NEW comes back as a LOCK_NEW (id, addr, kind, flags
 * FMT_LOCKF_INIT) and then a LOCK_INIT (id, stack), both with its code as
 * wire, the decoder at the record until the second is out, the chunk's
 * last lock the new id afterwards, the other records as encoded; and that
 * a cut anywhere is refused at the cut record's offset. */
static void init_new_roundtrip(const irec_t *rs, size_t n)
{
	uint8_t payload[1024];
	size_t at[32];
	fmt_enc_t enc = {1000, 0, 0, 0};
	uint8_t *p = payload;
	check(n <= 32);
	for (size_t i = 0; i < n; i++) {
		const irec_t *c = &rs[i];
		at[i] = (size_t)(p - payload);
		uint8_t *s = p;
		if (c->type == FMT_LOCK_INIT_NEW)
			p = fmt_put_init_new(p, &enc, c->tsc, c->id, c->addr,
			                     c->kind, c->stack);
		else if (c->type == FMT_ALLOC)
			p = fmt_put_alloc(p, &enc, c->tsc, c->addr, 32, 1, 0,
			                  FMT_FN_MALLOC);
		else if (c->type == FMT_FREE)
			p = fmt_put_free(p, &enc, c->tsc, c->addr, 0);
		else
			p = fmt_put_lockrec(p, &enc, c->type, c->tsc, c->id, 0,
			                    0);
		check(p - s <= FMT_EVENT_MAX);
		if (*s != c->wire)
			fprintf(stderr, "record %zu: type byte %#x, want %#x\n",
			        i, *s, c->wire);
		check_eq(*s, c->wire);
	}
	size_t len = (size_t)(p - payload);
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)len;
	h.tsc_base = 1000;
	fmt_dec_t d;
	fmt_record_t r;
	size_t eo;
	fmt_dec_init(&d, &h, payload);
	uint64_t before = h.tsc_base; /* the previous core record's time */
	for (size_t i = 0; i < n; i++) {
		const irec_t *c = &rs[i];
		check(d.p == payload + at[i]);
		check(fmt_decode(&d, &r, &eo) == 1);
		check_eq(r.wire, c->wire);
		if (c->type != FMT_LOCK_INIT_NEW) {
			check_eq(r.tsc, c->tsc);
			before = c->tsc;
			if (c->type == FMT_ALLOC || c->type == FMT_FREE) {
				check_eq(r.type, c->type);
				check_eq(r.f[0], c->addr);
			} else {
				check_eq(r.type, c->type);
				check_eq(r.f[0], c->id);
			}
			continue;
		}
		check_eq(r.type, FMT_LOCK_NEW);
		check_eq(r.tsc, before); /* a LOCK_NEW's, as written */
		before = c->tsc;
		const uint8_t *b = r.body, *be = r.body + r.body_len;
		uint64_t m[4] = {0, 0, 0, 0};
		for (int k = 0; k < 4; k++)
			check(fmt_get_u(&b, be, &m[k]) == 0);
		check(b == be);
		check_eq(m[0], c->id);
		check_eq(m[1], c->addr);
		check_eq(m[2], c->kind);
		check_eq(m[3], FMT_LOCKF_INIT);
		check(d.p == payload + at[i]); /* its LOCK_INIT is to come */
		check(fmt_decode(&d, &r, &eo) == 1);
		check_eq(r.type, FMT_LOCK_INIT);
		check_eq(r.wire, FMT_LOCK_INIT_NEW);
		check_eq(r.tsc, c->tsc);
		check_eq(r.nf, 2);
		check_eq(r.f[FMT_LOCK_INIT_LOCK], c->id);
		check_eq(r.f[FMT_LOCK_INIT_STACK], c->stack);
		check_eq(d.last_lock, c->id);
		check(d.p == payload + (i + 1 < n ? at[i + 1] : len));
	}
	check(fmt_decode(&d, &r, &eo) == 0);
	for (size_t cut = 1; cut < len; cut++) {
		h.payload_len = (uint32_t)cut;
		fmt_dec_init(&d, &h, payload);
		size_t whole = 0;
		while (whole < n &&
		       (whole + 1 == n ? len : at[whole + 1]) <= cut)
			whole++;
		for (size_t k = 0; k < whole; k++) {
			check(fmt_decode(&d, &r, &eo) == 1);
			if (rs[k].type == FMT_LOCK_INIT_NEW)
				check(fmt_decode(&d, &r, &eo) == 1);
		}
		if (whole < n && at[whole] < cut) {
			check(fmt_decode(&d, &r, &eo) == -1);
			check_eq(eo, at[whole]);
		} else {
			check(fmt_decode(&d, &r, &eo) == 0);
		}
	}
}

/* LOCK_INIT_NEW (1.9): as documented, and round trips of its edge cases:
 * the id's delta from the chunk's last new id (first of a chunk, in
 * order, a gap, backwards, extreme), the address's delta from the
 * chunk's previous pointer (none yet, after an ALLOC, negative, extreme)
 * which it leaves as it was, and the chunk's last lock it sets. */
static void test_init_new_roundtrip(void)
{
	unsigned base = 0;
	const char *l = fmt_compact_layout(FMT_LOCK_INIT_NEW, &base);
	check(l && !strcmp(l, "iauu"));
	check_eq(base, FMT_LOCK_INIT);
	check(fmt_core_layout(FMT_LOCK_INIT_NEW) == NULL);
	check_eq(fmt_type_name(FMT_LOCK_INIT_NEW), "LOCK_INIT_NEW");

	const uint64_t P = 0x7f00deadb000ull, M = UINT64_MAX;
	const unsigned N = FMT_LOCK_INIT_NEW;
	const irec_t rs[] = {
	    /* a chunk's first: id from 0, address from pointer 0 */
	    {N, N, 1000, 1234567, P + 0x18, FMT_KIND_MUTEX, 3},
	    /* the malloc'd block it lives in, then the next lock in it */
	    {FMT_ALLOC, FMT_ALLOC_MALLOC_UNTIMED_SIZE16, 1010, 0, P + 0x100, 0,
	     0},
	    {N, N, 1011, 1234568, P + 0x118, FMT_KIND_MUTEX, 3},
	    /* the chunk's last lock is the new one */
	    {FMT_LOCK_DESTROY, FMT_LOCK_DESTROY_LAST, 1012, 1234568, 0, 0, 0},
	    /* the pointer delta stays from the ALLOC: 16-aligned */
	    {FMT_FREE, FMT_FREE_UNTIMED, 1013, 0, P + 0x100, 0, 0},
	    /* an id gap, a negative address delta, another kind */
	    {N, N, 1020, 1234600, P - 0x1000, FMT_KIND_RWLOCK, 0},
	    /* an id below the last new one (a race between threads) */
	    {N, N, 1020, 1234590, P, FMT_KIND_COND, M},
	    /* the same id again, an address far below */
	    {N, N, 1021, 1234590, 8, FMT_KIND_SPIN, 1},
	    /* extremes of both deltas */
	    {N, N, 1022, M, M, FMT_KIND_MUTEX, 2},
	    {N, N, 1023, 1, 0, FMT_KIND_MUTEX, 2},
	    /* a lock record after it of another lock */
	    {FMT_LOCK_DESTROY, FMT_LOCK_DESTROY, 1024, 1234567, 0, 0, 0},
	    {N, N, 1000 + ((uint64_t)1 << 62), 2, P + 8, FMT_KIND_MUTEX, 5},
	};
	init_new_roundtrip(rs, sizeof rs / sizeof *rs);
	/* The next chunk starts again (last new id 0, pointer 0): the same
	 * lock numbers read alone. */
	init_new_roundtrip(rs + 5, 3);
	uint8_t a[64], b[64];
	fmt_enc_t e1 = {1000, 0, 0, 0}, e2 = {1000, P, 7, 1234599};
	size_t n1 =
	    (size_t)(fmt_put_init_new(a, &e1, 1000, 1234600, P + 24, 0, 1) - a);
	size_t n2 =
	    (size_t)(fmt_put_init_new(b, &e2, 1000, 1234600, P + 24, 0, 1) - b);
	/* in a chunk that saw the previous id and the block: 6 bytes */
	check_eq(n2, 6);
	check(n1 > n2);
	check_eq(e2.last_ptr, P);
	check_eq(e2.last_lock, 1234600);
	check_eq(e2.last_new, 1234600);
}

int main(void)
{
	test_run(test_varints);
	test_run(test_file_header);
	test_run(test_documented_layouts);
	test_run(test_field_names);
	test_run(test_core_roundtrip);
	test_run(test_malformed_records);
	test_run(test_documented_compact);
	test_run(test_compact_roundtrip);
	test_run(test_documented_holds);
	test_run(test_hold_roundtrip);
	test_run(test_init_new_roundtrip);
	return test_done();
}
