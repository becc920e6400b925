/* The ClickHouse schema's statements on one server or rewritten for a cluster
 * (clickhouse/schema.h says the rules). A small reader of the few forms a schema file
 * uses: keywords matched case-insensitively with any white space between them,
 * identifiers [A-Za-z_][A-Za-z0-9_]*, parentheses balanced outside quoted
 * strings. It is not a SQL parser: a statement of another form is refused on a
 * cluster rather than guessed at, so a new schema file that needs one fails the
 * cluster test first.
 */

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store/clickhouse/schema.h"
#include "store/clickhouse/rowbin.h"

#define NAME_MAX_LEN 64 /* an identifier of the schema: a table, view or column name */

/* A piece of text: n bytes at p. */
struct span {
	const char *p;
	size_t n;
};

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static bool is_ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Matches the words of kw (separated by single spaces) at *p, any white space
 * between them, ending at a word boundary; advances *p past them. */
static bool match_kw(const char **p, const char *kw)
{
	const char *q = skip_ws(*p);

	while (*kw) {
		size_t n = strcspn(kw, " ");

		if (strncasecmp(q, kw, n) || is_ident_char(q[n]))
			return false;
		q += n;
		kw += n;
		if (*kw == ' ') {
			kw++;
			if (!(*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
				return false;
			q = skip_ws(q);
		}
	}
	*p = q;
	return true;
}

/* An identifier at *p (after white space) into out; advances *p. */
static bool ident(const char **p, char out[NAME_MAX_LEN + 1])
{
	const char *q = skip_ws(*p);
	size_t n = 0;

	if (!(isalpha((unsigned char)*q) || *q == '_'))
		return false;
	while (is_ident_char(q[n]))
		n++;
	if (n > NAME_MAX_LEN)
		return false;
	memcpy(out, q, n);
	out[n] = '\0';
	*p = q + n;
	return true;
}

/* p at '(': the byte after its matching ')', or NULL. Quoted strings ('...',
 * with \ escapes) are skipped. */
static const char *balanced(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '\'') {
			for (p++; *p && *p != '\''; p++)
				if (*p == '\\' && p[1])
					p++;
			if (!*p)
				return NULL;
		} else if (*p == '(') {
			depth++;
		} else if (*p == ')' && --depth == 0) {
			return p + 1;
		}
	}
	return NULL;
}

static struct span trim(const char *p, const char *end)
{
	p = skip_ws(p);
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		end--;
	return (struct span){ p, (size_t)(end - p) };
}

/* Finds the words kw (a keyword sequence) in text at a word start, outside
 * quoted strings; returns the position after them, or NULL. */
static const char *find_kw(const char *text, const char *kw)
{
	const char *p;

	for (p = text; *p; p++) {
		const char *q = p;

		if (*p == '\'') {
			for (p++; *p && *p != '\''; p++)
				if (*p == '\\' && p[1])
					p++;
			if (!*p)
				return NULL;
			continue;
		}
		if ((p == text || !is_ident_char(p[-1])) && match_kw(&q, kw))
			return q;
	}
	return NULL;
}

/* The ORDER BY key of rest (a CREATE TABLE's text after its engine): the
 * expressions inside "(...)", or the one expression up to the end of its line. */
static bool order_key(const char *rest, struct span *key)
{
	const char *p = find_kw(rest, "ORDER BY"), *end;

	if (!p)
		return false;
	p = skip_ws(p);
	if (*p == '(') {
		end = balanced(p);
		if (!end)
			return false;
		*key = trim(p + 1, end - 1);
	} else {
		end = p + strcspn(p, "\n");
		*key = trim(p, end);
	}
	return key->n > 0;
}

/* A CREATE TABLE statement's parts. */
struct create {
	char table[NAME_MAX_LEN + 1], engine[NAME_MAX_LEN + 1];
	struct span cols, args, rest, key;
};

/* "CREATE TABLE IF NOT EXISTS T (cols) ENGINE = E(args) rest" with E a
 * MergeTree of one server and rest holding ORDER BY. */
