/* The ClickHouse backend of the store (store.h is the contract, store/backend.h
 * the table this file fills; docs/clickhouse.md the user's view). Location:
 * "clickhouse://HOST:PORT/DATABASE[?credentials=FILE]", HOST:PORT the server's HTTP
 * interface, DATABASE created when missing, FILE one line "user:password" that
 * only its owner may read (credentials never come from argv); no FILE is
 * ClickHouse's "default" user without a password.
 *
 * Open applies the numbered schema files (schema/clickhouse/NNN_*.sql, embedded
 * as ch_migrations[]) that the database's schema_migrations table does not list.
 * Every id is a content hash (hash64 below): a stack's id hashes its sanitized
 * frames, a label set's its pairs sorted by key, so any collector computes the
 * same ids and the dictionaries need no round trip to intern. An ingest checks
 * (agent, seq) in `ingested` (a duplicate writes nothing), then inserts the
 * batch's stacks, label sets and samples, and last its `ingested` row, each as
 * one INSERT ... FORMAT RowBinary. Queries sum in ClickHouse (GROUP BY stack,
 * window, ...) and read answers as RowBinary; query_stacks then fetches the
 * frames of the answer's stacks in one query and merges the two in C.
 *
 * What this slice does not do yet (docs/clickhouse.md): rollup tiers (raw rows
 * are kept for the whole retention, dropped by whole days), two collectors racing
 * on one (agent, seq) (both may store it: the check and the insert are two
 * requests), and a batch half inserted when the server fails midway (its retry
 * stores the inserted part again). Not thread-safe: one HTTP connection per store.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/batch.h"
#include "common/frame.h"
#include "store/backend.h"
#include "store/block.h"
#include "store/ch_http.h"

extern const char *const ch_migrations[]; /* build/gen/ch_migrations.c */
extern const size_t ch_nmigrations;

/* A credentials file is one short line; anything longer is not one. */
#define CH_CREDENTIALS_MAX 4096
/* DATABASE is an identifier of at most this many bytes ([A-Za-z_][A-Za-z0-9_]*):
 * it is written into SQL unquoted. */
#define CH_DB_MAX 64
/* Frames of one stored stack read back: BATCH_MAX_STACK_DEPTH is the most ingest
 * stores; a row with more is damage (-EIO). */
#define CH_MAX_FRAMES BATCH_MAX_STACK_DEPTH
/* Partitions dropped by one store__maintain() call (each an ALTER TABLE). */
#define CH_MAINTAIN_MAX_DROPS 16

struct ch_store {
	struct store base;
	struct ch_http *http;
	struct store_options opts;
	int64_t version;
	char errmsg[768];
};

static struct ch_store *ch_of(struct store *s)
{
	return (struct ch_store *)s;
}

