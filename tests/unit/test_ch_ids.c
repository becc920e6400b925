/* store/clickhouse/ids.c's memo of stacks' content ids: every id it hands out, hit or
 * miss, equals the stored definition computed here on its own (FNV-1a over each
 * frame's kind, line, name and file as 8-byte little-endian numbers and
 * length-prefixed texts, root first, then the SplitMix64 finalizer:
 * docs/store.md "ClickHouse"), whatever the batch-local indices. Batches name the
 * same stacks in other orders (hits), strings repeat within a batch, texts that
 * only their boundaries tell apart, texts stored sanitized; a memo at the
 * smallest cap empties itself in the middle of batches and must still be exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "store/clickhouse/ids.h"
#include "store/intern.h"

#define NFUNCS	   90
#define NSTACKS	   400
#define NBATCHES   6
#define MAX_DEPTH  40
#define LABEL_KEYS 1

/* ---- the definition, written here ------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *d, size_t n)
{
	const unsigned char *p = d;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t fnv_le64(uint64_t h, uint64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	return fnv(h, b, 8);
}

static uint64_t fnv_text(uint64_t h, const char *t)
{
	char buf[FRAME_MAX_NAME_LEN + 1];
	size_t n = frame_sanitize(t ? t : "", strlen(t ? t : ""), buf);

	return fnv(fnv_le64(h, n), buf, n);
}

static uint64_t reference_id(const struct batch *b, uint32_t i)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint32_t j = 0; j < b->stacks[i].nframes; j++) {
		const struct batch_frame *f = &b->frames[b->stacks[i].frames[j]];

		h = fnv_le64(fnv_le64(h, f->kind), f->line);
		h = fnv_text(fnv_text(h, b->strings[f->name]), b->strings[f->file]);
	}
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

/* ---- stacks: random, with shared prefixes ------------------------------------ */

struct corpus {
	char funcs[NFUNCS][48];
	struct frame stacks[NSTACKS][MAX_DEPTH];
	size_t depth[NSTACKS];
};

static unsigned rnd(unsigned *seed, unsigned n)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 8) % n;
}

static bool same_stack(const struct corpus *c, size_t a, size_t b)
{
	if (c->depth[a] != c->depth[b])
		return false;
	for (size_t j = 0; j < c->depth[a]; j++) {
		const struct frame *x = &c->stacks[a][j], *y = &c->stacks[b][j];

		if (x->kind != y->kind || x->line != y->line || strcmp(x->name, y->name) ||
		    strcmp(x->file, y->file))
			return false;
	}
	return true;
}

/* Stack s: half of them deep, a prefix of an earlier stack then frames of their
 * own; half of them 2 to 4 frames, so that many have the same shape (kinds,
 * lines, lengths of texts) with other texts. */
static void stack_make(struct corpus *c, size_t s, unsigned *seed)
{
	size_t from = s ? rnd(seed, (unsigned)s) : 0, keep = 1;

	if (s % 2)
		keep = rnd(seed, (unsigned)c->depth[from]);
	c->depth[s] = s % 2 ? keep + 1 + rnd(seed, MAX_DEPTH - (unsigned)keep) : 2 + rnd(seed, 3);
	memcpy(c->stacks[s], c->stacks[from], keep * sizeof(struct frame));
	c->stacks[s][0] =
		(struct frame){ .kind = FRAME_PROCESS, .name = "proc", .name_len = 4, .file = "" };
	for (size_t j = keep ? keep : 1; j < c->depth[s]; j++) {
		unsigned fn = rnd(seed, NFUNCS), kind = rnd(seed, 3);

		c->stacks[s][j] = (struct frame){
			.kind = kind == 0   ? FRAME_PYTHON
				: kind == 1 ? FRAME_NATIVE
					    : FRAME_KERNEL,
			.name = c->funcs[fn],
			.name_len = strlen(c->funcs[fn]),
			.file = kind == 0 ? "app/file.py" : "",
			.file_len = kind == 0 ? 11 : 0,
			.line = kind == 0 ? 1 + rnd(seed, 2) : 0,
		};
	}
}

static void corpus_make(struct corpus *c, unsigned seed)
{
	for (size_t f = 0; f < NFUNCS; f++) {
		/* some names need sanitizing: a control byte, an invalid UTF-8 byte */
		const char *odd = f % 13 == 0 ? "\x01" : f % 17 == 0 ? "\xff" : "";

		snprintf(c->funcs[f], sizeof(c->funcs[f]), "mod%zu.func_%zu%s", f % 7, f, odd);
	}
	for (size_t s = 0; s < NSTACKS; s++) {
		bool again;

		do { /* each stack's content once: the builder would merge copies */
			stack_make(c, s, &seed);
			again = false;
			for (size_t t = 0; t < s && !again; t++)
				again = same_stack(c, s, t);
		} while (again);
	}
}

/* A batch of the stacks picked (n of them, in this order). */
static struct batch *batch_of(const struct corpus *c, const size_t *pick, size_t n)
{
	static const char *const keys[LABEL_KEYS] = { "comm" }, *const values[LABEL_KEYS] = {
		"proc"
	};
	struct batch_builder *bb;
	struct batch *b;

