/* Private to store/: the backend interface behind store.h. A backend implements
 * the contract of store.h (its comments are the specification; tests/unit/
 * test_store.c is its conformance suite, and
 * tests/integration/test_store_clickhouse_conformance.c runs it on ClickHouse) as
 * a table of functions; store/store.c parses the location given to
 * store__open(), fills in and checks the options every backend shares, and
 * forwards each call to the table of the store's backend.
 *
 * A backend's handle starts with struct store, so that the table's functions get
 * back their own struct from the pointer the caller holds (a cast: see
 * sqlite_store_of() in store/sqlite/db.h). Arguments are checked by the
 * dispatcher where the contract says -EINVAL for NULL, so a backend sees a
 * non-NULL store and its options with the defaults already applied and in order.
 *
 * The map of store/ (each X.c declares what it exports in X.h; a header without
 * a .c holds only types, constants and inline functions). Outside store/, only
 * store.h is included. The shared parts include neither backend folder, the
 * backends include each other's nothing, and no piece's header leads back to a
 * piece that uses it (tests/check_layout.sh checks all three).
 *   store.h          the public contract
 *   backend.h        this interface, and the backends' tables
 *   store.c          the dispatcher of store.h over the backends
 *   plan.c           the tiers (raw, minute, hour) and the plan of a range over them
 *   varint.h         LEB128 varints of the encodings
 *   intern.c         ingest's in-memory caches of dictionary ids (both backends)
 *   block.c          the block codec (no SQLite)
 *   gauge.c          a gauge type's range: each label set's mean of its snapshots
 * store/sqlite/, the SQLite store (schema/sqlite/NNN_*.sql):
 *   open.c           open, close, migrations, SQL functions; store_sqlite_backend
 *   db.c             the handle: statement caches, stepping, error translation
 *   ingest.c         batches into raw blocks (and built rollups, for late ones)
 *   read.c           the stacks of a range and selection, and their frames' cache
 *   series.c         timelines
 *   labels.c         label keys and values in use
 *   select.c         a query's checks, read transaction and label selection
 *   windows.c        each stored window's length and period
 *   tiers.c          the tiers' watermarks, adding to a block
 *   maintain.c       rollups, retention per tier, stats
 *   migrate.c        the conversions of older layouts (004's samples rows, 005-007's
 *                    raw blocks, 005-009's minute blocks)
 *   gc.c             the dictionaries' garbage collection
 *   stackref.c       store__stackrefs(): stacks sent as references
 * store/clickhouse/, the ClickHouse store (schema/clickhouse/NNN_*.sql;
 * docs/clickhouse.md):
 *   clickhouse.c     open, close, location and options; store_clickhouse_backend
 *   handle.h         the handle and the limits its pieces share
 *   http.c           requests to the server (libcurl)
 *   rowbin.c         errors, one request, RowBinary and SQL buffers
 *   schema.c         the schema's statements, on one server or a cluster
 *   layout.c         the moves of rows into the tables of schemas 6 and 9
 *   ids.c            content ids of stacks, label sets and frames
 *   ingest.c         batches into rows
 *   tables.c         the tier tables: names, columns, chunks, partitions
 *   tiers.c          rollup tiers: watermarks, builds, a read's SQL by the plan
 *   parts.c          which partitions a read takes without FINAL
 *   read.c           stacks, timelines, labels, windows
 *   stacks.c         a flame graph's stacks: sums of ids to frames
 *   frames.c         the reads' cache of stacks' frames
 *   maint.c          rollups, retention, stats, checks
 *   gc.c             the dictionaries' garbage collection
 *   stackref.c       store__stackrefs()
 */
#ifndef SMOLDER_STORE_BACKEND_H
#define SMOLDER_STORE_BACKEND_H

#include "store/store.h"

struct store_backend {
	const char *name; /* the location's scheme: "sqlite" */
	/* "NAME+VARIANT:..." names this backend too (clickhouse+https:); the
	 * backend then gets "+VARIANT:..." as its location. */
	bool scheme_variants;
	/* store__check_location(): location as open() gets it; NULL: any is
	 * accepted until open(). */
	int (*check_location)(const char *location, char *why, size_t len);
	/* location is what follows "scheme:" (for SQLite, a path or ":memory:"); opts
	 * is never NULL and its retentions are set and in order. On failure the
	 * reason may go to why (len bytes, 0: none), left as it is otherwise. */
	int (*open)(const char *location, const struct store_options *opts, struct store **out,
		    char *why, size_t len);
	void (*close)(struct store *s);
	const char *(*errmsg)(const struct store *s);
	/* Makes msg what errmsg() answers: the reason of a batch store.c refused. */
	void (*set_errmsg)(struct store *s, const char *msg);
	/* store__ingest() (now NULL) and store__ingest_at() (*now), of a batch that
	 * store.c checked (batch__validate(), no refs, no STORE_TYPE_LABEL label,
	 * the window in range): a backend refuses only what its own limits cannot
	 * hold, and says why at the check. */
	int (*ingest)(struct store *s, const struct batch *b, const int64_t *now, bool *duplicate);
	/* store__ingest_many(), arguments checked (n in 1..STORE_INGEST_MANY_MAX, no
	 * NULL batch, each batch checked as for ingest), every results[i] zeroed. On a store
	 * failure it returns the error with the refused batches' results set; store.c gives the
	 * others the failure. */
	int (*ingest_many)(struct store *s, const struct batch *const *batches, size_t n,
			   const int64_t *now, struct store_ingest_result *results);
	int (*query_stacks)(struct store *s, const struct store_query *q, store_stack_fn cb,
			    void *ctx);
	int (*query_series)(struct store *s, const struct store_query *q, int64_t step_seconds,
			    store_series_fn cb, void *ctx);
	int (*labels)(struct store *s, const struct store_query *q, store_text_fn cb, void *ctx);
	int (*label_values)(struct store *s, const char *key, const struct store_query *q,
			    store_text_fn cb, void *ctx);
	int (*label_key_used)(struct store *s, const char *key, int64_t from, int64_t to);
	int (*windows)(struct store *s, const struct store_query *q, struct store_windows *out);
	int (*stats)(struct store *s, struct store_stats *st);
	int (*schema_version)(struct store *s, int64_t *version);
	int (*check)(struct store *s);
	int (*maintain)(struct store *s, int64_t now, size_t max_rows, bool *more);
	/* store__stackrefs(), refs checked (n <= STORE_STACKREF_MAX_REFS, each len
	 * in range); NULL: -EOPNOTSUPP. */
	int (*stackrefs)(struct store *s, int64_t now, struct store_stackref *refs, size_t n);
};

/* What every backend's handle starts with. */
struct store {
	const struct store_backend *backend;
	int64_t retention_seconds; /* the options', set by store.c at open: its window check */
};

extern const struct store_backend store_sqlite_backend;	    /* store/sqlite/open.c */
extern const struct store_backend store_clickhouse_backend; /* store/clickhouse/clickhouse.c */

#endif
