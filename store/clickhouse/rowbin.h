/* The requests of the ClickHouse store and their bodies and answers
 * (store/clickhouse/rowbin.c): errors kept for store__errmsg(), one request to
 * the server, the table an ALTER names, and the buffers that write RowBinary
 * bodies and SQL text and read RowBinary answers.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_ROWBIN_H
#define SMOLDER_STORE_CLICKHOUSE_ROWBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"

/* Keeps the message for store__errmsg() and returns err. */
int ch_fail(struct ch_store *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One request (ch_http__query); a failure's message is "what: ClickHouse's
 * message". ans may be NULL. */
int ch_run(struct ch_store *s, const char *what, const char *sql, const void *body, size_t len,
	   struct ch_answer *ans);

/* The table an ALTER of the schema's table t names, written into buf (len
 * bytes): "t" on one server, "t_local ON CLUSTER c" on a cluster. Returns buf. */
const char *ch_alter_target(const struct ch_store *s, const char *t, char *buf, size_t len);

/* A growing buffer: a RowBinary body or SQL text, always NUL-terminated. Appends
 * never fail; the first failure sets err and later appends do nothing. Owner
 * frees p. */
struct ch_wbuf {
	char *p;
	size_t len, cap;
	int err; /* -ENOMEM once an append failed; the buffer is then unusable */
};

/* ch_run() of the SQL text in sql (no body), or sql's append error: the form
 * every query the store builds in a struct ch_wbuf takes. */
int ch_run_sql(struct ch_store *s, const char *what, const struct ch_wbuf *sql,
	       struct ch_answer *ans);

void ch_w_put(struct ch_wbuf *w, const void *d, size_t n);
void ch_w_text(struct ch_wbuf *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ch_w_quoted(struct ch_wbuf *w, const char *s);	  /* s as a quoted string literal */
void ch_w_uint(struct ch_wbuf *w, uint64_t v, int bytes); /* little-endian, RowBinary */
void ch_w_varint(struct ch_wbuf *w, uint64_t v);
void ch_w_str(struct ch_wbuf *w, const char *s, size_t n); /* RowBinary String */

/* A reader of a RowBinary answer: reads past the end set bad and return zeros. */
struct ch_rbuf {
	const uint8_t *p, *end;
	bool bad; /* read past the end or a length past it */
};

static inline struct ch_rbuf ch_answer_reader(const struct ch_answer *a)
{
	return (struct ch_rbuf){ (const uint8_t *)a->data, (const uint8_t *)a->data + a->len,
				 false };
}

uint64_t ch_r_uint(struct ch_rbuf *r, int bytes);
uint64_t ch_r_varint(struct ch_rbuf *r);
const char *ch_r_str(struct ch_rbuf *r, size_t *len); /* borrowed from the answer */
double ch_r_f64(struct ch_rbuf *r);
/* A sum read as (UInt64 sum, Float64 sum) saturates at INT64_MAX where the
 * float reaches CH_SUM_SATURATED (a UInt64 sum wraps; the float's rounding is
 * far smaller than the gap to 2^63); the rollups' and the totals' INSERTs
 * (ch_tiers_build(), ch_tiers_count()) saturate with the same bound in SQL. */
#define CH_SUM_SATURATED 9.2e18
uint64_t ch_r_sum(struct ch_rbuf *r);

#endif
