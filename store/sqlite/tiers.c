/* The SQLite store's tiers of profile blocks (store/sqlite/tiers.h;
 * schema/sqlite/005_blocks.sql): their watermarks in state (the plan over them is
 * store/plan.c), and the ways any piece of the store adds samples to a block: as a new raw block of
 * a window with a section per label set (schema/sqlite/008_window_blocks.sql), merged into a minute
 * bucket's one block with a section per label set (schema/sqlite/010_minute_blocks.sql), and merged
 * into an hour bucket's block of one label set.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/tiers.h"
#include "store/block.h"
#include "store/plan.h"
#include "store/sqlite/db.h"

enum {
	ST_FIND = SLOT_TIERS,
	ST_DATA,
	ST_SET_DATA,
	ST_SET_INDEX,
	ST_NEW_DATA,
	ST_NEW_INDEX,
	ST_READ_STATE,
	ST_RAW_NEXT,
};

int store_read_tiers(struct sqlite_store *s, struct store_tiers *t)
{
	static const char sql[] = "SELECT built_before_1, built_before_2, kept_from_0, "
				  "kept_from_1, kept_from_2 FROM state WHERE id = 1";
	sqlite3_stmt *st = NULL;
	int err, i;

	err = store_slot_stmt(s, ST_READ_STATE, sql, &st);
	if (err)
		return err;
	err = store_step(s, st);
	if (err == 0)
		return store_fail(s, -EIO, "the state row is missing");
	if (err < 0)
		return err;
	t->built_before[TIER_RAW] = INT64_MAX;
	for (i = 0; i < 5; i++) {
		int64_t v = sqlite3_column_type(st, i) == SQLITE_NULL ? INT64_MIN
								      : sqlite3_column_int64(st, i);

		if (i < 2)
			t->built_before[1 + i] = v;
		else
			t->kept_from[i - 2] = v;
	}
	store_done(st);
	return 0;
}

static int set_state(struct sqlite_store *s, const char *column, int tier, int64_t v)
{
	char sql[96];
	sqlite3_stmt *st = NULL;
	int rc, err;

	snprintf(sql, sizeof(sql), "UPDATE state SET %s_%d = ?1 WHERE id = 1", column, tier);
	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_sql_fail(s, rc);
	if (v == INT64_MIN)
		sqlite3_bind_null(st, 1);
	else
		sqlite3_bind_int64(st, 1, v);
	err = store_step(s, st);
	sqlite3_finalize(st);
	return err < 0 ? err : 0;
}

int store_set_built_before(struct sqlite_store *s, int tier, int64_t v)
{
	if (tier != TIER_MINUTE && tier != TIER_HOUR)
		return -EINVAL;
	return set_state(s, "built_before", tier, v);
}

int store_set_kept_from(struct sqlite_store *s, int tier, int64_t v)
{
	if (tier < TIER_RAW || tier > TIER_HOUR)
		return -EINVAL;
	return set_state(s, "kept_from", tier, v);
}

/* ---- adding to a block --------------------------------------------------- */

/* Writes the encoded block buf as the block of block_id (0: a new one) with its
 * block_index row (tier, start, key). */
static int write_blob(struct sqlite_store *s, int tier, int64_t start, int64_t labelset_id,
		      int64_t block_id, const uint8_t *buf, size_t len, size_t n)
{
	sqlite3_stmt *data = NULL, *index = NULL;
	size_t count;
	int64_t total;
	int err;

	err = block__header(buf, len, &count, &total);
	if (err || !count || total <= 0) {
		err = store_fail(s, -EINVAL, "a block of %zu entries sums to nothing", n);
		goto out;
	}
	err = store_slot_stmt(s, block_id ? ST_SET_DATA : ST_NEW_DATA,
			      block_id ? "UPDATE blocks SET data = ?1 WHERE id = ?2"
				       : "INSERT INTO blocks (data) VALUES (?1)",
			      &data);
	if (err)
		goto out;
	sqlite3_bind_blob(data, 1, buf, (int)len, SQLITE_STATIC);
	if (block_id)
		sqlite3_bind_int64(data, 2, block_id);
	err = store_step(s, data);
	if (err < 0)
		goto out;
	if (!block_id)
		block_id = sqlite3_last_insert_rowid(s->db);
	err = store_slot_stmt(s, ST_SET_INDEX,
			      "INSERT INTO block_index (tier, start, labelset_id, total, entries, "
			      "block_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO UPDATE SET "
			      "total = excluded.total, entries = excluded.entries, "
			      "block_id = excluded.block_id",
			      &index);
	if (err)
		goto out;
	sqlite3_bind_int(index, 1, tier);
	sqlite3_bind_int64(index, 2, start);
	sqlite3_bind_int64(index, 3, labelset_id);
	sqlite3_bind_int64(index, 4, total);
	sqlite3_bind_int64(index, 5, (int64_t)count);
	sqlite3_bind_int64(index, 6, block_id);
	err = store_step(s, index);
	err = err < 0 ? err : 0;
out:
	return err;
}

