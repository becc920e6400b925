/* Walks of a finished flame tree (see flame.h): flame__top, the functions by
 * self and total with a per-name "on the current path" counter so a recursive
 * function counts its total once, and flame__stacks, the stacks in text order
 * (folded output). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A failed table allocation leaves the element out instead of exiting (flame__top
 * notices by looking the element up again). */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "query/flame_int.h"

/* One function being summed by flame__top. */
struct fn_acc {
	const char *name; /* borrowed from the tree; the hash key */
	uint8_t kind;
	uint64_t self;
	uint64_t total;
	uint32_t on_path; /* nodes of this name on the path from the root to here */
	struct flame_function_line *lines; /* sorted by line */
	uint32_t nlines, linecap;
	UT_hash_handle hh;
};

struct top_walk {
	struct fn_acc *fns; /* uthash head */
	size_t n;
	size_t nlines; /* sum of the functions' nlines */
	unsigned side;
};

/* Adds a node's line breakdown to its function's: self always, total only from
 * the outermost node of the function on the path (recursion counted once, and
 * its samples go to the line of the outermost call). */
static int top_lines(struct top_walk *w, struct fn_acc *acc, const struct flame_node *n,
		     bool outermost)
{
	uint32_t i, lo, hi, mid;

	for (i = 0; i < n->nlines; i++) {
		const struct flame_line *l = &n->lines[i];
		struct flame_function_line *fl;

		if (!l->total[w->side])
			continue;
		lo = 0;
		hi = acc->nlines;
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (acc->lines[mid].line < l->line)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == acc->nlines || acc->lines[lo].line != l->line) {
			if (acc->nlines == acc->linecap) {
				size_t cap = acc->linecap ? (size_t)acc->linecap * 2 : 2;
				void *p;

				if (cap >= UINT32_MAX / 2)
					return -ENOMEM;
				p = reallocarray(acc->lines, cap, sizeof(*acc->lines));
				if (!p)
					return -ENOMEM;
				acc->lines = p;
				acc->linecap = (uint32_t)cap;
			}
			memmove(acc->lines + lo + 1, acc->lines + lo,
				(acc->nlines - lo) * sizeof(*acc->lines));
			acc->lines[lo] = (struct flame_function_line){ .line = l->line };
			acc->nlines++;
			w->nlines++;
		}
		fl = &acc->lines[lo];
		fl->self = sat_add(fl->self, l->self[w->side]);
		if (outermost)
			fl->total = sat_add(fl->total, l->total[w->side]);
	}
	return 0;
}