static int fail(struct ch_store *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct ch_store *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

/* One request; a failure's message is "what: ClickHouse's message". */
static int run(struct ch_store *s, const char *what, const char *sql, const void *body, size_t len,
	       struct ch_answer *ans)
{
	int err = ch_http__query(s->http, sql, body, len, ans);

	if (err)
		return fail(s, err, "%s: %s", what, ch_http__errmsg(s->http));
	return 0;
}

/* ---- buffers: RowBinary bodies and SQL text ------------------------------ */

struct wbuf {
	char *p;
	size_t len, cap;
	int err; /* -ENOMEM once an append failed; the buffer is then unusable */
};

static void w_put(struct wbuf *w, const void *d, size_t n)
{
	if (w->err)
		return;
	if (w->len + n + 1 > w->cap) {
		size_t cap = w->cap ? w->cap : 1024;
		char *p;

		while (cap < w->len + n + 1)
			cap *= 2;
		p = realloc(w->p, cap);
		if (!p) {
			w->err = -ENOMEM;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	memcpy(w->p + w->len, d, n);
	w->len += n;
	w->p[w->len] = '\0';
}

static void w_text(struct wbuf *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void w_text(struct wbuf *w, const char *fmt, ...)
{
	char small[512], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		w->err = -EINVAL;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		w_put(w, small, (size_t)n);
		return;
	}
	va_start(ap, fmt);
	n = vasprintf(&big, fmt, ap);
	va_end(ap);
	if (n < 0) {
		w->err = -ENOMEM;
		return;
	}
	w_put(w, big, (size_t)n);
	free(big);
}

/* s as a ClickHouse string literal: quoted, with \ and ' escaped. */
static void w_quoted(struct wbuf *w, const char *s)
{
	w_put(w, "'", 1);
	for (; *s; s++) {
		if (*s == '\\' || *s == '\'')
			w_put(w, "\\", 1);
		w_put(w, s, 1);
	}
	w_put(w, "'", 1);
}

static void w_uint(struct wbuf *w, uint64_t v, int bytes)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	w_put(w, b, (size_t)bytes);
}

static void w_varint(struct wbuf *w, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	w_put(w, b, n);
}

static void w_str(struct wbuf *w, const char *s, size_t n)
{
	w_varint(w, n);
	w_put(w, s, n);
}

struct rbuf {
	const uint8_t *p, *end;
	bool bad; /* read past the end or a length past it */
};

/* A reader over a whole RowBinary answer. */
static struct rbuf answer_reader(const struct ch_answer *a)
{
	return (struct rbuf){ (const uint8_t *)a->data, (const uint8_t *)a->data + a->len, false };
}

static uint64_t r_uint(struct rbuf *r, int bytes)
{
	uint64_t v = 0;
	int i;

	if (r->bad || r->end - r->p < bytes) {
		r->bad = true;
		return 0;
	}
	for (i = 0; i < bytes; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += bytes;
	return v;
}

static uint64_t r_varint(struct rbuf *r)
{
	uint64_t v = 0;
	int shift;

	for (shift = 0; shift < 64 && !r->bad; shift += 7) {
		if (r->p >= r->end)
			break;
		v |= (uint64_t)(*r->p & 0x7f) << shift;
		if (!(*r->p++ & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static const char *r_str(struct rbuf *r, size_t *len)
{
	uint64_t n = r_varint(r);
	const char *s = (const char *)r->p;

	if (r->bad || n > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		*len = 0;
		return "";
	}
	r->p += n;
	*len = (size_t)n;
	return s;
}

static double r_f64(struct rbuf *r)
{
	uint64_t v = r_uint(r, 8);
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/* A sum read as (UInt64 sum, Float64 sum): the float tells an overflow of the
 * integer one (a UInt64 sum wraps), so that sums saturate at INT64_MAX. */
static uint64_t r_sum(struct rbuf *r)
{
	uint64_t u = r_uint(r, 8);
	double f = r_f64(r);

	return f >= 9.2e18 || u > INT64_MAX ? INT64_MAX : u;
}

/* ---- content ids ---------------------------------------------------------- */

/* FNV-1a over the bytes, then a SplitMix64 finalizer to spread them: the same
 * on every collector and every build (the ids are stored). 64 bits: a collision
 * is unlikely below billions of stacks, not impossible (docs/clickhouse.md). */
#define HASH_SEED UINT64_C(0xcbf29ce484222325)

static uint64_t hash_bytes(uint64_t h, const void *d, size_t n)
{
	const uint8_t *p = d;

	while (n--)
		h = (h ^ *p++) * UINT64_C(0x100000001b3);
	return h;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return hash_bytes(h, b, 8);
}

static uint64_t hash_str(uint64_t h, const char *s, size_t n)
{
	return hash_bytes(hash_u64(h, n), s, n);
}

static uint64_t hash_final(uint64_t h)
{
	h = (h ^ (h >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	h = (h ^ (h >> 27)) * UINT64_C(0x94d049bb133111eb);
	return h ^ (h >> 31);
}

/* ---- open ----------------------------------------------------------------- */

struct ch_location {
	char host[256];
	unsigned port;
	char db[CH_DB_MAX + 1];
	char credentials[4096]; /* a path, or "" */
};

/* "//HOST:PORT/DATABASE[?credentials=FILE]" (what follows "clickhouse:"). */
static int parse_location(const char *loc, struct ch_location *out)
{
	const char *p = loc, *h, *d;
	char *end;
	unsigned long port;
	size_t n;

	memset(out, 0, sizeof(*out));
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
	n = strspn(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
	if (!n || n > CH_DB_MAX || (d[0] >= '0' && d[0] <= '9'))
		return -EINVAL;
	memcpy(out->db, d, n);
	p = d + n;
	if (!*p)
		return 0;
	if (strncmp(p, "?credentials=", 13) || !p[13] || strlen(p + 13) >= sizeof(out->credentials))
		return -EINVAL;
	strcpy(out->credentials, p + 13);
	return 0;
}

/* Reads "user:password" from path: a regular file nobody but its owner may read
 * or write (-EACCES otherwise), at most CH_CREDENTIALS_MAX bytes (-EINVAL), one
 * line (a trailing newline is dropped). *user and *password are malloc'd. */
static int read_credentials(const char *path, char **user, char **password)
{
	char buf[CH_CREDENTIALS_MAX + 1], *colon;
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto out_close;
	}
	if (st.st_mode & 077) {
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
	struct rbuf r;
	int err;

	err = run(s, "schema version",
		  "SELECT toUInt64(max(version)) FROM schema_migrations "
		  "FORMAT RowBinary",
		  NULL, 0, &a);
	if (err)
		return err;
	r = answer_reader(&a);
	*version = (int64_t)r_uint(&r, 8);
	return r.bad ? fail(s, -EIO, "schema version: short answer (%zu bytes)", a.len) : 0;
}

/* Runs migration text's statements (split at a ';' that ends a line; lines
 * starting with "--" are comments) one request each. */
static int apply_migration(struct ch_store *s, size_t index)
{
	struct wbuf stmt = { 0 };
	const char *p = ch_migrations[index];
	bool content = false;
	int err = 0;

	while (*p && !err) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *q = p + strspn(p, " \t");

		if (strncmp(q, "--", 2)) {
			w_put(&stmt, p, n);
			w_put(&stmt, "\n", 1);
			if ((size_t)(q - p) < n)
				content = true;
		}
		if (stmt.err)
			err = stmt.err;
		else if (n && p[n - 1] == ';' && content) {
			stmt.p[stmt.len - 2] = '\0'; /* the ';': one statement per request */
			err = run(s, "schema", stmt.p, NULL, 0, NULL);
			stmt.len = 0;
			content = false;
		}
		p += n + (nl ? 1 : 0);
	}
	free(stmt.p);
	if (!err) {
		char sql[96];

		snprintf(sql, sizeof(sql), "INSERT INTO schema_migrations (version) VALUES (%zu)",
			 index + 1);
		err = run(s, "schema", sql, NULL, 0, NULL);
	}
	return err;
}

static int ch_open(const char *location, const struct store_options *opts, struct store **out);
static void ch_close(struct store *base);

static int ch_open(const char *location, const struct store_options *opts, struct store **out)
{
	struct ch_location loc;
	struct ch_store *s;
	char *user = NULL, *password = NULL, sql[160];
	size_t i;
	int err;

	err = parse_location(location, &loc);
	if (err)
		return err;
	if (loc.credentials[0] && (err = read_credentials(loc.credentials, &user, &password)))
		return err;
	s = calloc(1, sizeof(*s));
	if (!s) {
		err = -ENOMEM;
		goto out_creds;
	}
	s->base.backend = &store_clickhouse_backend;
	s->opts = *opts;
	if (!opts->read_only) { /* the database first: a session cannot default to a missing one */
		err = ch_http__new(loc.host, loc.port, NULL, user, password, &s->http);
		if (err)
			goto out_close;
		snprintf(sql, sizeof(sql), "CREATE DATABASE IF NOT EXISTS %s", loc.db);
		err = run(s, "open", sql, NULL, 0, NULL);
		ch_http__free(s->http);
		s->http = NULL;
		if (err)
			goto out_close;
	}
	err = ch_http__new(loc.host, loc.port, loc.db, user, password, &s->http);
	if (err)
		goto out_close;
	if (!opts->read_only)
		err = run(s, "open",
			  "CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32) "
			  "ENGINE = MergeTree() ORDER BY version",
			  NULL, 0, NULL);
	if (!err)
		err = read_version(s, &s->version);
	if (err)
		goto out_close;
	if (s->version > (int64_t)ch_nmigrations ||
	    (opts->read_only && s->version != (int64_t)ch_nmigrations)) {
		err = -EPROTO;
		goto out_close;
	}
	for (i = (size_t)s->version; i < ch_nmigrations && !err; i++)
		err = apply_migration(s, i);
	if (err)
		goto out_close;
	s->version = (int64_t)ch_nmigrations;
	*out = &s->base;
	goto out_creds;
out_close:
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
	free(s);
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

/* ---- ingest --------------------------------------------------------------- */

static const char *batch_str(const struct batch *b, uint32_t i)
{
	return b->strings[i] ? b->strings[i] : "";
}

/* Every index of b in range, every count in 1..BATCH_MAX_COUNT, no label using
 * STORE_TYPE_LABEL; the window in [lo, hi]. */
static int check_batch(struct ch_store *s, const struct batch *b, const int64_t *now)
{
	int64_t lo = -STORE_MAX_ABS_WINDOW, hi = STORE_MAX_ABS_WINDOW;
	uint32_t i, j;

	if (now && *now > -STORE_MAX_ABS_WINDOW && *now < STORE_MAX_ABS_WINDOW) {
		lo = *now - s->opts.retention_seconds;
		hi = *now + STORE_MAX_FUTURE_SECONDS;
	}
	if (b->window_start < lo || b->window_start > hi)
		return fail(s, -ERANGE,
			    "window_start %" PRId64 " outside [%" PRId64 ", %" PRId64 "]%s",
			    b->window_start, lo, hi, now ? " (now - retention, now + 1 h)" : "");
	if (!b->nstrings || b->agent_id >= b->nstrings || b->host >= b->nstrings ||
	    b->profile_type >= b->nstrings)
		return fail(s, -EINVAL, "agent, host or profile type out of range (%u strings)",
			    b->nstrings);
	for (i = 0; i < b->nframes; i++)
		if (b->frames[i].kind >= FRAME_KIND_NR || b->frames[i].name >= b->nstrings ||
		    b->frames[i].file >= b->nstrings)
			return fail(s, -EINVAL, "frame %u: bad kind or string out of range", i);
	for (i = 0; i < b->nstacks; i++) {
		if (!b->stacks[i].nframes || b->stacks[i].nframes > BATCH_MAX_STACK_DEPTH)
			return fail(s, -EINVAL, "stack %u: %u frames", i, b->stacks[i].nframes);
		for (j = 0; j < b->stacks[i].nframes; j++)
			if (b->stacks[i].frames[j] >= b->nframes)
				return fail(s, -EINVAL,
					    "stack %u: frame %u out of range (%u frames)", i,
					    b->stacks[i].frames[j], b->nframes);
	}
	for (i = 0; i < b->nlabelsets; i++) {
		if (b->labelsets[i].nlabels > BATCH_MAX_LABELS)
			return fail(s, -EINVAL, "label set %u: %u labels", i,
				    b->labelsets[i].nlabels);
		for (j = 0; j < b->labelsets[i].nlabels; j++) {
			const struct batch_label *l = &b->labelsets[i].labels[j];

			if (l->key >= b->nstrings || l->value >= b->nstrings)
				return fail(s, -EINVAL, "label set %u: string out of range", i);
			if (!strcmp(batch_str(b, l->key), STORE_TYPE_LABEL))
				return fail(s, -EINVAL,
					    "label set %u: the key " STORE_TYPE_LABEL
					    " is reserved",
					    i);
		}
	}
	for (i = 0; i < b->nsamples; i++) {
		const struct batch_sample *sm = &b->samples[i];

		if (sm->labelset >= b->nlabelsets || sm->stack >= b->nstacks)
			return fail(s, -EINVAL, "sample %u: label set or stack out of range", i);
		if (!sm->count || sm->count > BATCH_MAX_COUNT)
			return fail(s, -EINVAL, "sample %u: count %" PRIu64 " outside 1..2^40", i,
				    sm->count);
	}
	return 0;
}

/* A batch frame's name or file as stored: through frame_sanitize() when needed. */
static const char *stored_text(const char *t, char *buf, size_t *len)
{
	size_t n = strlen(t);

	if (frame_is_clean(t, n)) {
		*len = n;
		return t;
	}
	*len = frame_sanitize(t, n, buf);
	return buf;
}

/* Stack i's id (w NULL), or its stacks row after the id: the four arrays (w). */
static uint64_t stack_row(const struct batch *b, uint32_t i, struct wbuf *w)
{
	char nbuf[FRAME_MAX_NAME_LEN + 1], fbuf[FRAME_MAX_NAME_LEN + 1];
	const struct batch_stack *st = &b->stacks[i];
	uint64_t h = HASH_SEED;
	uint32_t j;
	int pass;

	for (pass = 0; pass < (w ? 5 : 1); pass++) {
		if (w && pass == 0)
			continue; /* pass 0 hashes (w NULL); passes 1-4 write one array each */
		if (w)
			w_varint(w, st->nframes);
		for (j = 0; j < st->nframes; j++) {
			const struct batch_frame *f = &b->frames[st->frames[j]];
			size_t nl, fl;
			const char *name = stored_text(batch_str(b, f->name), nbuf, &nl);
			const char *file = stored_text(batch_str(b, f->file), fbuf, &fl);

			if (!w) {
				h = hash_u64(h, f->kind);
				h = hash_u64(h, f->line);
				h = hash_str(h, name, nl);
				h = hash_str(h, file, fl);
			} else if (pass == 1)
				w_uint(w, f->kind, 1);
			else if (pass == 2)
				w_str(w, name, nl);
			else if (pass == 3)
				w_str(w, file, fl);
			else
				w_uint(w, f->line, 4);
		}
	}
	return hash_final(h);
}

struct pair {
	const char *key, *value;
};

static int pair_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pair *)a)->key, ((const struct pair *)b)->key);
}

/* Label set i's id (its pairs and the type's, sorted by key) and its row. */
static uint64_t labelset_row(const struct batch *b, uint32_t i, const char *type,
			     struct pair *pairs, struct wbuf *w)
{
	const struct batch_labelset *ls = &b->labelsets[i];
	uint64_t h = HASH_SEED;
	size_t n = 0, k;

	for (k = 0; k < ls->nlabels; k++)
		pairs[n++] = (struct pair){ batch_str(b, ls->labels[k].key),
					    batch_str(b, ls->labels[k].value) };
	if (strcmp(type, STORE_TYPE_CPU))
		pairs[n++] = (struct pair){ STORE_TYPE_LABEL, type };
	qsort(pairs, n, sizeof(*pairs), pair_cmp);
	for (k = 0; k < n; k++) {
		h = hash_str(h, pairs[k].key, strlen(pairs[k].key));
		h = hash_str(h, pairs[k].value, strlen(pairs[k].value));
	}
	h = hash_final(h);
	w_uint(w, h, 8);
	w_varint(w, n);
	for (k = 0; k < n; k++)
		w_str(w, pairs[k].key, strlen(pairs[k].key));
	w_varint(w, n);
	for (k = 0; k < n; k++)
		w_str(w, pairs[k].value, strlen(pairs[k].value));
	return h;
}

static int ch_ingest(struct store *base, const struct batch *b, const int64_t *now, bool *duplicate)
{
	struct ch_store *s = ch_of(base);
	struct wbuf sql = { 0 }, stacks = { 0 }, labelsets = { 0 }, samples = { 0 }, ing = { 0 };
	struct pair pairs[BATCH_MAX_LABELS + 1];
	uint64_t *stack_ids = NULL, *ls_ids = NULL;
	uint8_t *seen = NULL;
	const char *type, *agent;
	struct ch_answer a;
	struct rbuf r;
	uint32_t i;
	int err;

	if (duplicate)
		*duplicate = false;
	s->errmsg[0] = '\0';
	if (s->opts.read_only)
		return fail(s, -EROFS, "ingest: a read-only store");
	err = check_batch(s, b, now);
	if (err)
		return err;
	type = batch_str(b, b->profile_type);
	if (!*type)
		type = STORE_TYPE_CPU;
	agent = batch_str(b, b->agent_id);

	/* (agent, seq) already stored: a duplicate */
	w_text(&sql, "SELECT count() FROM ingested WHERE agent = ");
	w_quoted(&sql, agent);
	w_text(&sql, " AND seq = %" PRIu64 " FORMAT RowBinary", b->seq);
	if ((err = sql.err) || (err = run(s, "ingest", sql.p, NULL, 0, &a)))
		goto out;
	r = answer_reader(&a);
	if (r_uint(&r, 8)) {
		if (duplicate)
			*duplicate = true;
		goto out;
	}

	stack_ids = calloc(b->nstacks ? b->nstacks : 1, sizeof(*stack_ids));
	ls_ids = calloc(b->nlabelsets ? b->nlabelsets : 1, sizeof(*ls_ids));
	seen = calloc(b->nstacks ? b->nstacks : 1, 1);
	if (!stack_ids || !ls_ids || !seen) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b->nsamples; i++) { /* the stacks in use, each once */
		uint32_t k = b->samples[i].stack;

		if (!seen[k]) {
			seen[k] = 1;
			stack_ids[k] = stack_row(b, k, NULL);
			w_uint(&stacks, stack_ids[k], 8);
			stack_row(b, k, &stacks);
		}
	}
	for (i = 0; i < b->nlabelsets; i++)
		ls_ids[i] = labelset_row(b, i, type, pairs, &labelsets);
	for (i = 0; i < b->nsamples; i++) {
		w_uint(&samples, (uint64_t)b->window_start, 8);
		w_str(&samples, type, strlen(type));
		w_uint(&samples, ls_ids[b->samples[i].labelset], 8);
		w_uint(&samples, stack_ids[b->samples[i].stack], 8);
		w_uint(&samples, b->samples[i].count, 8);
	}
	w_str(&ing, agent, strlen(agent));
	w_uint(&ing, b->seq, 8);
	w_uint(&ing, (uint64_t)b->window_start, 8);
	w_uint(&ing, b->window_seconds, 4);
	w_uint(&ing, b->period_ns, 8);
	w_str(&ing, type, strlen(type));
	err = stacks.err ?: labelsets.err ?: samples.err ?: ing.err;
	if (err)
		goto out;
	/* dictionaries first: a sample never names a stack or label set not stored */
	if (stacks.len)
		err = run(s, "ingest stacks", "INSERT INTO stacks FORMAT RowBinary", stacks.p,
			  stacks.len, NULL);
	if (!err && labelsets.len)
		err = run(s, "ingest label sets", "INSERT INTO labelsets FORMAT RowBinary",
			  labelsets.p, labelsets.len, NULL);
	if (!err && samples.len)
		err = run(s, "ingest samples", "INSERT INTO samples FORMAT RowBinary", samples.p,
			  samples.len, NULL);
	if (!err)
		err = run(s, "ingest", "INSERT INTO ingested FORMAT RowBinary", ing.p, ing.len,
			  NULL);
out:
	if (err == -ENOMEM && !s->errmsg[0])
		fail(s, err, "ingest: out of memory");
	free(seen);
	free(stack_ids);
	free(ls_ids);
	free(sql.p);
	free(stacks.p);
	free(labelsets.p);
	free(samples.p);
	free(ing.p);
	return err;
}

/* ---- queries -------------------------------------------------------------- */

/* "type = T AND window_start >= F AND window_start < T [AND labelset IN (...)]":
 * the samples of q, appended to w. */
static int check_query(struct ch_store *s, const struct store_query *q)
{
	size_t i;

	if (q->nlabels && (!q->keys || !q->values))
		return -EINVAL;
	if (q->nlabels > BATCH_MAX_LABELS)
		return fail(s, -EINVAL, "%zu labels in a query, at most %d", q->nlabels,
			    BATCH_MAX_LABELS);
	for (i = 0; i < q->nlabels; i++)
		if (!q->keys[i] || !q->values[i])
			return -EINVAL;
	return 0;
}

static void w_filter(struct wbuf *w, const struct store_query *q, bool typed)
{
	size_t i;

	w_text(w, "window_start >= %" PRId64 " AND window_start < %" PRId64, q->from, q->to);
	if (typed) {
		w_text(w, " AND type = ");
		w_quoted(w, q->type ? q->type : STORE_TYPE_CPU);
	}
	if (!q->nlabels)
		return;
	w_text(w, " AND labelset IN (SELECT id FROM labelsets WHERE 1");
	for (i = 0; i < q->nlabels; i++) {
		w_text(w, " AND has(lkeys, ");
		w_quoted(w, q->keys[i]);
		w_text(w, ") AND lvalues[indexOf(lkeys, ");
		w_quoted(w, q->keys[i]);
		w_text(w, ")] = ");
		w_quoted(w, q->values[i]);
	}
	w_text(w, ")");
}

struct stack_sum {
	uint64_t id, count;
};

static int sum_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct stack_sum *)a)->id, y = ((const struct stack_sum *)b)->id;

	return x < y ? -1 : x > y;
}

static int ch_query_stacks(struct store *base, const struct store_query *q, store_stack_fn cb,
			   void *ctx)
{
	struct ch_store *s = ch_of(base);
	struct frame *frames = NULL;
	struct stack_sum *sums = NULL;
	struct wbuf sql = { 0 };
	size_t n = 0, cap = 0;
	struct ch_answer a;
	struct rbuf r;
	int err;

	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	w_text(&sql, "SELECT stack, sum(value), sum(toFloat64(value)) FROM samples WHERE ");
	w_filter(&sql, q, true);
	w_text(&sql, " GROUP BY stack FORMAT RowBinary");
	if ((err = sql.err) || (err = run(s, "query stacks", sql.p, NULL, 0, &a)))
		goto out;
	r = answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		if (n == BLOCK_MERGE_MAX_IDS) {
			err = fail(s, -E2BIG, "query stacks: more than %u stacks",
				   BLOCK_MERGE_MAX_IDS);
			goto out;
		}
		if (n == cap) {
			struct stack_sum *p =
				realloc(sums, (cap = cap ? 2 * cap : 1024) * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				goto out;
			}
			sums = p;
		}
		sums[n].id = r_uint(&r, 8);
		sums[n].count = r_sum(&r);
		n++;
	}
	if (r.bad) {
		err = fail(s, -EIO, "query stacks: malformed answer");
		goto out;
	}
	if (!n)
		goto out;
	qsort(sums, n, sizeof(*sums), sum_cmp);

	/* the frames of those stacks, in one query */
	sql.len = 0;
	w_text(&sql, "SELECT id, kinds, names, files, lines FROM stacks WHERE id IN "
		     "(SELECT DISTINCT stack FROM samples WHERE ");
	w_filter(&sql, q, true);
	w_text(&sql, ") LIMIT 1 BY id FORMAT RowBinary");
	if ((err = sql.err) || (err = run(s, "query stacks", sql.p, NULL, 0, &a)))
		goto out;
	frames = calloc(CH_MAX_FRAMES, sizeof(*frames));
	if (!frames) {
		err = -ENOMEM;
		goto out;
	}
	r = answer_reader(&a);
	while (r.p < r.end && !r.bad && !err) {
		struct stack_sum key = { .id = r_uint(&r, 8) }, *hit;
		uint64_t k, nf = r_varint(&r);

		if (nf > CH_MAX_FRAMES || !nf) {
			err = fail(s, -EIO, "stack %" PRIu64 ": %" PRIu64 " frames", key.id, nf);
			break;
		}
		for (k = 0; k < nf; k++)
			frames[k].kind = (uint32_t)r_uint(&r, 1);
		if (r_varint(&r) != nf)
			r.bad = true;
		for (k = 0; k < nf && !r.bad; k++)
			frames[k].name = r_str(&r, &frames[k].name_len);
		if (r_varint(&r) != nf)
			r.bad = true;
		for (k = 0; k < nf && !r.bad; k++)
			frames[k].file = r_str(&r, &frames[k].file_len);
		if (r_varint(&r) != nf)
			r.bad = true;
		for (k = 0; k < nf && !r.bad; k++)
			frames[k].line = (uint32_t)r_uint(&r, 4);
		if (r.bad)
			break;
		hit = bsearch(&key, sums, n, sizeof(*sums), sum_cmp);
		if (hit && hit->count) {
			err = cb(ctx, frames, (size_t)nf, hit->count);
			hit->count = 0; /* once, whatever merges are pending */
		}
	}
	if (!err && r.bad)
		err = fail(s, -EIO, "query stacks: malformed stacks answer");
out:
	if (err == -ENOMEM)
		fail(s, err, "query stacks: out of memory");
	free(frames);
	free(sums);
	free(sql.p);
	return err;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int ch_query_series(struct store *base, const struct store_query *q, int64_t step,
			   store_series_fn cb, void *ctx)
{
	struct ch_store *s = ch_of(base);
	struct wbuf sql = { 0 };
	struct ch_answer a;
	struct rbuf r;
	int64_t bucket = 0;
	uint64_t sum = 0;
	bool have = false;
	int err;

	if (step <= 0)
		return -EINVAL;
	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	/* per window, bucketed here: from + k * step is computed in 128 bits */
	w_text(&sql, "SELECT window_start, sum(value), sum(toFloat64(value)) FROM samples WHERE ");
	w_filter(&sql, q, true);
	w_text(&sql, " GROUP BY window_start ORDER BY window_start FORMAT RowBinary");
	if ((err = sql.err) || (err = run(s, "query series", sql.p, NULL, 0, &a)))
		goto out;
	r = answer_reader(&a);
	while (r.p < r.end && !err) {
		int64_t w = (int64_t)r_uint(&r, 8);
		uint64_t c = r_sum(&r);
		int64_t b;

		if (r.bad)
			break;
		b = (int64_t)((__int128)q->from + ((__int128)w - q->from) / step * step);
		if (have && b != bucket) {
			err = cb(ctx, bucket, sum);
			sum = 0;
		}
		bucket = b;
		have = true;
		sum = add_sat(sum, c);
	}
	if (!err && r.bad)
		err = fail(s, -EIO, "query series: malformed answer");
	if (!err && have && sum)
		err = cb(ctx, bucket, sum);
out:
	free(sql.p);
	return err;
}

/* Runs a one-String-column query and calls cb with each value, NUL-terminated. */
static int text_rows(struct ch_store *s, const char *what, const char *sql, store_text_fn cb,
		     void *ctx)
{
	struct ch_answer a;
	struct rbuf r;
	char *copy = NULL;
	int err;

	err = run(s, what, sql, NULL, 0, &a);
	if (err)
		return err;
	r = answer_reader(&a);
	while (r.p < r.end && !err) {
		size_t n;
		const char *t = r_str(&r, &n);
		char *p;

		if (r.bad)
			break;
		p = realloc(copy, n + 1);
		if (!p) {
			err = fail(s, -ENOMEM, "%s: out of memory", what);
			break;
		}
		copy = p;
		memcpy(copy, t, n);
		copy[n] = '\0';
		err = cb(ctx, copy);
	}
	if (!err && r.bad)
		err = fail(s, -EIO, "%s: malformed answer", what);
	free(copy);
	return err;
}

static int ch_labels(struct store *base, const struct store_query *q, store_text_fn cb, void *ctx)
{
	struct ch_store *s = ch_of(base);
	struct wbuf sql = { 0 };
	int err;

	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	w_text(&sql, "SELECT DISTINCT arrayJoin(lkeys) AS k FROM labelsets WHERE id IN "
		     "(SELECT DISTINCT labelset FROM samples WHERE ");
	w_filter(&sql, q, true);
	w_text(&sql, ") AND k != '" STORE_TYPE_LABEL "' ORDER BY k FORMAT RowBinary");
	err = sql.err ?: text_rows(s, "labels", sql.p, cb, ctx);
	free(sql.p);
	return err;
}

static int ch_label_values(struct store *base, const char *key, const struct store_query *q,
			   store_text_fn cb, void *ctx)
{
	struct ch_store *s = ch_of(base);
	struct wbuf sql = { 0 };
	int err;

	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	w_text(&sql, "SELECT DISTINCT lvalues[indexOf(lkeys, ");
	w_quoted(&sql, key);
	w_text(&sql, ")] AS v FROM labelsets WHERE has(lkeys, ");
	w_quoted(&sql, key);
	w_text(&sql, ") AND id IN (SELECT DISTINCT labelset FROM samples WHERE ");
	w_filter(&sql, q, true);
	w_text(&sql, ") ORDER BY v FORMAT RowBinary");
	err = sql.err ?: text_rows(s, "label values", sql.p, cb, ctx);
	free(sql.p);
	return err;
}

static int ch_label_key_used(struct store *base, const char *key, int64_t from, int64_t to)
{
	struct ch_store *s = ch_of(base);
	struct store_query q = { .from = from, .to = to };
	struct wbuf sql = { 0 };
	struct ch_answer a;
	struct rbuf r;
	int err;

	if (from >= to)
		return 0;
	w_text(&sql, "SELECT count() FROM (SELECT id FROM labelsets WHERE has(lkeys, ");
	w_quoted(&sql, key);
	w_text(&sql, ") AND id IN (SELECT DISTINCT labelset FROM samples WHERE ");
	w_filter(&sql, &q, false);
	w_text(&sql, ") LIMIT 1) FORMAT RowBinary");
	if ((err = sql.err) || (err = run(s, "label key used", sql.p, NULL, 0, &a)))
		goto out;
	r = answer_reader(&a);
	err = r_uint(&r, 8) ? 1 : 0;
	if (r.bad)
		err = fail(s, -EIO, "label key used: malformed answer");
out:
	free(sql.p);
	return err;
}

static int ch_windows(struct store *base, const struct store_query *q, struct store_windows *out)
{
	struct ch_store *s = ch_of(base);
	const char *type = q->type ? q->type : STORE_TYPE_CPU;
	struct wbuf where = { 0 }, sql = { 0 };
	struct ch_answer a;
	struct rbuf r;
	int err;

	memset(out, 0, sizeof(*out));
	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	/* the CPU batches' windows; with a selection, where a selected label set has samples */
	w_text(&where,
	       "type = '" STORE_TYPE_CPU "' AND window_start >= %" PRId64
	       " AND window_start < %" PRId64,
	       q->from, q->to);
	if (q->nlabels || strcmp(type, STORE_TYPE_CPU)) {
		w_text(&where,
		       " AND window_start IN (SELECT DISTINCT window_start FROM samples WHERE ");
		w_filter(&where, q, true);
		w_text(&where, ")");
	}
	if ((err = where.err))
		goto out;
	w_text(&sql,
	       "SELECT uniqExact(window_start), min(window_start), "
	       "max(window_start + window_seconds), min(window_seconds), max(window_seconds) "
	       "FROM ingested WHERE %s FORMAT RowBinary",
	       where.p);
	if ((err = sql.err) || (err = run(s, "windows", sql.p, NULL, 0, &a)))
		goto out;
	r = answer_reader(&a);
	out->nwindows = r_uint(&r, 8);
	out->first_start = (int64_t)r_uint(&r, 8);
	out->last_end = (int64_t)r_uint(&r, 8);
	out->min_seconds = (uint32_t)r_uint(&r, 4);
	out->max_seconds = (uint32_t)r_uint(&r, 4);
	if (r.bad) {
		err = fail(s, -EIO, "windows: malformed answer");
		goto out;
	}
	if (!out->nwindows) {
		memset(out, 0, sizeof(*out));
		goto out;
	}
	sql.len = 0;
	w_text(&sql,
	       "SELECT period_ns, uniqExact(agent, seq) AS n FROM ingested WHERE %s "
	       "GROUP BY period_ns ORDER BY n DESC, period_ns FORMAT RowBinary",
	       where.p);
	if ((err = sql.err) || (err = run(s, "windows", sql.p, NULL, 0, &a)))
		goto out;
	r = answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		uint64_t period = r_uint(&r, 8), n = r_uint(&r, 8);

		if (r.bad)
			break;
		if (out->nperiods == STORE_WINDOWS_MAX_PERIODS) {
			out->more_periods++;
			continue;
		}
		out->periods[out->nperiods] = period;
		out->period_batches[out->nperiods++] = n;
	}
	if (r.bad)
		err = fail(s, -EIO, "windows: malformed answer");
out:
	free(where.p);
	free(sql.p);
	return err;
}

/* ---- stats, check, maintain ------------------------------------------------ */

static int ch_stats(struct store *base, struct store_stats *st)
{
	struct ch_store *s = ch_of(base);
	struct ch_answer a;
	struct rbuf r;
	int err, t;

	memset(st, 0, sizeof(*st));
	err = run(s, "stats",
		  "SELECT (SELECT uniqExact(window_start, labelset, stack) FROM samples), (SELECT "
		  "uniqExact(agent, seq) FROM "
		  "ingested), "
		  "(SELECT uniqExact(id) FROM stacks), (SELECT uniqExact(id) FROM labelsets), "
		  "(SELECT toUInt64(sum(bytes_on_disk)) FROM system.parts WHERE active AND "
		  "database = currentDatabase()), "
		  "(SELECT uniqExact(window_start, labelset) FROM samples) FORMAT RowBinary",
		  NULL, 0, &a);
	if (err)
		return err;
	r = answer_reader(&a);
	st->sample_rows = r_uint(&r, 8);
	st->batches = r_uint(&r, 8);
	st->stacks = r_uint(&r, 8);
	st->labelsets = r_uint(&r, 8);
	st->db_bytes = r_uint(&r, 8);
	st->blocks[0] = r_uint(&r, 8); /* (window, label set) pairs: SQLite's raw blocks */
	for (t = 0; t < 3; t++)
		st->built_before[t] = st->kept_from[t] = INT64_MIN;
	return r.bad ? fail(s, -EIO, "stats: malformed answer") : 0;
}

static int ch_check(struct store *base)
{
	struct ch_store *s = ch_of(base);
	struct ch_answer a;
	struct rbuf r;
	uint64_t n;
	int err;

	err = run(s, "check",
		  "SELECT count() FROM system.tables WHERE database = currentDatabase() AND "
		  "name IN ('samples', 'stacks', 'labelsets', 'ingested') FORMAT RowBinary",
		  NULL, 0, &a);
	if (err)
		return err;
	r = answer_reader(&a);
	n = r_uint(&r, 8);
	if (r.bad || n != 4)
		return fail(s, -EIO, "check: %" PRIu64 " of the 4 tables present", n);
	return 0;
}

/* The last window start a partition intDiv(window_start, 86400) = p holds
 * (intDiv truncates toward zero: partition 0 holds (-86400, 86400)). */
static int64_t partition_last(int64_t p)
{
	return p >= 0 ? (p + 1) * 86400 - 1 : p * 86400;
}

/* Retention: drops the partitions (whole days) of samples and ingested whose
 * every window is older than now - retention_seconds. */
static int ch_maintain(struct store *base, int64_t now, size_t max_rows, bool *more)
{
	struct ch_store *s = ch_of(base);
	struct ch_answer a;
	struct rbuf r;
	struct {
		char table[16];
		int64_t p;
	} drop[CH_MAINTAIN_MAX_DROPS];
	size_t n = 0, i;
	int64_t cutoff;
	int err;

	(void)max_rows;
	if (more)
		*more = false;
	if (s->opts.read_only)
		return fail(s, -EROFS, "maintain: a read-only store");
	if (now < -STORE_MAX_ABS_WINDOW || now > STORE_MAX_ABS_WINDOW)
		return 0;
	cutoff = now - s->opts.retention_seconds;
	err = run(s, "maintain",
		  "SELECT DISTINCT table, partition FROM system.parts WHERE active AND "
		  "database = currentDatabase() AND table IN ('samples', 'ingested') "
		  "FORMAT RowBinary",
		  NULL, 0, &a);
	if (err)
		return err;
	r = answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		size_t tl, pl;
		const char *t = r_str(&r, &tl), *pt = r_str(&r, &pl);
		char num[32];
		int64_t p;

		if (r.bad || tl >= sizeof(drop[0].table) || !pl || pl >= sizeof(num))
			break;
		memcpy(num, pt, pl);
		num[pl] = '\0';
		p = strtoll(num, NULL, 10);
		if (partition_last(p) >= cutoff)
			continue;
		if (n == CH_MAINTAIN_MAX_DROPS) {
			if (more)
				*more = true;
			break;
		}
		memcpy(drop[n].table, t, tl);
		drop[n].table[tl] = '\0';
		drop[n++].p = p;
	}
	if (r.bad)
		return fail(s, -EIO, "maintain: malformed answer");
	for (i = 0; i < n && !err; i++) {
		char sql[96];

		snprintf(sql, sizeof(sql), "ALTER TABLE %.15s DROP PARTITION %" PRId64,
			 drop[i].table, drop[i].p);
		err = run(s, "maintain", sql, NULL, 0, NULL);
	}
	return err;
}

const struct store_backend store_clickhouse_backend = {
	.name = "clickhouse",
	.open = ch_open,
	.close = ch_close,
	.errmsg = ch_errmsg,
	.ingest = ch_ingest,
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
};
