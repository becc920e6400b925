/* Unit tests of the SQLite store (store/store.h), each run on ":memory:" and on a
 * file in a fresh temporary directory. Batches are built by hand here from lists of
 * (label set, folded stack, count, window) tuples, so the test depends only on the
 * layout in common/batch.h; every expected sum is computed from the same tuples
 * with a plain loop and compared with what the store returns.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <uthash.h>

#include "common/batch.h"
#include "store/store.h"
#include "testutil.h"

/* ---- building batches by hand ------------------------------------------- */

struct ent {
	char *key;
	uint32_t idx;
	UT_hash_handle hh;
};

struct tb {
	struct batch *b;
	uint32_t capstr, capframe, capstack, capls, capsmp;
	struct ent *strs, *frames, *stacks, *lss;
};

static void ents_free(struct ent **h)
{
	struct ent *e, *tmp;

	HASH_ITER (hh, *h, e, tmp) {
		HASH_DEL(*h, e);
		free(e->key);
		free(e);
	}
}

/* Finds key in *h; if missing adds it with idx next and returns false. */
static bool ent_get(struct ent **h, const char *key, uint32_t next, uint32_t *idx)
{
	struct ent *e;

	HASH_FIND_STR(*h, key, e);
	if (e) {
		*idx = e->idx;
		return true;
	}
	e = calloc(1, sizeof(*e));
	assert_non_null(e);
	e->key = strdup(key);
	e->idx = next;
	HASH_ADD_KEYPTR(hh, *h, e->key, strlen(e->key), e);
	*idx = next;
	return false;
}

#define GROW(arr, n, cap)                                                                          \
	do {                                                                                       \
		if ((n) == (cap)) {                                                                \
			(cap) = (cap) ? (cap)*2 : 16;                                              \
			(arr) = realloc((arr), (cap) * sizeof(*(arr)));                            \
			assert_non_null(arr);                                                      \
		}                                                                                  \
	} while (0)

static uint32_t tb_str(struct tb *t, const char *s)
{
	uint32_t i;

	if (!ent_get(&t->strs, s, t->b->nstrings, &i)) {
		GROW(t->b->strings, t->b->nstrings, t->capstr);
		t->b->strings[t->b->nstrings++] = strdup(s);
	}
	return i;
}

static uint32_t tb_frame(struct tb *t, const char *text, bool root)
{
	struct batch_frame f = { 0 };
	char key[600], name[512], file[256];
	size_t len = strlen(text);
	unsigned line;
	uint32_t i;

	if (root) {
		f.kind = FRAME_PROCESS;
		f.name = tb_str(t, text);
	} else if (len > 4 && !strcmp(text + len - 4, "_[k]")) {
		snprintf(name, sizeof(name), "%.*s", (int)(len - 4), text);
		f.kind = FRAME_KERNEL;
		f.name = tb_str(t, name);
	} else if (len > 4 && !strcmp(text + len - 4, "_[j]")) {
		snprintf(name, sizeof(name), "%.*s", (int)(len - 4), text);
		f.kind = FRAME_JIT;
		f.name = tb_str(t, name);
	} else if (sscanf(text, "%511[^ ] (%255[^:]:%u)", name, file, &line) == 3) {
		f.kind = FRAME_PYTHON;
		f.name = tb_str(t, name);
		f.file = tb_str(t, file);
		f.line = line;
	} else {
		f.kind = FRAME_NATIVE;
		f.name = tb_str(t, text);
	}
	snprintf(key, sizeof(key), "%u|%u|%u|%u", f.kind, f.name, f.file, f.line);
	if (!ent_get(&t->frames, key, t->b->nframes, &i)) {
		GROW(t->b->frames, t->b->nframes, t->capframe);
		t->b->frames[t->b->nframes++] = f;
	}
	return i;
}

static uint32_t tb_stack(struct tb *t, const char *folded)
{
	struct batch_stack st = { 0 };
	char *copy, *tok, *save = NULL;
	uint32_t i, cap = 0;

	if (ent_get(&t->stacks, folded, t->b->nstacks, &i))
		return i;
	copy = strdup(folded);
	for (tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		GROW(st.frames, st.nframes, cap);
		st.frames[st.nframes] = tb_frame(t, tok, st.nframes == 0);
		st.nframes++;
	}
	free(copy);
	GROW(t->b->stacks, t->b->nstacks, t->capstack);
	t->b->stacks[t->b->nstacks++] = st;
	return i;
}

/* Labels as "k=v,k=v", sorted by key, as batch.h wants. */
static uint32_t tb_labelset(struct tb *t, const char *labels)
{
	struct batch_labelset ls = { 0 };
	char *copy, *tok, *save = NULL, *eq;
	uint32_t i, j, cap = 0;

	if (ent_get(&t->lss, labels, t->b->nlabelsets, &i))
		return i;
	copy = strdup(labels);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		assert_non_null(eq);
		*eq = '\0';
		GROW(ls.labels, ls.nlabels, cap);
		ls.labels[ls.nlabels].key = tb_str(t, tok);
		ls.labels[ls.nlabels].value = tb_str(t, eq + 1);
		/* insertion sort by key text */
		for (j = ls.nlabels; j > 0; j--) {
			struct batch_label tmp;

			if (strcmp(t->b->strings[ls.labels[j - 1].key],
				   t->b->strings[ls.labels[j].key]) <= 0)
				break;
			tmp = ls.labels[j];
			ls.labels[j] = ls.labels[j - 1];
			ls.labels[j - 1] = tmp;
		}
		ls.nlabels++;
	}
	free(copy);
	GROW(t->b->labelsets, t->b->nlabelsets, t->capls);
	t->b->labelsets[t->b->nlabelsets++] = ls;
	return i;
}

static void tb_init(struct tb *t, const char *agent, uint64_t seq, int64_t window_start)
{
	memset(t, 0, sizeof(*t));
	t->b = calloc(1, sizeof(*t->b));
	assert_non_null(t->b);
	tb_str(t, "");
	t->b->format_version = BATCH_FORMAT_VERSION;
	t->b->seq = seq;
	t->b->window_start = window_start;
	t->b->window_seconds = 10;
	t->b->period_ns = 1000000000 / 99;
	t->b->agent_id = tb_str(t, agent);
	t->b->host = tb_str(t, "host-1");
	t->b->profile_type = tb_str(t, "cpu");
}

static void tb_add(struct tb *t, const char *labels, const char *folded, uint64_t count)
{
	struct batch_sample smp;

	smp.labelset = tb_labelset(t, labels);
	smp.stack = tb_stack(t, folded);
	smp.count = count;
	GROW(t->b->samples, t->b->nsamples, t->capsmp);
	t->b->samples[t->b->nsamples++] = smp;
}

static struct batch *tb_finish(struct tb *t)
{
	ents_free(&t->strs);
	ents_free(&t->frames);
	ents_free(&t->stacks);
	ents_free(&t->lss);
	return t->b;
}

static void tbatch_free(struct batch *b)
{
	uint32_t i;

	if (!b)
		return;
	for (i = 0; i < b->nstrings; i++)
		free(b->strings[i]);
	for (i = 0; i < b->nstacks; i++)
		free(b->stacks[i].frames);
	for (i = 0; i < b->nlabelsets; i++)
		free(b->labelsets[i].labels);
	free(b->strings);
	free(b->frames);
	free(b->stacks);
	free(b->labelsets);
	free(b->samples);
	free(b->counters);
	free(b);
}

/* ---- generated data and expectations ------------------------------------- */

static const char *const labelsets[] = {
	"",
	"service=api",
	"service=api,zone=a",
	"service=api,zone=b",
	"service=worker,zone=a",
	"service=db,version=2,zone=b",
};
#define NLS (sizeof(labelsets) / sizeof(labelsets[0]))

