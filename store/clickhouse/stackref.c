/* The ClickHouse store's stacks by content id (store__stackrefs in store.h; the
 * table is schema/clickhouse/003_stackrefs.sql). Remembered ids are inserted in
 * one RowBinary request; looked-up ids are read in chunks of CH_STACKREF_CHUNK
 * (an IN list of string literals, within ClickHouse's 256 KiB max_query_size),
 * newest row first, and those last used more than an hour ago are inserted again
 * with now, which moves them to today's partition (so retention, by dropping old
 * days, never forgets an id in use). Not one transaction: ClickHouse has none,
 * and every step is idempotent (a row inserted twice becomes one at merge time).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/stackref.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/rowbin.h"

#define CH_STACKREF_CHUNK 1024 /* ids per look-up: 1024 x 70 bytes of SQL */
#define CH_STACKREF_TOUCH 3600 /* as store/sqlite/stackref.c's STACKREF_TOUCH_SECONDS */

/* RowBinary of one row: id FixedString(16), bytes String, last_used Int64. */
static void row(struct ch_wbuf *w, const uint8_t *id, const void *bytes, size_t len, int64_t now)
{
	ch_w_put(w, id, STORE_STACKREF_ID_LEN);
	ch_w_str(w, bytes, len);
	ch_w_uint(w, (uint64_t)now, 8);
}

/* Looks up refs[from, to) (those with bytes NULL); rows to touch go to touch. */
static int lookup(struct ch_store *s, int64_t now, struct store_stackref *refs, const bool *want,
		  size_t from, size_t to, struct ch_wbuf *touch)
{
	struct ch_wbuf sql = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	size_t i, k, asked = 0;
	int err;

	ch_w_text(&sql, "SELECT id, bytes, last_used FROM stackrefs WHERE id IN (");
	for (i = from; i < to; i++) {
		if (!want[i])
			continue;
		ch_w_text(&sql, "%s'", asked++ ? "," : "");
		for (k = 0; k < STORE_STACKREF_ID_LEN; k++)
			ch_w_text(&sql, "\\x%02x", refs[i].id[k]);
		ch_w_text(&sql, "'");
	}
	ch_w_text(&sql,
		  ") ORDER BY last_used DESC LIMIT 1 BY id" CH_LOOKUP_SETTINGS " FORMAT RowBinary");
	if (!asked) {
		free(sql.p);
		return 0;
	}
	err = ch_run_sql(s, "stack refs", &sql, &a);
	free(sql.p);
	if (err)
		return err;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		const uint8_t *id = r.p;
		const char *bytes;
		size_t len;
		int64_t used;

		r.p += STORE_STACKREF_ID_LEN;
		if (r.p > r.end) {
			r.bad = true;
			break;
		}
		bytes = ch_r_str(&r, &len);
		used = (int64_t)ch_r_uint(&r, 8);
		if (r.bad || len == 0 || len > STORE_STACKREF_MAX_BYTES)
			break;
		for (i = from; i < to; i++) {
			if (!want[i] || refs[i].bytes ||
			    memcmp(refs[i].id, id, STORE_STACKREF_ID_LEN))
				continue;
			refs[i].bytes = malloc(len);
			if (!refs[i].bytes)
				return -ENOMEM;
			memcpy(refs[i].bytes, bytes, len);
			refs[i].len = len;
			if (used < now - CH_STACKREF_TOUCH)
				row(touch, id, bytes, len, now);
			break;
		}
	}
	if (r.bad || r.p != r.end)
		return ch_fail(s, -EIO, "stack refs: a malformed answer");
	return 0;
}

int ch_store__stackrefs(struct store *base, int64_t now, struct store_stackref *refs, size_t n)
{
	struct ch_store *s = ch_of(base);
	struct ch_wbuf put = { 0 };
	bool *asked = calloc(n, sizeof(bool));
	size_t i;
	int err = 0;

	s->errmsg[0] = '\0';
	if (!asked)
		return -ENOMEM;
	if (s->opts.read_only) {
		free(asked);
		return ch_fail(s, -EROFS, "stack refs: a reader");
	}
	for (i = 0; i < n; i++) {
		asked[i] = !refs[i].bytes;
		if (refs[i].bytes)
			row(&put, refs[i].id, refs[i].bytes, refs[i].len, now);
	}
	for (i = 0; i < n && !err; i += CH_STACKREF_CHUNK)
		err = lookup(s, now, refs, asked, i,
			     i + CH_STACKREF_CHUNK < n ? i + CH_STACKREF_CHUNK : n, &put);
	if (!err)
		err = put.err;
	if (!err && put.len)
		err = ch_run(s, "stack refs", "INSERT INTO stackrefs FORMAT RowBinary", put.p,
			     put.len, NULL);
	if (err) {
		for (i = 0; i < n; i++) {
			if (!asked[i])
				continue;
			free(refs[i].bytes);
			refs[i].bytes = NULL;
			refs[i].len = 0;
		}
	}
	free(put.p);
	free(asked);
	return err;
}