static bool parse_create(const char *sql, struct create *c)
{
	const char *p = sql, *end;
	size_t n;

	if (!match_kw(&p, "CREATE TABLE IF NOT EXISTS") || !ident(&p, c->table))
		return false;
	p = skip_ws(p);
	if (*p != '(' || !(end = balanced(p)))
		return false;
	c->cols = (struct span){ p, (size_t)(end - p) };
	p = end;
	if (!match_kw(&p, "ENGINE"))
		return false;
	p = skip_ws(p);
	if (*p++ != '=' || !ident(&p, c->engine))
		return false;
	n = strlen(c->engine);
	if (n < 9 || strcmp(c->engine + n - 9, "MergeTree") ||
	    !strncmp(c->engine, "Replicated", 10))
		return false;
	p = skip_ws(p);
	if (*p != '(' || !(end = balanced(p)))
		return false;
	c->args = trim(p + 1, end - 1);
	c->rest = trim(end, end + strlen(end));
	return order_key(end, &c->key);
}

/* Whether name is a table some schema file creates (or schema_migrations). */
static bool is_schema_table(const struct ch_schema_target *t, const char *name)
{
	char found[NAME_MAX_LEN + 1];
	size_t i;

	if (!strcmp(name, "schema_migrations"))
		return true;
	for (i = 0; i < t->nmigrations; i++) {
		const char *p = t->migrations[i];

		while ((p = find_kw(p, "CREATE TABLE IF NOT EXISTS"))) {
			if (ident(&p, found) && !strcmp(found, name))
				return true;
		}
	}
	return false;
}

/* The ORDER BY key of table name, from the schema file that creates it. */
static bool key_of(const struct ch_schema_target *t, const char *name, struct span *key)
{
	struct create c;
	size_t i;

	for (i = 0; i < t->nmigrations; i++) {
		const char *p = t->migrations[i], *start;

		while ((start = find_kw(p, "CREATE TABLE IF NOT EXISTS"))) {
			/* back to the statement's start, then parse it whole */
			const char *s = start;
			char found[NAME_MAX_LEN + 1];

			while (s > t->migrations[i] && strncasecmp(s, "CREATE", 6))
				s--;
			p = start;
			if (ident(&p, found) && !strcmp(found, name) && parse_create(s, &c)) {
				*key = c.key;
				return true;
			}
		}
	}
	return false;
}

/* The Distributed table T over T_local. */
static void w_distributed(struct ch_wbuf *w, const struct ch_schema_target *t, const char *table,
			  struct span key)
{
	ch_w_text(w,
		  "CREATE TABLE IF NOT EXISTS %s.%s ON CLUSTER %s AS %s.%s_local "
		  "ENGINE = Distributed(%s, %s, %s_local, sipHash64(%.*s))",
		  t->db, table, t->cluster, t->db, table, t->cluster, t->db, table, (int)key.n,
		  key.p);
}

static int emit(struct ch_wbuf *w, ch_schema_fn fn, void *ctx)
{
	int err = w->err ? w->err : fn(ctx, w->p);

	w->len = 0;
	if (w->p)
		w->p[0] = '\0';
	return err;
}

