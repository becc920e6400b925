/* The ClickHouse schema's statements as a server or a cluster runs them
 * (store/clickhouse/clickhouse.c applies them on open; docs/store.md "ClickHouse" states the
 * rules, docs/clickhouse.md "Cluster" is the operator's view). A schema file
 * (schema/clickhouse/NNN_*.sql) is written for one server; on a cluster
 * (clickhouse://...?cluster=NAME) each statement is rewritten here, in this one place, so every
 * schema file gets the same layout:
 *
 *   CREATE TABLE IF NOT EXISTS T (cols) ENGINE = XMergeTree(args) rest
 *     -> CREATE TABLE IF NOT EXISTS DB.T_local ON CLUSTER C (cols)
 *          ENGINE = ReplicatedXMergeTree('/clickhouse/tables/{shard}/DB/T',
 *          '{replica}'[, args]) rest
 *        CREATE TABLE IF NOT EXISTS DB.T ON CLUSTER C AS DB.T_local
 *          ENGINE = Distributed(C, DB, T_local, sipHash64(KEY))
 *     KEY is T's ORDER BY key: rows equal by it (those a Replacing- or
 *     SummingMergeTree collapses) always land on one shard.
 *   CREATE MATERIALIZED VIEW IF NOT EXISTS V TO T AS SELECT ... FROM S ...
 *     -> CREATE MATERIALIZED VIEW IF NOT EXISTS DB.V ON CLUSTER C TO DB.T_local
 *          AS SELECT ... FROM DB.S_local ...
 *     (every schema table named after FROM or JOIN becomes its local table:
 *     each shard's view reads that shard's inserts and writes its own rows)
 *   ALTER TABLE T rest
 *     -> ALTER TABLE DB.T_local ON CLUSTER C rest
 *     and, when rest changes a COLUMN, DB.T dropped and made again over the new
 *     T_local (a Distributed table cannot be altered ON CLUSTER when its shards
 *     replicate by themselves; it holds no data)
 *   DROP TABLE IF EXISTS T
 *     -> DROP TABLE IF EXISTS DB.T ON CLUSTER C, and DB.T_local the same
 *
 * Any other statement is refused on a cluster (-EINVAL, the reason in why): a
 * schema file must use these forms only. On one server every statement runs as
 * written. Statements are split at a ';' that ends a line; lines starting with
 * "--" are comments.
 */
#ifndef SMOLDER_STORE_CH_SCHEMA_H
#define SMOLDER_STORE_CH_SCHEMA_H

#include <stddef.h>

/* Largest statement a schema file may hold (a CREATE TABLE is about 500 bytes). */
#define CH_SCHEMA_STATEMENT_MAX (64u << 10)

/* Runs one statement; returns 0 or -errno (which stops the run). */
typedef int (*ch_schema_fn)(void *ctx, const char *sql);

struct ch_schema_target {
	const char *db;		       /* the database (an identifier) */
	const char *cluster;	       /* "" or NULL: one server */
	const char *const *migrations; /* every schema file's text, to find a table's */
	size_t nmigrations;	       /* ORDER BY key for an ALTER ... COLUMN */
};

/* Splits text (a schema file) into statements and calls fn with each in the form
 * t needs, in order. Returns 0; fn's error; -EINVAL for a statement the cluster
 * form does not know or a statement past CH_SCHEMA_STATEMENT_MAX (why says which,
 * why may be NULL); -ENOMEM. */
int ch_schema__run(const struct ch_schema_target *t, const char *text, ch_schema_fn fn, void *ctx,
		   char *why, size_t whylen);

#endif
