/* The SQLite store's label keys and values in use (store/sqlite/labels.h): those
 * of the label sets of blocks in a range and selection, in SQL. Raw and minute
 * blocks list their label sets through smolder_block_labelsets()
 * (store/sqlite/open.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "store/sqlite/labels.h"
#include "store/plan.h"
#include "store/sqlite/db.h"
#include "store/sqlite/select.h"
#include "store/sqlite/tiers.h"

/* "SELECT labelset_id FROM block_index WHERE <span> UNION ...": the label sets
 * with a block in the plan of [from, to); *empty when the plan has no span. The
 * spans' bounds are our own integers, written as literals. */
static int spans_sql(struct sqlite_store *s, int64_t from, int64_t to, char **out, bool *empty)
{
	struct store_span sp[STORE_PLAN_MAX_SPANS];
	struct store_tiers t;
	size_t n, i, cap, len = 0;
	char *sql;
	int err;

	err = store_read_tiers(s, &t);
	if (err)
		return err;
	n = store_plan(&t, from, to, sp);
	*empty = !n;
	cap = 64 + n * 256;
	sql = malloc(cap);
	if (!sql)
		return -ENOMEM;
	sql[0] = '\0';
	/* a raw or minute block's label sets are its sections' (schema/sqlite/008, 010) */
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(
			sql + len, cap - len,
			store_tier_sections(sp[i].tier)
				? "%sSELECT j.value AS labelset_id FROM block_index bi JOIN blocks "
				  "b ON b.id = bi.block_id, "
				  "json_each(smolder_block_labelsets(b.data)) "
				  "j WHERE bi.tier = %d AND bi.start >= %" PRId64
				  " AND bi.start < %" PRId64
				: "%sSELECT labelset_id FROM block_index WHERE tier = %d AND "
				  "start >= %" PRId64 " AND start < %" PRId64,
			i ? " UNION " : "", sp[i].tier, sp[i].from, sp[i].to);
	*out = sql;
	return 0;
}

/* Runs a one-column text query over the label sets of q (with a block in [from,
 * to) and holding q's labels): outer is the query around them, "%s" where the set
 * of their ids goes; key, when not NULL, is bound as ?1. Rows are collected first
 * so the callback runs with no statement active. */
static int label_query(struct sqlite_store *s, const struct store_query *q, const char *outer,
		       const char *key, store_text_fn cb, void *ctx)
{
	char *spans = NULL, *head = NULL, *inner = NULL, *sql = NULL, **rows = NULL;
	struct store_typed_query t;
	sqlite3_stmt *st = NULL;
	size_t n = 0, cap = 0, i;
	bool began = false, empty = true;
	int rc, err;

	if (!cb)
		return -EINVAL;
	err = store_check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	err = store_read_begin(s, &began);
	if (err)
		return err;
	err = spans_sql(s, q->from, q->to, &spans, &empty);
	if (err || empty)
		goto out_end;
	err = -ENOMEM;
	if (asprintf(&head, "SELECT labelset_id FROM (%s) WHERE 1", spans) < 0) {
		head = NULL;
		goto out_end;
	}
	store_type_query(q, &t);
	inner = store_sel_sql(&t, 2, head, ""); /* ?1 is the key */
	if (!inner || asprintf(&sql, outer, inner) < 0) {
		sql = NULL;
		goto out_end;
	}
	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		err = store_sql_fail(s, rc);
		goto out_end;
	}
	store_bind_labels(st, &t.q, 2);
	if (key)
		sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
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
out_end:
	err = store_read_end(s, began, err < 0 ? err : 0);
	for (i = 0; i < n; i++) {
		if (!err)
			err = cb(ctx, rows[i]);
		free(rows[i]);
	}
	free(rows);
	free(spans);
	free(head);
	free(inner);
	free(sql);
	return err;
}

int sqlite_store__labels(struct store *base, const struct store_query *q, store_text_fn cb,
			 void *ctx)
{
	struct sqlite_store *s = sqlite_store_of(base);
	return label_query(s, q,
			   "SELECT DISTINCT k.text FROM labelset_labels r "
			   "JOIN strings k ON k.id = r.key_id "
			   "WHERE r.labelset_id IN (%s) AND k.text <> '" STORE_TYPE_LABEL
			   "' ORDER BY 1",
			   NULL, cb, ctx);
}

int sqlite_store__label_values(struct store *base, const char *key, const struct store_query *q,
			       store_text_fn cb, void *ctx)
{
	struct sqlite_store *s = sqlite_store_of(base);
	if (!key)
		return -EINVAL;
	return label_query(s, q,
			   "SELECT DISTINCT v.text FROM labelset_labels r "
			   "JOIN strings v ON v.id = r.value_id "
			   "WHERE r.key_id = (SELECT id FROM strings WHERE text = ?1) "
			   "AND r.labelset_id IN (%s) ORDER BY 1",
			   key, cb, ctx);
}

int sqlite_store__label_key_used(struct store *base, const char *key, int64_t from, int64_t to)
{
	struct sqlite_store *s = sqlite_store_of(base);
	struct store_span sp[STORE_PLAN_MAX_SPANS];
	struct store_tiers t;
	sqlite3_stmt *st = NULL;
	bool began = false;
	size_t n, i;
	int err;

	if (!s || !key)
		return -EINVAL;
	s->errmsg[0] = '\0';
	if (from >= to)
		return 0;
	err = store_read_begin(s, &began);
	if (err)
		return err;
	err = store_read_tiers(s, &t);
	if (err)
		goto out;
	n = store_plan(&t, from, to, sp);
	/* EXISTS stops at the first block of a label set with the key: one row for a
	 * key every label set has, the spans' index rows only when none has it */
	/* a raw or minute block's label sets are its sections' (schema/sqlite/008, 010):
	 * its key is negative */
	err = store_slot_stmt(
		s, ST_R_KEY_USED,
		"SELECT EXISTS (SELECT 1 FROM block_index bi WHERE tier = ?1 AND "
		"start >= ?2 AND start < ?3 AND (labelset_id IN (SELECT labelset_id "
		"FROM labelset_labels WHERE key_id = (SELECT id FROM strings "
		"WHERE text = ?4)) OR (labelset_id < 0 AND EXISTS (SELECT 1 FROM blocks b, "
		"json_each(smolder_block_labelsets(b.data)) j WHERE b.id = "
		"bi.block_id AND j.value IN (SELECT labelset_id FROM labelset_labels "
		"WHERE key_id = (SELECT id FROM strings WHERE text = ?4))))))",
		&st);
	if (err)
		goto out;
	for (i = 0; i < n; i++) {
		store_bind_span(st, sp[i].tier, sp[i].from, sp[i].to);
		sqlite3_bind_text(st, 4, key, -1, SQLITE_STATIC);
		err = store_step(s, st);
		if (err == 1)
			err = sqlite3_column_int(st, 0) ? 1 : 0;
		else if (err == 0)
			err = store_fail(s, -EIO, "no answer to EXISTS");
		store_done(st);
		if (err)
			break;
	}
out:
	return store_read_end(s, began, err < 0 ? err : 0) ?: (err > 0);
}
