/* Unit tests of the batch builder (interning, frame kinds from folded text, label
 * order, caps), batch__stack_text() (the exact inverse of the builder's parsing)
 * and batch__validate() (each kind of bad index, with its reason). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "wire/batch.h"
#include "testutil.h"

static struct batch_builder *new_builder(void)
{
	struct batch_builder *bb = NULL;

	assert_int_equal(batch_builder__new("agent-1", "host-1", "cpu", &bb), 0);
	assert_non_null(bb);
	return bb;
}

static struct batch *finish(struct batch_builder *bb)
{
	struct batch *b = NULL;
	char why[256] = "";

	assert_int_equal(batch_builder__finish(bb, 7, 1700000000, 10, 10101010, &b), 0);
	assert_non_null(b);
	if (batch__validate(b, why, sizeof(why)))
		fail_msg("built batch invalid: %s", why);
	return b;
}

static void assert_stack_text(const struct batch *b, uint32_t stack, const char *want)
{
	char buf[8192];
	size_t n = batch__stack_text(b, stack, buf, sizeof(buf));

	assert_string_equal(buf, want);
	assert_int_equal(n, strlen(want));
}

static void test_new_batch_has_header_strings(void **state)
{
	struct batch_builder *bb = new_builder();
	struct batch *b;

	(void)state;
	b = finish(bb);
	assert_int_equal(b->format_version, BATCH_FORMAT_VERSION);
	assert_string_equal(b->strings[0], "");
	assert_string_equal(b->strings[b->agent_id], "agent-1");
	assert_string_equal(b->strings[b->host], "host-1");
	assert_string_equal(b->strings[b->profile_type], "cpu");
	assert_int_equal(b->seq, 7);
	assert_int_equal(b->window_start, 1700000000);
	assert_int_equal(b->window_seconds, 10);
	assert_int_equal(b->period_ns, 10101010);
	assert_int_equal(b->nsamples, 0);
	batch__free(b);
	batch_builder__free(bb);
}

static void test_interning(void **state)
{
	const char *k[] = { "pid", "container" }, *v[] = { "42", "web" };
	const char *k2[] = { "pid" }, *v2[] = { "43" };
	struct batch_builder *bb = new_builder();
	struct batch *b;
	uint32_t i, nmain = 0;

	(void)state;
	assert_int_equal(batch_builder__add(bb, k, v, 2, "app;main;work;work", 3), 0);
	assert_int_equal(batch_builder__add(bb, k, v, 2, "app;main;work;work", 4), 0);
	assert_int_equal(batch_builder__add(bb, k, v, 2, "app;main;idle", 1), 0);
	assert_int_equal(batch_builder__add(bb, k2, v2, 1, "app;main;work;work", 5), 0);
	assert_int_equal(batch_builder__counter(bb, "lost", 9), 0);
	b = finish(bb);

	/* "work" twice in one stack is one frame; strings are stored once */
	for (i = 0; i < b->nstrings; i++)
		nmain += strcmp(b->strings[i], "main") == 0;
	assert_int_equal(nmain, 1);
	assert_int_equal(b->nframes, 4); /* app, main, work, idle */
	assert_int_equal(b->nstacks, 2);
	assert_int_equal(b->stacks[0].nframes, 4);
	assert_int_equal(b->stacks[0].frames[2], b->stacks[0].frames[3]);
	assert_int_equal(b->nlabelsets, 2);
	assert_int_equal(b->nsamples, 3);
	assert_int_equal(b->samples[0].count, 7); /* 3 + 4: same labels, same stack */
	assert_int_equal(b->samples[0].stack, b->samples[2].stack);
	assert_int_not_equal(b->samples[0].labelset, b->samples[2].labelset);
	assert_int_equal(b->samples[2].count, 5);
	assert_int_equal(b->ncounters, 1);
	assert_string_equal(b->strings[b->counters[0].name], "lost");
	assert_int_equal(b->counters[0].value, 9);
	assert_stack_text(b, b->samples[0].stack, "app;main;work;work");
	batch__free(b);
	batch_builder__free(bb);
}