static int set_why(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int set_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* One statement in its cluster form(s). */
static int run_on_cluster(const struct ch_schema_target *t, const char *sql, ch_schema_fn fn,
			  void *ctx, char *why, size_t whylen)
{
	struct ch_wbuf w = { 0 };
	struct create c;
	char name[NAME_MAX_LEN + 1], target[NAME_MAX_LEN + 1];
	const char *p = sql;
	int err = 0;

	if (parse_create(sql, &c)) {
		ch_w_text(
			&w,
			"CREATE TABLE IF NOT EXISTS %s.%s_local ON CLUSTER %s %.*s ENGINE = "
			"Replicated%s('/clickhouse/tables/{shard}/%s/%s', '{replica}'%s%.*s) %.*s",
			t->db, c.table, t->cluster, (int)c.cols.n, c.cols.p, c.engine, t->db,
			c.table, c.args.n ? ", " : "", (int)c.args.n, c.args.p, (int)c.rest.n,
			c.rest.p);
		err = emit(&w, fn, ctx);
		if (!err) {
			w_distributed(&w, t, c.table, c.key);
			err = emit(&w, fn, ctx);
		}
	} else if (match_kw(&p, "CREATE MATERIALIZED VIEW IF NOT EXISTS") && ident(&p, name) &&
		   match_kw(&p, "TO") && ident(&p, target) && is_schema_table(t, target)) {
		/* the SELECT with each schema table after FROM or JOIN made local */
		ch_w_text(
			&w,
			"CREATE MATERIALIZED VIEW IF NOT EXISTS %s.%s ON CLUSTER %s TO %s.%s_local",
			t->db, name, t->cluster, t->db, target);
		while (*p) {
			const char *q = p;
			char word[NAME_MAX_LEN + 1];

			if ((match_kw(&q, "FROM") || match_kw(&q, "JOIN")) &&
			    (p == sql || !is_ident_char(p[-1]))) {
				const char *ws = skip_ws(q), *r = ws;

				ch_w_put(&w, p, (size_t)(q - p));
				if (ident(&r, word) && *r != '.' && is_schema_table(t, word)) {
					ch_w_put(&w, q, (size_t)(ws - q));
					ch_w_text(&w, "%s.%s_local", t->db, word);
					q = r;
				}
				p = q;
				continue;
			}
			ch_w_put(&w, p, 1);
			if (*p == '\'') { /* a quoted string, whole */
				for (p++; *p && *p != '\''; p++) {
					if (*p == '\\' && p[1])
						ch_w_put(&w, p++, 1);
					ch_w_put(&w, p, 1);
				}
				if (!*p)
					break;
				ch_w_put(&w, p, 1);
			}
			p++;
		}
		err = emit(&w, fn, ctx);
	} else if ((p = sql, match_kw(&p, "ALTER TABLE")) && ident(&p, name) &&
		   is_schema_table(t, name)) {
		struct span rest = trim(p, p + strlen(p)), key = { 0 };
		bool columns = find_kw(rest.p, "COLUMN") != NULL;

		if (columns && !key_of(t, name, &key)) {
			err = set_why(why, whylen,
				      "ALTER TABLE %s: no CREATE TABLE of it gives its key", name);
			goto out;
		}
		ch_w_text(&w, "ALTER TABLE %s.%s_local ON CLUSTER %s %.*s", t->db, name, t->cluster,
			  (int)rest.n, rest.p);
		err = emit(&w, fn, ctx);
		if (!err && columns) {
			ch_w_text(&w, "DROP TABLE IF EXISTS %s.%s ON CLUSTER %s", t->db, name,
				  t->cluster);
			err = emit(&w, fn, ctx);
		}
		if (!err && columns) {
			w_distributed(&w, t, name, key);
			err = emit(&w, fn, ctx);
		}
	} else if ((p = sql, match_kw(&p, "DROP TABLE IF EXISTS")) && ident(&p, name) &&
		   !*skip_ws(p)) {
		ch_w_text(&w, "DROP TABLE IF EXISTS %s.%s ON CLUSTER %s", t->db, name, t->cluster);
		err = emit(&w, fn, ctx);
		if (!err) {
			ch_w_text(&w, "DROP TABLE IF EXISTS %s.%s_local ON CLUSTER %s", t->db, name,
				  t->cluster);
			err = emit(&w, fn, ctx);
		}
	} else {
		err = set_why(why, whylen,
			      "a statement the cluster layout does not know (clickhouse/schema.h "
			      "lists the "
			      "forms): %.80s",
			      skip_ws(sql));
	}
out:
	free(w.p);
	return err;
}

int ch_schema__run(const struct ch_schema_target *t, const char *text, ch_schema_fn fn, void *ctx,
		   char *why, size_t whylen)
{
	struct ch_wbuf stmt = { 0 };
	const char *p = text;
	bool content = false, cluster = t->cluster && t->cluster[0];
	int err = 0;

	if (why && whylen)
		why[0] = '\0';
	while (*p && !err) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *q = p + strspn(p, " \t");

		if (strncmp(q, "--", 2)) {
			ch_w_put(&stmt, p, n);
			ch_w_put(&stmt, "\n", 1);
			if ((size_t)(q - p) < n)
				content = true;
		}
		if (stmt.err)
			err = stmt.err;
		else if (stmt.len > CH_SCHEMA_STATEMENT_MAX)
			err = set_why(why, whylen, "a statement longer than %u bytes",
				      CH_SCHEMA_STATEMENT_MAX);
		else if (n && p[n - 1] == ';' && content) {
			stmt.p[stmt.len - 2] = '\0'; /* the ';': one statement per request */
			err = cluster ? run_on_cluster(t, stmt.p, fn, ctx, why, whylen)
				      : fn(ctx, stmt.p);
			stmt.len = 0;
			content = false;
		}
		p += n + (nl ? 1 : 0);
	}
	free(stmt.p);
	return err;
}
