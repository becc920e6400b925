/* Queries: folded stacks summed over a time range and a label selection, the
 * per-bucket timeline of the same selection, and the label keys and values in use.
 * A query is one range scan of samples' primary key with the label sets narrowed by
 * index; folded text is rebuilt from the dictionaries, caching frame texts per
 * query.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "common/array.h"
#include "common/batch.h"
#include "store/store_int.h"

#define QUERY_MAX_LABELS BATCH_MAX_LABELS

struct frame_text {
	int64_t id;
	char *text;
	UT_hash_handle hh;
};

struct stack_sum {
	int64_t stack_id;
	uint64_t count;
};

static void free_frame_texts(struct frame_text **cache)
{
	struct frame_text *ft, *tmp;

	HASH_ITER (hh, *cache, ft, tmp) {
		HASH_DEL(*cache, ft);
		free(ft->text);
		free(ft);
	}
}

static int frame_text(struct store *s, struct frame_text **cache, int64_t id, const char **out)
{
	struct frame_text *ft;
	sqlite3_stmt *st = NULL;
	const char *name, *file;
	int64_t kind, line;
	int err, n;

	HASH_FIND(hh, *cache, &id, sizeof(id), ft);
	if (ft) {
		*out = ft->text;
		return 0;
	}
	err = store_get_stmt(s, ST_FRAME_TEXT, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, id);
	err = store_step(s, st);
	if (err == 0) {
		store_done(st);
		return store_fail(s, -EIO, "frame %" PRId64 " missing", id);
	}
	if (err < 0) {
		store_done(st);
		return err;
	}
	ft = calloc(1, sizeof(*ft));
	if (!ft) {
		store_done(st);
		return -ENOMEM;
	}
	kind = sqlite3_column_int64(st, 0);
	name = (const char *)sqlite3_column_text(st, 1);
	file = (const char *)sqlite3_column_text(st, 2);
	line = sqlite3_column_int64(st, 3);
	name = name ? name : "";
	file = file ? file : "";
	if (kind == BATCH_FRAME_KERNEL)
		n = asprintf(&ft->text, "%s_[k]", name);
	else if (kind == BATCH_FRAME_PYTHON)
		n = asprintf(&ft->text, "%s (%s:%" PRId64 ")", name, file, line);
	else
		n = asprintf(&ft->text, "%s", name);
	store_done(st);
	if (n < 0) {
		free(ft);
		return -ENOMEM;
	}
	ft->id = id;
	HASH_ADD(hh, *cache, id, sizeof(ft->id), ft);
	*out = ft->text;
	return 0;
}

/* Appends text (and a ';' unless first) to the growing string *buf. */
static int append(char **buf, size_t *len, size_t *cap, const char *text, bool first)
{
	size_t tl = strlen(text);
	int err;

	err = array_grow((void **)buf, cap, *len + tl + 2, 1);
	if (err)
		return err;
	if (!first)
		(*buf)[(*len)++] = ';';
	memcpy(*buf + *len, text, tl + 1);
	*len += tl;
	return 0;
}

static int stack_text(struct store *s, struct frame_text **cache, int64_t stack_id, char **buf,
		      size_t *cap)
{
	const uint8_t *p, *end;
	const char *ft = NULL;
	sqlite3_stmt *st = NULL;
	size_t len = 0;
	uint8_t *blob = NULL;
	int nblob = 0, err;
	bool first = true;
	uint64_t fid;

	err = store_get_stmt(s, ST_STACK_FRAMES, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, stack_id);
	err = store_step(s, st);
	if (err == 1) {
		nblob = sqlite3_column_bytes(st, 0);
		blob = malloc(nblob ? (size_t)nblob : 1);
		if (blob)
			memcpy(blob, sqlite3_column_blob(st, 0), (size_t)nblob);
		err = blob ? 0 : -ENOMEM;
	} else if (err == 0) {
		err = store_fail(s, -EIO, "stack %" PRId64 " missing", stack_id);
	}
	store_done(st);
	if (err)
		goto out_free_blob;
	p = blob;
	end = blob + nblob;
	while (p < end) {
		if (!get_varint(&p, end, &fid) || fid > INT64_MAX) {
			err = store_fail(s, -EIO, "stack %" PRId64 ": bad frame list", stack_id);
			goto out_free_blob;
		}
		err = frame_text(s, cache, (int64_t)fid, &ft);
		if (!err)
			err = append(buf, &len, cap, ft, first);
		if (err)
			goto out_free_blob;
		first = false;
	}
	if (first)
		err = append(buf, &len, cap, "", true);

out_free_blob:
	free(blob);
	return err;
}

