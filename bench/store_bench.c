/* The block store against its peer, the row-per-stack store it replaced
 * (docs/benchmarks.md "Query latency (SQLite)"): the same generated data filled, in the same run,
 * into (a) the store of store/store.h (store__ingest, then store__maintain until the minute and
 * hour rollups are built) and (b) the peer, the design of schema/sqlite/001 recreated here in plain
 * SQL (the dictionaries, and samples(window_start, labelset_id, stack_id, value) WITHOUT ROWID, one
 * upsert per (window, label set, stack) as the old ingest did), answering with the old read path: a
 * SQL GROUP BY over the range, then one stack-frames and one frame-text lookup per stack and frame.
 * Figures, new against peer and their ratio:
 *   - the flame graph of 24 h of the busy host: new through query_run() (the query
 *     layer the collector runs: load + render) in folded and json; the peer
 *     through its SQL and lookups, rendered as folded lines with frame_format()
 *     (the peer has no tree renderer: its json is not measured);
 *   - the flame graph of 1 h of 100 hosts, the same way;
 *   - a 2-minute range: median of 20 random ranges inside the busy host's data;
 *   - the timeline of 24 h at 5-minute steps (store__query_series; the peer's
 *     GROUP BY of window_start / 300);
 *   - bytes on disk per stored (window, label set, stack) row, dictionaries and
 *     (new) rollups included, and the file size after 24 h of the busy host;
 *   - ingest rows/s on one core: decode of wire bytes encoded beforehand plus
 *     store (ingest_bench's method), CPU time;
 *   - the peak RSS of the 24 h json flame graph on a fresh reader (the release
 *     build), in a process of its own (this program again, "rss" mode): VmHWM.
 * Each query is timed warm (the store opened once, median of 3 runs), as a
 * running collector's reader answers.
 *
 *   build/bench/store_bench [quick|full] [DIR]    (make bench: full /tmp)
 * full: 24 h of the busy host and 1 h of 100 hosts (about 15-25 minutes, the
 * peer's fill dominating); quick: 2 h and 10 minutes. DIR (default /tmp) holds the
 * four database files, deleted at the end. For iterating on the query layer:
 *   build/bench/store_bench fill DIR [quick]          the new stores only, kept
 *   build/bench/store_bench time DB FROM TO FORMAT N  N warm runs, median wall and CPU
 *   build/bench/store_bench reads DB FROM TO N        2-minute ranges and timelines
 *   build/bench/store_bench rss DB FROM TO            the peak RSS child (below)
 *   build/bench/store_bench late DB N                 N late batches into DB (a copy)
 *
 * Data: bench/gen.h (the busy host: 2 CPUs at 99 Hz, 1980 samples per 10 s
 * window, 40 processes; each of the 100 hosts 10 % busy).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bench/gen.h"
#include "wire/batch.h"
#include "common/frame.h"
#include "wire/wire.h"
#include "query/query.h"
#include "store/store.h"

#define CHUNK	    360 /* windows generated and encoded at a time */
#define NRANGES	    20	/* random 2-minute ranges */
#define VARINT_MAX  10
#define STACK_BLOB  (BATCH_MAX_STACK_DEPTH * VARINT_MAX)
#define LABELS_BLOB (BATCH_MAX_LABELS * 2 * VARINT_MAX)

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A stream that discards what is written: answers are rendered whole but not
 * stored (on some machines /dev/null is a regular file, and writing a day's JSON
 * to it would be timed too). */
static ssize_t discard(void *cookie, const char *buf, size_t len)
{
	(void)cookie;
	(void)buf;
	return (ssize_t)len;
}

static FILE *null_sink(void)
{
	return fopencookie(NULL, "w", (cookie_io_functions_t){ .write = discard });
}

static double median(double *v, size_t n)
{
	size_t i, j;
	double t;

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (v[j] < v[i])
				t = v[i], v[i] = v[j], v[j] = t;
	return n ? v[n / 2] : 0;
}

static uint64_t file_bytes(const char *path)
{
	char wal[600];
	struct stat sb;
	uint64_t n = 0;

	if (!stat(path, &sb))
		n += (uint64_t)sb.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (!stat(wal, &sb))
		n += (uint64_t)sb.st_size;
	return n;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "store_bench: %s: %s\n", what, why);
	exit(1);
}

/* ---- the peer: the row-per-stack store of schema/sqlite/001, in plain SQL ----------- */

