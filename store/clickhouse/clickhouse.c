/* The ClickHouse backend of the store: its location, credentials, schema and
 * handle (store.h is the contract, store/backend.h the table this file fills,
 * docs/clickhouse.md the user's view). Location:
 * "clickhouse[+https]://HOST:PORT/DATABASE[?OPTION[&OPTION]...]", OPTION one of
 * cluster=NAME, credentials=FILE, ca=FILE, plaintext=1 (in any order, each at
 * most once). HOST:PORT is the server's HTTP interface, or with +https its https
 * one (https_port), whose certificate must chain to a CA of ca=FILE (PEM; else
 * of the system's store) and name HOST. DATABASE is created when missing. FILE
 * is one line "user:password" kept secret by PostgreSQL's rule for key files
 * (ours with mode 0600 or stricter, or root's with 0640 or stricter;
 * credentials never come from argv); no FILE is ClickHouse's "default" user
 * without a password. Credentials never go in clear to another machine: plain
 * http with credentials=FILE is refused (-EPERM, before the file is read or a
 * connection made) unless HOST is loopback (localhost, 127.0.0.0/8) or the
 * location says plaintext=1. NAME is a cluster of the server's remote_servers: the
 * database and schema are then made ON CLUSTER, each table T as T_local
 * (Replicated) under a Distributed T (clickhouse/schema.h), and every query runs with
 * CH_CLUSTER_SETTINGS.
 *
 * Open applies the numbered schema files (schema/clickhouse/NNN_*.sql, embedded
 * as ch_migrations[]) that the database's schema_migrations table does not list,
 * through ch_schema__run() (as written on one server, rewritten on a cluster),
 * and versions 6 and 9 move the raw and minute rows into their tables
 * (clickhouse/layout.c).
 * The rest of the contract: clickhouse/ingest.c (content ids, batches stored once however
 * often their rows are inserted, the ingest cache), clickhouse/read.c (queries; with
 * clickhouse/stacks.c, the frames a flame graph fetches, and clickhouse/frames.c, the cache of
 * those),
 * clickhouse/tiers.c (minute and hour rollups built inside ClickHouse), clickhouse/layout.c (the
 * moves to schema 6's and 9's tables), clickhouse/gc.c (the
 * dictionary GC), clickhouse/maint.c (stats, check, retention per tier), clickhouse/stackref.c
 * (stacks by content id, the fleet wire); store/clickhouse/handle.h and
 * rowbin.h are what they share (the map of the pieces: store/backend.h).
 * docs/store.md describes the design and its known limits. Not thread-safe: one HTTP
 * connection per store.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/address.h"
#include "common/reason.h"
#include "store/backend.h"
#include "store/clickhouse/frames.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/ids.h"
#include "store/clickhouse/ingest.h"
#include "store/clickhouse/layout.h"
#include "store/clickhouse/maint.h"
#include "store/clickhouse/read.h"
#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/schema.h"
#include "store/clickhouse/stackref.h"
#include "store/clickhouse/tables.h"
#include "store/clickhouse/tiers.h"

extern const char *const ch_migrations[]; /* build/gen/ch_migrations.c */
extern const size_t ch_nmigrations;

/* A credentials file is one short line; anything longer is not one. */
#define CH_CREDENTIALS_MAX 4096
/* DATABASE is an identifier of at most this many bytes ([A-Za-z_][A-Za-z0-9_]*):
 * it is written into SQL unquoted. */
#define CH_DB_MAX 64

/* ---- open ----------------------------------------------------------------- */

struct ch_location {
	char host[256];
	unsigned port;
	bool https;
	bool plaintext; /* plaintext=1: credentials over http to any host */
	char db[CH_DB_MAX + 1];
	char credentials[4096];		  /* a path, or "" */
	char ca[4096];			  /* https: a path, or "": the system's CAs */
	char cluster[CH_CLUSTER_MAX + 1]; /* "" : one server */
};

/* A cluster's queries: inserts into a Distributed table return once every shard
 * has its rows (the next batch's duplicate check reads them, through any
 * server); a subquery on a Distributed table inside a query on one runs once, on
 * the server asked (GLOBAL IN), rather than being refused; an ON CLUSTER
 * statement waits at most 60 s for every server (a server down fails the open
 * within CH_HTTP_TIMEOUT_S instead of ClickHouse's 180 s default). */
#define CH_CLUSTER_SETTINGS                                                                        \
	"insert_distributed_sync=1&distributed_product_mode=global&"                               \
	"distributed_ddl_task_timeout=60"

/* An identifier of at most max bytes at p ([A-Za-z_][A-Za-z0-9_]*): its length,
 * or 0. */