#define NSTACKS 40
static char stack_pool[NSTACKS][256];

static void make_stack_pool(void)
{
	int i;

	for (i = 0; i < NSTACKS; i++) {
		switch (i % 4) {
		case 0:
			snprintf(stack_pool[i], sizeof(stack_pool[i]), "app%d;main;work_%d;leaf_%d",
				 i % 3, i % 5, i);
			break;
		case 1:
			snprintf(stack_pool[i], sizeof(stack_pool[i]),
				 "app%d;main;read;entry_SYSCALL_64_[k];do_syscall_64_[k];fn_%d_[k]",
				 i % 3, i);
			break;
		case 2:
			snprintf(stack_pool[i], sizeof(stack_pool[i]),
				 "python3;_PyEval_EvalFrameDefault;<module> (/app/srv.py:1);"
				 "handle (/app/srv.py:%d);Req.parse (/app/req.py:%d)",
				 10 + i, 100 + i);
			break;
		default:
			snprintf(stack_pool[i], sizeof(stack_pool[i]), "app%d;libc.so.6+0x%x;main",
				 i % 3, 0x1000 + i);
			break;
		}
	}
}

struct tuple {
	int ls;
	int stack;
	uint64_t count;
	int64_t window;
	int agent;
};

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* nwindows windows of 10 s from t0, two agents, per agent and window n tuples. */
static struct tuple *gen_tuples(int64_t t0, int nwindows, int per, size_t *n)
{
	struct tuple *t = calloc((size_t)nwindows * 2 * per, sizeof(*t));
	size_t k = 0;
	int w, a, i;

	assert_non_null(t);
	for (w = 0; w < nwindows; w++)
		for (a = 0; a < 2; a++)
			for (i = 0; i < per; i++) {
				t[k].ls = (int)(rnd() % NLS);
				t[k].stack = (int)(rnd() % NSTACKS);
				t[k].count = 1 + rnd() % 50;
				t[k].window = t0 + 10 * w;
				t[k].agent = a;
				k++;
			}
	*n = k;
	return t;
}

/* Ingests the tuples: one batch per (agent, window), in order; seq from 1. */
static void ingest_tuples(struct store *s, const struct tuple *t, size_t n)
{
	static const char *const agents[] = { "agent-a", "agent-b" };
	uint64_t seq[2] = { 0, 0 };
	size_t i = 0, j;

	while (i < n) {
		struct batch *b;
		struct tb tb;
		bool dup = true;

		for (j = i; j < n && t[j].window == t[i].window && t[j].agent == t[i].agent; j++)
			;
		tb_init(&tb, agents[t[i].agent], ++seq[t[i].agent], t[i].window);
		for (; i < j; i++)
			tb_add(&tb, labelsets[t[i].ls], stack_pool[t[i].stack], t[i].count);
		b = tb_finish(&tb);
		assert_int_equal(store__ingest(s, b, &dup), 0);
		assert_false(dup);
		tbatch_free(b);
	}
}

/* Does label set text ls hold every "k=v" of the selection? */
static bool ls_matches(const char *ls, const char *const *keys, const char *const *values, size_t n)
{
	char want[128], padded[256];
	size_t i;

	snprintf(padded, sizeof(padded), ",%s,", ls);
	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), ",%s=%s,", keys[i], values[i]);
		if (!strstr(padded, want))
			return false;
	}
	return true;
}

static void expected_sums(const struct tuple *t, size_t n, const struct store_query *q,
			  uint64_t *exp)
{
	size_t i;

	memset(exp, 0, NSTACKS * sizeof(*exp));
	for (i = 0; i < n; i++)
		if (t[i].window >= q->from && t[i].window < q->to &&
		    ls_matches(labelsets[t[i].ls], q->keys, q->values, q->nlabels))
			exp[t[i].stack] += t[i].count;
}

struct got {
	uint64_t sum[NSTACKS];
	int seen[NSTACKS];
	int unknown;
	int calls;
};

/* The folded text of frames, printed here by hand (independent of frame.h). */
static void text_of(const struct frame *frames, size_t n, char *buf, size_t len)
{
	size_t i, pos = 0;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		const struct frame *f = &frames[i];

		assert_int_equal(f->kind == FRAME_PROCESS, i == 0);
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%.*s", i ? ";" : "",
					(int)f->name_len, f->name);
		if (f->kind == FRAME_KERNEL)
			pos += (size_t)snprintf(buf + pos, len - pos, "_[k]");
		else if (f->kind == FRAME_JIT)
			pos += (size_t)snprintf(buf + pos, len - pos, "_[j]");
		else if (f->kind == FRAME_PYTHON)
			pos += (size_t)snprintf(buf + pos, len - pos, " (%.*s:%u)",
						(int)f->file_len, f->file, f->line);
		assert_true(pos < len);
	}
}

static int collect(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct got *g = ctx;
	char folded[8192];
	int i;

	text_of(frames, nframes, folded, sizeof(folded));
	g->calls++;
	for (i = 0; i < NSTACKS; i++)
		if (!strcmp(stack_pool[i], folded)) {
			g->seen[i]++;
			g->sum[i] += count;
			return 0;
		}
	g->unknown++;
	print_error("unknown stack: %s\n", folded);
	return 0;
}

/* Runs q and asserts the store's sums equal the tuples' sums; returns the total. */
static uint64_t check_query(struct store *s, const struct tuple *t, size_t n,
			    const struct store_query *q)
{
	uint64_t exp[NSTACKS], total = 0;
	struct got g = { 0 };
	int i;

	expected_sums(t, n, q, exp);
	assert_int_equal(store__query_stacks(s, q, collect, &g), 0);
	assert_int_equal(g.unknown, 0);
	for (i = 0; i < NSTACKS; i++) {
		assert_true(g.seen[i] <= 1);
		assert_int_equal(g.seen[i], exp[i] ? 1 : 0);
		assert_int_equal(g.sum[i], exp[i]);
		total += exp[i];
	}
	return total;
}

/* ---- fixtures: one store on :memory: or on a file ------------------------- */

struct fixture {
	bool file;
	char dir[64];
	char path[128];
};

static const char *fx_path(struct fixture *fx)
{
	if (!fx->file)
		return ":memory:";
	if (!fx->dir[0]) {
		assert_non_null(test_mkdtemp(fx->dir, sizeof(fx->dir)));
		snprintf(fx->path, sizeof(fx->path), "%s/store.db", fx->dir);
	}
	return fx->path;
}

static int fx_teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx->dir[0])
		test_rm_rf(fx->dir);
	fx->dir[0] = '\0';
	return 0;
}

static struct store *fx_open(struct fixture *fx, const struct store_options *opts)
{
	struct store *s = NULL;

	assert_int_equal(store__open(fx_path(fx), opts, &s), 0);
	assert_non_null(s);
	return s;
}

static void close_checked(struct store *s)
{
	assert_int_equal(store__check(s), 0);
	store__close(s);
}

/* The user_version field of a closed database file: big-endian u32 at offset 60. */
static uint32_t file_user_version(const char *path)
{
	unsigned char h[64];
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	assert_int_equal(fread(h, 1, sizeof(h), f), sizeof(h));
	fclose(f);
	return (uint32_t)h[60] << 24 | (uint32_t)h[61] << 16 | (uint32_t)h[62] << 8 | h[63];
}

/* ---- tests ---------------------------------------------------------------- */