static const char peer_schema[] =
	"PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
	"CREATE TABLE strings (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);"
	"CREATE TABLE frames (id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, name INTEGER NOT "
	"NULL, file INTEGER NOT NULL, line INTEGER NOT NULL, UNIQUE (kind, name, file, line));"
	"CREATE TABLE stacks (id INTEGER PRIMARY KEY, frames BLOB NOT NULL UNIQUE);"
	"CREATE TABLE labelsets (id INTEGER PRIMARY KEY, labels BLOB NOT NULL UNIQUE);"
	"CREATE TABLE labelset_labels (key_id INTEGER NOT NULL, value_id INTEGER NOT NULL, "
	"labelset_id INTEGER NOT NULL, PRIMARY KEY (key_id, value_id, labelset_id)) WITHOUT ROWID;"
	"CREATE TABLE samples (window_start INTEGER NOT NULL, labelset_id INTEGER NOT NULL, "
	"stack_id INTEGER NOT NULL, value INTEGER NOT NULL, "
	"PRIMARY KEY (window_start, labelset_id, stack_id)) WITHOUT ROWID;"
	"CREATE TABLE ingested (agent TEXT NOT NULL, seq INTEGER NOT NULL, window_start INTEGER "
	"NOT NULL, PRIMARY KEY (agent, seq)) WITHOUT ROWID;"
	"CREATE INDEX ingested_window ON ingested (window_start);"
	"CREATE TABLE state (id INTEGER PRIMARY KEY, batches INTEGER NOT NULL DEFAULT 0);"
	"INSERT INTO state (id, batches) VALUES (1, 0);";

enum {
	P_BEGIN,
	P_COMMIT,
	P_SEEN,
	P_STR_GET,
	P_STR_PUT,
	P_FRAME_GET,
	P_FRAME_PUT,
	P_STACK_GET,
	P_STACK_PUT,
	P_LS_GET,
	P_LS_PUT,
	P_LSL_PUT,
	P_SAMPLE_ADD,
	P_INGESTED_PUT,
	P_BATCHES,
	P_RANGE,
	P_SERIES,
	P_STACK_FRAMES,
	P_FRAME_TEXT,
	P_COUNT,
	P_NR,
};

static const char *const peer_sql[P_NR] = {
	[P_BEGIN] = "BEGIN IMMEDIATE",
	[P_COMMIT] = "COMMIT",
	[P_SEEN] = "SELECT 1 FROM ingested WHERE agent = ?1 AND seq = ?2",
	[P_STR_GET] = "SELECT id FROM strings WHERE text = ?1",
	[P_STR_PUT] = "INSERT INTO strings (text) VALUES (?1)",
	[P_FRAME_GET] = "SELECT id FROM frames WHERE kind = ?1 AND name = ?2 AND file = ?3 AND "
			"line = ?4",
	[P_FRAME_PUT] = "INSERT INTO frames (kind, name, file, line) VALUES (?1, ?2, ?3, ?4)",
	[P_STACK_GET] = "SELECT id FROM stacks WHERE frames = ?1",
	[P_STACK_PUT] = "INSERT INTO stacks (frames) VALUES (?1)",
	[P_LS_GET] = "SELECT id FROM labelsets WHERE labels = ?1",
	[P_LS_PUT] = "INSERT INTO labelsets (labels) VALUES (?1)",
	[P_LSL_PUT] = "INSERT INTO labelset_labels (key_id, value_id, labelset_id) "
		      "VALUES (?1, ?2, ?3)",
	[P_SAMPLE_ADD] = "INSERT INTO samples (window_start, labelset_id, stack_id, value) "
			 "VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO UPDATE SET value = CASE WHEN "
			 "value > 9223372036854775807 - excluded.value THEN 9223372036854775807 "
			 "ELSE value + excluded.value END",
	[P_INGESTED_PUT] = "INSERT INTO ingested (agent, seq, window_start) VALUES (?1, ?2, ?3)",
	[P_BATCHES] = "UPDATE state SET batches = batches + 1 WHERE id = 1",
	[P_RANGE] = "SELECT stack_id, sum(value) FROM samples WHERE window_start >= ?1 AND "
		    "window_start < ?2 GROUP BY stack_id",
	[P_SERIES] = "SELECT (window_start - ?1) / ?3, sum(value) FROM samples WHERE "
		     "window_start >= ?1 AND window_start < ?2 GROUP BY 1 ORDER BY 1",
	[P_STACK_FRAMES] = "SELECT frames FROM stacks WHERE id = ?1",
	[P_FRAME_TEXT] = "SELECT f.kind, n.text, fl.text, f.line FROM frames f "
			 "JOIN strings n ON n.id = f.name JOIN strings fl ON fl.id = f.file "
			 "WHERE f.id = ?1",
	[P_COUNT] = "SELECT count(*) FROM samples",
};

struct peer {
	sqlite3 *db;
	sqlite3_stmt *st[P_NR];
	int64_t *ids; /* scratch: a batch's string, frame, stack, label set ids */
	size_t idcap;
};

static void peer_check(struct peer *p, int rc, int want, const char *what)
{
	if (rc != want)
		die(what, sqlite3_errmsg(p->db));
}

static void peer_open(struct peer *p, const char *path, bool create)
{
	int i;

	memset(p, 0, sizeof(*p));
	if (create)
		unlink(path);
	peer_check(p, sqlite3_open(path, &p->db), SQLITE_OK, "peer open");
	if (create)
		peer_check(p, sqlite3_exec(p->db, peer_schema, NULL, NULL, NULL), SQLITE_OK,
			   "peer schema");
	for (i = 0; i < P_NR; i++)
		peer_check(p, sqlite3_prepare_v2(p->db, peer_sql[i], -1, &p->st[i], NULL),
			   SQLITE_OK, peer_sql[i]);
}