/* Depth is bounded by FLAME_MAX_DEPTH, so recursion is safe. */
static int top_visit(struct top_walk *w, const struct flame_node *n)
{
	struct fn_acc *acc = NULL, *found;
	uint32_t i;
	int err = 0;

	if (n->total[w->side] == 0)
		return 0; /* nothing below on this side */
	if (n->frame.kind != FLAME_ROOT && n->frame.kind != FRAME_PROCESS) {
		HASH_FIND_STR(w->fns, n->name, acc);
		if (!acc) {
			acc = calloc(1, sizeof(*acc));
			if (!acc)
				return -ENOMEM;
			acc->name = n->name;
			acc->kind = (uint8_t)n->frame.kind;
			HASH_ADD_KEYPTR(hh, w->fns, acc->name, strlen(acc->name), acc);
			HASH_FIND_STR(w->fns, n->name, found);
			if (found != acc) {
				free(acc);
				return -ENOMEM;
			}
			w->n++;
		}
		acc->self = sat_add(acc->self, n->self[w->side]);
		if (acc->on_path == 0)
			acc->total = sat_add(acc->total, n->total[w->side]);
		err = top_lines(w, acc, n, acc->on_path == 0);
		if (err)
			return err;
		acc->on_path++;
	}
	for (i = 0; i < n->nchildren && !err; i++)
		err = top_visit(w, n->children[i]);
	if (acc)
		acc->on_path--;
	return err;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct flame_function *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

int flame__top(const struct flame *f, unsigned side, struct flame_function **out, size_t *n)
{
	struct top_walk w = { .side = side };
	struct flame_function *arr = NULL;
	struct flame_function_line *lines;
	struct fn_acc *acc, *tmp;
	size_t i = 0, nfn;
	int err;

	if (side > 1 || !f->pub)
		return -EINVAL;
	err = top_visit(&w, f->pub);
	if (err)
		goto out_free;
	/* One block: the functions, then every function's lines. calloc(0) may
	 * return NULL; always hand back a freeable pointer. */
	nfn = w.n ? w.n : 1;
	arr = calloc(1, nfn * sizeof(*arr) + w.nlines * sizeof(*lines));
	if (!arr) {
		err = -ENOMEM;
		goto out_free;
	}
	lines = (struct flame_function_line *)(arr + nfn);
	HASH_ITER (hh, w.fns, acc, tmp) {
		arr[i].name = acc->name;
		arr[i].kind = acc->kind;
		arr[i].self = acc->self;
		arr[i].total = acc->total;
		if (acc->nlines) {
			memcpy(lines, acc->lines, acc->nlines * sizeof(*lines));
			arr[i].lines = lines;
			arr[i].nlines = acc->nlines;
			lines += acc->nlines;
		}
		i++;
	}
	qsort(arr, i, sizeof(*arr), cmp_fn);
	*out = arr;
	*n = i;
out_free:
	HASH_ITER (hh, w.fns, acc, tmp) {
		HASH_DEL(w.fns, acc);
		free(acc->lines);
		free(acc);
	}
	return err;
}

/* ---- stacks in text order -------------------------------------------------- */

struct stack_walk {
	struct flame_stack *stacks;
	const struct flame_node **pool; /* every stack's path, one after another */
	size_t n, used;
};

static void collect_stacks(const struct flame_node *n, struct stack_walk *w)
{
	const struct flame_node *p;
	uint32_t i;

	if (n->depth > 0 && (n->self[0] || n->self[1])) {
		struct flame_stack *st = &w->stacks[w->n++];
		const struct flame_node **path = w->pool + w->used;

		for (p = n; p->depth > 0; p = p->parent)
			path[p->depth - 1] = p;
		st->frames = path;
		st->nframes = n->depth;
		st->count[0] = n->self[0];
		st->count[1] = n->self[1];
		w->used += n->depth;
	}
	for (i = 0; i < n->nchildren; i++)
		collect_stacks(n->children[i], w);
}

/* The next byte of a stack's folded text at cursor (frame *fi, byte *off), 0 at the
 * end: frame names joined by ';'. */
static unsigned char text_next(const struct flame_stack *s, uint32_t *fi, size_t *off)
{
	const char *name;

	if (*fi >= s->nframes)
		return 0;
	name = s->frames[*fi]->name;
	if (name[*off])
		return (unsigned char)name[(*off)++];
	*off = 0;
	return ++*fi < s->nframes ? ';' : 0;
}

/* strcmp of two stacks' folded texts, without making them: equal path nodes are
 * equal text, so the comparison starts where the paths part. */
static int cmp_stack_text(const void *a, const void *b)
{
	const struct flame_stack *x = a, *y = b;
	uint32_t i = 0, fx, fy;
	size_t ox = 0, oy = 0;
	unsigned char cx, cy;

	while (i < x->nframes && i < y->nframes && x->frames[i] == y->frames[i])
		i++;
	if (i > 0 && (i == x->nframes || i == y->nframes)) /* one is a prefix: it ends */
		return x->nframes < y->nframes ? -1 : x->nframes > y->nframes;
	fx = fy = i;
	do {
		cx = text_next(x, &fx, &ox);
		cy = text_next(y, &fy, &oy);
	} while (cx && cx == cy);
	if (cx != cy)
		return cx < cy ? -1 : 1;
	/* equal texts on distinct paths (frames of two kinds with one text) */
	return x->frames[i]->frame.kind < y->frames[i]->frame.kind ? -1 : 1;
}

int flame__stacks(const struct flame *f, struct flame_stack **out, size_t *n)
{
	struct stack_walk w = { 0 };
	size_t nstacks = f->nends, slots = f->endslots; /* counted by the adds */

	*out = NULL;
	*n = 0;
	if (!f->pub)
		return -EINVAL;
	if (!nstacks)
		return 0;
	w.stacks = malloc(nstacks * sizeof(*w.stacks) + slots * sizeof(*w.pool));
	if (!w.stacks)
		return -ENOMEM;
	w.pool = (const struct flame_node **)(w.stacks + nstacks);
	collect_stacks(f->pub, &w);
	qsort(w.stacks, w.n, sizeof(*w.stacks), cmp_stack_text);
	*out = w.stacks;
	*n = w.n;
	return 0;
}