static void test_migrations(void **state)
{
	struct fixture *fx = *state;
	struct store_stats st;
	struct store *s;
	int64_t v1, v2;

	s = fx_open(fx, NULL);
	assert_int_equal(store__schema_version(s, &v1), 0);
	assert_true(v1 >= 1);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.sample_rows, 0);
	assert_int_equal(st.batches, 0);
	assert_true(st.db_bytes > 0);
	assert_true(st.coarse_before == INT64_MIN);
	close_checked(s);
	if (!fx->file)
		return;

	assert_int_equal(file_user_version(fx->path), (uint32_t)v1);
	/* Reopening applies nothing again (a rerun would fail on CREATE TABLE). */
	s = fx_open(fx, NULL);
	assert_int_equal(store__schema_version(s, &v2), 0);
	assert_int_equal(v1, v2);
	close_checked(s);
	assert_int_equal(file_user_version(fx->path), (uint32_t)v1);

	/* A database from a newer build is refused. */
	{
		unsigned char be[4] = { 0, 0, 0, 99 };
		struct store *s2 = NULL;
		FILE *f = fopen(fx->path, "r+b");

		assert_non_null(f);
		assert_int_equal(fseek(f, 60, SEEK_SET), 0);
		assert_int_equal(fwrite(be, 1, 4, f), 4);
		fclose(f);
		assert_int_equal(store__open(fx->path, NULL, &s2), -EPROTO);
		assert_null(s2);
		assert_true(store__open(NULL, NULL, &s2) == -EINVAL);
	}
}

static void run_roundtrip_queries(struct store *s, const struct tuple *t, size_t n)
{
	static const char *const k1[] = { "service" }, *const v1[] = { "api" };
	static const char *const k2[] = { "service", "zone" }, *const v2[] = { "api", "a" };
	static const char *const k2r[] = { "zone", "service" }, *const v2r[] = { "b", "db" };
	static const char *const k3[] = { "service", "zone" }, *const v3[] = { "worker", "b" };
	static const char *const k4[] = { "service" }, *const v4[] = { "nope" };
	static const char *const k5[] = { "nokey" }, *const v5[] = { "api" };
	struct store_query q = { .from = 0, .to = INT64_MAX };
	uint64_t all, part;

	all = check_query(s, t, n, &q);
	assert_true(all > 0);

	/* Boundaries: a window at from is in, a window at to is out. */
	q.from = 1020;
	q.to = 1050;
	part = check_query(s, t, n, &q);
	assert_true(part > 0 && part < all);
	q.from = 1020;
	q.to = 1021;
	assert_true(check_query(s, t, n, &q) > 0);
	q.from = 1019;
	q.to = 1020;
	assert_int_equal(check_query(s, t, n, &q), 0);
	q.from = 1050;
	q.to = 1050;
	assert_int_equal(check_query(s, t, n, &q), 0);

	q.from = 0;
	q.to = INT64_MAX;
	q.keys = k1, q.values = v1, q.nlabels = 1;
	part = check_query(s, t, n, &q);
	assert_true(part > 0 && part < all);
	q.keys = k2, q.values = v2, q.nlabels = 2;
	assert_true(check_query(s, t, n, &q) > 0);
	q.keys = k2r, q.values = v2r, q.nlabels = 2;
	assert_true(check_query(s, t, n, &q) > 0);
	q.keys = k3, q.values = v3, q.nlabels = 2;
	assert_int_equal(check_query(s, t, n, &q), 0);
	q.keys = k4, q.values = v4, q.nlabels = 1;
	assert_int_equal(check_query(s, t, n, &q), 0);
	q.keys = k5, q.values = v5, q.nlabels = 1;
	assert_int_equal(check_query(s, t, n, &q), 0);
	q.from = 1030;
	q.to = 1060;
	q.keys = k2, q.values = v2, q.nlabels = 2;
	check_query(s, t, n, &q);
}

static int stop_after_one(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	(void)frames;
	(void)nframes;
	(void)count;
	++*(int *)ctx;
	return 42;
}

static void test_roundtrip(void **state)
{
	struct fixture *fx = *state;
	struct store_query q = { .from = 0, .to = INT64_MAX };
	struct store_stats st;
	struct tuple *t;
	struct store *s;
	size_t n;
	int calls = 0;

	make_stack_pool();
	t = gen_tuples(1000, 8, 60, &n);
	s = fx_open(fx, NULL);
	ingest_tuples(s, t, n);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.batches, 16);
	assert_true(st.sample_rows > 0 && st.sample_rows <= n);
	assert_true(st.stacks == NSTACKS);
	assert_true(st.labelsets == NLS);
	run_roundtrip_queries(s, t, n);
	assert_int_equal(store__query_stacks(s, &q, stop_after_one, &calls), 42);
	assert_int_equal(calls, 1);
	close_checked(s);

	if (fx->file) {
		s = fx_open(fx, NULL);
		run_roundtrip_queries(s, t, n);
		assert_int_equal(store__stats(s, &st), 0);
		assert_int_equal(st.batches, 16);
		close_checked(s);
	}
	free(t);
}

static struct batch *one_batch(const char *agent, uint64_t seq, int64_t window, const char *labels,
			       const char *folded, uint64_t count)
{
	struct tb tb;

	tb_init(&tb, agent, seq, window);
	tb_add(&tb, labels, folded, count);
	return tb_finish(&tb);
}

struct one_stack {
	char text[256];
	uint64_t count;
	int calls;
};

static int collect_one(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct one_stack *o = ctx;

	text_of(frames, nframes, o->text, sizeof(o->text));
	o->count = count;
	o->calls++;
	return 0;
}

/* Migration 003 on a store made at version 2 (by the sqlite3 shell from the SQL
 * of 001 and 002): its frames keep their ids and kinds, and a JIT frame (kind 4,
 * which 002's CHECK refused) is stored and read back as one. */
static void test_jit_frames(void **state)
{
	struct fixture *fx = *state;
	struct store_query q = { .from = 0, .to = INT64_MAX };
	struct one_stack got = { 0 };
	char cmd[1024], row[64] = "";
	struct batch *b;
	struct store *s;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "cat schema/001_init.sql schema/002_sample_rows.sql - <<'EOF' | sqlite3 %s\n"
		 "PRAGMA user_version = 2;\n"
		 "INSERT INTO strings (id, text) VALUES (100, ''), (101, 'old_fn');\n"
		 "INSERT INTO frames (id, kind, name, file, line) VALUES (7, 1, 101, 100, 0);\n"
		 "EOF\n",
		 fx_path(fx));
	assert_int_equal(system(cmd), 0);
	assert_int_equal(file_user_version(fx->path), 2);
	s = fx_open(fx, NULL);
	b = one_batch("agent-a", 1, 1000, "service=api", "node;main;JS:*hot /a.js:1:2_[j]", 5);
	assert_int_equal(store__ingest(s, b, NULL), 0);
	tbatch_free(b);
	assert_int_equal(store__query_stacks(s, &q, collect_one, &got), 0);
	assert_int_equal(got.calls, 1);
	assert_int_equal(got.count, 5);
	assert_string_equal(got.text, "node;main;JS:*hot /a.js:1:2_[j]");
	close_checked(s);
	assert_true(file_user_version(fx->path) >= 3);
	snprintf(cmd, sizeof(cmd), "sqlite3 %s 'SELECT id, kind FROM frames WHERE name = 101'",
		 fx->path);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(row, sizeof(row), p));
	pclose(p);
	assert_string_equal(row, "7|1\n");
}