static void test_label_order_independent(void **state)
{
	const char *k1[] = { "b", "a", "c" }, *v1[] = { "2", "1", "3" };
	const char *k2[] = { "c", "b", "a" }, *v2[] = { "3", "2", "1" };
	struct batch_builder *bb = new_builder();
	const struct batch_labelset *ls;
	struct batch *b;

	(void)state;
	assert_int_equal(batch_builder__add(bb, k1, v1, 3, "p;f", 1), 0);
	assert_int_equal(batch_builder__add(bb, k2, v2, 3, "p;f", 2), 0);
	b = finish(bb);
	assert_int_equal(b->nlabelsets, 1);
	assert_int_equal(b->nsamples, 1);
	assert_int_equal(b->samples[0].count, 3);
	ls = &b->labelsets[0];
	assert_int_equal(ls->nlabels, 3);
	assert_string_equal(b->strings[ls->labels[0].key], "a");
	assert_string_equal(b->strings[ls->labels[0].value], "1");
	assert_string_equal(b->strings[ls->labels[1].key], "b");
	assert_string_equal(b->strings[ls->labels[2].key], "c");
	assert_string_equal(b->strings[ls->labels[2].value], "3");
	batch__free(b);
	batch_builder__free(bb);
}

static void test_frame_kinds(void **state)
{
	static const struct {
		const char *text;
		uint32_t kind;
		const char *name, *file;
		uint32_t line;
	} cases[] = {
		{ "plain_fn", FRAME_NATIVE, "plain_fn", "", 0 },
		{ "libc.so.6+0x1234", FRAME_NATIVE, "libc.so.6+0x1234", "", 0 },
		{ "x_[k]", FRAME_KERNEL, "x", "", 0 },
		{ "do_syscall_64_[k]", FRAME_KERNEL, "do_syscall_64", "", 0 },
		{ "_[k]", FRAME_KERNEL, "", "", 0 },
		{ "f (file.py:12)", FRAME_PYTHON, "f", "file.py", 12 },
		{ "<lambda> (/a b/c.py:3)", FRAME_PYTHON, "<lambda>", "/a b/c.py", 3 },
		{ "Cls.m.<locals>.g (x) (/a (b)/c.py:40)", FRAME_PYTHON, "Cls.m.<locals>.g (x) (/a",
		  "b)/c.py", 40 },
		{ "f (C:\\x.py:4294967294)", FRAME_PYTHON, "f", "C:\\x.py", 4294967294u },
		{ "mod (m.py:0)", FRAME_PYTHON, "mod", "m.py", 0 },
		{ "a (b)", FRAME_NATIVE, "a (b)", "", 0 },
		{ "a (b:)", FRAME_NATIVE, "a (b:)", "", 0 },
		{ "a (b:x1)", FRAME_NATIVE, "a (b:x1)", "", 0 },
		{ "a (b:012)", FRAME_NATIVE, "a (b:012)", "", 0 },
		{ "a (b:4294967296)", FRAME_NATIVE, "a (b:4294967296)", "", 0 },
		{ "a(b:1)", FRAME_NATIVE, "a(b:1)", "", 0 },
		{ "operator() (int)", FRAME_NATIVE, "operator() (int)", "", 0 },
		{ "f (a.py:1)_[k]", FRAME_KERNEL, "f (a.py:1)", "", 0 },
	};
	char stack[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct batch_builder *bb = new_builder();
		const struct batch_frame *f;
		struct batch *b;

		snprintf(stack, sizeof(stack), "proc_[k];%s", cases[i].text);
		assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, stack, 1), 0);
		b = finish(bb);
		assert_int_equal(b->nframes, 2);
		/* the root is the process whatever its text */
		assert_int_equal(b->frames[b->stacks[0].frames[0]].kind, FRAME_PROCESS);
		assert_string_equal(b->strings[b->frames[b->stacks[0].frames[0]].name], "proc_[k]");
		f = &b->frames[b->stacks[0].frames[1]];
		if (f->kind != cases[i].kind)
			fail_msg("%s: kind %u, want %u", cases[i].text, f->kind, cases[i].kind);
		assert_string_equal(b->strings[f->name], cases[i].name);
		assert_string_equal(b->strings[f->file], cases[i].file);
		assert_int_equal(f->line, cases[i].line);
		assert_stack_text(b, 0, stack);
		batch__free(b);
		batch_builder__free(bb);
	}
}