/* "<select> FROM samples WHERE <time range> [AND <labels>] <tail>": one range
 * scan of samples' primary key, label sets narrowed by index. */
static char *build_query_sql(size_t nlabels, const char *select, const char *tail)
{
	static const char range[] = " FROM samples WHERE window_start >= ?1 AND window_start < ?2";
	static const char one[] = "SELECT labelset_id FROM labelset_labels "
				  "WHERE key_id = (SELECT id FROM strings WHERE text = ?) "
				  "AND value_id = (SELECT id FROM strings WHERE text = ?)";
	size_t cap = strlen(select) + sizeof(range) + strlen(tail) + 32 +
		     nlabels * (sizeof(one) + 16),
	       len;
	char *sql = malloc(cap);
	size_t i;

	if (!sql)
		return NULL;
	len = (size_t)snprintf(sql, cap, "%s%s", select, range);
	if (nlabels) {
		len += (size_t)snprintf(sql + len, cap - len, " AND labelset_id IN (");
		for (i = 0; i < nlabels; i++)
			len += (size_t)snprintf(sql + len, cap - len, "%s%s",
						i ? " INTERSECT " : "", one);
		len += (size_t)snprintf(sql + len, cap - len, ")");
	}
	snprintf(sql + len, cap - len, "%s", tail);
	return sql;
}

static int check_query(struct store *s, const struct store_query *q)
{
	size_t i;

	if (!s || !q || (q->nlabels && (!q->keys || !q->values)))
		return -EINVAL;
	if (q->nlabels > QUERY_MAX_LABELS)
		return store_fail(s, -EINVAL, "%zu labels in a query, at most %d", q->nlabels,
				  QUERY_MAX_LABELS);
	for (i = 0; i < q->nlabels; i++)
		if (!q->keys[i] || !q->values[i])
			return -EINVAL;
	s->errmsg[0] = '\0';
	return 0;
}