static void test_duplicate(void **state)
{
	struct fixture *fx = *state;
	struct tuple t[2] = { { .ls = 1, .stack = 3, .count = 7, .window = 1000 },
			      { .ls = 1, .stack = 3, .count = 5, .window = 1000 } };
	struct store_query q = { .from = 0, .to = INT64_MAX };
	struct batch *b1, *b2;
	struct store_stats st;
	struct store *s;
	bool dup = false;

	make_stack_pool();
	s = fx_open(fx, NULL);
	b1 = one_batch("agent-a", 1, 1000, labelsets[1], stack_pool[3], 7);
	b2 = one_batch("agent-b", 1, 1000, labelsets[1], stack_pool[3], 5);
	assert_int_equal(store__ingest(s, b1, &dup), 0);
	assert_false(dup);
	assert_int_equal(store__ingest(s, b1, &dup), 0);
	assert_true(dup);
	assert_int_equal(store__ingest(s, b1, NULL), 0);
	check_query(s, t, 1, &q);
	/* Same seq from another agent is a different batch. */
	assert_int_equal(store__ingest(s, b2, &dup), 0);
	assert_false(dup);
	check_query(s, t, 2, &q);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.batches, 2);
	assert_int_equal(st.sample_rows, 1);
	tbatch_free(b1);
	tbatch_free(b2);
	close_checked(s);
}

static void assert_stats_equal(const struct store_stats *a, const struct store_stats *b)
{
	assert_int_equal(a->sample_rows, b->sample_rows);
	assert_int_equal(a->batches, b->batches);
	assert_int_equal(a->strings, b->strings);
	assert_int_equal(a->frames, b->frames);
	assert_int_equal(a->stacks, b->stacks);
	assert_int_equal(a->labelsets, b->labelsets);
}

static void test_failed_ingest(void **state)
{
	struct fixture *fx = *state;
	struct tuple t[2] = { { .ls = 2, .stack = 0, .count = BATCH_MAX_COUNT, .window = 1000 },
			      { .ls = 0, .stack = 5, .count = 3, .window = 1010 } };
	struct store_query q = { .from = 0, .to = INT64_MAX };
	struct store_stats before, after;
	struct batch *b;
	struct store *s;
	struct tb tb;
	bool dup = true;

	make_stack_pool();
	s = fx_open(fx, NULL);
	b = one_batch("agent-a", 1, 1000, labelsets[2], stack_pool[0], BATCH_MAX_COUNT);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	tbatch_free(b);
	assert_int_equal(store__stats(s, &before), 0);

	/* New strings, frames, a stack and a label set first, then a sample over the
	 * count cap: refused at the last row and everything is rolled back. */
	tb_init(&tb, "agent-a", 2, 1000);
	tb_add(&tb, "fresh=label", "newproc;new_a;new_b_[k]", 9);
	tb_add(&tb, labelsets[2], stack_pool[0], 10);
	b = tb_finish(&tb);
	b->samples[1].count = BATCH_MAX_COUNT + 1;
	assert_int_equal(store__ingest(s, b, &dup), -EINVAL);
	assert_false(dup);
	assert_true(strlen(store__errmsg(s)) > 0);
	assert_int_equal(store__stats(s, &after), 0);
	assert_stats_equal(&before, &after);
	check_query(s, t, 1, &q);
	tbatch_free(b);

	/* A stack index out of range after other samples were written. */
	tb_init(&tb, "agent-a", 2, 1000);
	tb_add(&tb, "fresh=label", "newproc;new_a;new_b_[k]", 9);
	tb_add(&tb, labelsets[3], stack_pool[7], 10);
	b = tb_finish(&tb);
	b->samples[1].stack = 99;
	assert_int_equal(store__ingest(s, b, &dup), -EINVAL);
	b->samples[1].stack = 0;
	b->samples[1].count = 0; /* a zero count is refused too */
	assert_int_equal(store__ingest(s, b, &dup), -EINVAL);
	b->frames[b->stacks[0].frames[1]].kind = 7; /* and a bad frame kind */
	b->samples[1].count = 1;
	assert_int_equal(store__ingest(s, b, &dup), -EINVAL);
	assert_int_equal(store__stats(s, &after), 0);
	assert_stats_equal(&before, &after);
	check_query(s, t, 1, &q);
	tbatch_free(b);

	/* The store still works, and seq 2 was never recorded. */
	b = one_batch("agent-a", 2, 1010, labelsets[0], stack_pool[5], 3);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	assert_false(dup);
	tbatch_free(b);
	check_query(s, t, 2, &q);
	close_checked(s);
}

/* Retention 1000 s, merge after 100 s into 60 s buckets; windows every 10 s from
 * 10000 to 12190; now = 12100: windows below 11100 go, [11100, 12000) merge. */
static void test_maintain(void **state)
{
	const struct store_options opts = { .retention_seconds = 1000,
					    .downsample_after_seconds = 100,
					    .coarse_window_seconds = 60 };
	struct fixture *fx = *state;
	struct store_query q = { .from = 0, .to = INT64_MAX };
	struct store_stats st0, st1;
	struct tuple *t;
	struct batch *b;
	struct store *s;
	size_t n;
	int64_t w;
	int steps = 0;
	bool more = true, dup;

	make_stack_pool();
	t = gen_tuples(10000, 220, 4, &n);
	s = fx_open(fx, &opts);
	ingest_tuples(s, t, n);
	assert_int_equal(store__stats(s, &st0), 0);

	/* Too early for anything. */
	assert_int_equal(store__maintain(s, 10050, 5, &more), 0);
	assert_false(more);
	assert_int_equal(store__stats(s, &st1), 0);
	assert_int_equal(st1.sample_rows, st0.sample_rows);

	while (more || steps == 0) {
		assert_int_equal(store__maintain(s, 12100, 7, &more), 0);
		steps++;
		assert_true(steps < 10000);
	}
	assert_true(steps > 10);
	assert_int_equal(store__stats(s, &st1), 0);
	assert_true(st1.sample_rows < st0.sample_rows);
	assert_int_equal(st1.coarse_before, 12000);

	/* Retention: nothing before 11100; nothing was lost after. */
	q.from = 0;
	q.to = 11100;
	{
		struct got g = { 0 };

		assert_int_equal(store__query_stacks(s, &q, collect, &g), 0);
		assert_int_equal(g.calls, 0);
	}
	q.from = 11100;
	q.to = INT64_MAX;
	check_query(s, t, n, &q);
	/* Every bucket holds exactly the sum of its fine windows, all at its start. */
	for (w = 11100; w < 12000; w += 60) {
		q.from = w;
		q.to = w + 60;
		assert_true(check_query(s, t, n, &q) > 0);
		q.from = w + 1;
		{
			struct got g = { 0 };

			assert_int_equal(store__query_stacks(s, &q, collect, &g), 0);
			assert_int_equal(g.calls, 0);
		}
	}
	/* Windows not old enough keep their resolution. */
	for (w = 12000; w < 12100; w += 10) {
		q.from = w;
		q.to = w + 10;
		assert_true(check_query(s, t, n, &q) > 0);
	}

	/* A late batch below the watermark lands in its bucket; a rerun changes nothing. */
	b = one_batch("agent-late", 1, 11130, labelsets[1], stack_pool[2], 11);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	tbatch_free(b);
	t = realloc(t, (n + 1) * sizeof(*t));
	assert_non_null(t);
	t[n] = (struct tuple){ .ls = 1, .stack = 2, .count = 11, .window = 11100 };
	n++;
	assert_int_equal(store__maintain(s, 12100, 0, &more), 0);
	assert_false(more);
	q.from = 11100;
	q.to = 11160;
	check_query(s, t, n, &q);
	q.from = 11101;
	{
		struct got g = { 0 };

		assert_int_equal(store__query_stacks(s, &q, collect, &g), 0);
		assert_int_equal(g.calls, 0);
	}
	q.from = 11100;
	q.to = INT64_MAX;
	check_query(s, t, n, &q);

	/* Retention of everything, then of the (agent, seq) memory. */
	do
		assert_int_equal(store__maintain(s, 100000, 3, &more), 0);
	while (more);
	assert_int_equal(store__stats(s, &st1), 0);
	assert_int_equal(st1.sample_rows, 0);
	b = one_batch("agent-a", 1, 10000, labelsets[1], stack_pool[2], 11);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	assert_false(dup); /* forgotten after retention */
	tbatch_free(b);
	close_checked(s);

	if (fx->file) {
		s = fx_open(fx, &opts);
		assert_int_equal(store__stats(s, &st1), 0);
		assert_int_equal(st1.sample_rows, 1);
		assert_int_equal(st1.coarse_before, 12000);
		close_checked(s);
	}
	free(t);
}