static void peer_close(struct peer *p)
{
	int i;

	for (i = 0; i < P_NR; i++)
		sqlite3_finalize(p->st[i]);
	sqlite3_close(p->db);
	free(p->ids);
}

/* Runs a statement expected to finish (no row). */
static void peer_done(struct peer *p, int id)
{
	peer_check(p, sqlite3_step(p->st[id]), SQLITE_DONE, peer_sql[id]);
	sqlite3_reset(p->st[id]);
}

/* The id a GET finds, else what a PUT of the same bindings inserts. */
static int64_t peer_get_put(struct peer *p, int get, int put)
{
	int64_t id;
	int rc = sqlite3_step(p->st[get]);

	if (rc == SQLITE_ROW) {
		id = sqlite3_column_int64(p->st[get], 0);
		sqlite3_reset(p->st[get]);
		return id;
	}
	peer_check(p, rc, SQLITE_DONE, peer_sql[get]);
	sqlite3_reset(p->st[get]);
	peer_done(p, put);
	return sqlite3_last_insert_rowid(p->db);
}

static size_t put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* The old ingest: one transaction, every string, frame, stack and label set looked
 * up (and inserted when new) through its UNIQUE index, one upsert per sample. */
static void peer_ingest(struct peer *p, const struct batch *b)
{
	int64_t *str, *frm, *stk, *lss;
	uint8_t blob[STACK_BLOB > LABELS_BLOB ? STACK_BLOB : LABELS_BLOB];
	size_t need = (size_t)b->nstrings + b->nframes + b->nstacks + b->nlabelsets, n;
	uint32_t i, j;
	sqlite3_stmt *st;

	if (need > p->idcap) {
		p->ids = realloc(p->ids, need * sizeof(*p->ids));
		if (!p->ids)
			die("peer", "out of memory");
		p->idcap = need;
	}
	str = p->ids;
	frm = str + b->nstrings;
	stk = frm + b->nframes;
	lss = stk + b->nstacks;
	peer_done(p, P_BEGIN);
	st = p->st[P_SEEN];
	sqlite3_bind_text(st, 1, b->strings[b->agent_id], -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)b->seq);
	if (sqlite3_step(st) == SQLITE_ROW)
		die("peer", "duplicate batch");
	sqlite3_reset(st);
	for (i = 0; i < b->nstrings; i++) {
		sqlite3_bind_text(p->st[P_STR_GET], 1, b->strings[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(p->st[P_STR_PUT], 1, b->strings[i], -1, SQLITE_STATIC);
		str[i] = peer_get_put(p, P_STR_GET, P_STR_PUT);
	}
	for (i = 0; i < b->nframes; i++) {
		const struct batch_frame *f = &b->frames[i];
		int k;

		for (k = P_FRAME_GET; k <= P_FRAME_PUT; k++) {
			sqlite3_bind_int64(p->st[k], 1, f->kind);
			sqlite3_bind_int64(p->st[k], 2, str[f->name]);
			sqlite3_bind_int64(p->st[k], 3, str[f->file]);
			sqlite3_bind_int64(p->st[k], 4, f->line);
		}
		frm[i] = peer_get_put(p, P_FRAME_GET, P_FRAME_PUT);
	}
	for (i = 0; i < b->nstacks; i++) {
		for (n = 0, j = 0; j < b->stacks[i].nframes; j++)
			n += put_varint(blob + n, (uint64_t)frm[b->stacks[i].frames[j]]);
		sqlite3_bind_blob(p->st[P_STACK_GET], 1, blob, (int)n, SQLITE_STATIC);
		sqlite3_bind_blob(p->st[P_STACK_PUT], 1, blob, (int)n, SQLITE_STATIC);
		stk[i] = peer_get_put(p, P_STACK_GET, P_STACK_PUT);
	}
	for (i = 0; i < b->nlabelsets; i++) {
		const struct batch_labelset *ls = &b->labelsets[i];
		int rc;

		for (n = 0, j = 0; j < ls->nlabels; j++) {
			n += put_varint(blob + n, (uint64_t)str[ls->labels[j].key]);
			n += put_varint(blob + n, (uint64_t)str[ls->labels[j].value]);
		}
		sqlite3_bind_blob(p->st[P_LS_GET], 1, blob, (int)n, SQLITE_STATIC);
		rc = sqlite3_step(p->st[P_LS_GET]);
		if (rc == SQLITE_ROW) {
			lss[i] = sqlite3_column_int64(p->st[P_LS_GET], 0);
			sqlite3_reset(p->st[P_LS_GET]);
			continue;
		}
		sqlite3_reset(p->st[P_LS_GET]);
		sqlite3_bind_blob(p->st[P_LS_PUT], 1, blob, (int)n, SQLITE_STATIC);
		peer_done(p, P_LS_PUT);
		lss[i] = sqlite3_last_insert_rowid(p->db);
		for (j = 0; j < ls->nlabels; j++) {
			sqlite3_bind_int64(p->st[P_LSL_PUT], 1, str[ls->labels[j].key]);
			sqlite3_bind_int64(p->st[P_LSL_PUT], 2, str[ls->labels[j].value]);
			sqlite3_bind_int64(p->st[P_LSL_PUT], 3, lss[i]);
			peer_done(p, P_LSL_PUT);
		}
	}
	st = p->st[P_SAMPLE_ADD];
	for (i = 0; i < b->nsamples; i++) {
		sqlite3_bind_int64(st, 1, b->window_start);
		sqlite3_bind_int64(st, 2, lss[b->samples[i].labelset]);
		sqlite3_bind_int64(st, 3, stk[b->samples[i].stack]);
		sqlite3_bind_int64(st, 4, (int64_t)b->samples[i].count);
		peer_done(p, P_SAMPLE_ADD);
	}
	st = p->st[P_INGESTED_PUT];
	sqlite3_bind_text(st, 1, b->strings[b->agent_id], -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)b->seq);
	sqlite3_bind_int64(st, 3, b->window_start);
	peer_done(p, P_INGESTED_PUT);
	peer_done(p, P_BATCHES);
	peer_done(p, P_COMMIT);
}

