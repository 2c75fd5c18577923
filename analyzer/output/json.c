/*
 * json.c - the JSON writer (json.h). Strings are escaped per RFC 8259;
 * bytes that are not valid UTF-8 are written as \u00XX so the output is
 * always valid JSON.
 */
#include "json.h"

#include <inttypes.h>
#include <math.h>

void jw_init(jw_t *w, FILE *f)
{
	w->f = f;
	w->depth = 0;
	w->first[0] = true;
	w->after_key = false;
	w->compact_from = 4;
}

static void sep(jw_t *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->depth == 0)
		return;
	bool was_first = w->first[w->depth];
	if (!was_first)
		fputc(',', w->f);
	w->first[w->depth] = false;
	if (w->depth < w->compact_from) {
		fputc('\n', w->f);
		for (int i = 0; i < w->depth; i++)
			fputs("  ", w->f);
	} else if (!was_first) {
		fputc(' ', w->f);
	}
}

static void open_(jw_t *w, char c)
{
	sep(w);
	fputc(c, w->f);
	if (w->depth + 1 < JW_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = true;
}

void jw_obj(jw_t *w)
{
	open_(w, '{');
}

void jw_arr(jw_t *w)
{
	open_(w, '[');
}

void jw_end(jw_t *w, char close)
{
	bool empty = w->first[w->depth];
	w->depth--;
	if (!empty && w->depth + 1 < w->compact_from) {
		fputc('\n', w->f);
		for (int i = 0; i < w->depth; i++)
			fputs("  ", w->f);
	}
	fputc(close, w->f);
	if (w->depth == 0)
		fputc('\n', w->f);
}

static void raw_str(jw_t *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', w->f);
	for (; *p; p++) {
		unsigned c = *p;
		if (c == '"' || c == '\\') {
			fputc('\\', w->f);
			fputc((int)c, w->f);
		} else if (c == '\n') {
			fputs("\\n", w->f);
		} else if (c == '\t') {
			fputs("\\t", w->f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(w->f, "\\u%04x", c);
		} else if (c < 0x80) {
			fputc((int)c, w->f);
		} else {
			/* Copy a valid UTF-8 sequence, escape a stray byte. */
			int len = c >= 0xf0 && c < 0xf5   ? 4
			          : c >= 0xe0             ? 3
			          : c >= 0xc2 && c < 0xe0 ? 2
			                                  : 0;
			int ok = len > 0;
			for (int i = 1; ok && i < len; i++)
				ok = (p[i] & 0xc0) == 0x80;
			if (!ok) {
				fprintf(w->f, "\\u%04x", c);
				continue;
			}
			fwrite(p, 1, (size_t)len, w->f);
			p += len - 1;
		}
	}
	fputc('"', w->f);
}

void jw_key(jw_t *w, const char *k)
{
	sep(w);
	raw_str(w, k);
	fputs(": ", w->f);
	w->after_key = true;
}

void jw_str(jw_t *w, const char *s)
{
	sep(w);
	if (s)
		raw_str(w, s);
	else
		fputs("null", w->f);
}

void jw_u64(jw_t *w, uint64_t v)
{
	sep(w);
	fprintf(w->f, "%" PRIu64, v);
}

void jw_num(jw_t *w, double v)
{
	sep(w);
	if (!isfinite(v))
		fputs("null", w->f);
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		fprintf(w->f, "%.0f", v);
	else
		fprintf(w->f, "%.6g", v);
}

void jw_bool(jw_t *w, bool v)
{
	sep(w);
	fputs(v ? "true" : "false", w->f);
}

void jw_null(jw_t *w)
{
	sep(w);
	fputs("null", w->f);
}

void jw_kstr(jw_t *w, const char *k, const char *s)
{
	jw_key(w, k);
	jw_str(w, s);
}

void jw_ku64(jw_t *w, const char *k, uint64_t v)
{
	jw_key(w, k);
	jw_u64(w, v);
}

void jw_knum(jw_t *w, const char *k, double v)
{
	jw_key(w, k);
	jw_num(w, v);
}

void jw_kbool(jw_t *w, const char *k, bool v)
{
	jw_key(w, k);
	jw_bool(w, v);
}