/* Size of the samples a test_size batch holds: 300 draws from SIZE_STACKS stacks,
 * each stack with one label set. */
#define SIZE_STACKS 2000
#define SIZE_DRAWS  300
/* Bytes of database a sample row may cost once its stack and label set are stored:
 * the row is a WITHOUT ROWID b-tree cell of four small integers (window_start in 4
 * bytes, label set and stack ids in 1 to 2, value in 1, a 5-byte record header,
 * 1-byte payload size, 2-byte cell pointer: about 16 bytes), with pages partly
 * filled. A rowid table with a separate primary-key index, or a stack stored per
 * row, would be well past it. */
#define SAMPLE_ROW_MAX_BYTES 32

/* What the store must hold after test_size's ingests, counted here. */
struct size_seen {
	bool stack[SIZE_STACKS]; /* stacks ever ingested */
	uint64_t rows, stacks, batches;
};

/* Ingests batches [first, first + n) of test_size: batch i is window
 * 1700000000 + 10 i. A stack is one row per window (repeats in a batch add up),
 * so rows grow by the distinct stacks of each batch. */
static void size_ingest(struct store *s, int first, int n, struct size_seen *seen)
{
	char stack[512];
	int i, j;

	for (i = first; i < first + n; i++) {
		bool in_batch[SIZE_STACKS] = { false };
		struct batch *b;
		struct tb tb;
		bool dup;

		tb_init(&tb, "agent-a", (uint64_t)i + 1, 1700000000 + 10 * i);
		for (j = 0; j < SIZE_DRAWS; j++) {
			int k = (int)(rnd() % SIZE_STACKS);

			snprintf(stack, sizeof(stack),
				 "svc%d;_start;__libc_start_main;main;run_loop;dispatch_%d;"
				 "handler_%d;parse_%d;alloc_%d;entry_SYSCALL_64_[k];"
				 "do_syscall_64_[k];sys_%d_[k]",
				 k % 8, k % 50, k % 200, k, k % 30, k % 40);
			tb_add(&tb, labelsets[1 + k % 4], stack, 1 + rnd() % 20);
			seen->rows += !in_batch[k];
			seen->stacks += !seen->stack[k];
			in_batch[k] = seen->stack[k] = true;
		}
		b = tb_finish(&tb);
		assert_int_equal(store__ingest(s, b, &dup), 0);
		assert_false(dup);
		tbatch_free(b);
		seen->batches++;
	}
}

/* Rows and dictionary hold exactly what was ingested, and once the stacks are
 * known (a second set of 100 batches over the same stacks) each new sample row
 * costs at most SAMPLE_ROW_MAX_BYTES of database. */
static void test_size(void **state)
{
	struct fixture *fx = *state;
	struct size_seen seen = { 0 };
	struct store_stats st1, st2;
	struct store *s;
	double per_row;

	s = fx_open(fx, NULL);
	size_ingest(s, 0, 100, &seen);
	assert_int_equal(store__stats(s, &st1), 0);
	assert_int_equal(st1.sample_rows, seen.rows);
	assert_int_equal(st1.stacks, seen.stacks);
	assert_int_equal(st1.batches, seen.batches);
	assert_int_equal(st1.labelsets, 4); /* labelsets[1..4], by k % 4 */
	assert_true(seen.rows > 20000);	    /* the minimum the bound below is measured on */

	size_ingest(s, 100, 100, &seen);
	assert_int_equal(store__stats(s, &st2), 0);
	assert_int_equal(st2.sample_rows, seen.rows);
	assert_int_equal(st2.stacks, seen.stacks);
	assert_int_equal(st2.batches, seen.batches);
	assert_true(st2.db_bytes > st1.db_bytes);
	per_row =
		(double)(st2.db_bytes - st1.db_bytes) / (double)(st2.sample_rows - st1.sample_rows);
	print_message("store (%s): %" PRIu64 " sample rows, %" PRIu64 " stacks, %" PRIu64
		      " bytes, %.1f bytes per sample row; the second 100 batches: %.1f bytes "
		      "per new row\n",
		      fx->file ? "file" : "memory", st2.sample_rows, st2.stacks, st2.db_bytes,
		      (double)st2.db_bytes / (double)st2.sample_rows, per_row);
	assert_true(per_row <= SAMPLE_ROW_MAX_BYTES);
	close_checked(s);
}

struct series {
	int64_t start[64];
	uint64_t count[64];
	size_t n;
};

static int collect_series(void *ctx, int64_t bucket, uint64_t count)
{
	struct series *sr = ctx;

	assert_true(sr->n < 64);
	sr->start[sr->n] = bucket;
	sr->count[sr->n++] = count;
	return 0;
}

struct texts {
	char items[32][64];
	size_t n;
};

static int collect_text(void *ctx, const char *text)
{
	struct texts *t = ctx;

	assert_true(t->n < 32);
	snprintf(t->items[t->n++], sizeof(t->items[0]), "%s", text);
	return 0;
}

/* The timeline: samples per step-long bucket, against sums computed here from
 * the generated tuples; and the label keys and values of a range. */
static void test_series_and_labels(void **state)
{
	struct fixture *fx = *state;
	const char *keys[] = { "service" }, *values[] = { "api" };
	struct store_query q = {
		.from = 1005, .to = 1075, .keys = keys, .values = values, .nlabels = 1
	};
	uint64_t want[8] = { 0 };
	struct series sr = { 0 };
	struct texts tx = { 0 };
	struct tuple *t;
	struct store *s;
	size_t n, i;

	make_stack_pool();
	t = gen_tuples(1000, 8, 40, &n); /* windows 1000, 1010, ... 1070 */
	s = fx_open(fx, NULL);
	ingest_tuples(s, t, n);
	/* 20 s buckets from 1005: windows 1010,1020 | 1030,1040 | 1050,1060 | 1070 */
	for (i = 0; i < n; i++)
		if (t[i].window >= q.from && t[i].window < q.to &&
		    ls_matches(labelsets[t[i].ls], keys, values, 1))
			want[(t[i].window - q.from) / 20] += t[i].count;
	assert_int_equal(store__query_series(s, &q, 20, collect_series, &sr), 0);
	assert_int_equal(sr.n, 4);
	for (i = 0; i < sr.n; i++) {
		assert_int_equal(sr.start[i], q.from + 20 * (int64_t)i);
		assert_int_equal(sr.count[i], want[i]);
	}
	assert_int_equal(store__query_series(s, &q, 0, collect_series, &sr), -EINVAL);

	assert_int_equal(store__labels(s, &(struct store_query){ .from = 0, .to = INT64_MAX },
				       collect_text, &tx),
			 0);
	assert_int_equal(tx.n, 3);
	assert_string_equal(tx.items[0], "service");
	assert_string_equal(tx.items[1], "version");
	assert_string_equal(tx.items[2], "zone");
	tx.n = 0;
	assert_int_equal(store__label_values(s, "service",
					     &(struct store_query){ .from = 0, .to = INT64_MAX },
					     collect_text, &tx),
			 0);
	assert_int_equal(tx.n, 3);
	assert_string_equal(tx.items[0], "api");
	assert_string_equal(tx.items[1], "db");
	assert_string_equal(tx.items[2], "worker");
	tx.n = 0; /* no samples in the range: no keys */
	assert_int_equal(store__labels(s, &(struct store_query){ .from = 5000, .to = 6000 },
				       collect_text, &tx),
			 0);
	assert_int_equal(tx.n, 0);
	close_checked(s);
	free(t);
}