/* The old read path over [from, to), printing folded lines to out: the GROUP BY,
 * then each stack's frames and each frame's text looked up. Returns the sum. */
static uint64_t peer_flame(struct peer *p, int64_t from, int64_t to, FILE *out)
{
	sqlite3_stmt *r = p->st[P_RANGE], *sf = p->st[P_STACK_FRAMES], *ft = p->st[P_FRAME_TEXT];
	uint64_t total = 0;
	char line[65536];

	sqlite3_bind_int64(r, 1, from);
	sqlite3_bind_int64(r, 2, to);
	while (sqlite3_step(r) == SQLITE_ROW) {
		int64_t count = sqlite3_column_int64(r, 1);
		const uint8_t *blob;
		size_t pos = 0, len, i = 0;

		sqlite3_bind_int64(sf, 1, sqlite3_column_int64(r, 0));
		peer_check(p, sqlite3_step(sf), SQLITE_ROW, "peer stack");
		blob = sqlite3_column_blob(sf, 0);
		len = (size_t)sqlite3_column_bytes(sf, 0);
		while (i < len) {
			uint64_t id = 0;
			unsigned shift = 0;
			struct frame f;

			do
				id |= (uint64_t)(blob[i] & 0x7f) << shift, shift += 7;
			while (blob[i++] & 0x80 && i < len);
			sqlite3_bind_int64(ft, 1, (int64_t)id);
			peer_check(p, sqlite3_step(ft), SQLITE_ROW, "peer frame");
			f = (struct frame){
				.kind = (uint32_t)sqlite3_column_int64(ft, 0),
				.name = (const char *)sqlite3_column_text(ft, 1),
				.name_len = (size_t)sqlite3_column_bytes(ft, 1),
				.file = (const char *)sqlite3_column_text(ft, 2),
				.file_len = (size_t)sqlite3_column_bytes(ft, 2),
				.line = (uint32_t)sqlite3_column_int64(ft, 3),
			};
			if (pos && pos < sizeof(line) - 1)
				line[pos++] = ';';
			if (pos < sizeof(line))
				pos += frame_format(&f, line + pos, sizeof(line) - pos);
			sqlite3_reset(ft);
		}
		sqlite3_reset(sf);
		if (pos >= sizeof(line))
			pos = sizeof(line) - 1;
		fprintf(out, "%.*s %" PRId64 "\n", (int)pos, line, count);
		total += (uint64_t)count;
	}
	sqlite3_reset(r);
	return total;
}

static uint64_t peer_series(struct peer *p, int64_t from, int64_t to, int64_t step)
{
	sqlite3_stmt *st = p->st[P_SERIES];
	uint64_t sum = 0;

	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, to);
	sqlite3_bind_int64(st, 3, step);
	while (sqlite3_step(st) == SQLITE_ROW)
		sum += (uint64_t)sqlite3_column_int64(st, 1);
	sqlite3_reset(st);
	return sum;
}

static uint64_t peer_rows(struct peer *p)
{
	uint64_t n;

	peer_check(p, sqlite3_step(p->st[P_COUNT]), SQLITE_ROW, "peer count");
	n = (uint64_t)sqlite3_column_int64(p->st[P_COUNT], 0);
	sqlite3_reset(p->st[P_COUNT]);
	return n;
}

/* ---- the new store -------------------------------------------------------------- */

static const char *kv_get(void *ctx, const char *name, size_t i)
{
	const char *const *kv = ctx;

	for (; kv[0]; kv += 2)
		if (!strcmp(kv[0], name) && i-- == 0)
			return kv[1];
	return NULL;
}

static const char *kv_name(void *ctx, size_t i)
{
	const char *const *kv = ctx;

	for (; kv[0] && i; kv += 2, i--)
		;
	return kv[0];
}

