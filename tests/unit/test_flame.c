/* Unit tests of the flame tree: totals and self counts of every node against an
 * independent sum over the input stacks, per side; sorted children; frame kinds;
 * recursion counted once in flame__top; argument errors; a wide tree; function
 * granularity (merged Python frames and their per-line breakdown, per side and in
 * top, against hand-computed numbers); runs of placeholder frames collapsed; the
 * folded walk of a lean tree against a sort of its stacks; equal texts from
 * unequal fields merged; a tree built with frame ids the same as without. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "query/flame.h"
#include "query/render_folded.h"
#include "query/render_json.h"
#include "testutil.h"

#define NSTACKS 400

struct input {
	char stack[128];
	uint64_t count;
	unsigned side;
};

static struct input inputs[NSTACKS];

static uint32_t rng_state = 12345;

static uint32_t rng(void)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return rng_state >> 16;
}

static const char *const frames[] = { "a", "b", "c", "a_[k]", "f (x.py:3)", "ab", "" };

/* Stacks over a tiny alphabet so that prefixes are shared and frames recur. */
static void gen_inputs(void)
{
	size_t i;
	int d, depth;

	for (i = 0; i < NSTACKS; i++) {
		struct input *in = &inputs[i];

		snprintf(in->stack, sizeof(in->stack), "%s", rng() % 2 ? "p1" : "p2");
		depth = (int)(rng() % 6);
		for (d = 0; d < depth; d++) {
			size_t len = strlen(in->stack);

			snprintf(in->stack + len, sizeof(in->stack) - len, ";%s",
				 frames[rng() % 6]); /* "" only in test_empty_frame */
		}
		in->count = 1 + rng() % 50;
		in->side = rng() % 3 == 0;
	}
}

/* Expected self and total of the node at path (root: ""), by brute force. */
static void expect(const char *path, unsigned side, uint64_t *self, uint64_t *total)
{
	size_t i, pl = strlen(path);

	*self = *total = 0;
	for (i = 0; i < NSTACKS; i++) {
		const char *s = inputs[i].stack;

		if (inputs[i].side != side)
			continue;
		if (pl == 0) {
			*total += inputs[i].count;
			continue;
		}
		if (strncmp(s, path, pl) != 0 || (s[pl] != '\0' && s[pl] != ';'))
			continue;
		*total += inputs[i].count;
		if (s[pl] == '\0')
			*self += inputs[i].count;
	}
}

static size_t check_node(const struct flame_node *n, const char *path, int depth)
{
	char child[256];
	uint64_t self, total;
	unsigned side;
	size_t count = 1;
	uint32_t i;

	for (side = 0; side < 2; side++) {
		expect(path, side, &self, &total);
		assert_int_equal(n->self[side], self);
		assert_int_equal(n->total[side], total);
	}
	if (depth > 0) { /* the node's frame is its text's, as the one parser reads it */
		struct frame fr;

		frame_parse(n->name, strlen(n->name), depth == 1, &fr);
		assert_int_equal(n->frame.kind, fr.kind);
		assert_int_equal(n->frame.line, fr.line);
		assert_int_equal(n->frame.name_len, fr.name_len);
		assert_memory_equal(n->frame.name, fr.name, fr.name_len);
		assert_int_equal(n->frame.file_len, fr.file_len);
		assert_memory_equal(n->frame.file, fr.file, fr.file_len);
		assert_int_equal(n->depth, (uint32_t)depth);
	}
	for (i = 0; i < n->nchildren; i++) {
		const struct flame_node *c = n->children[i];

		assert_ptr_equal(c->parent, n);
		if (i)
			assert_true(strcmp(n->children[i - 1]->name, c->name) < 0);
		snprintf(child, sizeof(child), "%s%s%s", path, *path ? ";" : "", c->name);
		count += check_node(c, child, depth + 1);
	}
	return count;
}

static void test_totals_match_inputs(void **state)
{
	struct flame *f;
	uint64_t self, total;
	size_t i;

	(void)state;
	gen_inputs();
	assert_int_equal(flame__new(&f), 0);
	for (i = 0; i < NSTACKS; i++)
		assert_int_equal(flame__add(f, inputs[i].stack, inputs[i].count, inputs[i].side),
				 0);
	flame__finish(f);
	expect("", 0, &self, &total);
	assert_int_equal(flame__total(f, 0), total);
	assert_true(total > 0);
	expect("", 1, &self, &total);
	assert_int_equal(flame__total(f, 1), total);
	assert_true(total > 0);
	assert_string_equal(flame__root(f)->name, "all");
	assert_int_equal(flame__root(f)->frame.kind, FLAME_ROOT);
	assert_null(flame__root(f)->parent);
	assert_int_equal(check_node(flame__root(f), "", 0), flame__size(f));
	flame__free(f);
}