/* ---- issue 9: what arrives on the wire is not trusted ---------------------- */

/* Runs sql on the file at path through a connection of the test's own. */
static void sql_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg ? msg : "?");
	sqlite3_close(db);
}

static int64_t sql_int(const char *path, const char *sql)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	int64_t v;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* Replaces the text of string `old` in b (a frame name the test chose). */
static void replace_string(struct batch *b, const char *old, const char *text)
{
	uint32_t i;

	for (i = 0; i < b->nstrings; i++)
		if (!strcmp(b->strings[i], old)) {
			free(b->strings[i]);
			b->strings[i] = strdup(text);
			assert_non_null(b->strings[i]);
			return;
		}
	fail_msg("no string %s", old);
}

struct clean_check {
	int stacks;
	size_t nframes;
	uint64_t count;
};

static int check_clean(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct clean_check *c = ctx;
	size_t i, j;

	c->stacks++;
	c->nframes = nframes;
	c->count = count;
	for (i = 0; i < nframes; i++) {
		const struct frame *f = &frames[i];

		assert_true(f->name_len <= FRAME_MAX_NAME_LEN);
		assert_true(f->file_len <= FRAME_MAX_NAME_LEN);
		for (j = 0; j < f->name_len; j++)
			if (f->name[j] == ';' || (unsigned char)f->name[j] < 0x20)
				fail_msg("frame %zu: byte %zu of its name is 0x%02x", i, j,
					 (unsigned char)f->name[j]);
		for (j = 0; j < f->file_len; j++)
			assert_true(f->file[j] != ';' && (unsigned char)f->file[j] >= 0x20);
	}
	return 0;
}

/* Issue 9, item 5: frame names of 4 096 ';', a newline, a whole forged folded
 * line, and a 2 000-byte UTF-8 name are stored sanitized and cut, so the stack
 * stays three frames and one line whatever its names. */
static void test_hostile_names(void **state)
{
	struct fixture *fx = *state;
	struct store_query q = { .from = 0, .to = INT64_MAX };
	const char *hostile[4];
	char semis[4097], longname[2001];
	struct clean_check c;
	struct batch *b;
	struct store *s;
	bool dup;
	int i;

	memset(semis, ';', 4096);
	semis[4096] = '\0';
	for (i = 0; i < 1000; i++)
		memcpy(longname + 2 * i, "\xc3\xa9", 2); /* e acute, 2 bytes */
	longname[2000] = '\0';
	hostile[0] = semis;
	hostile[1] = "line\none";
	hostile[2] = "x 1\nforged;stack;line 99\nmore";
	hostile[3] = longname;
	s = fx_open(fx, NULL);
	for (i = 0; i < 4; i++) {
		b = one_batch("agent-h", (uint64_t)i + 1, 1000 + 10 * i, "k=v",
			      "proc;outer;HOSTILE", 5);
		replace_string(b, "HOSTILE", hostile[i]);
		if (i == 1)
			replace_string(b, "proc", "pr\toc\x7f");
		assert_int_equal(store__ingest(s, b, &dup), 0);
		tbatch_free(b);

		memset(&c, 0, sizeof(c));
		q.from = 1000 + 10 * i;
		q.to = q.from + 1;
		assert_int_equal(store__query_stacks(s, &q, check_clean, &c), 0);
		assert_int_equal(c.stacks, 1);
		assert_int_equal(c.nframes, 3);
		assert_int_equal(c.count, 5);
	}
	close_checked(s);
}

/* Issue 9, item 3: counts of 2^62 are refused at ingest, and rows that hold sums
 * past INT64_MAX (planted through SQLite, as many capped batches could make them)
 * neither fail a query nor stop maintenance: sums saturate. */
static void test_count_overflow(void **state)
{
	struct fixture *fx = *state;
	struct store_options o = { .retention_seconds = 100000,
				   .downsample_after_seconds = 100,
				   .coarse_window_seconds = 60 };
	struct store_query q = { .from = 0, .to = INT64_MAX };
	struct clean_check c = { 0 };
	struct series sr = { 0 };
	struct store_stats st;
	struct batch *b;
	struct store *s;
	bool dup, more = true;

	s = fx_open(fx, &o);
	/* the recipe: two batches of 2^62 in one bucket */
	b = one_batch("agent-o", 1, 1020, "k=v", "proc;f", UINT64_C(1) << 62);
	assert_int_equal(store__ingest(s, b, &dup), -EINVAL);
	assert_non_null(strstr(store__errmsg(s), "out of range"));
	tbatch_free(b);
	b = one_batch("agent-o", 1, 1020, "k=v", "proc;f", BATCH_MAX_COUNT);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	tbatch_free(b);
	b = one_batch("agent-o", 2, 1030, "k=v", "proc;f", BATCH_MAX_COUNT);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	tbatch_free(b);
	sql_exec(fx_path(fx), "UPDATE samples SET value = 4611686018427387904"); /* 2^62 */
	b = one_batch("agent-o", 3, 1040, "k=v", "proc;f", 1);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	tbatch_free(b);
	sql_exec(fx_path(fx), "UPDATE samples SET value = 9223372036854775807 "
			      "WHERE window_start = 1040");
	/* 2^62 + 2^62 + INT64_MAX: every query answers, saturated */
	assert_int_equal(store__query_stacks(s, &q, check_clean, &c), 0);
	assert_int_equal(c.count, INT64_MAX);
	assert_int_equal(store__query_series(s, &q, 1 << 30, collect_series, &sr), 0);
	assert_int_equal(sr.n, 1);
	assert_int_equal(sr.count[0], INT64_MAX);
	/* ingest into a saturated row saturates too */
	b = one_batch("agent-o", 4, 1040, "k=v", "proc;f", 7);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	tbatch_free(b);
	/* maintenance merges the three windows into one saturated row */
	while (more)
		assert_int_equal(store__maintain(s, 5000, 0, &more), 0);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.sample_rows, 1);
	assert_int_equal(sql_int(fx_path(fx), "SELECT value FROM samples"), INT64_MAX);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store__query_stacks(s, &q, check_clean, &c), 0);
	assert_int_equal(c.count, INT64_MAX);
	close_checked(s);
}

/* Issue 9, item 4: retention and downsampling are separate transactions. A
 * trigger planted in the file makes every downsampling fail; retention still
 * deletes, and the error names the step. */
static void test_maintain_steps_independent(void **state)
{
	struct fixture *fx = *state;
	struct store_options o = { .retention_seconds = 1000,
				   .downsample_after_seconds = 100,
				   .coarse_window_seconds = 60 };
	struct store_stats st;
	struct batch *b;
	struct store *s;
	bool dup, more;
	int i;

	s = fx_open(fx, &o);
	for (i = 0; i < 20; i++) {
		b = one_batch("agent-m", (uint64_t)i + 1, 10000 + 100 * i, "k=v", "proc;f", 1);
		assert_int_equal(store__ingest(s, b, &dup), 0);
		tbatch_free(b);
	}
	sql_exec(fx_path(fx), "CREATE TRIGGER planted BEFORE UPDATE OF coarse_before ON state "
			      "BEGIN SELECT RAISE(ABORT, 'planted failure'); END");
	/* now 12000: windows below 11000 expire (10), [11000, 11880) would merge */
	assert_int_equal(store__maintain(s, 12000, 0, &more), -EINVAL);
	assert_non_null(strstr(store__errmsg(s), "downsampling: planted failure"));
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.sample_rows, 10);
	assert_int_equal(sql_int(fx_path(fx), "SELECT count(*) FROM samples"), 10);
	assert_int_equal(sql_int(fx_path(fx), "SELECT count(*) FROM ingested"), 10);
	assert_int_equal(sql_int(fx_path(fx), "SELECT min(window_start) FROM samples"), 11000);
	assert_true(st.coarse_before == INT64_MIN);
	/* and once the trigger is gone, downsampling catches up */
	sql_exec(fx_path(fx), "DROP TRIGGER planted");
	do
		assert_int_equal(store__maintain(s, 12000, 0, &more), 0);
	while (more);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.sample_rows, sql_int(fx_path(fx), "SELECT count(*) FROM samples"));
	assert_true(st.coarse_before > 11000 && st.coarse_before <= 11880);
	close_checked(s);
}