/* Deterministic pseudo-random frames of every kind, many stacks, text round trip. */
/* Frames handed over as frames keep their kind even where their text reads as
 * another kind: a native symbol that looks like a Python frame stays native. */
static void test_add_frames_keeps_kinds(void **state)
{
	struct frame fr[3] = {
		frame_make(FRAME_NATIVE, "proc", NULL, 0), /* the root is the process */
		frame_make(FRAME_NATIVE, "f (a.py:1)", NULL, 0),
		frame_make(FRAME_PYTHON, "g", "b.py", 7),
	};
	struct batch_builder *bb;
	struct batch *b;
	char text[128];

	(void)state;
	assert_int_equal(batch_builder__new("a", "h", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add_frames(bb, NULL, NULL, 0, fr, 3, 5), 0);
	assert_int_equal(batch_builder__add_frames(bb, NULL, NULL, 0, fr, 0, 5), -EINVAL);
	fr[2].kind = FRAME_PROCESS; /* a process below the root */
	assert_int_equal(batch_builder__add_frames(bb, NULL, NULL, 0, fr, 3, 5), -EINVAL);
	fr[2].kind = FRAME_KIND_NR;
	assert_int_equal(batch_builder__add_frames(bb, NULL, NULL, 0, fr, 3, 5), -EINVAL);
	assert_int_equal(batch_builder__finish(bb, 1, 100, 10, 1000, &b), 0);
	assert_int_equal(b->nstacks, 1);
	assert_int_equal(b->stacks[0].nframes, 3);
	assert_int_equal(b->frames[b->stacks[0].frames[0]].kind, FRAME_PROCESS);
	assert_int_equal(b->frames[b->stacks[0].frames[1]].kind, FRAME_NATIVE);
	assert_string_equal(b->strings[b->frames[b->stacks[0].frames[1]].name], "f (a.py:1)");
	assert_int_equal(b->frames[b->stacks[0].frames[2]].kind, FRAME_PYTHON);
	assert_int_equal(b->frames[b->stacks[0].frames[2]].line, 7);
	batch__stack_text(b, 0, text, sizeof(text));
	assert_string_equal(text, "proc;f (a.py:1);g (b.py:7)");
	batch__free(b);
	batch_builder__free(bb);
}

static void test_stack_text_round_trip(void **state)
{
	static const char *const pieces[] = { "main",
					      "worker_loop",
					      "libc.so.6+0x29d90",
					      "_start",
					      "do_syscall_64_[k]",
					      "entry_SYSCALL_64_after_hwframe_[k]",
					      "handle (/srv/app/views.py:88)",
					      "<module> (/usr/lib/python3.11/runpy.py:1)",
					      "<lambda> (/a b/c (d).py:3)",
					      "a (b)",
					      "x_[k]y",
					      "std::vector<int>::push_back(int const&)",
					      "",
					      "f (:7)",
					      "g (z.py:007)",
					      "ünïcödé (/tmp/ü.py:5)" };
	char texts[200][1024];
	struct batch_builder *bb = new_builder();
	struct batch *b;
	uint32_t seed = 12345, i, j;

	(void)state;
	for (i = 0; i < 200; i++) {
		size_t pos = (size_t)snprintf(texts[i], sizeof(texts[i]), "proc%u", i % 5);
		uint32_t depth = 1 + i % 12;

		for (j = 0; j < depth; j++) {
			seed = seed * 1103515245u + 12345u;
			pos += (size_t)snprintf(
				texts[i] + pos, sizeof(texts[i]) - pos, ";%s",
				pieces[(seed >> 16) % (sizeof(pieces) / sizeof(pieces[0]))]);
		}
		assert_true(pos < sizeof(texts[i]));
		assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, texts[i], i + 1), 0);
	}
	b = finish(bb);
	for (i = 0; i < b->nsamples; i++) {
		char buf[1024];

		batch__stack_text(b, b->samples[i].stack, buf, sizeof(buf));
		/* samples are in first-seen order; duplicates of a text merge */
		for (j = 0; j < 200; j++)
			if (strcmp(texts[j], buf) == 0)
				break;
		assert_true(j < 200);
	}
	for (i = 0; i < 200; i++) {
		char buf[1024];

		for (j = 0; j < b->nstacks; j++) {
			batch__stack_text(b, j, buf, sizeof(buf));
			if (strcmp(buf, texts[i]) == 0)
				break;
		}
		if (j == b->nstacks)
			fail_msg("stack %u lost in the round trip: %s", i, texts[i]);
	}
	batch__free(b);
	batch_builder__free(bb);
}