/* A flame graph of [from, to) in format through the query layer, to out. */
static void new_flame(struct store *s, int64_t from, int64_t to, const char *format, FILE *out)
{
	char f[32], t[32], why[256] = "";
	const char *kv[] = { "from", f, "to", t, "format", format, NULL };
	const char *type;
	struct query q;

	snprintf(f, sizeof(f), "%" PRId64, from);
	snprintf(t, sizeof(t), "%" PRId64, to);
	if (query_parse(&q, QUERY_FLAMEGRAPH, &(struct query_params){ kv_get, kv_name, kv }, to,
			why, sizeof(why)))
		die("query_parse", why);
	if (query_run(s, &q, out, &type, why, sizeof(why)))
		die("query_run", why);
	query_free(&q);
}

static int sum_stack(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	(void)frames;
	(void)nframes;
	*(uint64_t *)ctx += count;
	return 0;
}

static int sum_bucket(void *ctx, int64_t bucket, uint64_t count)
{
	(void)bucket;
	*(uint64_t *)ctx += count;
	return 0;
}

static uint64_t new_total(struct store *s, int64_t from, int64_t to)
{
	struct store_query q = { .from = from, .to = to };
	uint64_t sum = 0;

	if (store__query_stacks(s, &q, sum_stack, &sum))
		die("query_stacks", store__errmsg(s));
	return sum;
}

/* ---- filling both ----------------------------------------------------------- */

struct fill {
	double new_cpu, peer_cpu, maint_cpu; /* decode + ingest; maintenance */
	uint64_t rows, samples;		     /* (window, label set, stack) rows sent */
};

/* windows x hosts of gen.h's data, wire-encoded a chunk at a time, then decoded
 * and stored into both (timed apart; peerdb NULL: the new store only), then the
 * new store's rollups built. */
static void fill(const char *newdb, const char *peerdb, unsigned windows, unsigned hosts,
		 unsigned samples, struct fill *out)
{
	const struct store_options o = { .raw_retention_seconds = 2 * 24 * 3600 };
	struct wire_limits lim = { WIRE_DEFAULT_MAX_COMPRESSED, WIRE_DEFAULT_MAX_DECOMPRESSED };
	size_t n = (size_t)CHUNK * hosts, k, m;
	void **bodies = calloc(n, sizeof(*bodies));
	size_t *lens = calloc(n, sizeof(*lens));
	unsigned seed = 7, w0, w, h, p, s;
	struct store *st;
	struct peer peer;
	char why[256] = "";
	bool more = true, dup;
	double t = wall(), c;

	memset(out, 0, sizeof(*out));
	for (p = 0; p < NPROC; p++)
		for (s = 0; s < POOL; s++)
			make_stack(p, s, &seed, pool[p][s].text, sizeof(pool[p][s].text));
	unlink(newdb);
	if (!bodies || !lens || store__open(newdb, &o, &st))
		die("open", newdb);
	if (peerdb)
		peer_open(&peer, peerdb, true);
	for (w0 = 0; w0 < windows; w0 += CHUNK) {
		for (m = 0, w = w0; w < w0 + CHUNK && w < windows; w++)
			for (h = 0; h < hosts; h++, m++) {
				struct batch *b = make_window(w, h, samples, &seed);

				if (!b || wire_encode(b, 3, &bodies[m], &lens[m]))
					die("generate", "wire_encode");
				out->rows += b->nsamples;
				for (k = 0; k < b->nsamples; k++)
					out->samples += b->samples[k].count;
				batch__free(b);
			}
		for (k = 0; k < m; k++) {
			struct batch *b;

			c = cpu();
			if (wire_decode(bodies[k], lens[k], &lim, &b, why, sizeof(why)))
				die("wire_decode", why);
			if (store__ingest(st, b, &dup))
				die("store__ingest", store__errmsg(st));
			batch__free(b);
			out->new_cpu += cpu() - c;
			c = cpu();
			if (peerdb) {
				if (wire_decode(bodies[k], lens[k], &lim, &b, why, sizeof(why)))
					die("wire_decode", why);
				peer_ingest(&peer, b);
				batch__free(b);
			}
			out->peer_cpu += cpu() - c;
			free(bodies[k]);
		}
		fprintf(stderr, "\r  %u / %u windows", w, windows);
	}
	c = cpu();
	while (more) /* an hour after the data plus the delay: every rollup built */
		if (store__maintain(st,
				    GEN_T0 + (int64_t)windows * 10 + STORE_HOUR_SECONDS +
					    STORE_ROLLUP_DELAY_SECONDS,
				    0, &more))
			die("store__maintain", store__errmsg(st));
	out->maint_cpu = cpu() - c;
	store__close(st);
	if (peerdb)
		peer_close(&peer);
	free(bodies);
	free(lens);
	fprintf(stderr, "\r  filled %s and %s in %.0f s\n", newdb, peerdb ? peerdb : "no peer",
		wall() - t);
}

/* ---- the figures ---------------------------------------------------------------- */