/* Issue 9, item 8: windows outside [now - retention, now + 1 h] are refused with
 * -ERANGE and the bounds; both edges are in. store__ingest() refuses only the
 * absurd (+-9e18). */
static void test_window_bounds(void **state)
{
	struct fixture *fx = *state;
	struct store_options o = { .retention_seconds = 86400 };
	const int64_t now = 1700000000;
	const int64_t lo = now - 86400, hi = now + STORE_MAX_FUTURE_SECONDS;
	struct {
		int64_t window;
		int err;
	} cases[] = {
		{ lo - 1, -ERANGE },
		{ lo, 0 },
		{ now, 0 },
		{ hi, 0 },
		{ hi + 1, -ERANGE },
		{ INT64_MAX - 5, -ERANGE },
		{ INT64_MIN, -ERANGE },
	};
	struct store_stats st;
	struct batch *b;
	struct store *s;
	char want[128];
	size_t i;
	bool dup;

	s = fx_open(fx, &o);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b = one_batch("agent-w", i + 1, cases[i].window, "k=v", "proc;f", 1);
		assert_int_equal(store__ingest_at(s, b, now, &dup), cases[i].err);
		if (cases[i].err) {
			snprintf(want, sizeof(want),
				 "window_start %" PRId64 " outside [%" PRId64 ", %" PRId64 "]",
				 cases[i].window, lo, hi);
			if (!strstr(store__errmsg(s), want))
				fail_msg("reason \"%s\" lacks \"%s\"", store__errmsg(s), want);
		}
		tbatch_free(b);
	}
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.batches, 3);
	/* store__ingest: any time a caller chose, but nothing near +-9e18 */
	b = one_batch("agent-w", 100, 1000, "k=v", "proc;f", 1);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	tbatch_free(b);
	b = one_batch("agent-w", 101, -9000000000000000000LL, "k=v", "proc;f", 1);
	assert_int_equal(store__ingest(s, b, &dup), -ERANGE);
	tbatch_free(b);
	b = one_batch("agent-w", 102, 9000000000000000000LL, "k=v", "proc;f", 1);
	assert_int_equal(store__ingest(s, b, &dup), -ERANGE);
	tbatch_free(b);
	close_checked(s);
}

/* Issue 9, item 8: the row count /metrics reads is kept by triggers, exact across
 * ingest, retention and downsampling. */
static void test_stats_counter(void **state)
{
	struct fixture *fx = *state;
	struct store_options o = { .retention_seconds = 1000,
				   .downsample_after_seconds = 100,
				   .coarse_window_seconds = 60 };
	struct store_stats st;
	struct tuple *t;
	struct store *s;
	bool more = true;
	size_t n;

	s = fx_open(fx, &o);
	t = gen_tuples(10000, 200, 12, &n);
	ingest_tuples(s, t, n);
	assert_int_equal(store__stats(s, &st), 0);
	assert_true(st.sample_rows > 100);
	assert_int_equal(st.sample_rows, sql_int(fx_path(fx), "SELECT count(*) FROM samples"));
	assert_int_equal(st.strings, sql_int(fx_path(fx), "SELECT count(*) FROM strings"));
	assert_int_equal(st.frames, sql_int(fx_path(fx), "SELECT count(*) FROM frames"));
	assert_int_equal(st.stacks, sql_int(fx_path(fx), "SELECT count(*) FROM stacks"));
	assert_int_equal(st.labelsets, sql_int(fx_path(fx), "SELECT count(*) FROM labelsets"));
	while (more) {
		assert_int_equal(store__maintain(s, 11500, 50, &more), 0);
		assert_int_equal(store__stats(s, &st), 0);
		assert_int_equal(st.sample_rows,
				 sql_int(fx_path(fx), "SELECT count(*) FROM samples"));
	}
	close_checked(s);
	free(t);
}

/* Issue 9, item 8: a new database and its -wal and -shm are 0600 whatever the
 * umask. */
static void test_file_modes(void **state)
{
	struct fixture *fx = *state;
	const char *suffix[] = { "", "-wal", "-shm" };
	char path[192];
	struct batch *b;
	struct store *s;
	struct stat sb;
	mode_t old;
	size_t i;
	bool dup;

	old = umask(0);
	s = fx_open(fx, NULL);
	umask(old);
	b = one_batch("agent-p", 1, 1000, "k=v", "proc;f", 1);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	tbatch_free(b);
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s%s", fx_path(fx), suffix[i]);
		assert_int_equal(stat(path, &sb), 0);
		if ((sb.st_mode & 0777) != 0600)
			fail_msg("%s has mode %o", path, (unsigned)(sb.st_mode & 0777));
	}
	close_checked(s);
}

/* ---- readers ------------------------------------------------------------------ */

/* What a reader's query saw; the callback ingests on the writer meanwhile. */
struct reader_probe {
	struct store *writer; /* NULL: no write during the read */
	struct batch *b;
	int write_err;
	uint64_t total;
};

static int probe_stack(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct reader_probe *p = ctx;
	bool dup;

	(void)frames;
	(void)nframes;
	p->total += count;
	if (p->writer) { /* a read statement is open on the reader right now */
		p->write_err = store__ingest(p->writer, p->b, &dup);
		p->writer = NULL;
	}
	return 0;
}

static uint64_t reader_total(struct store *r)
{
	struct store_query q = { .from = 0, .to = INT64_MAX };
	struct reader_probe p = { 0 };

	assert_int_equal(store__query_stacks(r, &q, probe_stack, &p), 0);
	return p.total;
}

/* A reader (read_only) sees what the writer committed, cannot write, is not
 * blocked by a write transaction in progress (nor sees it), and does not block
 * the writer while it reads. It opens only a database the writer made: not a
 * missing file, not ":memory:", not a rollback journal. */