static void test_stack_text_truncates(void **state)
{
	struct batch_builder *bb = new_builder();
	struct batch *b;
	char buf[8];

	(void)state;
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, "proc;f (a.py:12);k_[k]", 1), 0);
	b = finish(bb);
	memset(buf, 'X', sizeof(buf));
	assert_int_equal(batch__stack_text(b, 0, buf, sizeof(buf)),
			 strlen("proc;f (a.py:12);k_[k]"));
	assert_string_equal(buf, "proc;f ");
	assert_int_equal(batch__stack_text(b, 0, NULL, 0), strlen("proc;f (a.py:12);k_[k]"));
	assert_int_equal(batch__stack_text(b, 99, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	batch__free(b);
	batch_builder__free(bb);
}

static void test_builder_rejects(void **state)
{
	const char *dup_k[] = { "a", "b", "a" }, *dup_v[] = { "1", "2", "3" };
	const char *many_k[BATCH_MAX_LABELS + 1], *many_v[BATCH_MAX_LABELS + 1];
	char names[BATCH_MAX_LABELS + 1][8];
	struct batch_builder *bb = new_builder(), *none = NULL;
	char *deep, *long_frame;
	struct batch *b;
	size_t i;

	(void)state;
	assert_int_equal(batch_builder__new("", "h", "cpu", &none), -EINVAL);
	assert_null(none);
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, "", 1), -EINVAL);
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, NULL, 1), -EINVAL);
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, "p;f", 0), -EINVAL);
	assert_int_equal(batch_builder__add(bb, dup_k, dup_v, 3, "p;f", 1), -EINVAL);
	for (i = 0; i <= BATCH_MAX_LABELS; i++) {
		snprintf(names[i], sizeof(names[i]), "k%zu", i);
		many_k[i] = many_v[i] = names[i];
	}
	assert_int_equal(batch_builder__add(bb, many_k, many_v, BATCH_MAX_LABELS + 1, "p;f", 1),
			 -EINVAL);
	assert_int_equal(batch_builder__add(bb, many_k, many_v, BATCH_MAX_LABELS, "p;f", 1), 0);

	/* depth: BATCH_MAX_STACK_DEPTH frames fit, one more does not */
	deep = malloc(2 * (BATCH_MAX_STACK_DEPTH + 1) + 1);
	assert_non_null(deep);
	for (i = 0; i < BATCH_MAX_STACK_DEPTH; i++)
		memcpy(deep + 2 * i, "f;", 2);
	deep[2 * BATCH_MAX_STACK_DEPTH - 1] = '\0';
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, deep, 1), 0);
	deep[2 * BATCH_MAX_STACK_DEPTH - 1] = ';';
	memcpy(deep + 2 * BATCH_MAX_STACK_DEPTH, "f", 2);
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, deep, 1), -EINVAL);
	free(deep);

	long_frame = malloc(BATCH_MAX_STRING_LEN + 4);
	assert_non_null(long_frame);
	memcpy(long_frame, "p;", 2);
	memset(long_frame + 2, 'x', BATCH_MAX_STRING_LEN + 1);
	long_frame[BATCH_MAX_STRING_LEN + 3] = '\0';
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, long_frame, 1), -EINVAL);
	long_frame[BATCH_MAX_STRING_LEN + 2] = '\0';
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, long_frame, 1), 0);
	free(long_frame);

	for (i = 0; i < BATCH_MAX_COUNTERS; i++)
		assert_int_equal(batch_builder__counter(bb, "c", i), 0);
	assert_int_equal(batch_builder__counter(bb, "c", 0), -EINVAL);

	/* rejected adds leave a valid, usable builder */
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, "p;f", BATCH_MAX_COUNT + 1),
			 -EINVAL);
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, "p;f", BATCH_MAX_COUNT), 0);
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, "p;f", 1),
			 -EINVAL); /* over the cap */
	b = finish(bb);
	batch__free(b);

	/* the builder is reusable after finish */
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, "p;g", 2), 0);
	b = finish(bb);
	assert_int_equal(b->nsamples, 1);
	assert_int_equal(b->nstacks, 1);
	assert_int_equal(b->ncounters, 0);
	assert_stack_text(b, 0, "p;g");
	batch__free(b);
	batch_builder__free(bb);
}