static size_t ident_len(const char *p, size_t max)
{
	size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");

	return n && n <= max && !(p[0] >= '0' && p[0] <= '9') ? n : 0;
}

/* A path option's value at p ("FILE" up to the next '&': a path with '&'
 * cannot be named) into out; its length, or 0 when empty or too long. */
static size_t path_option(const char *p, char *out, size_t len)
{
	size_t n = strcspn(p, "&");

	if (!n || n >= len)
		return 0;
	memcpy(out, p, n);
	out[n] = '\0';
	return n;
}

/* "[+https:]//HOST:PORT/DATABASE[?OPTION[&OPTION]]" (what follows
 * "clickhouse"'s ':', or "clickhouse" when a '+' follows it), each OPTION
 * "credentials=FILE", "cluster=NAME", "ca=FILE" or "plaintext=1", at most once
 * each. Syntax only: the rules are check_location()'s. */
static int parse_location(const char *loc, struct ch_location *out)
{
	const char *p = loc, *h, *d;
	char *end;
	unsigned long port;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!strncasecmp(p, "+https:", 7)) {
		out->https = true;
		p += 7;
	}
	if (strncmp(p, "//", 2))
		return -EINVAL;
	h = p += 2;
	n = strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
	if (!n || n >= sizeof(out->host) || h[n] != ':')
		return -EINVAL;
	memcpy(out->host, h, n);
	p = h + n + 1;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	port = strtoul(p, &end, 10);
	if (errno || !port || port > 65535 || *end != '/')
		return -EINVAL;
	out->port = (unsigned)port;
	d = end + 1;
	n = ident_len(d, CH_DB_MAX);
	if (!n)
		return -EINVAL;
	memcpy(out->db, d, n);
	p = d + n;
	if (!*p)
		return 0;
	if (*p != '?')
		return -EINVAL;
	do {
		p++;
		if (!strncmp(p, "credentials=", 12) && !out->credentials[0]) {
			p += 12;
			n = path_option(p, out->credentials, sizeof(out->credentials));
		} else if (!strncmp(p, "ca=", 3) && !out->ca[0]) {
			p += 3;
			n = path_option(p, out->ca, sizeof(out->ca));
		} else if (!strncmp(p, "plaintext=1", 11) && !out->plaintext) {
			out->plaintext = true;
			n = 11;
		} else if (!strncmp(p, "cluster=", 8) && !out->cluster[0]) {
			p += 8;
			n = ident_len(p, CH_CLUSTER_MAX);
			if (n)
				memcpy(out->cluster, p, n);
		} else {
			n = 0;
		}
		if (!n || (p[n] && p[n] != '&'))
			return -EINVAL;
		p += n;
	} while (*p == '&');
	return *p ? -EINVAL : 0;
}

/* parse_location() and the rules that need neither a file nor the network:
 * ca= only over https, plaintext=1 only over http, and credentials over plain
 * http only to a loopback host or with plaintext=1 (-EPERM). why says what is
 * wrong. */
static int check_location(const char *location, struct ch_location *loc, char *why, size_t len)
{
	if (parse_location(location, loc))
		return reason_fail(why, len, -EINVAL,
				   "not a ClickHouse location: want "
				   "clickhouse[+https]://HOST:PORT/DATABASE[?OPTIONS], OPTIONS "
				   "cluster=NAME, credentials=FILE, ca=FILE (with +https), "
				   "plaintext=1, each at most once, joined by &");
	if (loc->ca[0] && !loc->https)
		return reason_fail(why, len, -EINVAL,
				   "ca=%s names the CA of an https server: the location must "
				   "start with clickhouse+https://",
				   loc->ca);
	if (loc->plaintext && loc->https)
		return reason_fail(why, len, -EINVAL,
				   "plaintext=1 and clickhouse+https:// contradict each other");
	if (loc->credentials[0] && !loc->https && !loc->plaintext &&
	    !address_is_loopback_name(loc->host))
		return reason_fail(why, len, -EPERM,
				   "refusing to send the ClickHouse credentials of %s in clear "
				   "(http) to %s, which is not a loopback address: use "
				   "clickhouse+https://%s:HTTPS_PORT/... (ca=FILE for a private "
				   "CA), or add plaintext=1 to the location to send them in clear",
				   loc->credentials, loc->host, loc->host);
	return 0;
}

/* Whether the CA file of an https location can be used: a regular file we can
 * read (libcurl would otherwise fail every request with a vaguer message). */
static int check_ca_file(const char *path, char *why, size_t len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = -errno;

	if (fd < 0)
		return reason_fail(why, len, err, "ca=%s: %s", path, strerror(-err));
	err = 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		err = reason_fail(why, len, -EINVAL, "ca=%s: not a regular file", path);
	close(fd);
	return err;
}