static void test_reader(void **state)
{
	struct fixture *fx = *state;
	struct store_options ro = { .read_only = true };
	struct store_query q = { .from = 0, .to = INT64_MAX };
	struct reader_probe p = { 0 };
	struct store *w, *r = NULL;
	struct store_stats st;
	struct batch *b;
	sqlite3 *raw = NULL;
	uint64_t t0;
	bool dup;

	assert_int_equal(store__open(fx_path(fx), &ro, &r), -ENOENT);
	assert_int_equal(store__open(":memory:", &ro, &r), -EINVAL);
	assert_null(r);
	w = fx_open(fx, NULL);
	b = one_batch("agent-r", 1, 1000, "k=v", "proc;f", 3);
	assert_int_equal(store__ingest(w, b, &dup), 0);
	tbatch_free(b);

	r = fx_open(fx, &ro);
	assert_int_equal(reader_total(r), 3);
	b = one_batch("agent-r", 2, 1000, "k=v", "proc;g", 4);
	assert_int_equal(store__ingest(r, b, &dup), -EROFS);
	assert_int_equal(reader_total(r), 3);

	/* the writer commits while a read statement is open: neither waits, and the
	 * read goes on with what was committed when it started */
	p.writer = w;
	p.b = b;
	t0 = test_now_ms();
	assert_int_equal(store__query_stacks(r, &q, probe_stack, &p), 0);
	assert_int_equal(p.write_err, 0);
	assert_int_equal(p.total, 3);
	assert_true(test_now_ms() - t0 < STORE_BUSY_TIMEOUT_MS / 2);
	assert_int_equal(reader_total(r), 7);
	tbatch_free(b);

	/* a write transaction in progress on another connection: the reader reads
	 * at once, without it */
	assert_int_equal(sqlite3_open(fx_path(fx), &raw), SQLITE_OK);
	assert_int_equal(sqlite3_exec(raw,
				      "BEGIN IMMEDIATE; UPDATE state SET batches = batches + 100 "
				      "WHERE id = 1",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	t0 = test_now_ms();
	assert_int_equal(store__stats(r, &st), 0);
	assert_int_equal(st.batches, 2);
	assert_int_equal(reader_total(r), 7);
	assert_true(test_now_ms() - t0 < STORE_BUSY_TIMEOUT_MS / 2);
	assert_int_equal(sqlite3_exec(raw, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(raw);
	assert_int_equal(store__stats(r, &st), 0);
	assert_int_equal(st.batches, 102);
	store__close(r);
	close_checked(w);

	/* a reader needs WAL: in a rollback journal its reads would block commits */
	sql_exec(fx_path(fx), "PRAGMA journal_mode = DELETE");
	r = NULL;
	assert_int_equal(store__open(fx_path(fx), &ro, &r), -EINVAL);
	assert_null(r);
	/* and every migration applied: a reader cannot apply them */
	sql_exec(fx_path(fx), "PRAGMA journal_mode = WAL; PRAGMA user_version = 0");
	assert_int_equal(store__open(fx_path(fx), &ro, &r), -EPROTO);
	assert_null(r);
}

/* ---- issue 11: labels and label values honour the selection ---------------- */

/* The sorted distinct keys (key NULL) or values of key among the label sets of
 * the tuples in q's range that hold q's labels, computed from the tuples. */
static void expected_texts(const struct tuple *t, size_t n, const struct store_query *q,
			   const char *key, struct texts *out)
{
	size_t i, j, k;

	out->n = 0;
	for (i = 0; i < n; i++) {
		char copy[128], *tok, *save = NULL;

		if (t[i].window < q->from || t[i].window >= q->to ||
		    !ls_matches(labelsets[t[i].ls], q->keys, q->values, q->nlabels))
			continue;
		snprintf(copy, sizeof(copy), "%s", labelsets[t[i].ls]);
		for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '='), *text;

			*eq = '\0';
			if (key && strcmp(tok, key) != 0)
				continue;
			text = key ? eq + 1 : tok;
			for (j = 0; j < out->n && strcmp(out->items[j], text) < 0; j++)
				;
			if (j < out->n && strcmp(out->items[j], text) == 0)
				continue;
			assert_true(out->n < 32);
			for (k = out->n++; k > j; k--)
				memcpy(out->items[k], out->items[k - 1], sizeof(out->items[0]));
			snprintf(out->items[j], sizeof(out->items[0]), "%s", text);
		}
	}
}

static void assert_texts_equal(const struct texts *got, const struct texts *want)
{
	size_t i;

	assert_int_equal(got->n, want->n);
	for (i = 0; i < got->n; i++)
		assert_string_equal(got->items[i], want->items[i]);
}

/* store__labels and store__label_values with a selection answer only for the
 * label sets it picks (before issue 11 they took no selection at all), against
 * what the tuples say; a selection nothing holds answers nothing. And
 * store__label_key_used, the cheap probe of one key in a range. */
static void test_labels_where(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *keys[2], *values[2];
		size_t n;
		const char *value_of; /* the key whose values are listed */
	} cases[] = {
		{ { "service" }, { "api" }, 1, "zone" },
		{ { "service" }, { "worker" }, 1, "zone" },
		{ { "zone" }, { "b" }, 1, "service" },
		{ { "service", "zone" }, { "db", "b" }, 2, "version" },
		{ { "service" }, { "nobody" }, 1, "service" },
		{ { "srvice" }, { "api" }, 1, "service" },
		{ { 0 }, { 0 }, 0, "service" },
	};
	struct texts got, want;
	struct tuple *t;
	struct store *s;
	size_t n, i;

	make_stack_pool();
	t = gen_tuples(1000, 8, 40, &n);
	s = fx_open(fx, NULL);
	ingest_tuples(s, t, n);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct store_query q = { .from = 1010,
					 .to = 1060,
					 .keys = cases[i].keys,
					 .values = cases[i].values,
					 .nlabels = cases[i].n };

		got.n = 0;
		assert_int_equal(store__labels(s, &q, collect_text, &got), 0);
		expected_texts(t, n, &q, NULL, &want);
		assert_texts_equal(&got, &want);
		if (i == 0) /* api's label sets have no version */
			assert_int_equal(got.n, 2);
		got.n = 0;
		assert_int_equal(store__label_values(s, cases[i].value_of, &q, collect_text, &got),
				 0);
		expected_texts(t, n, &q, cases[i].value_of, &want);
		assert_texts_equal(&got, &want);
		if (i == 1) /* the worker lives in zone a only */
			assert_true(got.n == 1 && strcmp(got.items[0], "a") == 0);
	}
	/* an empty range, and a bad selection */
	got.n = 0;
	assert_int_equal(store__labels(s, &(struct store_query){ .from = 1060, .to = 1060 },
				       collect_text, &got),
			 0);
	assert_int_equal(got.n, 0);
	assert_int_equal(store__labels(s, &(struct store_query){ .from = 0, .to = 1, .nlabels = 1 },
				       collect_text, &got),
			 -EINVAL);
	assert_int_equal(
		store__label_values(s, NULL, &(struct store_query){ .to = 1 }, collect_text, &got),
		-EINVAL);
	/* a key in use in the range, one out of it, one nobody has, an empty range */
	assert_int_equal(store__label_key_used(s, "zone", 1010, 1060), 1);
	assert_int_equal(store__label_key_used(s, "service", 1070, 1080), 1);
	assert_int_equal(store__label_key_used(s, "service", 2000, 3000), 0);
	assert_int_equal(store__label_key_used(s, "srvice", 0, INT64_MAX), 0);
	assert_int_equal(store__label_key_used(s, "zone", 1060, 1060), 0);
	assert_int_equal(store__label_key_used(s, NULL, 0, 1), -EINVAL);
	close_checked(s);
	free(t);
}

int main(void)
{
	static struct fixture mem = { .file = false }, file = { .file = true };
#define BOTH(fn)                                                                                   \
	cmocka_unit_test_prestate_setup_teardown(fn, NULL, fx_teardown, &mem),                     \
		cmocka_unit_test_prestate_setup_teardown(fn, NULL, fx_teardown, &file)
#define FILE_ONLY(fn) cmocka_unit_test_prestate_setup_teardown(fn, NULL, fx_teardown, &file)
	const struct CMUnitTest tests[] = {
		FILE_ONLY(test_jit_frames), BOTH(test_migrations), BOTH(test_roundtrip),
		BOTH(test_duplicate), BOTH(test_failed_ingest), BOTH(test_maintain),
		BOTH(test_size), BOTH(test_series_and_labels), BOTH(test_hostile_names),
		BOTH(test_window_bounds),
		/* these plant rows or read the file through a second connection */
		FILE_ONLY(test_count_overflow), FILE_ONLY(test_maintain_steps_independent),
		FILE_ONLY(test_stats_counter), FILE_ONLY(test_file_modes), FILE_ONLY(test_reader),
		BOTH(test_labels_where), /* issue 11 */
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
