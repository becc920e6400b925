/* The selections of the SQLite store's reads (store/sqlite/select.c): a query's
 * checks and profile type, its read transaction, the SQL and bindings of a label
 * selection over block_index, and the same selection as a sorted set of label
 * set ids for the blocks whose sections are per label set. read.c, series.c,
 * labels.c and windows.c share them.
 */
#ifndef SMOLDER_STORE_SQLITE_SELECT_H
#define SMOLDER_STORE_SQLITE_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/batch.h"
#include "store/sqlite/db.h"

/* The most labels a query selects by. */
#define QUERY_MAX_LABELS BATCH_MAX_LABELS

/* A query's profile type as a selection (store.h): a type other than cpu is one
 * more label, STORE_TYPE_LABEL=type; the CPU profile is the label sets without
 * that label (cpu_only). */
struct store_typed_query {
	struct store_query q;
	const char *keys[QUERY_MAX_LABELS + 1];
	const char *values[QUERY_MAX_LABELS + 1];
	bool cpu_only;
};

/* q (checked by store_check_query) as a typed query; t->q borrows q's
 * strings. */
void store_type_query(const struct store_query *q, struct store_typed_query *t);

/* Checks a store_query's arguments: NULL pointers, at most
 * BATCH_MAX_LABELS labels, each key and value set. Clears the last message.
 * Returns 0 or -EINVAL (with a reason for too many labels). */
int store_check_query(struct sqlite_store *s, const struct store_query *q);

/* Raw and minute blocks hold a section per label set (schema/sqlite/008, 010), so a span
 * of them is selected in C: the label sets of q (negate: all but those of
 * ids), sorted. */
struct ls_filter {
	int64_t *ids;
	size_t n, cap;
	bool negate;
};

/* The reads' statements (SLOT_READ .. SLOT_READ + 15: read.c, series.c, labels.c and
 * select.c; windows.c takes the rest). */
enum {
	ST_R_BEGIN = SLOT_READ,
	ST_R_COMMIT,
	ST_R_STACK,
	ST_R_FRAME,
	ST_R_BLOCKS,
	ST_R_TOTAL,
	ST_R_NEXT,
	ST_R_KEY_USED,
	ST_R_RAW,
	ST_R_RAW_TOTAL,
	ST_R_TYPED,
};

/* Starts a read transaction unless the caller has one open; *began says whether
 * store_read_end() must end it. */
int store_read_begin(struct sqlite_store *s, bool *began);

/* Ends what store_read_begin() started; returns err, or COMMIT's error when err is 0. */
int store_read_end(struct sqlite_store *s, bool began, int err);

/* "<head> AND labelset_id IN (<t's label sets>)<tail>", or "<head><tail>" without
 * labels, with not_typed before the tail for a cpu query; labels bound from
 * parameter first on. */
char *store_sel_sql(const struct store_typed_query *t, int first, const char *head,
		    const char *tail);

void store_bind_labels(sqlite3_stmt *st, const struct store_query *q, int first);

/* A statement over block_index for one span (?1 tier, ?2 from, ?3 to) and q's
 * selection: cached in slot without labels, built (and *owned) with them. */
int store_span_stmt(struct sqlite_store *s, const struct store_query *q, int slot, const char *head,
		    const char *tail, sqlite3_stmt **out, bool *owned);

void store_span_stmt_done(sqlite3_stmt *st, bool owned);

void store_bind_span(sqlite3_stmt *st, int tier, int64_t from, int64_t to);

bool store_filter_keeps(int64_t labelset_id, void *ctx);

/* q's label sets: those holding its labels (and no type label for a cpu query);
 * for a cpu query without labels, every label set but the typed ones. */
int store_filter_make(struct sqlite_store *s, const struct store_query *q, struct ls_filter *f);

void store_filter_free(struct ls_filter *f);

/* Every label set passes (a cpu query without labels where no label set is typed). */
static inline bool store_filter_all(const struct ls_filter *f)
{
	return f->negate && !f->n;
}

#endif