/* Encodes e (n entries) and writes it as the block of block_id (0: a new one). */
static int write_block(struct sqlite_store *s, int tier, int64_t start, int64_t labelset_id,
		       int64_t block_id, const struct block_entry *e, size_t n)
{
	uint8_t *buf = NULL;
	size_t len;
	int err;

	err = block__encode(e, n, 1, &buf, &len);
	if (err)
		return store_fail(s, err, "cannot encode a block of %zu entries", n);
	err = write_blob(s, tier, start, labelset_id, block_id, buf, len, n);
	free(buf);
	return err;
}

int store_raw_block_add(struct sqlite_store *s, int64_t start, const struct block_lentry *e,
			size_t n)
{
	sqlite3_stmt *st = NULL;
	uint8_t *buf = NULL;
	int64_t key = 0;
	size_t len;
	int err;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (e[i].value <= 0 || e[i].labelset_id < 1)
			return store_fail(s, -EINVAL,
					  "a raw block entry of value %" PRId64
					  ", label set %" PRId64,
					  e[i].value, e[i].labelset_id);
	/* the window's next place: one below its smallest (schema/sqlite/008) */
	err = store_slot_stmt(s, ST_RAW_NEXT,
			      "SELECT min(labelset_id) FROM block_index WHERE tier = 0 AND "
			      "start = ?1 AND labelset_id < 0",
			      &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, start);
	err = store_step(s, st);
	if (err == 1 && sqlite3_column_type(st, 0) != SQLITE_NULL)
		key = sqlite3_column_int64(st, 0);
	store_done(st);
	if (err < 0)
		return err;
	if (key <= INT64_MIN + 1)
		return store_fail(s, -EIO, "no place left for a raw block at %" PRId64, start);
	err = block__encode_sections(e, n, 1, &buf, &len);
	if (err)
		return store_fail(s, err, "cannot encode a window block of %zu entries", n);
	err = write_blob(s, TIER_RAW, start, key - 1, 0, buf, len, n);
	free(buf);
	return err;
}

/* The block_id of (tier, start, key): 1 (*id set), 0 (none) or -errno. */
static int find_block(struct sqlite_store *s, int tier, int64_t start, int64_t key, int64_t *id)
{
	sqlite3_stmt *find = NULL;
	int err;

	err = store_slot_stmt(s, ST_FIND,
			      "SELECT block_id FROM block_index WHERE tier = ?1 AND start = ?2 "
			      "AND labelset_id = ?3",
			      &find);
	if (err)
		return err;
	sqlite3_bind_int(find, 1, tier);
	sqlite3_bind_int64(find, 2, start);
	sqlite3_bind_int64(find, 3, key);
	err = store_step(s, find);
	if (err == 1)
		*id = sqlite3_column_int64(find, 0);
	store_done(find);
	return err;
}

/* Every entry of the stored block block_id appended to *all (*n, *cap as
 * block_reader__decode_all()), a version 1 block's as label set v1_labelset. */
static int read_block(struct sqlite_store *s, int64_t block_id, int64_t v1_labelset,
		      struct block_lentry **all, size_t *n, size_t *cap)
{
	struct block_reader *rd = NULL;
	sqlite3_stmt *data = NULL;
	int err;

	err = store_slot_stmt(s, ST_DATA, "SELECT data FROM blocks WHERE id = ?1", &data);
	if (err)
		return err;
	err = block_reader__new(&rd);
	if (err)
		return err;
	sqlite3_bind_int64(data, 1, block_id);
	err = store_step(s, data);
	if (err == 0)
		err = store_fail(s, -EIO, "block %" PRId64 " is missing", block_id);
	if (err == 1)
		err = block_reader__open(rd, sqlite3_column_blob(data, 0),
					 (size_t)sqlite3_column_bytes(data, 0))
			      ?: block_reader__decode_all(rd, v1_labelset, all, n, cap);
	store_done(data);
	block_reader__free(rd);
	if (err == -EINVAL)
		err = store_fail(s, -EIO, "block %" PRId64 " does not decode", block_id);
	return err < 0 ? err : 0;
}

/* a[0..na) (sorted by label set and stack, unique, as a block decodes) and a
 * sorted copy of e[0..ne) merged into out[] (room for na + ne), equal pairs
 * summed (saturating): in the encoder's order, so that it need not sort a whole
 * bucket's block for a late batch's few entries. *n gets how many. */
