/* The ClickHouse store's dictionary GC (store/clickhouse/gc.h; schema/clickhouse/004_gc.sql):
 * stacks and label sets that no raw, minute or hour row uses any more and that no
 * ingest has seen for CH_GC_GRACE_SECONDS are deleted, CH_GC_MAX_IDS of each kind
 * a pass (a stack from `stacks` and `stack_frames`; then the frames that no
 * stack names, 007_frames.sql), with ALTER TABLE ... DELETE (a mutation: ClickHouse rewrites the
 * parts that hold them, in the background). An ingest writes its `seen` rows before its dictionary
 * and raw rows, and a deletion spares an id seen within the grace period when the mutation runs, so
 * a batch that uses a stack about to be deleted keeps it. Ids are content hashes: a stack seen
 * again after its deletion is inserted again under the same id. A pass first gives the ids that
 * have no `seen` row (stored before 004, whose ingest wrote none) one at its now,
 * CH_GC_SEED_MAX_IDS of each kind a pass, so that they too are collected once
 * unused for the grace period.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/gc.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/tables.h"

static const struct {
	const char *table, *column; /* the dictionary, and the tiers' column naming it */
	const char *also;	    /* a second table of the same ids, or NULL */
	const char *ids;	    /* a FROM of every id of the kind stored */
} kinds[] = {
	[CH_SEEN_STACK] = { "stacks", "stack", "stack_frames",
			    "(SELECT id FROM stacks UNION ALL SELECT id FROM stack_frames)" },
	[CH_SEEN_LABELSET] = { "labelsets", "labelset", NULL, "labelsets" },
};

/* Ids of each kind without a `seen` row that one pass gives one at most (one
 * insert each, 17 bytes an id). */
#define CH_GC_SEED_MAX_IDS 4096

/* Gives up to CH_GC_SEED_MAX_IDS ids of kind's dictionary that have no `seen` row
 * one at now; *left when more may remain. An ingest writes an id's `seen` row
 * before its dictionary row (and a GC deletes only the `seen` rows older than the
 * ones that spare an id), so an id without one was stored before 004. */
static int seed_kind(struct ch_store *s, int kind, int64_t now, bool *left)
{
	struct ch_wbuf sql = { 0 }, rows = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	size_t n = 0;
	int err;

	ch_w_text(&sql,
		  "SELECT id FROM %s WHERE id NOT IN (SELECT id FROM seen WHERE kind = %d) "
		  "GROUP BY id LIMIT %d FORMAT RowBinary",
		  kinds[kind].ids, kind, CH_GC_SEED_MAX_IDS + 1);
	err = ch_run_sql(s, "gc seed", &sql, &a);
	if (err)
		goto out;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad && n < CH_GC_SEED_MAX_IDS) {
		uint64_t id = ch_r_uint(&r, 8);

		if (r.bad)
			break;
		ch_w_uint(&rows, (uint64_t)kind, 1);
		ch_w_uint(&rows, id, 8);
		ch_w_uint(&rows, now > 0 ? (uint64_t)now : 0, 8);
		n++;
	}
	*left = r.p < r.end;
	if (r.bad) {
		err = ch_fail(s, -EIO, "gc seed: malformed answer");
		goto out;
	}
	if (n)
		err = rows.err
			      ?: ch_run(s, "gc seed",
					"INSERT INTO seen (kind, id, at) FORMAT RowBinary", rows.p,
					rows.len, NULL);
out:
	free(sql.p);
	free(rows.p);
	return err;
}

/* Runs sql, a SELECT of ids (at most CH_GC_MAX_IDS + 1), and lists the first
 * CH_GC_MAX_IDS into ids as SQL literals, *n of them; *left when it gave more. */
static int select_ids(struct ch_store *s, const char *what, const struct ch_wbuf *sql,
		      struct ch_wbuf *ids, size_t *n, bool *left)
{
	struct ch_answer a;
	struct ch_rbuf r;
	int err;

	*n = 0;
	err = ch_run_sql(s, what, sql, &a);
	if (err)
		return err;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad && *n < CH_GC_MAX_IDS) {
		uint64_t id = ch_r_uint(&r, 8);

		if (!r.bad)
			ch_w_text(ids, "%s%" PRIu64, (*n)++ ? ", " : "", id);
	}
	*left = r.p < r.end;
	if (r.bad)
		return ch_fail(s, -EIO, "%s: malformed answer", what);
	return ids->err;
}

