/* Reads: stacks summed over a time range and a label selection, the per-bucket
 * timeline of the same selection, and the label keys and values in use. A query is
 * one range scan of samples' primary key with the label sets narrowed by index;
 * stacks are handed out as frames (common/frame.h) read from the dictionaries,
 * with a per-query cache of frames by id.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "common/array.h"
#include "common/batch.h"
#include "common/frame.h"
#include "store/store_int.h"

#define QUERY_MAX_LABELS BATCH_MAX_LABELS

/* One dictionary frame, with its own copies of the strings. */
struct cached_frame {
	int64_t id;
	struct frame frame; /* strings point into text */
	char *text;	    /* name '\0' file '\0' */
	UT_hash_handle hh;
};

struct stack_sum {
	int64_t stack_id;
	uint64_t count;
};

/* A stack being read: its frames, borrowed from the cache. */
struct stack_buf {
	struct frame *frames;
	size_t n, cap;
};

static void free_frame_cache(struct cached_frame **cache)
{
	struct cached_frame *cf, *tmp;

	HASH_ITER (hh, *cache, cf, tmp) {
		HASH_DEL(*cache, cf);
		free(cf->text);
		free(cf);
	}
}

static int frame_by_id(struct store *s, struct cached_frame **cache, int64_t id,
		       const struct frame **out)
{
	struct cached_frame *cf;
	sqlite3_stmt *st = NULL;
	const char *name, *file;
	size_t nlen, flen;
	int err;

	HASH_FIND(hh, *cache, &id, sizeof(id), cf);
	if (cf) {
		*out = &cf->frame;
		return 0;
	}
	err = store_get_stmt(s, ST_FRAME_TEXT, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, id);
	err = store_step(s, st);
	if (err == 0)
		err = store_fail(s, -EIO, "frame %" PRId64 " missing", id);
	if (err < 0)
		goto out_done;
	name = (const char *)sqlite3_column_text(st, 1);
	file = (const char *)sqlite3_column_text(st, 2);
	name = name ? name : "";
	file = file ? file : "";
	nlen = strlen(name);
	flen = strlen(file);
	err = -ENOMEM;
	cf = calloc(1, sizeof(*cf));
	if (!cf || !(cf->text = malloc(nlen + flen + 2))) {
		free(cf);
		goto out_done;
	}
	memcpy(cf->text, name, nlen + 1);
	memcpy(cf->text + nlen + 1, file, flen + 1);
	cf->frame = (struct frame){ .kind = (uint32_t)sqlite3_column_int64(st, 0),
				    .line = (uint32_t)sqlite3_column_int64(st, 3),
				    .name = cf->text,
				    .name_len = nlen,
				    .file = cf->text + nlen + 1,
				    .file_len = flen };
	cf->id = id;
	HASH_ADD(hh, *cache, id, sizeof(cf->id), cf);
	*out = &cf->frame;
	err = 0;
out_done:
	store_done(st);
	return err;
}

/* Reads stack stack_id's frames into sb (root first). */
static int stack_frames(struct store *s, struct cached_frame **cache, int64_t stack_id,
			struct stack_buf *sb)
{
	const uint8_t *p, *end;
	const struct frame *fr;
	sqlite3_stmt *st = NULL;
	uint8_t *blob = NULL;
	int nblob = 0, err;
	uint64_t fid;

	sb->n = 0;
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
		err = frame_by_id(s, cache, (int64_t)fid, &fr);
		err = err ?: array_grow((void **)&sb->frames, &sb->cap, sb->n + 1, sizeof(*fr));
		if (err)
			goto out_free_blob;
		sb->frames[sb->n++] = *fr;
	}

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

int store_check_query(struct store *s, const struct store_query *q)
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
	struct cached_frame *cache = NULL;
	struct stack_sum *sums = NULL;
	size_t nsums = 0, capsums = 0, i;
	struct stack_buf sb = { 0 };
	sqlite3_stmt *st = NULL;
	int err;

	if (!cb)
		return -EINVAL;
	err = store_check_query(s, q);
	if (err || q->from >= q->to)
		return err;

	err = prepare_query(s, q, "SELECT stack_id, sat_sum(value)", " GROUP BY stack_id", &st);
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
		err = stack_frames(s, &cache, sums[i].stack_id, &sb);
		if (err)
			goto out_free;
		err = cb(ctx, sb.frames, sb.n, sums[i].count);
		if (err)
			goto out_free;
	}
	err = 0;