static int merge_sorted(const struct block_lentry *a, size_t na, const struct block_lentry *e,
			size_t ne, struct block_lentry *out, size_t *n)
{
	struct block_lentry *b = malloc(ne * sizeof(*b));
	size_t i = 0, j = 0, k = 0;

	if (!b)
		return -ENOMEM;
	memcpy(b, e, ne * sizeof(*b));
	qsort(b, ne, sizeof(*b), block__cmp_lentry);
	while (i < na || j < ne) {
		struct block_lentry x = j == ne || (i < na && block__cmp_lentry(&a[i], &b[j]) <= 0)
						? a[i++]
						: b[j++];

		if (k && !block__cmp_lentry(&out[k - 1], &x))
			out[k - 1].value = out[k - 1].value > INT64_MAX - x.value
						   ? INT64_MAX
						   : out[k - 1].value + x.value;
		else
			out[k++] = x;
	}
	free(b);
	*n = k;
	return 0;
}

int store_bucket_add(struct sqlite_store *s, int tier, int64_t start, const struct block_lentry *e,
		     size_t n)
{
	struct block_lentry *all = NULL, *merged = NULL;
	size_t got = 0, cap = 0;
	int64_t block_id = 0;
	uint8_t *buf = NULL;
	size_t len;
	int err;

	if (!n)
		return 0;
	if (tier == TIER_RAW || !store_tier_sections(tier))
		return store_fail(s, -EINVAL, "tier %d has no bucket blocks of sections", tier);
	for (size_t i = 0; i < n; i++)
		if (e[i].value <= 0 || e[i].labelset_id < 1)
			return store_fail(s, -EINVAL,
					  "a bucket block entry of value %" PRId64
					  ", label set %" PRId64,
					  e[i].value, e[i].labelset_id);
	err = find_block(s, tier, start, STORE_BUCKET_KEY, &block_id);
	if (err < 0)
		return err;
	if (block_id) {
		/* a late batch into a built bucket: decode, merge, encode */
		err = read_block(s, block_id, 0, &all, &got, &cap);
		if (!err) {
			merged = malloc((got + n) * sizeof(*merged));
			err = merged ? merge_sorted(all, got, e, n, merged, &n) : -ENOMEM;
		}
		if (err)
			goto out;
		e = merged;
	}
	err = block__encode_sections(e, n, 1, &buf, &len);
	if (err) {
		err = store_fail(s, err, "cannot encode a bucket block of %zu entries", n);
		goto out;
	}
	err = write_blob(s, tier, start, STORE_BUCKET_KEY, block_id, buf, len, n);
out:
	free(buf);
	free(merged);
	free(all);
	return err;
}

int store_block_add(struct sqlite_store *s, int tier, int64_t start, int64_t labelset_id,
		    const struct block_entry *e, size_t n)
{
	struct block_entry *all = NULL;
	sqlite3_stmt *data = NULL;
	int64_t block_id = 0;
	size_t count = 0, got = 0;
	int err;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (e[i].value <= 0)
			return store_fail(s, -EINVAL, "a block entry of value %" PRId64,
					  e[i].value);
	if (tier != TIER_RAW && store_tier_sections(tier)) {
		/* the bucket's one block, this label set's section (schema/sqlite/010) */
		struct block_lentry *le;

		if (labelset_id < 1)
			return store_fail(s, -EINVAL, "label set %" PRId64, labelset_id);
		le = malloc(n * sizeof(*le));
		if (!le)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			le[i] = (struct block_lentry){ labelset_id, e[i].id, e[i].value };
		err = store_bucket_add(s, tier, start, le, n);
		free(le);
		return err;
	}
	err = find_block(s, tier, start, labelset_id, &block_id);
	if (err < 0)
		return err;
	if (!block_id)
		return write_block(s, tier, start, labelset_id, 0, e, n);

	/* An existing block (a late batch, a window sent twice): decode, append, encode. */
	err = store_slot_stmt(s, ST_DATA, "SELECT data FROM blocks WHERE id = ?1", &data);
	if (err)
		return err;
	sqlite3_bind_int64(data, 1, block_id);
	err = store_step(s, data);
	if (err == 0)
		err = store_fail(s, -EIO, "block %" PRId64 " is missing", block_id);
	if (err < 0)
		return err;
	{
		const uint8_t *buf = sqlite3_column_blob(data, 0);
		size_t len = (size_t)sqlite3_column_bytes(data, 0);

		err = block__header(buf, len, &count, NULL);
		if (!err) {
			all = malloc((count + n) * sizeof(*all));
			err = all ? block__decode(buf, len, all, count, &got) : -ENOMEM;
		}
	}
	store_done(data);
	if (err) {
		err = err == -ENOMEM
			      ? err
			      : store_fail(s, -EIO, "block %" PRId64 " does not decode", block_id);
		goto out;
	}
	memcpy(all + got, e, n * sizeof(*e));
	err = write_block(s, tier, start, labelset_id, block_id, all, got + n);
out:
	free(all);
	return err;
}