static void row(const char *what, double nw, double peer, const char *unit)
{
	printf("  %-44s new %10.4f %s   peer %10.4f %s   peer/new %7.1fx\n", what, nw, unit, peer,
	       unit, peer / nw);
}

static void rate(const char *what, const struct fill *f)
{
	double nw = (double)f->rows / f->new_cpu, peer = (double)f->rows / f->peer_cpu;

	printf("  %-44s new %10.0f rows/s   peer %10.0f rows/s   new/peer %5.1fx\n", what, nw, peer,
	       nw / peer);
}

/* Median of 3 warm runs of a new flame graph in format and of the peer's. */
static void flame_figures(const char *what, struct store *s, struct peer *p, int64_t from,
			  int64_t to)
{
	double nf[3], nj[3], pf[3], t;
	FILE *null = null_sink();
	uint64_t want, got;
	char label[96];
	int i;

	if (!null)
		die("fopencookie", "a null sink");
	for (i = 0; i < 3; i++) {
		t = wall();
		new_flame(s, from, to, "folded", null);
		nf[i] = wall() - t;
		t = wall();
		new_flame(s, from, to, "json", null);
		nj[i] = wall() - t;
		t = wall();
		want = peer_flame(p, from, to, null);
		pf[i] = wall() - t;
	}
	fclose(null);
	got = new_total(s, from, to);
	snprintf(label, sizeof(label), "%s, folded", what);
	row(label, median(nf, 3), median(pf, 3), "s");
	snprintf(label, sizeof(label), "%s, json (peer: folded)", what);
	row(label, median(nj, 3), median(pf, 3), "s");
	printf("  %-44s %s (%" PRIu64 " samples new, %" PRIu64 " peer)\n", "  answers agree",
	       got == want ? "yes" : "NO", got, want);
}

/* The "rss DB FROM TO" mode: the json flame graph of [from, to) on a fresh
 * reader, in a process of its own; prints VmRSS before the query and VmHWM after
 * it, in kB. */