/* Deletes up to CH_GC_MAX_IDS unused ids of kind; *left when more may remain. */
static int gc_kind(struct ch_store *s, int kind, int64_t cutoff, bool *left)
{
	const char *col = kinds[kind].column;
	struct ch_wbuf sql = { 0 }, ids = { 0 };
	char target[128];
	size_t n = 0;
	int t, err;

	/* unused by every tier and not seen since cutoff */
	ch_w_text(&sql,
		  "SELECT id FROM seen WHERE kind = %d AND id NOT IN (SELECT %s FROM " CH_RAW_TABLE
		  ") AND id NOT IN (SELECT %s FROM " CH_MINUTE_TABLE
		  ") AND id NOT IN (SELECT %s FROM hour) GROUP BY id "
		  "HAVING max(at) < %" PRId64 " LIMIT %d FORMAT RowBinary",
		  kind, col, col, col, cutoff, CH_GC_MAX_IDS + 1);
	err = select_ids(s, "gc", &sql, &ids, &n, left);
	if (err || !n)
		goto out;
	/* spared when seen since cutoff by the time the mutation runs: a batch
	 * ingested meanwhile wrote its seen row before its stacks and raw rows */
	for (t = 0; t < 2 && !err; t++) {
		const char *table = t ? kinds[kind].also : kinds[kind].table;

		if (!table)
			break;
		sql.len = 0;
		ch_w_text(&sql,
			  "ALTER TABLE %s DELETE WHERE id IN (%s) AND id NOT IN (SELECT id FROM "
			  "seen WHERE kind = %d AND at >= %" PRId64 ")",
			  ch_alter_target(s, table, target, sizeof(target)), ids.p, kind, cutoff);
		err = ch_run_sql(s, "gc", &sql, NULL);
	}
	if (err)
		goto out;
	sql.len = 0;
	ch_w_text(&sql, "ALTER TABLE %s DELETE WHERE kind = %d AND id IN (%s) AND at < %" PRId64,
		  ch_alter_target(s, "seen", target, sizeof(target)), kind, ids.p, cutoff);
	err = ch_run_sql(s, "gc", &sql, NULL);
out:
	free(sql.p);
	free(ids.p);
	return err;
}

/* Deletes up to CH_GC_MAX_IDS frames that no stack_frames row names; *left
 * when more may remain. The ALTER spares a frame that a stack names by the time
 * the mutation runs: an ingest inserts a stack's row before its frames' rows,
 * so a stack stored before the ALTER is seen by it, and the frames rows of one
 * stored after are in parts the mutation does not rewrite (ClickHouse mutates
 * the parts that exist when the ALTER is made). A stack being deleted still
 * names its frames until its own mutation has run: they go a pass later. */
static int gc_frames(struct ch_store *s, bool *left)
{
	struct ch_wbuf sql = { 0 }, ids = { 0 };
	char target[128];
	size_t n = 0;
	int err;

	ch_w_text(&sql,
		  "SELECT id FROM frames WHERE id NOT IN (SELECT arrayJoin(frames) FROM "
		  "stack_frames) GROUP BY id LIMIT %d FORMAT RowBinary",
		  CH_GC_MAX_IDS + 1);
	err = select_ids(s, "gc frames", &sql, &ids, &n, left);
	if (err || !n)
		goto out;
	sql.len = 0;
	ch_w_text(&sql,
		  "ALTER TABLE %s DELETE WHERE id IN (%s) AND id NOT IN (SELECT arrayJoin(frames) "
		  "FROM stack_frames)",
		  ch_alter_target(s, "frames", target, sizeof(target)), ids.p);
	err = ch_run_sql(s, "gc frames", &sql, NULL);
out:
	free(sql.p);
	free(ids.p);
	return err;
}

int ch_gc_step(struct ch_store *s, int64_t now, bool *more)
{
	int64_t cutoff = now - CH_GC_GRACE_SECONDS;
	bool left[5] = { false, false, false, false, false };
	int err;

	if (s->gc_after && now < s->gc_after)
		return 0;
	/* the ids seeded now are deleted by a pass a grace period later, if unused */
	err = seed_kind(s, CH_SEEN_STACK, now, &left[0]);
	if (!err)
		err = seed_kind(s, CH_SEEN_LABELSET, now, &left[1]);
	if (!err)
		err = gc_kind(s, CH_SEEN_STACK, cutoff, &left[2]);
	if (!err)
		err = gc_kind(s, CH_SEEN_LABELSET, cutoff, &left[3]);
	if (!err)
		err = gc_frames(s, &left[4]);
	if (err)
		return err;
	if (left[0] || left[1] || left[2] || left[3] || left[4])
		*more = true;
	else
		s->gc_after = now + CH_GC_INTERVAL_SECONDS;
	return 0;
}