out_free:
	free(sb.frames);
	free_frame_cache(&cache);
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
	err = store_check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	err = prepare_query(s, q, "SELECT window_start, sat_sum(value)",
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
		/* saturating, like sat_sum() in SQL */
		sum = v <= 0					? sum
		      : sum > (uint64_t)INT64_MAX - (uint64_t)v ? (uint64_t)INT64_MAX
								: sum + (uint64_t)v;
	}
	if (err < 0)
		goto out;
	err = have ? cb(ctx, bucket, sum) : 0;
out:
	sqlite3_finalize(st);
	return err;
}

/* Runs a one-column text query over the label sets of q (used in [from, to) and
 * holding q's labels): outer is the query around them, "%s" where the set of
 * label set ids goes; key, when not NULL, is bound as :key. Rows are collected
 * first so the callback runs with no statement active. */
static int label_query(struct store *s, const struct store_query *q, const char *outer,
		       const char *key, store_text_fn cb, void *ctx)
{
	char *inner = NULL, *sql = NULL, **rows = NULL;
	sqlite3_stmt *st = NULL;
	size_t n = 0, cap = 0, i;
	int rc, err;

	if (!cb)
		return -EINVAL;
	err = store_check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	inner = build_query_sql(q->nlabels, "SELECT DISTINCT labelset_id", "");
	if (!inner || asprintf(&sql, outer, inner) < 0) {
		free(inner);
		return -ENOMEM;
	}
	free(inner);
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
	if (key)
		sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":key"), key, -1,
				  SQLITE_STATIC);
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

int store__labels(struct store *s, const struct store_query *q, store_text_fn cb, void *ctx)
{
	return label_query(s, q,
			   "SELECT DISTINCT k.text FROM (%s) r "
			   "JOIN labelset_labels ll ON ll.labelset_id = r.labelset_id "
			   "JOIN strings k ON k.id = ll.key_id ORDER BY 1",
			   NULL, cb, ctx);
}

int store__label_values(struct store *s, const char *key, const struct store_query *q,
			store_text_fn cb, void *ctx)
{
	if (!key)
		return -EINVAL;
	return label_query(
		s, q,
		"SELECT DISTINCT v.text FROM (%s) r "
		"JOIN labelset_labels ll ON ll.labelset_id = r.labelset_id "
		"JOIN strings v ON v.id = ll.value_id "
		"WHERE ll.key_id = (SELECT id FROM strings WHERE text = :key) ORDER BY 1",
		key, cb, ctx);
}

int store__label_key_used(struct store *s, const char *key, int64_t from, int64_t to)
{
	sqlite3_stmt *st = NULL;
	int rc, err;

	if (!s || !key)
		return -EINVAL;
	s->errmsg[0] = '\0';
	if (from >= to)
		return 0;
	/* EXISTS stops at the first sample of a label set with the key: one row
	 * for a key every label set has, the range's scan only when none has it */
	rc = sqlite3_prepare_v2(s->db,
				"SELECT EXISTS (SELECT 1 FROM samples WHERE window_start >= ?1 "
				"AND window_start < ?2 AND labelset_id IN (SELECT labelset_id "
				"FROM labelset_labels WHERE key_id = (SELECT id FROM strings "
				"WHERE text = ?3)))",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_sql_fail(s, rc);
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, to);
	sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
	err = store_step(s, st);
	if (err == 1)
		err = sqlite3_column_int(st, 0) ? 1 : 0;
	else if (err == 0)
		err = store_fail(s, -EIO, "no answer to EXISTS");
	sqlite3_finalize(st);
	return err;
}

/* STUB until reads keep caches: the contract's hook. */
void store_read_cache_free(struct store_read_cache *rc)
{
	(void)rc;
}