/* Whether a credentials file's owner and mode keep it secret, PostgreSQL's rule
 * for key files: owned by the user we run as with no group or other permission
 * (0600 or stricter), or owned by root with at most group read (0640 or
 * stricter). The second is what a Kubernetes Secret mounted with fsGroup is
 * (root:GROUP, defaultMode 0440), and a file root keeps for a service's group. */
static bool is_secret_file(const struct stat *st)
{
	if (st->st_uid == geteuid())
		return !(st->st_mode & (S_IRWXG | S_IRWXO));
	if (st->st_uid == 0)
		return !(st->st_mode & (S_IWGRP | S_IXGRP | S_IRWXO));
	return false;
}

/* Reads "user:password" from path (a symbolic link followed): a regular file that
 * is_secret_file() accepts (-EACCES otherwise), at most CH_CREDENTIALS_MAX bytes
 * (-EINVAL), one line (a trailing newline is dropped). *user and *password are
 * malloc'd. */
static int read_credentials(const char *path, char **user, char **password)
{
	char buf[CH_CREDENTIALS_MAX + 1], *colon;
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	/* symbolic links followed: a Kubernetes Secret's file is one (KEY ->
	 * ..data/KEY); the owner and mode checked are the file's, read from the fd */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto out_close;
	}
	if (!is_secret_file(&st)) {
		err = -EACCES;
		goto out_close;
	}
	n = read(fd, buf, sizeof(buf));
	if (n < 0) {
		err = -errno;
		goto out_close;
	}
	if (n > CH_CREDENTIALS_MAX) {
		err = -EINVAL;
		goto out_close;
	}
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	colon = strchr(buf, ':');
	if (!colon || colon == buf || strchr(buf, '\n')) {
		err = -EINVAL;
		goto out_wipe;
	}
	*colon = '\0';
	*user = strdup(buf);
	*password = strdup(colon + 1);
	if (!*user || !*password) {
		free(*user);
		free(*password);
		*user = *password = NULL;
		err = -ENOMEM;
	}
out_wipe:
	explicit_bzero(buf, sizeof(buf));
out_close:
	close(fd);
	return err;
}

/* The version recorded in schema_migrations (0: none). */
static int read_version(struct ch_store *s, int64_t *version)
{
	struct ch_answer a;
	struct ch_rbuf r;
	int err;

	err = ch_run(s, "schema version",
		     "SELECT toUInt64(max(version)) FROM schema_migrations "
		     "FORMAT RowBinary",
		     NULL, 0, &a);
	if (err)
		return err;
	r = ch_answer_reader(&a);
	*version = (int64_t)ch_r_uint(&r, 8);
	return r.bad ? ch_fail(s, -EIO, "schema version: short answer (%zu bytes)", a.len) : 0;
}

static int run_statement(void *ctx, const char *sql)
{
	return ch_run(ctx, "schema", sql, NULL, 0, NULL);
}

/* Runs text (a schema file, or one statement ending in ';') on the server or, in
 * the cluster form (clickhouse/schema.h), on the cluster. */
static int run_schema(struct ch_store *s, const char *db, const char *text)
{
	struct ch_schema_target t = { db, s->cluster, ch_migrations, ch_nmigrations };
	char why[256];
	int err;

	err = ch_schema__run(&t, text, run_statement, s, why, sizeof(why));
	if (err && why[0])
		return ch_fail(s, err, "schema: %s", why);
	return err;
}

/* Applies schema file index, then moves the rows its version moves (6 and 9:
 * clickhouse/layout.c) or marks where the totals start (8: ch_tiers_mark_totals()),
 * then records its version: a step stopped midway is run again by the next
 * open, and readers refuse the database until it is done. */
static int apply_migration(struct ch_store *s, const char *db, size_t index)
{
	int err = run_schema(s, db, ch_migrations[index]);

	if (!err && (index + 1 == CH_LAYOUT_VERSION || index + 1 == CH_BATCHES_VERSION))
		err = ch_layout_migrate(s, (int64_t)index + 1);
	if (!err && index + 1 == CH_TOTALS_VERSION)
		err = ch_tiers_mark_totals(s);
	if (!err) {
		char sql[96];

		snprintf(sql, sizeof(sql), "INSERT INTO schema_migrations (version) VALUES (%zu)",
			 index + 1);
		err = ch_run(s, "schema", sql, NULL, 0, NULL);
	}
	return err;
}

static void ch_close(struct store *base);

static int ch_check_location(const char *location, char *why, size_t len)
{
	struct ch_location loc;

	return check_location(location, &loc, why, len);
}