	assert_int_equal(batch_builder__new("agent", "host", "cpu", &bb), 0);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(batch_builder__add_frames(bb, keys, values, LABEL_KEYS,
							   c->stacks[pick[k]], c->depth[pick[k]],
							   1 + k),
				 0);
	assert_int_equal(batch_builder__finish(bb, 1, 1700000000, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	assert_int_equal(b->nstacks, n);
	return b;
}

/* Every stack of b through the memo, each against the definition; returns the
 * misses this batch cost. */
static uint64_t check_batch(struct ch_ids *m, const struct batch *b)
{
	uint64_t *ids = calloc(b->nstacks, sizeof(*ids));
	uint64_t hits = m->hits, misses = m->misses;

	assert_non_null(ids);
	assert_int_equal(ch_ids_stacks(m, b, NULL, ids), 0);
	for (uint32_t i = 0; i < b->nstacks; i++)
		assert_true(ids[i] == reference_id(b, i));
	assert_true(m->hits - hits + m->misses - misses == b->nstacks);
	free(ids);
	return m->misses - misses;
}

static void shuffle(size_t *v, size_t n, unsigned *seed)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = rnd(seed, (unsigned)i), t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* Batches of random subsets, in random orders: the first meets every stack it
 * names, a later one only those no batch named before; the last names them all
 * again and hashes none. */
static void run_batches(size_t cap, bool expect_warm)
{
	struct corpus *c = calloc(1, sizeof(*c));
	struct ch_ids m = { .cap = cap };
	size_t pick[NSTACKS];
	bool met[NSTACKS] = { 0 };
	unsigned seed = 7;

	assert_non_null(c);
	corpus_make(c, 11);
	for (int round = 0; round <= NBATCHES; round++) {
		size_t n = round == NBATCHES ? NSTACKS : 60 + rnd(&seed, 200), fresh = 0;
		struct batch *b;

		for (size_t k = 0; k < NSTACKS; k++)
			pick[k] = k;
		shuffle(pick, NSTACKS, &seed);
		for (size_t k = 0; k < n; k++)
			fresh += !met[pick[k]];
		b = batch_of(c, pick, n);
		uint64_t misses = check_batch(&m, b);

		/* the builder interns stacks by content: n distinct ones here */
		if (expect_warm)
			assert_int_equal(misses, fresh);
		else
			assert_true(misses >= fresh);
		for (size_t k = 0; k < n; k++)
			met[pick[k]] = true;
		batch__free(b);
	}
	if (!expect_warm)
		assert_true(m.misses > NSTACKS); /* the cap emptied it: stacks hashed again */
	ch_ids_free(&m);
	free(c);
}

static void test_memo_default_cap(void **state)
{
	(void)state;
	run_batches(0, true);
}

static void test_memo_smallest_cap(void **state)
{
	(void)state;
	run_batches(STORE_INTERN_MIN_CAP, false);
}

/* A batch by hand, as a hostile or odd agent may send it: one text at two
 * indices, texts split differently between name and file, frames that differ
 * only by line, kind or file; used[] leaves stacks out. */
static void test_memo_odd_batch(void **state)
{
	char *strings[] = { "", "ab", "c", "a", "bc", "ab", "c", "x\x01\xffy" };
	struct batch_frame frames[] = {
		{ FRAME_PROCESS, 1, 0, 0 }, /* 0: "ab" */
		{ FRAME_PYTHON, 1, 2, 3 },  /* 1: ("ab", "c", 3) */
		{ FRAME_PYTHON, 3, 4, 3 },  /* 2: ("a", "bc", 3) */
		{ FRAME_PYTHON, 5, 6, 3 },  /* 3: 1's texts at other indices */
		{ FRAME_PYTHON, 1, 2, 4 },  /* 4: 1 but the line */
		{ FRAME_NATIVE, 1, 2, 3 },  /* 5: 1 but the kind */
		{ FRAME_PYTHON, 7, 2, 3 },  /* 6: a name stored sanitized */
		{ FRAME_PYTHON, 1, 4, 3 },  /* 7: 1 but the file */
	};
	uint32_t f[][3] = {
		{ 0, 1 }, { 0, 2 }, { 0, 3 }, { 0, 4 }, { 0, 5 }, { 0, 6, 2 }, { 0, 7 }
	};
	struct batch_stack stacks[7];
	struct batch b = { .strings = strings,
			   .nstrings = 8,
			   .frames = frames,
			   .nframes = 8,
			   .stacks = stacks,
			   .nstacks = 7 };
	uint8_t used[7] = { 1, 1, 1, 1, 1, 0, 1 };
	uint64_t ids[7], again[7];
	struct ch_ids m = { 0 };

	(void)state;
	for (int i = 0; i < 7; i++)
		stacks[i] = (struct batch_stack){ f[i], i == 5 ? 3 : 2 };
	memset(ids, 0xab, sizeof(ids));
	assert_int_equal(ch_ids_stacks(&m, &b, used, ids), 0);
	for (int i = 0; i < 7; i++)
		if (i != 5)
			assert_true(ids[i] == reference_id(&b, (uint32_t)i));
	assert_true(ids[5] == 0xababababababababull); /* not used: not written */
	assert_true(ids[0] != ids[1] && ids[0] == ids[2] && ids[0] != ids[3] && ids[0] != ids[4] &&
		    ids[0] != ids[6] && ids[1] != ids[6]);
	/* stack 2 is stack 0's content at other indices: found, not hashed */
	assert_int_equal(m.misses, 5);
	assert_int_equal(m.hits, 1);
	assert_int_equal(ch_ids_stacks(&m, &b, NULL, again), 0);
	for (int i = 0; i < 7; i++)
		assert_true(again[i] == reference_id(&b, (uint32_t)i));
	assert_int_equal(m.misses, 6);
	ch_ids_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memo_default_cap),
		cmocka_unit_test(test_memo_smallest_cap),
		cmocka_unit_test(test_memo_odd_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