/* A small valid batch to break: 2 frames, 1 stack, 1 label set, 1 sample. */
static struct batch *small_batch(void)
{
	const char *k[] = { "pid" }, *v[] = { "1" };
	struct batch_builder *bb = new_builder();
	struct batch *b;

	assert_int_equal(batch_builder__add(bb, k, v, 1, "p;f (a.py:1)", 3), 0);
	assert_int_equal(batch_builder__counter(bb, "lost", 1), 0);
	b = finish(bb);
	batch_builder__free(bb);
	return b;
}

static void expect_invalid(struct batch *b, const char *reason)
{
	char why[256] = "";

	assert_int_equal(batch__validate(b, why, sizeof(why)), -EINVAL);
	if (!strstr(why, reason))
		fail_msg("reason \"%s\" lacks \"%s\"", why, reason);
	batch__free(b);
}

/* Sets the uint32_t count at offset off of a small batch to n, expects reason, and
 * restores the count so that batch__free() stays within the arrays. */
static void expect_over_cap(size_t off, uint32_t n, const char *reason)
{
	struct batch *b = small_batch();
	uint32_t *count = (uint32_t *)((char *)b + off), saved = *count;
	char why[256] = "";

	*count = n;
	assert_int_equal(batch__validate(b, why, sizeof(why)), -EINVAL);
	if (!strstr(why, reason))
		fail_msg("reason \"%s\" lacks \"%s\"", why, reason);
	*count = saved;
	batch__free(b);
}

