/* The movers of a differential flame tree (see movers.h): flame__top of each
 * side, both sorted by name and merged, then sorted by the size of the change.
 * The hottest lines are picked by repeated selection: max is a handful. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "query/movers.h"

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct flame_function *)a)->name,
		      ((const struct flame_function *)b)->name);
}

static double absd(double x)
{
	return x < 0 ? -x : x;
}

static int by_change(const void *a, const void *b)
{
	const struct mover *x = a, *y = b;
	double dx = absd(x->delta), dy = absd(y->delta);

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->name, y->name);
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

int movers_find(const struct flame *f, size_t max, struct mover **out, size_t *n)
{
	struct flame_function *side[2] = { NULL, NULL };
	uint64_t total[2] = { flame__total(f, 0), flame__total(f, 1) };
	struct mover *m = NULL;
	size_t len[2] = { 0, 0 }, i = 0, j = 0, k = 0;
	int err;

	err = flame__top(f, 0, &side[0], &len[0]);
	err = err ?: flame__top(f, 1, &side[1], &len[1]);
	if (err)
		goto out_free;
	if (len[0] + len[1]) {
		m = calloc(len[0] + len[1], sizeof(*m));
		if (!m) {
			err = -ENOMEM;
			goto out_free;
		}
	}
	if (len[0])
		qsort(side[0], len[0], sizeof(*side[0]), by_name);
	if (len[1])
		qsort(side[1], len[1], sizeof(*side[1]), by_name);
	while (i < len[0] || j < len[1]) {
		int c = i == len[0]   ? 1
			: j == len[1] ? -1
				      : strcmp(side[0][i].name, side[1][j].name);
		const struct flame_function *fn = c <= 0 ? &side[0][i] : &side[1][j];
		struct frame pf;

		/* a placeholder is no function: its change shows in the tree */
		pf = frame_make((enum frame_kind)fn->kind, fn->name, NULL, 0);
		if (frame_is_placeholder(&pf)) {
			i += c <= 0;
			j += c >= 0;
			continue;
		}
		m[k].name = fn->name;
		m[k].kind = fn->kind;
		m[k].before = c <= 0 ? share(side[0][i++].total, total[0]) : 0;
		m[k].after = c >= 0 ? share(side[1][j++].total, total[1]) : 0;
		m[k].delta = m[k].after - m[k].before;
		if (m[k].delta != 0)
			k++;
	}
	if (k)
		qsort(m, k, sizeof(*m), by_change);
	*n = k < max ? k : max;
	if (!*n) {
		free(m);
		m = NULL;
	}
	*out = m;
out_free:
	free(side[0]);
	free(side[1]);
	return err;
}

uint32_t movers_hot_lines(const struct flame_node *n, unsigned side, uint32_t *idx, uint32_t max)
{
	uint64_t last_t = 0, t, bt;
	uint32_t last_line = 0, i, k, best;

	for (k = 0; k < max && k < n->nlines; k++) {
		best = UINT32_MAX;
		for (i = 0; i < n->nlines; i++) {
			t = n->lines[i].total[side];
			if (k && (t > last_t || (t == last_t && n->lines[i].line <= last_line)))
				continue; /* listed already */
			bt = best == UINT32_MAX ? 0 : n->lines[best].total[side];
			if (best == UINT32_MAX || t > bt ||
			    (t == bt && n->lines[i].line < n->lines[best].line))
				best = i;
		}
		idx[k] = best;
		last_t = n->lines[best].total[side];
		last_line = n->lines[best].line;
	}
	return k;
}