static int rss_child(const char *db, int64_t from, int64_t to)
{
	struct store_options ro = { .read_only = true };
	FILE *null = null_sink(), *f;
	long v[2] = { -1, -1 };
	char line[256];
	struct store *s;
	int i;

	if (!null || store__open(db, &ro, &s))
		return 2;
	for (i = 0; i < 2; i++) {
		if (i)
			new_flame(s, from, to, "json", null);
		f = fopen("/proc/self/status", "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, i ? "VmHWM:" : "VmRSS:", 6))
				v[i] = atol(line + 6);
		if (f)
			fclose(f);
	}
	store__close(s);
	fclose(null);
	printf("%ld %ld\n", v[0], v[1]);
	return 0;
}

/* The "time DB FROM TO FORMAT N" mode: N warm runs of the flame graph of [from, to)
 * in FORMAT on one reader (the first run warms its frame cache and is not
 * counted), each run's seconds and their median; for comparing builds of the
 * query layer on a store kept by the "fill" mode. */
static int time_child(const char *db, int64_t from, int64_t to, const char *format, int n)
{
	struct store_options ro = { .read_only = true };
	FILE *null = null_sink();
	double v[64], c[64], t, u;
	struct store *s;
	int i;

	if (n < 1 || n > 64 || !null || store__open(db, &ro, &s))
		return 2;
	new_flame(s, from, to, format, null);
	for (i = 0; i < n; i++) {
		t = wall();
		u = cpu();
		new_flame(s, from, to, format, null);
		v[i] = wall() - t;
		c[i] = cpu() - u;
		printf("%.4f ", v[i]);
	}
	printf("median %.4f s (CPU %.4f s)\n", median(v, (size_t)n), median(c, (size_t)n));
	store__close(s);
	fclose(null);
	return 0;
}

/* The "reads DB FROM TO N" mode: the small reads on a kept store, for
 * comparing builds: 20 random 2-minute ranges in [from, to) as folded flame
 * graphs (the seed of the full run's figure), the median of their wall and CPU
 * times, then the timeline of [from, to) at 5-minute steps, N warm runs, and the
 * same two with the selection comm=python30 (a raw window block's sections
 * decoded one by one, its other sections skipped). */
static int reads_child(const char *db, int64_t from, int64_t to, int n)
{
	static const char *const key[] = { "comm" }, *const value[] = { "python30" };
	struct store_options ro = { .read_only = true };
	double w[64], c[64], t, u;
	FILE *null = null_sink();
	struct store *s;
	uint64_t sum = 0;
	int i, sel;

	if (n < 1 || n > 64 || to - from < 240 || !null || store__open(db, &ro, &s))
		return 2;
	for (sel = 0; sel < 2; sel++) {
		unsigned seed = 99;
		struct store_query q = { .from = from, .to = to };

		if (sel) {
			q.keys = key;
			q.values = value;
			q.nlabels = 1;
		}
		new_flame(s, from, from + 120, "folded", null); /* warm */
		for (i = 0; i < NRANGES; i++) {
			int64_t f = from + (int64_t)rnd(&seed, (unsigned)(to - 120 - from));
			struct store_query r = q;

			r.from = f;
			r.to = f + 120;
			t = wall();
			u = cpu();
			if (sel) {
				if (store__query_series(s, &r, 10, sum_bucket, &sum))
					die("series", store__errmsg(s));
			} else {
				new_flame(s, f, f + 120, "folded", null);
			}
			w[i] = wall() - t;
			c[i] = cpu() - u;
		}
		printf("%s: median %.2f ms wall, %.2f ms CPU\n",
		       sel ? "2-minute range, series at 10 s, comm=python30 (20)"
			   : "2-minute range, folded (20)",
		       1e3 * median(w, NRANGES), 1e3 * median(c, NRANGES));
		for (i = 0; i < n; i++) {
			t = wall();
			u = cpu();
			if (store__query_series(s, &q, 300, sum_bucket, &sum))
				die("series", store__errmsg(s));
			w[i] = wall() - t;
			c[i] = cpu() - u;
		}
		printf("%s: median %.2f ms wall, %.2f ms CPU\n",
		       sel ? "timeline at 5 min, comm=python30" : "timeline at 5 min",
		       1e3 * median(w, (size_t)n), 1e3 * median(c, (size_t)n));
	}
	printf("(sum %" PRIu64 ")\n", sum);
	store__close(s);
	fclose(null);
	return 0;
}

/* The "late DB N" mode: N late batches of the busy host (its first N windows sent
 * again under new seqs) stored into DB, below the minute and hour watermarks of
 * a filled store: each is written into the built minute and hour blocks over its
 * window (and as a raw block while raw windows are kept). Prints the median CPU
 * time of store__ingest() per batch. It writes DB: run it on a copy. */
static int late_child(const char *db, int n)
{
	double c[64], u;
	unsigned seed = 7, p, k;
	struct store *s;
	bool dup;
	int i;

	if (n < 1 || n > 64 || store__open(db, NULL, &s))
		return 2;
	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	for (i = 0; i < n; i++) {
		struct batch *b = make_window((unsigned)i, 0, SAMPLES_PER_WINDOW, &seed);

		if (!b)
			die("generate", "make_window");
		b->seq = 1000000 + (uint64_t)i; /* a batch of its own, late */
		u = cpu();
		if (store__ingest(s, b, &dup) || dup)
			die("store__ingest", store__errmsg(s));
		c[i] = cpu() - u;
		batch__free(b);
	}
	printf("late batch (%u samples), below the watermarks: median %.2f ms CPU (%d)\n",
	       SAMPLES_PER_WINDOW, 1e3 * median(c, (size_t)n), n);
	store__close(s);
	return 0;
}

/* The peak RSS of the json flame graph of [from, to): this program again, in its
 * rss mode (a new process: none of the bench's pages). */
static void rss_figure(const char *db, int64_t from, int64_t to)
{
	char cmd[1024], out[128] = "";
	long kb[2] = { -1, -1 };
	FILE *f;

	snprintf(cmd, sizeof(cmd), "/proc/%d/exe rss '%s' %" PRId64 " %" PRId64, (int)getpid(), db,
		 from, to);
	f = popen(cmd, "r");
	if (!f || !fgets(out, sizeof(out), f) || sscanf(out, "%ld %ld", &kb[0], &kb[1]) != 2)
		die("rss child", out);
	if (pclose(f))
		die("rss child", "failed");
	printf("  %-44s %.1f MB (%.1f MB before the query)\n", "peak RSS of the json flame graph",
	       (double)kb[1] / 1024, (double)kb[0] / 1024);
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "quick");
	int mode = argc > 1 && (quick || !strcmp(argv[1], "full")); /* argv[1] is the mode */
	const char *dir = argc > 1 + mode ? argv[1 + mode] : "/tmp";
	unsigned busy_w = quick ? 720 : 8640, fleet_w = quick ? 60 : 360;
	int64_t end = GEN_T0 + (int64_t)busy_w * 10;
	char nb[512], pb[512], nf[512], pf[512];
	double runs_n[NRANGES], runs_p[NRANGES], t;
	struct store_stats stats;
	struct fill fb, ff;
	struct store *s;
	struct peer p;
	uint64_t peer_r, sn = 0, sp;
	unsigned seed = 99, i;

	if (argc == 5 && !strcmp(argv[1], "rss"))
		return rss_child(argv[2], strtoll(argv[3], NULL, 10), strtoll(argv[4], NULL, 10));
	if (argc == 6 && !strcmp(argv[1], "reads"))
		return reads_child(argv[2], strtoll(argv[3], NULL, 10), strtoll(argv[4], NULL, 10),
				   atoi(argv[5]));
	if (argc == 4 && !strcmp(argv[1], "late"))
		return late_child(argv[2], atoi(argv[3]));
	if (argc == 7 && !strcmp(argv[1], "time"))
		return time_child(argv[2], strtoll(argv[3], NULL, 10), strtoll(argv[4], NULL, 10),
				  argv[5], atoi(argv[6]));
	if (argc >= 3 && !strcmp(argv[1], "fill")) { /* the new stores only, kept */
		quick = argc > 3 && !strcmp(argv[3], "quick");
		busy_w = quick ? 720 : 8640, fleet_w = quick ? 60 : 360;
		snprintf(nb, sizeof(nb), "%s/store-bench-busy.db", argv[2]);
		snprintf(nf, sizeof(nf), "%s/store-bench-fleet.db", argv[2]);
		fill(nb, NULL, busy_w, 1, SAMPLES_PER_WINDOW, &fb);
		fill(nf, NULL, fleet_w, 100, SAMPLES_PER_WINDOW / 10, &ff);
		printf("%s: [%d, %" PRId64 "); %s: [%d, %" PRId64 ")\n", nb, GEN_T0,
		       GEN_T0 + (int64_t)busy_w * 10, nf, GEN_T0, GEN_T0 + (int64_t)fleet_w * 10);
		return 0;
	}
	snprintf(nb, sizeof(nb), "%s/store-bench-busy.db", dir);
	snprintf(pb, sizeof(pb), "%s/store-bench-busy-peer.db", dir);
	snprintf(nf, sizeof(nf), "%s/store-bench-fleet.db", dir);
	snprintf(pf, sizeof(pf), "%s/store-bench-fleet-peer.db", dir);
	printf("store_bench%s: the busy host %u windows (%.0f h), 100 hosts %u windows\n",
	       quick ? " quick" : "", busy_w, busy_w / 360.0, fleet_w);
	fill(nb, pb, busy_w, 1, SAMPLES_PER_WINDOW, &fb);
	fill(nf, pf, fleet_w, 100, SAMPLES_PER_WINDOW / 10, &ff);

	if (store__open(nb, NULL, &s))
		die("open", nb);
	peer_open(&p, pb, false);
	if (store__stats(s, &stats))
		die("stats", store__errmsg(s));
	peer_r = peer_rows(&p);
	printf("busy host: %" PRIu64 " rows sent, %" PRIu64 " samples; new: %" PRIu64
	       " raw entries, blocks %" PRIu64 " raw / %" PRIu64 " minute / %" PRIu64
	       " hour, rollups %.2f CPU s; peer: %" PRIu64 " rows\n",
	       fb.rows, fb.samples, stats.sample_rows, stats.blocks[0], stats.blocks[1],
	       stats.blocks[2], fb.maint_cpu, peer_r);
	flame_figures(quick ? "flame graph 2 h busy host" : "flame graph 24 h busy host", s, &p,
		      GEN_T0, end);

	for (i = 0; i < NRANGES; i++) {
		int64_t from = GEN_T0 + (int64_t)rnd(&seed, (unsigned)(end - 120 - GEN_T0));
		FILE *null = null_sink();

		if (!null)
			die("fopencookie", "a null sink");
		t = wall();
		new_flame(s, from, from + 120, "folded", null);
		runs_n[i] = wall() - t;
		t = wall();
		peer_flame(&p, from, from + 120, null);
		runs_p[i] = wall() - t;
		fclose(null);
	}
	row("2-minute range, folded (median of 20)", median(runs_n, NRANGES),
	    median(runs_p, NRANGES), "s");
	{
		double a[3], b[3];

		for (i = 0; i < 3; i++) {
			struct store_query q = { .from = GEN_T0, .to = end };

			sn = 0;
			t = wall();
			if (store__query_series(s, &q, 300, sum_bucket, &sn))
				die("series", store__errmsg(s));
			a[i] = wall() - t;
			t = wall();
			sp = peer_series(&p, GEN_T0, end, 300);
			b[i] = wall() - t;
		}
		row(quick ? "series 2 h at 5 min" : "series 24 h at 5 min", median(a, 3),
		    median(b, 3), "s");
		printf("  %-44s %s\n", "  answers agree", sn == sp ? "yes" : "NO");
	}
	store__close(s);
	peer_close(&p);
	{
		uint64_t fn = file_bytes(nb), fp = file_bytes(pb);

		row("bytes per (window, label set, stack) row", (double)fn / (double)fb.rows,
		    (double)fp / (double)fb.rows, "B");
		printf("  %-44s new %.1f MB, peer %.1f MB\n", "file size after the busy host",
		       (double)fn / 1e6, (double)fp / 1e6);
	}
	rate("ingest, decode + store (one core)", &fb);
	rss_figure(nb, GEN_T0, end);

	if (store__open(nf, NULL, &s))
		die("open", nf);
	peer_open(&p, pf, false);
	flame_figures(quick ? "flame graph 10 min 100 hosts" : "flame graph 1 h 100 hosts", s, &p,
		      GEN_T0, GEN_T0 + (int64_t)fleet_w * 10);
	rate("fleet ingest, decode + store (one core)", &ff);
	store__close(s);
	peer_close(&p);
	unlink(nb), unlink(pb), unlink(nf), unlink(pf);
	return 0;
}
