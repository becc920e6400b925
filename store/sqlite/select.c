/* The selections of the SQLite store's reads (store/sqlite/select.h): a query's
 * checks and profile type, the read transaction every read runs in (so the tiers'
 * watermarks and the blocks are one snapshot), the SQL and bindings of a label
 * selection over block_index, and the same selection as a sorted set of label set
 * ids (struct ls_filter) for raw and minute blocks, whose sections are per label
 * set (schema/sqlite/008_window_blocks.sql, 010_minute_blocks.sql).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "store/sqlite/select.h"
#include "store/sqlite/db.h"

int store_read_begin(struct sqlite_store *s, bool *began)
{
	sqlite3_stmt *st = NULL;
	int err;

	*began = false;
	if (!sqlite3_get_autocommit(s->db))
		return 0;
	err = store_slot_stmt(s, ST_R_BEGIN, "BEGIN", &st);
	if (err)
		return err;
	err = store_step(s, st);
	if (err < 0)
		return err;
	*began = true;
	return 0;
}

int store_read_end(struct sqlite_store *s, bool began, int err)
{
	sqlite3_stmt *st = NULL;
	int e;

	if (!began)
		return err;
	e = store_slot_stmt(s, ST_R_COMMIT, "COMMIT", &st);
	if (!e) {
		e = store_step(s, st);
		e = e < 0 ? e : 0;
	}
	if (e)
		store_rollback(s);
	return err ? err : e;
}

int store_check_query(struct sqlite_store *s, const struct store_query *q)
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

void store_type_query(const struct store_query *q, struct store_typed_query *t)
{
	t->q = *q;
	t->cpu_only = !q->type || !*q->type || !strcmp(q->type, STORE_TYPE_CPU);
	if (t->cpu_only)
		return;
	if (q->nlabels) {
		memcpy(t->keys, q->keys, q->nlabels * sizeof(*t->keys));
		memcpy(t->values, q->values, q->nlabels * sizeof(*t->values));
	}
	t->keys[q->nlabels] = STORE_TYPE_LABEL;
	t->values[q->nlabels] = q->type;
	t->q.keys = t->keys;
	t->q.values = t->values;
	t->q.nlabels = q->nlabels + 1;
}

/* The label sets of another type than cpu, excluded from a cpu query. */
static const char not_typed[] = " AND labelset_id NOT IN (SELECT labelset_id FROM "
				"labelset_labels WHERE key_id = (SELECT id FROM strings "
				"WHERE text = '" STORE_TYPE_LABEL "'))";

/* The label sets holding every label of q, as an SQL set: labels bound from
 * parameter first on, two each. */
static const char sel_one[] = "SELECT labelset_id FROM labelset_labels "
			      "WHERE key_id = (SELECT id FROM strings WHERE text = ?%d) "
			      "AND value_id = (SELECT id FROM strings WHERE text = ?%d)";

char *store_sel_sql(const struct store_typed_query *t, int first, const char *head,
		    const char *tail)
{
	size_t nlabels = t->q.nlabels, len, i;
	size_t cap = strlen(head) + strlen(tail) + sizeof(not_typed) + 32 +
		     nlabels * (sizeof(sel_one) + 32);
	char *sql = malloc(cap);

	if (!sql)
		return NULL;
	len = (size_t)snprintf(sql, cap, "%s%s", head, t->cpu_only ? not_typed : "");
	if (nlabels) {
		len += (size_t)snprintf(sql + len, cap - len, " AND labelset_id IN (");
		for (i = 0; i < nlabels; i++) {
			len += (size_t)snprintf(sql + len, cap - len, "%s", i ? " INTERSECT " : "");
			len += (size_t)snprintf(sql + len, cap - len, sel_one, first + 2 * (int)i,
						first + 2 * (int)i + 1);
		}
		len += (size_t)snprintf(sql + len, cap - len, ")");
	}
	snprintf(sql + len, cap - len, "%s", tail);
	return sql;
}

void store_bind_labels(sqlite3_stmt *st, const struct store_query *q, int first)
{
	for (size_t i = 0; i < q->nlabels; i++) {
		sqlite3_bind_text(st, first + 2 * (int)i, q->keys[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, first + 2 * (int)i + 1, q->values[i], -1, SQLITE_STATIC);
	}
}

int store_span_stmt(struct sqlite_store *s, const struct store_query *q, int slot, const char *head,
		    const char *tail, sqlite3_stmt **out, bool *owned)
{
	struct store_typed_query t;
	char *sql;
	int rc, err;

	*owned = false;
	store_type_query(q, &t);
	sql = store_sel_sql(&t, 4, head, tail);
	if (!sql)
		return -ENOMEM;
	if (!t.q.nlabels) {
		/* the same text every call: head and tail are constants */
		err = store_slot_stmt(s, slot, sql, out);
		free(sql);
		return err;
	}
	rc = sqlite3_prepare_v2(s->db, sql, -1, out, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		return store_sql_fail(s, rc);
	*owned = true;
	store_bind_labels(*out, &t.q, 4);
	return 0;
}

void store_span_stmt_done(sqlite3_stmt *st, bool owned)
{
	if (owned)
		sqlite3_finalize(st);
	else
		store_done(st);
}

void store_bind_span(sqlite3_stmt *st, int tier, int64_t from, int64_t to)
{
	sqlite3_reset(st);
	sqlite3_bind_int(st, 1, tier);
	sqlite3_bind_int64(st, 2, from);
	sqlite3_bind_int64(st, 3, to);
}

bool store_filter_keeps(int64_t labelset_id, void *ctx)
{
	const struct ls_filter *f = ctx;
	size_t lo = 0, hi = f->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (f->ids[mid] < labelset_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < f->n && f->ids[lo] == labelset_id) != f->negate;
}

int store_filter_make(struct sqlite_store *s, const struct store_query *q, struct ls_filter *f)
{
	struct store_typed_query t;
	sqlite3_stmt *st = NULL;
	bool owned = false;
	char *sql = NULL;
	int rc, err;

	memset(f, 0, sizeof(*f));
	store_type_query(q, &t);
	if (!t.q.nlabels) {
		f->negate = true;
		err = store_slot_stmt(s, ST_R_TYPED,
				      "SELECT labelset_id FROM labelset_labels WHERE key_id = "
				      "(SELECT id FROM strings WHERE text = '" STORE_TYPE_LABEL
				      "') ORDER BY 1",
				      &st);
		if (err)
			return err;
	} else {
		sql = store_sel_sql(&t, 1,
				    "SELECT labelset_id FROM (SELECT id AS labelset_id FROM "
				    "labelsets) WHERE 1",
				    " ORDER BY 1");
		if (!sql)
			return -ENOMEM;
		rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
		free(sql);
		if (rc != SQLITE_OK)
			return store_sql_fail(s, rc);
		owned = true;
		store_bind_labels(st, &t.q, 1);
	}
	while ((err = store_step(s, st)) == 1) {
		err = array_grow((void **)&f->ids, &f->cap, f->n + 1, sizeof(*f->ids));
		if (err)
			break;
		f->ids[f->n++] = sqlite3_column_int64(st, 0);
	}
	if (owned)
		sqlite3_finalize(st);
	else if (err)
		store_done(st);
	return err < 0 ? err : 0;
}

void store_filter_free(struct ls_filter *f)
{
	free(f->ids);
	f->ids = NULL;
}