static void test_validate(void **state)
{
	struct batch *b;
	char why[8];

	(void)state;
	b = small_batch();
	assert_int_equal(batch__validate(b, NULL, 0), 0);
	batch__free(b);
	assert_int_equal(batch__validate(NULL, why, sizeof(why)), -EINVAL);

	b = small_batch();
	b->samples[0].stack = 99;
	expect_invalid(b, "sample 0: stack 99 out of range (1 stacks)");
	b = small_batch();
	b->samples[0].labelset = 5;
	expect_invalid(b, "sample 0: label set 5 out of range");
	b = small_batch();
	b->samples[0].count = 0;
	expect_invalid(b, "sample 0: zero count");
	b = small_batch();
	b->stacks[0].frames[1] = 99;
	expect_invalid(b, "stack 0: frame 99 out of range (2 frames)");
	b = small_batch();
	b->stacks[0].nframes = 0;
	expect_invalid(b, "stack 0: empty");
	b = small_batch();
	b->stacks[0].nframes = BATCH_MAX_STACK_DEPTH + 1;
	expect_invalid(b, "stack 0: 513 frames over the cap");
	b = small_batch();
	b->frames[1].name = 99;
	expect_invalid(b, "frame 1: name string 99 out of range");
	b = small_batch();
	b->frames[1].file = 99;
	expect_invalid(b, "frame 1: file string 99 out of range");
	b = small_batch();
	b->frames[0].kind = FRAME_KIND_NR;
	expect_invalid(b, "frame 0: unknown kind 5");
	b = small_batch();
	b->labelsets[0].labels[0].key = 99;
	expect_invalid(b, "label set 0: key string 99 out of range");
	b = small_batch();
	b->labelsets[0].labels[0].value = 99;
	expect_invalid(b, "label set 0: value string 99 out of range");
	b = small_batch();
	b->counters[0].name = 99;
	expect_invalid(b, "counter 0: name string 99 out of range");
	b = small_batch();
	b->host = 99;
	expect_invalid(b, "host string 99 out of range");
	b = small_batch();
	b->agent_id = 0;
	expect_invalid(b, "empty agent_id");
	b = small_batch();
	free(b->strings[0]);
	b->strings[0] = strdup("x");
	expect_invalid(b, "string 0 is not empty");
	expect_over_cap(offsetof(struct batch, nsamples), BATCH_MAX_SAMPLES + 1,
			"samples over the cap");
	expect_over_cap(offsetof(struct batch, nstrings), BATCH_MAX_STRINGS + 1,
			"strings over the cap");
	expect_over_cap(offsetof(struct batch, nframes), BATCH_MAX_FRAMES + 1,
			"frames over the cap");
	expect_over_cap(offsetof(struct batch, nstacks), BATCH_MAX_STACKS + 1,
			"stacks over the cap");
	expect_over_cap(offsetof(struct batch, nlabelsets), BATCH_MAX_LABELSETS + 1,
			"label sets over the cap");
	b = small_batch();
	b->labelsets[0].nlabels = BATCH_MAX_LABELS + 1;
	expect_invalid(b, "label set 0: 65 labels over the cap");
	expect_over_cap(offsetof(struct batch, ncounters), BATCH_MAX_COUNTERS + 1,
			"counters over the cap");

	/* keys must be sorted by text and unique */
	{
		const char *k[] = { "a", "b" }, *v[] = { "1", "2" };
		struct batch_builder *bb = new_builder();
		struct batch_label t;

		assert_int_equal(batch_builder__add(bb, k, v, 2, "p;f", 1), 0);
		b = finish(bb);
		batch_builder__free(bb);
		t = b->labelsets[0].labels[0];
		b->labelsets[0].labels[0] = b->labelsets[0].labels[1];
		b->labelsets[0].labels[1] = t;
		expect_invalid(b, "label set 0: keys not sorted or not unique");
	}
	/* and unique: two labels of one key text, in two strings */
	{
		const char *k[] = { "a", "b" }, *v[] = { "1", "2" };
		struct batch_builder *bb = new_builder();

		assert_int_equal(batch_builder__add(bb, k, v, 2, "p;f", 1), 0);
		b = finish(bb);
		batch_builder__free(bb);
		free(b->strings[b->labelsets[0].labels[1].key]);
		b->strings[b->labelsets[0].labels[1].key] = strdup("a");
		expect_invalid(b, "label set 0: keys not sorted or not unique");
	}
	b = small_batch();
	b->samples[0].count = BATCH_MAX_COUNT + 1;
	expect_invalid(b, "sample 0: count 1099511627777 over the cap of 1099511627776");
	b = small_batch();
	free(b->strings[1]);
	b->strings[1] = calloc(BATCH_MAX_STRING_LEN + 2, 1);
	assert_non_null(b->strings[1]);
	memset(b->strings[1], 'x', BATCH_MAX_STRING_LEN + 1);
	expect_invalid(b, "string 1 longer than 4096 bytes");
	b = small_batch();
	free(b->strings[1]);
	b->strings[1] = NULL;
	expect_invalid(b, "string 1 missing");
	b = small_batch();
	b->profile_type = 99;
	expect_invalid(b, "profile_type string 99 out of range");
	b = small_batch();
	b->agent_id = 99;
	expect_invalid(b, "agent_id string 99 out of range");
	/* a stack sent by id: its array present, and in the count of stacks */
	b = small_batch();
	b->nrefs = 1;
	expect_invalid(b, "stack refs missing");
	b = small_batch();
	b->refs = calloc(1, sizeof(*b->refs));
	assert_non_null(b->refs);
	b->nrefs = BATCH_MAX_STACKS;
	expect_invalid(b, "stacks over the cap of 1048576");
	b = small_batch();
	b->refs = calloc(1, sizeof(*b->refs));
	assert_non_null(b->refs);
	b->nrefs = 1;
	b->samples[0].stack = 1; /* the ref: valid */
	assert_int_equal(batch__validate(b, NULL, 0), 0);
	b->samples[0].stack = 2;
	expect_invalid(b, "sample 0: stack 2 out of range (2 stacks)");
	/* a short why buffer is truncated, not overrun */
	b = small_batch();
	b->samples[0].count = 0;
	assert_int_equal(batch__validate(b, why, sizeof(why)), -EINVAL);
	assert_int_equal(strlen(why), sizeof(why) - 1);
	batch__free(b);
	batch__free(NULL);
	batch_builder__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_batch_has_header_strings),
		cmocka_unit_test(test_interning),
		cmocka_unit_test(test_label_order_independent),
		cmocka_unit_test(test_frame_kinds),
		cmocka_unit_test(test_add_frames_keeps_kinds),
		cmocka_unit_test(test_stack_text_round_trip),
		cmocka_unit_test(test_stack_text_truncates),
		cmocka_unit_test(test_builder_rejects),
		cmocka_unit_test(test_validate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