static void test_merge_identical(void **state)
{
	struct flame *f;
	const struct flame_node *r, *p, *a;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	assert_int_equal(flame__add(f, "p;a", 3, 0), 0);
	assert_int_equal(flame__add(f, "p;a", 4, 0), 0);
	assert_int_equal(flame__add(f, "p;a", 5, 1), 0);
	assert_int_equal(flame__add(f, "p", 2, 0), 0);
	flame__finish(f);
	assert_int_equal(flame__size(f), 3);
	r = flame__root(f);
	assert_int_equal(r->nchildren, 1);
	p = r->children[0];
	assert_int_equal(p->frame.kind, FRAME_PROCESS);
	assert_int_equal(p->self[0], 2);
	assert_int_equal(p->total[0], 9);
	assert_int_equal(p->nchildren, 1);
	a = p->children[0];
	assert_string_equal(a->name, "a");
	assert_int_equal(a->self[0], 7);
	assert_int_equal(a->total[1], 5);
	assert_int_equal(flame__total(f, 0), 9);
	assert_int_equal(flame__total(f, 1), 5);
	flame__free(f);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* flame__stacks lists stacks in the order strcmp gives their folded texts, the
 * order of a sorted folded file, also where a name sorts around ';' ("b!" < "b;c"
 * < "bc") and where one stack is a prefix of another. */
static void test_stacks_in_text_order(void **state)
{
	static const char *stacks[] = {
		"p;b;c",      "p;b!", "p;bc",	 "p;b",		 "p;a;b;c", "p",
		"q;\xc3\xa9", "q;z",  "p;b;c;d", "p;b (x.py:1)", "p;b_[k]", "p!;x",
	};
	const size_t n = sizeof(stacks) / sizeof(stacks[0]);
	const char *want[sizeof(stacks) / sizeof(stacks[0])];
	struct flame_stack *got;
	struct flame *f;
	size_t ngot, i;
	char text[256];
	uint32_t k;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(flame__add(f, stacks[i], i + 1, i % 2), 0);
	flame__finish(f);
	memcpy(want, stacks, sizeof(want));
	qsort(want, n, sizeof(want[0]), cmp_str);
	assert_int_equal(flame__stacks(f, &got, &ngot), 0);
	assert_int_equal(ngot, n);
	for (i = 0; i < n; i++) {
		size_t len = 0, orig;

		for (k = 0; k < got[i].nframes; k++)
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s",
						k ? ";" : "", got[i].frames[k]->name);
		assert_string_equal(text, want[i]);
		for (orig = 0; strcmp(stacks[orig], want[i]); orig++)
			;
		assert_int_equal(got[i].count[orig % 2], orig + 1);
		assert_int_equal(got[i].count[1 - orig % 2], 0);
	}
	free(got);
	flame__free(f);
}

/* Frames of two kinds with one text ("f_[k]" native and "f" kernel) are two
 * nodes: the tree keys frames, not text. */