/* Prepares build_query_sql() for q with its parameters bound. */
static int prepare_query(struct store *s, const struct store_query *q, const char *select,
			 const char *tail, sqlite3_stmt **out)
{
	char *sql = build_query_sql(q->nlabels, select, tail);
	sqlite3_stmt *st = NULL;
	size_t i;
	int rc;

	if (!sql)
		return -ENOMEM;
	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		return store_sql_fail(s, rc);
	sqlite3_bind_int64(st, 1, q->from);
	sqlite3_bind_int64(st, 2, q->to);
	for (i = 0; i < q->nlabels; i++) {
		sqlite3_bind_text(st, (int)(3 + 2 * i), q->keys[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, (int)(4 + 2 * i), q->values[i], -1, SQLITE_STATIC);
	}
	*out = st;
	return 0;
}

int store__query_stacks(struct store *s, const struct store_query *q, store_stack_fn cb, void *ctx)
{
	struct frame_text *cache = NULL;
	struct stack_sum *sums = NULL;
	size_t nsums = 0, capsums = 0, i, textcap = 0;
	sqlite3_stmt *st = NULL;
	char *text = NULL;
	int err;

	if (!cb)
		return -EINVAL;
	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;

	err = prepare_query(s, q, "SELECT stack_id, sum(value)", " GROUP BY stack_id", &st);
	if (err)
		goto out_finalize;
	/* Collect first, so that the callback runs with no statement active. */
	while ((err = store_step(s, st)) == 1) {
		int64_t v = sqlite3_column_int64(st, 1);

		if (v <= 0)
			continue;
		err = array_grow((void **)&sums, &capsums, nsums + 1, sizeof(*sums));
		if (err)
			goto out_finalize;
		sums[nsums].stack_id = sqlite3_column_int64(st, 0);
		sums[nsums++].count = (uint64_t)v;
	}
	if (err < 0)
		goto out_finalize;
	sqlite3_finalize(st);
	st = NULL;

	for (i = 0; i < nsums; i++) {
		err = stack_text(s, &cache, sums[i].stack_id, &text, &textcap);
		if (err)
			goto out_free;
		err = cb(ctx, text, sums[i].count);
		if (err)
			goto out_free;
	}
	err = 0;

out_free:
	free(text);
	free_frame_texts(&cache);
out_finalize:
	sqlite3_finalize(st);
	free(sums);
	return err;
}

int store__query_series(struct store *s, const struct store_query *q, int64_t step_seconds,
			store_series_fn cb, void *ctx)
{
	sqlite3_stmt *st = NULL;
	int64_t bucket = 0;
	uint64_t sum = 0;
	bool have = false;
	int err;

	if (!cb || step_seconds <= 0)
		return -EINVAL;
	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	err = prepare_query(s, q, "SELECT window_start, sum(value)",
			    " GROUP BY window_start ORDER BY window_start", &st);
	if (err)
		goto out;
	/* Windows arrive in order: sum them into step-long buckets from q->from. */
	while ((err = store_step(s, st)) == 1) {
		int64_t w = sqlite3_column_int64(st, 0);
		int64_t b = q->from + floor_div(w - q->from, step_seconds) * step_seconds;
		int64_t v = sqlite3_column_int64(st, 1);

		if (have && b != bucket) {
			err = cb(ctx, bucket, sum);
			if (err)
				goto out;
			sum = 0;
		}
		bucket = b;
		have = true;
		sum += v > 0 ? (uint64_t)v : 0;
	}
	if (err < 0)
		goto out;
	err = have ? cb(ctx, bucket, sum) : 0;
out:
	sqlite3_finalize(st);
	return err;
}

/* Runs a one-column text query over the label sets used in [from, to) and calls cb
 * for each row; key, when not NULL, is bound as ?3. Rows are collected first so
 * the callback runs with no statement active. */
static int label_query(struct store *s, const char *sql, int64_t from, int64_t to, const char *key,
		       store_text_fn cb, void *ctx)
{
	sqlite3_stmt *st = NULL;
	char **rows = NULL;
	size_t n = 0, cap = 0, i;
	int rc, err;

	if (!s || !cb)
		return -EINVAL;
	s->errmsg[0] = '\0';
	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_sql_fail(s, rc);
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, to);
	if (key)
		sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
	while ((err = store_step(s, st)) == 1) {
		const char *text = (const char *)sqlite3_column_text(st, 0);

		err = array_grow((void **)&rows, &cap, n + 1, sizeof(*rows));
		if (err)
			break;
		rows[n] = strdup(text ? text : "");
		if (!rows[n]) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	sqlite3_finalize(st);
	for (i = 0; i < n; i++) {
		if (err >= 0 && err != 1)
			err = cb(ctx, rows[i]);
		free(rows[i]);
	}
	free(rows);
	return err == 1 ? 0 : err;
}

int store__labels(struct store *s, int64_t from, int64_t to, store_text_fn cb, void *ctx)
{
	return label_query(s,
			   "SELECT DISTINCT k.text FROM (SELECT DISTINCT labelset_id FROM samples "
			   "WHERE window_start >= ?1 AND window_start < ?2) r "
			   "JOIN labelset_labels ll ON ll.labelset_id = r.labelset_id "
			   "JOIN strings k ON k.id = ll.key_id ORDER BY 1",
			   from, to, NULL, cb, ctx);
}

int store__label_values(struct store *s, const char *key, int64_t from, int64_t to,
			store_text_fn cb, void *ctx)
{
	if (!key)
		return -EINVAL;
	return label_query(s,
			   "SELECT DISTINCT v.text FROM (SELECT DISTINCT labelset_id FROM samples "
			   "WHERE window_start >= ?1 AND window_start < ?2) r "
			   "JOIN labelset_labels ll ON ll.labelset_id = r.labelset_id "
			   "JOIN strings v ON v.id = ll.value_id "
			   "WHERE ll.key_id = (SELECT id FROM strings WHERE text = ?3) ORDER BY 1",
			   from, to, key, cb, ctx);
}
