/* Fuzz target: folded text, as `smolder` reads it and as a hostile name could
 * shape it. Each line is read into an aggregate, each stack's frames go through
 * the frame grammar (text -> frame -> text must give the same bytes back), and
 * the stacks are merged into a flame tree and rendered in one of the formats
 * (chosen by the input's size, so every renderer sees every kind of input: one
 * format per run is six times the executions of all six), so names that look
 * like the grammar, invalid UTF-8 and markup reach every renderer. The tree is of
 * function or line granularity (another bit of the size), and its per-line
 * breakdowns are checked: sorted, and never more than the node's counts. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/folded.h"
#include "common/frame.h"
#include "query/flame.h"
#include "query/render_folded.h"
#include "query/render_html.h"
#include "query/render_json.h"
#include "query/render_pprof.h"
#include "query/render_speedscope.h"
#include "query/render_svg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_frames(void *ctx, const char *stack, uint64_t count)
{
	const char *p, *semi;
	char buf[8192];
	int first = 1;

	for (p = stack;; p = semi + 1) {
		struct frame f;
		size_t len;

		semi = strchrnul(p, ';');
		len = (size_t)(semi - p);
		frame_parse(p, len, first, &f);
		if (frame_format(&f, buf, sizeof(buf)) != len ||
		    (len < sizeof(buf) && memcmp(buf, p, len) != 0))
			abort(); /* the grammar must round-trip */
		first = 0;
		if (!*semi)
			break;
	}
	return flame__add(ctx, stack, count, count & 1);
}

/* A node's lines are sorted and within its counts; its children's too. */
static void check_lines(const struct flame_node *n)
{
	uint64_t self[2] = { 0, 0 }, total[2] = { 0, 0 };
	uint32_t i;
	unsigned s;

	for (i = 0; i < n->nlines; i++) {
		if (i && n->lines[i - 1].line >= n->lines[i].line)
			abort();
		for (s = 0; s < 2; s++) {
			if (n->lines[i].self[s] > n->lines[i].total[s])
				abort();
			self[s] += n->lines[i].self[s];
			total[s] += n->lines[i].total[s];
		}
	}
	for (s = 0; s < 2; s++)
		if (self[s] > n->self[s] || total[s] > n->total[s])
			abort();
	if (n->repeat < 1 || (n->nlines && n->frame.kind != FRAME_PYTHON))
		abort();
	for (i = 0; i < n->nchildren; i++)
		check_lines(n->children[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct render_svg_options so = { .title = "fuzz", .diff = size & 1 };
	struct render_html_options ho = { .title = "fuzz", .diff = size & 1 };
	FILE *in = fmemopen((void *)data, size, "r"), *out;
	struct folded *f = NULL;
	struct flame *tree = NULL;
	void *pp = NULL;
	size_t pplen;

	if (!in)
		return 0;
	if (folded__new(&f) ||
	    flame__new_granular(&tree, (size / 6) & 1 ? FLAME_BY_FUNCTION : FLAME_BY_LINE))
		goto out;
	if (folded__read(f, in, NULL) != 0)
		goto out;
	if (folded__foreach(f, check_frames, tree) != 0)
		goto out;
	flame__finish(tree);
	check_lines(flame__root(tree));
	out = fopen("/dev/null", "w");
	if (!out)
		goto out;
	switch (size % 6) {
	case 0:
		render_folded(tree, true, out);
		break;
	case 1:
		/* every other input pruned to a few nodes: ties, diffs, deep trees */
		render_json_tree(tree, NULL, size % 12 == 1 ? 16 + data[0] % 8 : 0, out);
		break;
	case 2:
		render_svg(tree, &so, out);
		break;
	case 3:
		render_html(tree, &ho, out);
		break;
	case 4:
		render_speedscope(tree, NULL, out);
		break;
	default:
		if (render_pprof(tree, 10101010, 0, 0, &pp, &pplen) == 0)
			free(pp);
		break;
	}
	fclose(out);
out:
	flame__free(tree);
	folded__free(f);
	fclose(in);
	return 0;
}