static void test_same_text_two_kinds(void **state)
{
	struct frame native[2], kernel[2];
	const struct flame_node *p;
	struct flame_stack *st;
	struct flame *f;
	size_t n;

	(void)state;
	native[0] = kernel[0] = frame_make(FRAME_PROCESS, "p", NULL, 0);
	native[1] = frame_make(FRAME_NATIVE, "f_[k]", NULL, 0);
	kernel[1] = frame_make(FRAME_KERNEL, "f", NULL, 0);
	assert_int_equal(flame__new(&f), 0);
	assert_int_equal(flame__add_frames(f, native, 2, 3, 0), 0);
	assert_int_equal(flame__add_frames(f, kernel, 2, 4, 0), 0);
	assert_int_equal(flame__add_frames(f, kernel, 0, 4, 0), -EINVAL);
	flame__finish(f);
	p = flame__root(f)->children[0];
	assert_int_equal(p->nchildren, 2);
	assert_string_equal(p->children[0]->name, "f_[k]");
	assert_string_equal(p->children[1]->name, "f_[k]");
	assert_int_equal(p->children[0]->frame.kind, FRAME_NATIVE); /* kind orders ties */
	assert_int_equal(p->children[0]->self[0], 3);
	assert_int_equal(p->children[1]->frame.kind, FRAME_KERNEL);
	assert_int_equal(p->children[1]->frame.name_len, 1);
	assert_int_equal(p->children[1]->self[0], 4);
	assert_int_equal(flame__stacks(f, &st, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(st[0].count[0], 3);
	assert_int_equal(st[1].count[0], 4);
	free(st);
	flame__free(f);
}

static void test_kinds_in_tree(void **state)
{
	struct flame *f;
	const struct flame_node *p, *n;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	/* A process named like a kernel frame is still a process. */
	assert_int_equal(flame__add(f, "k_[k];<lambda> (/a b/c.py:3);x_[k];m", 1, 0), 0);
	flame__finish(f);
	p = flame__root(f)->children[0];
	assert_int_equal(p->frame.kind, FRAME_PROCESS);
	n = p->children[0];
	assert_string_equal(n->name, "<lambda> (/a b/c.py:3)");
	assert_int_equal(n->frame.kind, FRAME_PYTHON);
	assert_int_equal(n->frame.line, 3);
	assert_int_equal(n->frame.name_len, strlen("<lambda>"));
	assert_memory_equal(n->frame.file, "/a b/c.py", n->frame.file_len);
	assert_int_equal(n->children[0]->frame.kind, FRAME_KERNEL);
	assert_int_equal(n->children[0]->children[0]->frame.kind, FRAME_NATIVE);
	flame__free(f);
}

static const struct flame_function *find_fn(const struct flame_function *fns, size_t n,
					    const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(fns[i].name, name) == 0)
			return &fns[i];
	return NULL;
}

static void test_top_recursion(void **state)
{
	struct flame *f;
	struct flame_function *fns;
	const struct flame_function *a, *b, *c;
	size_t n, i;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	assert_int_equal(flame__add(f, "p;a;b;a", 10, 0), 0);
	assert_int_equal(flame__add(f, "p;a;b;a;a", 5, 0), 0);
	assert_int_equal(flame__add(f, "p;a", 3, 0), 0);
	assert_int_equal(flame__add(f, "q;b;c", 2, 0), 0);
	assert_int_equal(flame__add(f, "q;c;a", 4, 1), 0); /* other side only */
	/* "a" as a process is not the function "a". */
	assert_int_equal(flame__add(f, "a;c", 1, 0), 0);
	flame__finish(f);
	assert_int_equal(flame__top(f, 0, &fns, &n), 0);
	assert_int_equal(n, 3);
	assert_null(find_fn(fns, n, "p"));
	assert_null(find_fn(fns, n, "q"));
	a = find_fn(fns, n, "a");
	b = find_fn(fns, n, "b");
	c = find_fn(fns, n, "c");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_int_equal(a->self, 18);
	assert_int_equal(a->total, 18); /* not 10 + 5 + 5 + 18 */
	assert_int_equal(b->self, 0);
	assert_int_equal(b->total, 17);
	assert_int_equal(c->self, 3);
	assert_int_equal(c->total, 3);
	assert_int_equal(a->kind, FRAME_NATIVE);
	/* Sorted by self descending, then total descending. */
	assert_ptr_equal(&fns[0], a);
	assert_ptr_equal(&fns[1], c);
	assert_ptr_equal(&fns[2], b);
	for (i = 1; i < n; i++)
		assert_true(fns[i - 1].self >= fns[i].self);
	free(fns);

	assert_int_equal(flame__top(f, 1, &fns, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(find_fn(fns, n, "a")->total, 4);
	assert_int_equal(find_fn(fns, n, "c")->self, 0);
	assert_int_equal(find_fn(fns, n, "c")->total, 4);
	free(fns);
	assert_int_equal(flame__top(f, 2, &fns, &n), -EINVAL);
	flame__free(f);
}

/* The child of n named name, or NULL. */
static const struct flame_node *kid(const struct flame_node *n, const char *name)
{
	uint32_t i;

	for (i = 0; n && i < n->nchildren; i++)
		if (strcmp(n->children[i]->name, name) == 0)
			return n->children[i];
	return NULL;
}

static void check_line(const struct flame_node *n, uint32_t i, uint32_t line, uint64_t self0,
		       uint64_t total0, uint64_t self1, uint64_t total1)
{
	assert_true(i < n->nlines);
	assert_int_equal(n->lines[i].line, line);
	assert_int_equal(n->lines[i].self[0], self0);
	assert_int_equal(n->lines[i].total[0], total0);
	assert_int_equal(n->lines[i].self[1], self1);
	assert_int_equal(n->lines[i].total[1], total1);
}

/* The deploy case in miniature: the same functions at other lines on side 1. */
static const struct input deploy[] = {
	{ "app;<module> (app.py:10);serve (app.py:58);handle (app.py:20)", 5, 0 },
	{ "app;<module> (app.py:10);serve (app.py:58);handle (app.py:22)", 3, 0 },
	{ "app;<module> (app.py:10);serve (app.py:59)", 2, 0 },
	{ "app;<module> (app.py:21);serve (app.py:69);handle (app.py:31)", 7, 1 },
	{ "app;<module> (app.py:21);serve (app.py:69)", 1, 1 },
	{ "app;<module> (app.py:21);serve (lib/app.py:69)", 4, 1 }, /* another file */
	{ "app;<module> (app.py:21);main;serve (app.py:70)", 6, 1 },
};

static struct flame *tree_of(const struct input *in, size_t n, enum flame_granularity g)
{
	struct flame *f;
	size_t i;

	assert_int_equal(flame__new_granular(&f, g), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(flame__add(f, in[i].stack, in[i].count, in[i].side), 0);
	flame__finish(f);
	return f;
}

static void test_function_granularity(void **state)
{
	struct flame *f = tree_of(deploy, sizeof(deploy) / sizeof(deploy[0]), FLAME_BY_FUNCTION);
	const struct flame_node *app = kid(flame__root(f), "app");
	const struct flame_node *mod = kid(app, "<module> (app.py)");
	const struct flame_node *serve = kid(mod, "serve (app.py)");
	const struct flame_node *handle = kid(serve, "handle (app.py)");
	const struct flame_node *other = kid(mod, "serve (lib/app.py)");
	const struct flame_node *main_ = kid(mod, "main");

	(void)state;
	assert_non_null(handle);
	assert_non_null(other);
	assert_non_null(main_);
	assert_int_equal(mod->nchildren, 3); /* serve, serve in lib/, main: lines merged */
	assert_int_equal(serve->frame.kind, FRAME_PYTHON);
	assert_int_equal(serve->frame.line, FRAME_NO_LINE);
	assert_int_equal(serve->frame.file_len, strlen("app.py"));
	assert_memory_equal(serve->frame.file, "app.py", 6);
	/* <module>: every sample, at 10 before and 21 after */
	assert_int_equal(mod->total[0], 10);
	assert_int_equal(mod->total[1], 18);
	assert_int_equal(mod->nlines, 2);
	check_line(mod, 0, 10, 0, 10, 0, 0);
	check_line(mod, 1, 21, 0, 0, 0, 18);
	/* serve: 58 (passing through to handle), 59 (self), 69 after */
	assert_int_equal(serve->self[0], 2);
	assert_int_equal(serve->total[0], 10);
	assert_int_equal(serve->self[1], 1);
	assert_int_equal(serve->total[1], 8);
	assert_int_equal(serve->nlines, 3);
	check_line(serve, 0, 58, 0, 8, 0, 0);
	check_line(serve, 1, 59, 2, 2, 0, 0);
	check_line(serve, 2, 69, 0, 0, 1, 8);
	assert_int_equal(handle->self[0], 8);
	assert_int_equal(handle->self[1], 7);
	assert_int_equal(handle->nlines, 3);
	check_line(handle, 0, 20, 5, 5, 0, 0);
	check_line(handle, 1, 22, 3, 3, 0, 0);
	check_line(handle, 2, 31, 0, 0, 7, 7);
	check_line(other, 0, 69, 0, 0, 4, 4);
	assert_int_equal(other->nlines, 1);
	assert_int_equal(main_->nlines, 0); /* native frames have no lines */
	assert_null(main_->lines);
	check_line(kid(main_, "serve (app.py)"), 0, 70, 0, 0, 6, 6);
	assert_int_equal(flame__size(f), 8);
	flame__free(f);

	/* FLAME_BY_LINE: today's tree, one node per line and no breakdown */
	f = tree_of(deploy, sizeof(deploy) / sizeof(deploy[0]), FLAME_BY_LINE);
	app = kid(flame__root(f), "app");
	assert_int_equal(app->nchildren, 2);
	mod = kid(app, "<module> (app.py:10)");
	assert_int_equal(mod->nchildren, 2);
	serve = kid(mod, "serve (app.py:58)");
	assert_int_equal(serve->frame.line, 58);
	assert_int_equal(serve->nlines, 0);
	assert_int_equal(kid(serve, "handle (app.py:20)")->total[0], 5);
	assert_int_equal(kid(kid(app, "<module> (app.py:21)"), "serve (app.py:69)")->total[1], 8);
	assert_int_equal(flame__size(f), 13);
	flame__free(f);
}

/* Many lines in one node: the inline entry, then a growing array, kept sorted;
 * and a frame without a line (function-level text read back) in no entry. */
static void test_many_lines(void **state)
{
	static const uint32_t order[] = { 50, 7, 90, 7, 1, 33, 12, 50, 64, 2, 99, 3 };
	const struct flame_node *n;
	struct flame *f;
	char stack[64];
	uint64_t self = 0, total = 0;
	size_t i;

	(void)state;
	assert_int_equal(flame__new_granular(&f, FLAME_BY_FUNCTION), 0);
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		snprintf(stack, sizeof(stack), "p;f (a.py:%u)%s", order[i], i % 2 ? ";g_[k]" : "");
		assert_int_equal(flame__add(f, stack, i + 1, 0), 0);
	}
	assert_int_equal(flame__add(f, "p;f (a.py)", 100, 0), 0);
	flame__finish(f);
	n = kid(kid(flame__root(f), "p"), "f (a.py)");
	assert_non_null(n);
	assert_int_equal(n->nlines, 10);
	for (i = 0; i < n->nlines; i++) {
		if (i)
			assert_true(n->lines[i - 1].line < n->lines[i].line);
		self += n->lines[i].self[0];
		total += n->lines[i].total[0];
	}
	assert_int_equal(n->total[0], 78 + 100);
	assert_int_equal(total, 78);
	assert_int_equal(self, 1 + 3 + 5 + 7 + 9 + 11 + 100 - 100); /* even i: leaf */
	check_line(n, 3, 7, 0, 2 + 4, 0, 0);  /* i = 1 and 3: both below, in g_[k] */
	check_line(n, 6, 50, 1, 1 + 8, 0, 0); /* i = 0 (leaf) and 7 (below) */
	flame__free(f);
}

/* top at function granularity: one row per function, its lines, recursion once
 * (attributed to the outermost call's line). */
static void test_top_lines(void **state)
{
	static const struct input in[] = {
		{ "p;f (a.py:1);g (a.py:5);f (a.py:2)", 10, 0 },
		{ "p;f (a.py:1)", 3, 0 },
		{ "p;f (a.py:2)", 4, 0 },
		{ "p;f (a.py:2);g (a.py:6)", 1, 1 },
	};
	struct flame *f = tree_of(in, 4, FLAME_BY_FUNCTION);
	struct flame_function *fns;
	const struct flame_function *fn, *g;
	size_t n;

	(void)state;
	assert_int_equal(flame__top(f, 0, &fns, &n), 0);
	assert_int_equal(n, 2);
	fn = find_fn(fns, n, "f (a.py)");
	g = find_fn(fns, n, "g (a.py)");
	assert_non_null(fn);
	assert_non_null(g);
	assert_int_equal(fn->self, 17);
	assert_int_equal(fn->total, 17);
	assert_int_equal(fn->nlines, 2);
	assert_int_equal(fn->lines[0].line, 1);
	assert_int_equal(fn->lines[0].self, 3);
	assert_int_equal(fn->lines[0].total, 13); /* 10 via the outer call at 1, and 3 */
	assert_int_equal(fn->lines[1].line, 2);
	assert_int_equal(fn->lines[1].self, 14);
	assert_int_equal(fn->lines[1].total, 4);
	assert_int_equal(g->self, 0);
	assert_int_equal(g->total, 10);
	assert_int_equal(g->nlines, 1); /* line 6 has samples on side 1 only */
	assert_int_equal(g->lines[0].line, 5);
	assert_int_equal(g->lines[0].total, 10);
	free(fns);
	assert_int_equal(flame__top(f, 1, &fns, &n), 0);
	g = find_fn(fns, n, "g (a.py)");
	assert_int_equal(g->nlines, 1);
	assert_int_equal(g->lines[0].line, 6);
	assert_int_equal(g->lines[0].self, 1);
	free(fns);
	flame__free(f);

	/* by line: a row per line, as before, and no breakdown */
	f = tree_of(in, 4, FLAME_BY_LINE);
	assert_int_equal(flame__top(f, 0, &fns, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(find_fn(fns, n, "f (a.py:2)")->self, 14);
	assert_int_equal(find_fn(fns, n, "f (a.py:1)")->total, 13);
	assert_int_equal(find_fn(fns, n, "f (a.py:1)")->nlines, 0);
	free(fns);
	flame__free(f);
}

static void push(struct frame *fr, size_t *n, enum frame_kind kind, const char *name, size_t times)
{
	while (times--)
		fr[(*n)++] = frame_make(kind, name, NULL, 0);
}

/* Runs of a placeholder frame are one node whose repeat is the longest run; in
 * both granularities; other frames, other kinds and two different placeholders are
 * not merged. */
static void test_placeholder_runs(void **state)
{
	static struct frame fr[300];
	enum flame_granularity g;
	const struct flame_node *p, *u, *t;
	struct flame_stack *st;
	struct flame *f;
	size_t n, ns;

	(void)state;
	for (g = FLAME_BY_LINE; g <= FLAME_BY_FUNCTION; g++) {
		assert_int_equal(flame__new_granular(&f, g), 0);
		n = 0; /* p;main;[unknown] x 128;leaf */
		push(fr, &n, FRAME_PROCESS, "p", 1);
		push(fr, &n, FRAME_NATIVE, "main", 1);
		push(fr, &n, FRAME_NATIVE, "[unknown]", 128);
		push(fr, &n, FRAME_NATIVE, "leaf", 1);
		assert_int_equal(flame__add_frames(f, fr, n, 2, 0), 0);
		n = 0; /* the same with a run of 3: the same nodes */
		push(fr, &n, FRAME_PROCESS, "p", 1);
		push(fr, &n, FRAME_NATIVE, "main", 1);
		push(fr, &n, FRAME_NATIVE, "[unknown]", 3);
		push(fr, &n, FRAME_NATIVE, "leaf", 1);
		assert_int_equal(flame__add_frames(f, fr, n, 1, 1), 0);
		n = 0; /* two placeholders in a row, then a run at the leaf */
		push(fr, &n, FRAME_PROCESS, "p", 1);
		push(fr, &n, FRAME_NATIVE, "[unknown]", 2);
		push(fr, &n, FRAME_NATIVE, "[truncated]", 5);
		push(fr, &n, FRAME_NATIVE, "x", 2);	    /* not a placeholder: two nodes */
		push(fr, &n, FRAME_KERNEL, "[unknown]", 2); /* not native: two nodes */
		push(fr, &n, FRAME_NATIVE, "[unknown]", 4);
		assert_int_equal(flame__add_frames(f, fr, n, 7, 0), 0);
		n = 0; /* a process named like a placeholder is not part of a run */
		push(fr, &n, FRAME_PROCESS, "[unknown]", 1);
		push(fr, &n, FRAME_NATIVE, "[unknown]", 1);
		assert_int_equal(flame__add_frames(f, fr, n, 1, 0), 0);
		assert_int_equal(flame__add(f, "p;[unknown]", 1, 0), 0);
		flame__finish(f);

		p = kid(flame__root(f), "p");
		u = kid(kid(p, "main"), "[unknown]");
		assert_non_null(u);
		assert_int_equal(u->repeat, 128);
		assert_int_equal(u->nchildren, 1);
		assert_int_equal(u->total[0], 2);
		assert_int_equal(u->total[1], 1);
		assert_int_equal(kid(u, "leaf")->self[1], 1);
		assert_int_equal(kid(u, "leaf")->depth, 4);
		assert_int_equal(kid(u, "leaf")->repeat, 1);
		u = kid(p, "[unknown]");
		assert_int_equal(u->repeat, 2);
		assert_int_equal(u->self[0], 1);
		t = kid(u, "[truncated]");
		assert_int_equal(t->repeat, 5);
		t = kid(kid(t, "x"), "x");
		assert_non_null(t);
		t = kid(kid(t, "[unknown]_[k]"), "[unknown]_[k]");
		assert_non_null(t);
		t = kid(t, "[unknown]");
		assert_int_equal(t->repeat, 4);
		assert_int_equal(t->self[0], 7);
		assert_int_equal(t->nchildren, 0);
		assert_int_equal(kid(kid(flame__root(f), "[unknown]"), "[unknown]")->repeat, 1);
		/* the stacks (and so the folded export) have the frame once */
		assert_int_equal(flame__stacks(f, &st, &ns), 0);
		assert_int_equal(ns, 4);
		assert_int_equal(st[3].nframes, 4); /* p;main;[unknown];leaf */
		assert_string_equal(st[3].frames[2]->name, "[unknown]");
		free(st);
		flame__free(f);
	}
}

/* flame__top against a brute-force count over the generated inputs. */
static void test_top_matches_inputs(void **state)
{
	struct flame *f;
	struct flame_function *fns;
	size_t n, i, k;
	int fi;

	(void)state;
	gen_inputs();
	assert_int_equal(flame__new(&f), 0);
	for (i = 0; i < NSTACKS; i++)
		assert_int_equal(flame__add(f, inputs[i].stack, inputs[i].count, inputs[i].side),
				 0);
	flame__finish(f);
	assert_int_equal(flame__top(f, 0, &fns, &n), 0);
	for (fi = 0; fi < 6; fi++) {
		const char *name = frames[fi];
		uint64_t self = 0, total = 0;
		const struct flame_function *got = find_fn(fns, n, name);

		for (k = 0; k < NSTACKS; k++) {
			char buf[128], *tok, *save, *last = NULL;
			int seen = 0, depth = 0;

			if (inputs[k].side != 0)
				continue;
			snprintf(buf, sizeof(buf), "%s", inputs[k].stack);
			for (tok = strtok_r(buf, ";", &save); tok;
			     tok = strtok_r(NULL, ";", &save), depth++) {
				if (depth > 0 && strcmp(tok, name) == 0)
					seen = 1;
				last = depth > 0 ? tok : NULL;
			}
			if (seen)
				total += inputs[k].count;
			if (last && strcmp(last, name) == 0)
				self += inputs[k].count;
		}
		if (total == 0) {
			assert_null(got);
			continue;
		}
		assert_non_null(got);
		assert_int_equal(got->self, self);
		assert_int_equal(got->total, total);
	}
	free(fns);
	flame__free(f);
}

static void test_errors(void **state)
{
	struct flame *f;
	char *deep;
	size_t i;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	assert_int_equal(flame__add(f, "", 1, 0), -EINVAL);
	assert_int_equal(flame__add(f, "p;a", 1, 2), -EINVAL);
	deep = malloc(2 * 2049 + 1);
	assert_non_null(deep);
	for (i = 0; i < 2049; i++) {
		deep[2 * i] = 'x';
		deep[2 * i + 1] = ';';
	}
	deep[2 * 2049 - 1] = '\0'; /* 2049 frames */
	assert_int_equal(flame__add(f, deep, 1, 0), -EINVAL);
	deep[2 * 2048 - 1] = '\0'; /* 2048 frames: the limit */
	assert_int_equal(flame__add(f, deep, 1, 0), 0);
	free(deep);
	assert_int_equal(flame__size(f), 2049);
	assert_int_equal(flame__total(f, 0), 1);
	flame__free(f);
	flame__free(NULL);
}

/* Counts whose sums pass 2^63 (a folded file may hold anything up to 2^64 - 1)
 * saturate at INT64_MAX: a parent's total never wraps below its child's (the
 * fuzzer found an SVG box 3.5e19 px wide that way). */
static void test_saturated_totals(void **state)
{
	const struct flame_node *p;
	struct flame *f;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	assert_int_equal(flame__add(f, "p;a", UINT64_C(6148914691236517208), 0), 0);
	assert_int_equal(flame__add(f, "p;b", UINT64_C(12297829382473034412), 0), 0);
	assert_int_equal(flame__add(f, "p;b", 5, 0), 0);
	flame__finish(f);
	p = flame__root(f)->children[0];
	assert_true(flame__total(f, 0) == (uint64_t)INT64_MAX);
	assert_true(p->total[0] == (uint64_t)INT64_MAX);
	assert_true(p->children[0]->total[0] == UINT64_C(6148914691236517208));
	assert_true(p->children[1]->total[0] == (uint64_t)INT64_MAX);
	assert_true(p->children[1]->self[0] == (uint64_t)INT64_MAX);
	assert_true(p->children[0]->total[0] <= p->total[0]);
	flame__free(f);
}

/* 100k distinct stacks under few parents: must be fast (hash lookup per frame), in
 * CPU time (a loaded machine stretches the wall clock, not the work). */
static void test_wide(void **state)
{
	struct flame *f;
	char stack[64];
	uint64_t t0 = test_cpu_ms();
	const struct flame_node *p;
	uint32_t i;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	for (i = 0; i < 100000; i++) {
		snprintf(stack, sizeof(stack), "p;g%u;h%u", i % 3, i);
		assert_int_equal(flame__add(f, stack, 1, 0), 0);
	}
	flame__finish(f);
	assert_true(test_cpu_ms() - t0 < 5000);
	assert_int_equal(flame__size(f), 1 + 1 + 3 + 100000);
	p = flame__root(f)->children[0];
	assert_int_equal(p->total[0], 100000);
	for (i = 0; i < 3; i++)
		assert_true(p->children[i]->nchildren >= 33333);
	for (i = 1; i < p->children[0]->nchildren; i++)
		assert_true(strcmp(p->children[0]->children[i - 1]->name,
				   p->children[0]->children[i]->name) < 0);
	flame__free(f);
}

/* render_folded writes a tree finished lean from a walk of the tree, and must
 * write what a sort of its stacks by folded text gives (flame__stacks on the same
 * tree finished whole): names where a sibling's text extends another's with a byte
 * below ';' ("run_1", "run_12", "run_1 x") sort the stacks of a node apart from its
 * own; at both granularities, with and without a second side, and with twins
 * (equal texts of two kinds), which the walk leaves to the sorted list; stacks that
 * end at their process (the walk's path is empty there). */
static char *folded_of(struct flame *f, bool diff)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_int_equal(render_folded(f, diff, out), 0);
	assert_int_equal(fclose(out), 0);
	return buf;
}

static char *folded_sorted(struct flame *f, bool diff)
{
	struct flame_stack *st;
	char *buf = NULL;
	size_t len = 0, n, i;
	FILE *out = open_memstream(&buf, &len);
	uint32_t k;

	assert_non_null(out);
	assert_int_equal(flame__stacks(f, &st, &n), 0);
	for (i = 0; i < n; i++) {
		if (!diff && !st[i].count[0])
			continue;
		for (k = 0; k < st[i].nframes; k++)
			fprintf(out, "%s%s", k ? ";" : "", st[i].frames[k]->name);
		fprintf(out, " %llu", (unsigned long long)st[i].count[0]);
		if (diff)
			fprintf(out, " %llu", (unsigned long long)st[i].count[1]);
		fputc('\n', out);
	}
	free(st);
	assert_int_equal(fclose(out), 0);
	return buf;
}

static void test_folded_walk_order(void **state)
{
	static const char *const names[] = { "run_1",	   "run_12",   "run_1 x",   "run_1:",
					     "run_1a",	   "a",	       "a b",	    "f (x.py:3)",
					     "f (x.py:4)", "f (x.py)", "[unknown]", "b_[k]" };
	const size_t nn = sizeof(names) / sizeof(names[0]);
	struct frame fr[8];
	unsigned trial, i, k, depth;

	(void)state;
	for (trial = 0; trial < 24; trial++) {
		enum flame_granularity g = trial % 2 ? FLAME_BY_FUNCTION : FLAME_BY_LINE;
		bool diff = trial % 4 >= 2, twins = trial >= 16;
		struct flame *a, *b;
		char *got, *want;

		assert_int_equal(flame__new_granular(&a, g), 0);
		assert_int_equal(flame__new_granular(&b, g), 0);
		for (i = 0; i < 300; i++) {
			uint64_t count = rng() % 3; /* zeros too: nodes with no samples */
			unsigned side = diff ? rng() % 2 : 0;
			char text[512] = "p";

			depth = i % 37 ? 1 + rng() % 6 : 0; /* some end at the process */
			for (k = 0; k < depth; k++) {
				strcat(text, ";");
				strcat(text, names[rng() % nn]);
			}
			assert_int_equal(flame__add(a, text, count, side), 0);
			assert_int_equal(flame__add(b, text, count, side), 0);
			if (twins && i % 50 == 0) { /* a native "b_[k]" beside the kernel "b" */
				fr[0] = frame_make(FRAME_PROCESS, "p", NULL, 0);
				fr[1] = frame_make(FRAME_NATIVE, "b_[k]", NULL, 0);
				fr[2] = frame_make(FRAME_NATIVE, names[rng() % 2], NULL, 0);
				assert_int_equal(flame__add_frames(a, fr, 3, 1, side), 0);
				assert_int_equal(flame__add_frames(b, fr, 3, 1, side), 0);
			}
		}
		assert_int_equal(twins ? flame__finish(a) : flame__finish_lean(a), 0);
		assert_true(flame__has_twins(a) == twins);
		assert_int_equal(flame__finish(b), 0);
		got = folded_of(a, diff);
		want = folded_sorted(b, diff);
		assert_string_equal(got, want);
		assert_true(strlen(got) > 0);
		free(got);
		free(want);
		flame__free(a);
		flame__free(b);
	}
}

/* Equal texts from unequal fields are one node: a Python frame named "f (a" in
 * "b.py" and one named "f" in "a (b.py" both print "f (a (b.py)". */
static void test_equal_text_unequal_fields(void **state)
{
	struct frame x[2] = { frame_make(FRAME_PROCESS, "p", NULL, 0),
			      frame_make(FRAME_PYTHON, "f (a", "b.py", FRAME_NO_LINE) };
	struct frame y[2] = { frame_make(FRAME_PROCESS, "p", NULL, 0),
			      frame_make(FRAME_PYTHON, "f", "a (b.py", FRAME_NO_LINE) };
	const struct flame_node *p;
	struct flame *f;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	assert_int_equal(flame__add_frames(f, x, 2, 2, 0), 0);
	assert_int_equal(flame__add_frames(f, y, 2, 3, 0), 0);
	assert_int_equal(flame__add_frames(f, x, 2, 5, 0), 0);
	assert_int_equal(flame__finish(f), 0);
	p = kid(flame__root(f), "p");
	assert_int_equal(p->nchildren, 1);
	assert_string_equal(p->children[0]->name, "f (a (b.py)");
	assert_int_equal(p->children[0]->self[0], 10);
	assert_int_equal(flame__size(f), 3);
	flame__free(f);
}

/* flame__add_frames_ids builds the tree flame__add_frames builds (its JSON, line
 * breakdowns and placeholder repeats included), whatever the order of the stacks
 * (sorted so that neighbours share their outer frames, or not), at both
 * granularities, on both sides, with adds without ids between, with ids below
 * and above the flat array's bound, and with two ids for one frame (equal ids
 * must be equal frames; equal frames may have two ids). */
static char *json_of(struct flame *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_int_equal(flame__finish(f), 0);
	assert_int_equal(render_json_tree(f, NULL, 0, out), 0);
	assert_int_equal(fclose(out), 0);
	return buf;
}

static int cmp_ids(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b; /* [0] count, [1..] ids ending in UINT64_MAX */
	size_t i;

	for (i = 1; x[i] == y[i] && x[i] != UINT64_MAX; i++)
		;
	return x[i] < y[i] ? -1 : x[i] > y[i];
}

static void test_ids_same_tree(void **state)
{
	enum { VOCAB = 14, STACKS = 300, DEPTH = 12 };
	struct frame vocab[VOCAB] = {
		frame_make(FRAME_NATIVE, "a", NULL, 0),
		frame_make(FRAME_NATIVE, "b", NULL, 0),
		frame_make(FRAME_KERNEL, "b", NULL, 0),
		frame_make(FRAME_NATIVE, "[unknown]", NULL, 0),
		frame_make(FRAME_NATIVE, "[unknown]", NULL, 0), /* the same frame, another id */
		frame_make(FRAME_NATIVE, "[truncated]", NULL, 0),
		frame_make(FRAME_PYTHON, "f", "x.py", 3),
		frame_make(FRAME_PYTHON, "f", "x.py", 4),
		frame_make(FRAME_PYTHON, "f", "x.py", 9),
		frame_make(FRAME_PYTHON, "g", "x.py", 3),
		frame_make(FRAME_PYTHON, "f", "x.py", FRAME_NO_LINE),
		frame_make(FRAME_JIT, "j", NULL, 0),
		frame_make(FRAME_NATIVE, "f (x.py:3)", NULL, 0),
		frame_make(FRAME_NATIVE, "c", NULL, 0),
	};
	static uint64_t rows[STACKS][DEPTH + 3];
	struct frame fr[DEPTH + 1];
	uint64_t ids[DEPTH + 1];
	unsigned trial, i, k;

	(void)state;
	for (trial = 0; trial < 16; trial++) {
		enum flame_granularity g = trial % 2 ? FLAME_BY_FUNCTION : FLAME_BY_LINE;
		uint64_t base = trial % 4 >= 2 ? (UINT64_C(1) << 40) : 1; /* the table: the array */
		bool sorted = trial % 8 >= 4, diff = trial >= 8;
		struct flame *a, *b;
		char *got, *want;

		for (i = 0; i < STACKS; i++) {
			unsigned depth = 1 + rng() % DEPTH;

			rows[i][0] = 1 + rng() % 5;
			rows[i][1] = 0;		    /* the process */
			for (k = 1; k < depth; k++) /* runs of placeholders now and then */
				rows[i][k + 1] = k > 1 && rng() % 3 == 0 ? rows[i][k]
									 : 1 + rng() % (VOCAB - 1);
			rows[i][depth + 1] = UINT64_MAX;
		}
		if (sorted)
			qsort(rows, STACKS, sizeof(rows[0]), cmp_ids);
		assert_int_equal(flame__new_granular(&a, g), 0);
		assert_int_equal(flame__new_granular(&b, g), 0);
		for (i = 0; i < STACKS; i++) {
			unsigned side = diff ? i % 2 : 0;
			size_t n = 0;

			for (k = 1; rows[i][k] != UINT64_MAX; k++, n++) {
				fr[n] = k == 1 ? frame_make(FRAME_PROCESS, "p", NULL, 0)
					       : vocab[rows[i][k] - 1];
				ids[n] = base + rows[i][k];
			}
			assert_int_equal(flame__add_frames(a, fr, n, rows[i][0], side), 0);
			if (i % 50 == 7) /* an add without ids between */
				assert_int_equal(
					flame__add_frames_ids(b, fr, NULL, n, rows[i][0], side), 0);
			else
				assert_int_equal(
					flame__add_frames_ids(b, fr, ids, n, rows[i][0], side), 0);
		}
		want = json_of(a);
		got = json_of(b);
		assert_string_equal(got, want);
		assert_int_equal(flame__size(a), flame__size(b));
		free(got);
		free(want);
		flame__free(a);
		flame__free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_totals_match_inputs),
		cmocka_unit_test(test_merge_identical),
		cmocka_unit_test(test_stacks_in_text_order),
		cmocka_unit_test(test_same_text_two_kinds),
		cmocka_unit_test(test_kinds_in_tree),
		cmocka_unit_test(test_top_recursion),
		cmocka_unit_test(test_top_matches_inputs),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_wide),
		cmocka_unit_test(test_saturated_totals),
		cmocka_unit_test(test_function_granularity),
		cmocka_unit_test(test_many_lines),
		cmocka_unit_test(test_top_lines),
		cmocka_unit_test(test_placeholder_runs),
		cmocka_unit_test(test_folded_walk_order),
		cmocka_unit_test(test_equal_text_unequal_fields),
		cmocka_unit_test(test_ids_same_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