static int ch_open(const char *location, const struct store_options *opts, struct store **out,
		   char *why, size_t whylen)
{
	struct ch_http_server srv = { 0 };
	struct ch_location loc;
	struct ch_store *s;
	char *user = NULL, *password = NULL, sql[256];
	const char *settings;
	size_t i;
	int err;

	err = check_location(location, &loc, why, whylen);
	if (!err && loc.ca[0])
		err = check_ca_file(loc.ca, why, whylen);
	if (err)
		return err;
	if (loc.credentials[0] && (err = read_credentials(loc.credentials, &user, &password)))
		return reason_fail(why, whylen, err,
				   err == -EACCES
					   ? "credentials=%s: others may read or write it "
					     "(want ours with mode 0600, or root's with 0640, "
					     "or stricter)"
				   : err == -EINVAL ? "credentials=%s: not one line user:password"
						    : "credentials=%s: cannot be read",
				   loc.credentials);
	srv = (struct ch_http_server){ loc.host, loc.port, loc.https, loc.ca[0] ? loc.ca : NULL,
				       user,	 password };
	s = calloc(1, sizeof(*s));
	if (!s) {
		err = -ENOMEM;
		goto out_creds;
	}
	s->base.backend = &store_clickhouse_backend;
	s->opts = *opts;
	snprintf(s->cluster, sizeof(s->cluster), "%s", loc.cluster);
	settings = loc.cluster[0] ? CH_CLUSTER_SETTINGS : NULL;
	if (!opts->read_only) { /* the database first: a session cannot default to a missing one */
		err = ch_http__new(&srv, NULL, settings, &s->http);
		if (err)
			goto out_close;
		snprintf(sql, sizeof(sql), "CREATE DATABASE IF NOT EXISTS %s%s%s", loc.db,
			 loc.cluster[0] ? " ON CLUSTER " : "", loc.cluster);
		err = ch_run(s, "open", sql, NULL, 0, NULL);
		ch_http__free(s->http);
		s->http = NULL;
		if (err)
			goto out_close;
	}
	err = ch_http__new(&srv, loc.db, settings, &s->http);
	if (err)
		goto out_close;
	if (!opts->read_only)
		err = run_schema(s, loc.db,
				 "CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32)\n"
				 "ENGINE = MergeTree() ORDER BY version;\n");
	if (!err)
		err = read_version(s, &s->version);
	if (err)
		goto out_close;
	if (s->version > (int64_t)ch_nmigrations ||
	    (opts->read_only && s->version != (int64_t)ch_nmigrations)) {
		err = ch_fail(s, -EPROTO,
			      "the database is at schema version %lld, this build's is %zu",
			      (long long)s->version, ch_nmigrations);
		goto out_close;
	}
	/* rows a collector of an older version wrote into replaced tables since */
	if (!opts->read_only && s->version >= CH_LAYOUT_VERSION)
		err = ch_layout_migrate(s, s->version);
	for (i = (size_t)s->version; i < ch_nmigrations && !err; i++)
		err = apply_migration(s, loc.db, i);
	if (err)
		goto out_close;
	s->version = (int64_t)ch_nmigrations;
	*out = &s->base;
	goto out_creds;
out_close:
	if (s->errmsg[0])
		reason_fail(why, whylen, err, "%s", s->errmsg);
	ch_close(&s->base);
out_creds:
	if (password)
		explicit_bzero(password, strlen(password));
	free(user);
	free(password);
	return err;
}

static void ch_close(struct store *base)
{
	struct ch_store *s = ch_of(base);

	ch_http__free(s->http);
	ch_frames_free(s);
	ch_ids_free(&s->ids);
	free(s);
}

static void ch_set_errmsg(struct store *base, const char *msg)
{
	ch_fail(ch_of(base), 0, "%s", msg);
}

static const char *ch_errmsg(const struct store *base)
{
	return ((const struct ch_store *)base)->errmsg;
}

static int ch_schema_version(struct store *base, int64_t *version)
{
	*version = ch_of(base)->version;
	return 0;
}
const struct store_backend store_clickhouse_backend = {
	.name = "clickhouse",
	.scheme_variants = true,
	.check_location = ch_check_location,
	.open = ch_open,
	.close = ch_close,
	.errmsg = ch_errmsg,
	.set_errmsg = ch_set_errmsg,
	.ingest = ch_ingest,
	.ingest_many = ch_store__ingest_many,
	.query_stacks = ch_query_stacks,
	.query_series = ch_query_series,
	.labels = ch_labels,
	.label_values = ch_label_values,
	.label_key_used = ch_label_key_used,
	.windows = ch_windows,
	.stats = ch_stats,
	.schema_version = ch_schema_version,
	.check = ch_check,
	.maintain = ch_maintain,
	.stackrefs = ch_store__stackrefs,
};
