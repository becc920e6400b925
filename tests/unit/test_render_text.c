/* Unit tests of the text tree (query/render_text.h): hottest paths first with
 * total %, self % and CPU time, kinds marked, placeholder runs counted, pruning
 * by share, depth and lines with the hidden count said, and a diff's movers
 * table sorted by |delta| before the before/after tree. Trees are built from
 * folded stacks with flame__add().
 */
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
#include "query/render_text.h"

static struct flame *tree(const char *const *stacks, const uint64_t *counts, size_t n,
			  unsigned side, struct flame *f)
{
	size_t i;

	if (!f)
		assert_int_equal(flame__new(&f), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(flame__add(f, stacks[i], counts[i], side), 0);
	return f;
}

static char *render(const struct flame *f, const struct render_text_options *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	assert_int_equal(render_text(f, o, out), 0);
	fclose(out);
	return text;
}

/* The line holding needle, or fail. */
static const char *line_of(const char *text, const char *needle)
{
	const char *p = strstr(text, needle);

	if (!p)
		fail_msg("'%s' not in:\n%s", needle, text);
	while (p > text && p[-1] != '\n')
		p--;
	return p;
}

static void assert_before(const char *text, const char *a, const char *b)
{
	if (line_of(text, a) >= line_of(text, b))
		fail_msg("'%s' should come before '%s' in:\n%s", a, b, text);
}

static void test_profile(void **state)
{
	static const char *const stacks[] = {
		"api;main;small",
		"api;main;hot;leaf_[k]",
		"py;<module> (/a.py:1);work (/a.py:9)",
	};
	static const uint64_t counts[] = { 10, 60, 30 };
	struct render_text_options o = { .period_ns = 10000000 }; /* 100 Hz */
	struct flame *f = tree(stacks, counts, 3, 0, NULL);
	char *text;

	(void)state;
	flame__finish(f);
	text = render(f, &o);
	assert_non_null(strstr(text, "TOTAL%    SELF%       CPU  FRAME\n"));
	/* all: 100 samples x 10 ms = 1 s; hot: 60 % of it */
	assert_non_null(strstr(line_of(text, " all"), "100.0%     0.0%    1.00 s  all\n"));
	assert_non_null(
		strstr(line_of(text, "hot"), " 60.0%     0.0%    0.60 s        hot [native]"));
	assert_non_null(strstr(line_of(text, "leaf_[k]"), " 60.0%    60.0%    0.60 s "));
	assert_non_null(strstr(text, "leaf_[k] [kernel]\n"));
	assert_non_null(strstr(text, "    api [process]\n"));
	assert_non_null(strstr(text, "work (/a.py:9) [py]\n"));
	/* hottest first, whatever the names' order */
	assert_before(text, "api [process]", "py [process]");
	assert_before(text, "hot [native]", "small [native]");
	/* nothing hidden: no hidden line */
	assert_null(strstr(text, "hidden"));
	free(text);

	/* no period: no CPU time */
	o.period_ns = 0;
	text = render(f, &o);
	assert_non_null(strstr(line_of(text, " all"), "100.0%     0.0%         -  all\n"));
	free(text);
	flame__free(f);
}

/* Below the share, past the depth or the line count: hidden and counted. */
static void test_pruning(void **state)
{
	static const char *const stacks[] = {
		"p;big;deeper;deepest",
		"p;tiny",
		"p;tiny2;under",
	};
	static const uint64_t counts[] = { 995, 2, 3 };
	struct render_text_options o = { 0 };
	struct flame *f = tree(stacks, counts, 3, 0, NULL);
	char *text;

	(void)state;
	flame__finish(f);
	text = render(f, &o); /* 1 %: tiny (0.2 %) and tiny2 (0.3 %) with its child go */
	assert_null(strstr(text, "tiny"));
	assert_non_null(strstr(text, "deepest"));
	assert_non_null(strstr(text, "# 5 of 8 frames shown; hidden: 3 below 1 % of samples, 0 "
				     "deeper than 64 or past 200 lines\n"));
	free(text);

	o.min_share = 0.001;
	o.max_depth = 2; /* depth 3 and below go: deeper, deepest, under */
	text = render(f, &o);
	assert_non_null(strstr(text, "tiny2"));
	assert_null(strstr(text, "deeper [native]"));
	assert_non_null(strstr(text, "hidden: 0 below 0.1 % of samples, 3 deeper than 2"));
	free(text);

	o.max_depth = 0;
	o.max_lines = 3; /* all, p, big */
	text = render(f, &o);
	assert_non_null(strstr(text, "# 3 of 8 frames shown;"));
	free(text);

	o.min_share = 1.5;
	assert_int_equal(render_text(f, &o, stdout), -EINVAL);
	assert_int_equal(render_text(NULL, NULL, stdout), -EINVAL);
	assert_int_equal(render_text(f, NULL, NULL), -EINVAL);
	flame__free(f);
}

/* A placeholder that stood for a run of frames shows its count. */
static void test_repeat(void **state)
{
	static const char *const stacks[] = { "p;[unknown];f" };
	static const uint64_t counts[] = { 5 };
	struct flame *f = tree(stacks, counts, 1, 0, NULL);
	struct flame_node *p, *u;
	char *text;

	(void)state;
	flame__finish(f);
	/* the gran helper's collapsing fills repeat; set it as it would */
	p = flame__root(f)->children[0];
	u = p->children[0];
	u->repeat = 128;
	text = render(f, NULL);
	assert_non_null(strstr(text, "[unknown] \u00d7128 [native]\n"));
	free(text);
	flame__free(f);
}

/* Control bytes in a name never reach the terminal. */
static void test_control_bytes(void **state)
{
	struct frame fr[2] = { frame_make(FRAME_PROCESS, "p", "", 0),
			       frame_make(FRAME_NATIVE, "a\x1b[31mred", "", 0) };
	struct flame *f = NULL;
	char *text;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	assert_int_equal(flame__add_frames(f, fr, 2, 3, 0), 0);
	flame__finish(f);
	text = render(f, NULL);
	assert_null(strchr(text, '\x1b'));
	free(text);
	flame__free(f);
}

static void test_diff(void **state)
{
	static const char *const before[] = { "p;main;grew", "p;main;shrank", "p;main;same" };
	static const uint64_t bc[] = { 10, 60, 30 };
	static const char *const after[] = { "p;main;grew", "p;main;shrank", "p;main;same",
					     "p;new" };
	static const uint64_t ac[] = { 80, 40, 60, 20 }; /* total 200: unequal sides */
	struct render_text_options o = { .diff = true };
	struct flame *f = tree(before, bc, 3, 0, NULL);
	char *text, *tree_part;

	(void)state;
	tree(after, ac, 4, 1, f);
	flame__finish(f);
	text = render(f, &o);
	assert_non_null(strstr(text, " BEFORE%   AFTER%     DELTA  FUNCTION\n"));
	/* shrank: 60 % -> 20 % (-40), grew: 10 % -> 40 % (+30), new 0 -> 10,
	 * main 100 -> 90, same 30 -> 30; the movers are movers.c's, as in SVG and HTML */
	assert_non_null(strstr(text, "   60.0%    20.0%   -40.0pp  shrank [native]\n"));
	assert_non_null(strstr(text, "   10.0%    40.0%   +30.0pp  grew [native]\n"));
	assert_non_null(strstr(text, "    0.0%    10.0%   +10.0pp  new [native]\n"));
	assert_before(text, "shrank [native]", "grew [native]");
	assert_before(text, "grew [native]", "new [native]");
	/* then the tree with both sides; same did not move: no mover, only in the tree */
	tree_part = strstr(text, " BEFORE%   AFTER%     DELTA  FRAME\n");
	assert_non_null(tree_part);
	assert_ptr_equal(strstr(text, "same [native]"), strstr(tree_part, "same [native]"));
	assert_non_null(strstr(tree_part, "  100.0%    90.0%   -10.0pp      main [native]\n"));
	assert_non_null(strstr(tree_part, "   60.0%    20.0%   -40.0pp        shrank [native]\n"));
	free(text);

	o.movers = 2; /* of shrank, grew, main and new (|delta| 10, by name) */
	text = render(f, &o);
	assert_non_null(strstr(text, "# 2 more functions moved less\n"));
	free(text);
	flame__free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile), cmocka_unit_test(test_pruning),
		cmocka_unit_test(test_repeat),	cmocka_unit_test(test_control_bytes),
		cmocka_unit_test(test_diff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
