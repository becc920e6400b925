/* The ClickHouse store's shared pieces (store/clickhouse/rowbin.h): errors kept
 * for store__errmsg(), one request, the table an ALTER names, and the buffers
 * that write RowBinary bodies and SQL text and read RowBinary answers.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"

int ch_fail(struct ch_store *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

/* One request; a failure's message is "what: ClickHouse's message". */
int ch_run(struct ch_store *s, const char *what, const char *sql, const void *body, size_t len,
	   struct ch_answer *ans)
{
	int err = ch_http__query(s->http, sql, body, len, ans);

	if (err)
		return ch_fail(s, err, "%s: %s", what, ch_http__errmsg(s->http));
	return 0;
}

int ch_run_sql(struct ch_store *s, const char *what, const struct ch_wbuf *sql,
	       struct ch_answer *ans)
{
	return sql->err ?: ch_run(s, what, sql->p, NULL, 0, ans);
}

/* ---- buffers: RowBinary bodies and SQL text ------------------------------ */

void ch_w_put(struct ch_wbuf *w, const void *d, size_t n)
{
	if (w->err)
		return;
	if (w->len + n + 1 > w->cap) {
		size_t cap = w->cap ? w->cap : 1024;
		char *p;

		while (cap < w->len + n + 1)
			cap *= 2;
		p = realloc(w->p, cap);
		if (!p) {
			w->err = -ENOMEM;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	memcpy(w->p + w->len, d, n);
	w->len += n;
	w->p[w->len] = '\0';
}

void ch_w_text(struct ch_wbuf *w, const char *fmt, ...)
{
	char small[512], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		w->err = -EINVAL;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		ch_w_put(w, small, (size_t)n);
		return;
	}
	va_start(ap, fmt);
	n = vasprintf(&big, fmt, ap);
	va_end(ap);
	if (n < 0) {
		w->err = -ENOMEM;
		return;
	}
	ch_w_put(w, big, (size_t)n);
	free(big);
}

/* s as a ClickHouse string literal: quoted, with \ and ' escaped. */
void ch_w_quoted(struct ch_wbuf *w, const char *s)
{
	ch_w_put(w, "'", 1);
	for (; *s; s++) {
		if (*s == '\\' || *s == '\'')
			ch_w_put(w, "\\", 1);
		ch_w_put(w, s, 1);
	}
	ch_w_put(w, "'", 1);
}

void ch_w_uint(struct ch_wbuf *w, uint64_t v, int bytes)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	ch_w_put(w, b, (size_t)bytes);
}

void ch_w_varint(struct ch_wbuf *w, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	ch_w_put(w, b, n);
}

void ch_w_str(struct ch_wbuf *w, const char *s, size_t n)
{
	ch_w_varint(w, n);
	ch_w_put(w, s, n);
}

uint64_t ch_r_uint(struct ch_rbuf *r, int bytes)
{
	uint64_t v = 0;
	int i;

	if (r->bad || r->end - r->p < bytes) {
		r->bad = true;
		return 0;
	}
	for (i = 0; i < bytes; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += bytes;
	return v;
}

uint64_t ch_r_varint(struct ch_rbuf *r)
{
	uint64_t v = 0;
	int shift;

	for (shift = 0; shift < 64 && !r->bad; shift += 7) {
		if (r->p >= r->end)
			break;
		v |= (uint64_t)(*r->p & 0x7f) << shift;
		if (!(*r->p++ & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

const char *ch_r_str(struct ch_rbuf *r, size_t *len)
{
	uint64_t n = ch_r_varint(r);
	const char *s = (const char *)r->p;

	if (r->bad || n > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		*len = 0;
		return "";
	}
	r->p += n;
	*len = (size_t)n;
	return s;
}

double ch_r_f64(struct ch_rbuf *r)
{
	uint64_t v = ch_r_uint(r, 8);
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/* A sum read as (UInt64 sum, Float64 sum): the float tells an overflow of the
 * integer one (a UInt64 sum wraps), so that sums saturate at INT64_MAX. */
uint64_t ch_r_sum(struct ch_rbuf *r)
{
	uint64_t u = ch_r_uint(r, 8);
	double f = ch_r_f64(r);

	return f >= CH_SUM_SATURATED || u > INT64_MAX ? INT64_MAX : u;
}

const char *ch_alter_target(const struct ch_store *s, const char *t, char *buf, size_t len)
{
	if (s->cluster[0])
		snprintf(buf, len, "%s_local ON CLUSTER %s", t, s->cluster);
	else
		snprintf(buf, len, "%s", t);
	return buf;
}
