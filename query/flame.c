/* Flame trees (see flame.h): folded stacks merged frame by frame into a tree whose
 * nodes carry self and total sample counts for two sides. Each node is a public
 * struct flame_node wrapped in a private struct node that adds a uthash table of
 * its children (so an add costs one hash lookup per frame, whatever the fan-out)
 * and the capacity of the children array. flame__add resolves the whole path first
 * and only then adds the counts, so a failed add (-ENOMEM) never leaves partial
 * totals behind (at worst a few nodes with zero counts). flame__finish sorts every
 * children array by name; flame__top walks the tree once with a per-name "on the
 * current path" counter so recursive functions count their total once.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A failed table allocation leaves the element out instead of exiting; child_get
 * notices by looking the element up again. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "query/flame.h"

#define FLAME_MAX_DEPTH 2048 /* frames per stack, the root not counted */

struct node {
	struct flame_node n; /* first: a flame_node pointer is a node pointer */
	struct node *kids;   /* uthash head of the children, keyed by name */
	UT_hash_handle hh;   /* entry in the parent's kids */
	uint32_t cap;	     /* allocated length of n.children */
};

struct flame {
	struct node *root;
	size_t size;	    /* nodes, root included */
	struct node **path; /* scratch for flame__add: FLAME_MAX_DEPTH + 1 entries */
};

static struct node *node_new(const char *name, size_t len, uint8_t kind, struct node *parent)
{
	struct node *nd = calloc(1, sizeof(*nd));
	char *copy = malloc(len + 1);

	if (!nd || !copy) {
		free(nd);
		free(copy);
		return NULL;
	}
	memcpy(copy, name, len);
	copy[len] = '\0';
	nd->n.name = copy;
	nd->n.kind = kind;
	nd->n.parent = parent ? &parent->n : NULL;
	return nd;
}

/* Depth is bounded by FLAME_MAX_DEPTH, so recursion is safe. */
static void node_free(struct node *nd)
{
	uint32_t i;

	if (!nd)
		return;
	HASH_CLEAR(hh, nd->kids);
	for (i = 0; i < nd->n.nchildren; i++)
		node_free((struct node *)nd->n.children[i]);
	free(nd->n.children);
	free((char *)nd->n.name);
	free(nd);
}

int flame__new(struct flame **out)
{
	struct flame *f = calloc(1, sizeof(*f));
	int err = -ENOMEM;

	if (!f)
		return -ENOMEM;
	f->path = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->path));
	if (!f->path)
		goto out_free;
	f->root = node_new("all", 3, FLAME_ROOT, NULL);
	if (!f->root)
		goto out_free;
	f->size = 1;
	*out = f;
	return 0;

out_free:
	free(f->path);
	free(f);
	return err;
}

void flame__free(struct flame *f)
{
	if (!f)
		return;
	node_free(f->root);
	free(f->path);
	free(f);
}

static bool has_suffix(const char *s, size_t len, const char *suffix)
{
	size_t sl = strlen(suffix);

	return len >= sl && memcmp(s + len - sl, suffix, sl) == 0;
}

/* "qualname (file:line)": a final " (" ... ":digits)" with a non-empty qualname
 * and file. The qualname itself may hold spaces and parentheses ("<lambda>",
 * "f.<locals>.g"), so the last " (" is the one that opens the location. */
static bool is_python(const char *s, size_t len)
{
	size_t open, colon, i;

	if (len < 6 || s[len - 1] != ')')
		return false;
	for (open = len - 1; open > 0; open--)
		if (s[open] == '(' && s[open - 1] == ' ')
			break;
	if (open < 2) /* no " (", or an empty qualname */
		return false;
	for (colon = len - 2; colon > open; colon--)
		if (s[colon] == ':')
			break;
	if (colon <= open + 1 || colon + 1 >= len - 1) /* empty file or empty line */
		return false;
	for (i = colon + 1; i < len - 1; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static enum flame_kind kind_of(const char *frame, size_t len, int depth)
{
	if (depth < 0)
		return FLAME_ROOT;
	if (depth == 0)
		return FLAME_PROCESS;
	if (has_suffix(frame, len, "_[k]"))
		return FLAME_KERNEL;
	if (is_python(frame, len))
		return FLAME_PYTHON;
	return FLAME_NATIVE;
}

enum flame_kind flame_kind_of(const char *frame, int depth)
{
	return kind_of(frame, frame ? strlen(frame) : 0, depth);
}

static int child_get(struct flame *f, struct node *parent, const char *name, size_t len, int depth,
		     struct node **out)
{
	struct node *kid, *found;
	struct flame_node **arr;
	uint32_t cap;

	HASH_FIND(hh, parent->kids, name, len, kid);
	if (kid) {
		*out = kid;
		return 0;
	}
	if (parent->n.nchildren == parent->cap) {
		if (parent->cap >= UINT32_MAX / 2)
			return -ENOMEM;
		cap = parent->cap ? parent->cap * 2 : 4;
		arr = realloc(parent->n.children, cap * sizeof(*arr));
		if (!arr)
			return -ENOMEM;
		parent->n.children = arr;
		parent->cap = cap;
	}
	kid = node_new(name, len, (uint8_t)kind_of(name, len, depth), parent);
	if (!kid)
		return -ENOMEM;
	/* The key is the node's own copy of the name, valid as long as the node. */
	HASH_ADD_KEYPTR(hh, parent->kids, kid->n.name, len, kid);
	HASH_FIND(hh, parent->kids, name, len, found);
	if (found != kid) {
		node_free(kid);
		return -ENOMEM;
	}
	parent->n.children[parent->n.nchildren++] = &kid->n;
	f->size++;
	*out = kid;
	return 0;
}

int flame__add(struct flame *f, const char *stack, uint64_t count, unsigned side)
{
	const char *p, *semi;
	size_t depth = 0, i;
	struct node *cur;
	int err;

	if (!f || !stack || !*stack || side > 1)
		return -EINVAL;
	for (p = stack; (semi = strchr(p, ';')); p = semi + 1)
		if (++depth >= FLAME_MAX_DEPTH)
			return -EINVAL;
	cur = f->root;
	f->path[0] = cur;
	depth = 0;
	for (p = stack;; p = semi + 1) {
		size_t len;

		semi = strchr(p, ';');
		len = semi ? (size_t)(semi - p) : strlen(p);
		err = child_get(f, cur, p, len, (int)depth, &cur);
		if (err)
			return err;
		f->path[++depth] = cur;
		if (!semi)
			break;
	}
	for (i = 0; i <= depth; i++)
		f->path[i]->n.total[side] += count;
	cur->n.self[side] += count;
	return 0;
}

static int cmp_node(const void *a, const void *b)
{
	const struct flame_node *x = *(const struct flame_node *const *)a;
	const struct flame_node *y = *(const struct flame_node *const *)b;

	return strcmp(x->name, y->name);
}

static void node_sort(struct flame_node *n)
{
	uint32_t i;

	if (n->nchildren > 1)
		qsort(n->children, n->nchildren, sizeof(*n->children), cmp_node);
	for (i = 0; i < n->nchildren; i++)
		node_sort(n->children[i]);
}

void flame__finish(struct flame *f)
{
	if (f)
		node_sort(&f->root->n);
}

const struct flame_node *flame__root(const struct flame *f)
{
	return &f->root->n;
}

uint64_t flame__total(const struct flame *f, unsigned side)
{
	return side > 1 ? 0 : f->root->n.total[side];
}

size_t flame__size(const struct flame *f)
{
	return f->size;
}

/* One function being summed by flame__top. */
struct fn_acc {
	const char *name; /* borrowed from the tree; the hash key */
	uint8_t kind;
	uint64_t self;
	uint64_t total;
	uint32_t on_path; /* nodes of this name on the path from the root to here */
	UT_hash_handle hh;
};

struct top_walk {
	struct fn_acc *fns; /* uthash head */
	size_t n;
	unsigned side;
};

/* Depth is bounded by FLAME_MAX_DEPTH, so recursion is safe. */
static int top_visit(struct top_walk *w, const struct flame_node *n)
{
	struct fn_acc *acc = NULL, *found;
	uint32_t i;
	int err = 0;

	if (n->total[w->side] == 0)
		return 0; /* nothing below on this side */
	if (n->kind != FLAME_ROOT && n->kind != FLAME_PROCESS) {
		HASH_FIND_STR(w->fns, n->name, acc);
		if (!acc) {
			acc = calloc(1, sizeof(*acc));
			if (!acc)
				return -ENOMEM;
			acc->name = n->name;
			acc->kind = n->kind;
			HASH_ADD_KEYPTR(hh, w->fns, acc->name, strlen(acc->name), acc);
			HASH_FIND_STR(w->fns, n->name, found);
			if (found != acc) {
				free(acc);
				return -ENOMEM;
			}
			w->n++;
		}
		acc->self += n->self[w->side];
		if (acc->on_path == 0)
			acc->total += n->total[w->side];
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
	struct top_walk w = {.side = side};
	struct flame_function *arr = NULL;
	struct fn_acc *acc, *tmp;
	size_t i = 0;
	int err;

	if (side > 1)
		return -EINVAL;
	err = top_visit(&w, &f->root->n);
	if (err)
		goto out_free;
	/* calloc(0) may return NULL; always hand back a freeable pointer. */
	arr = calloc(w.n ? w.n : 1, sizeof(*arr));
	if (!arr) {
		err = -ENOMEM;
		goto out_free;
	}
	HASH_ITER (hh, w.fns, acc, tmp) {
		arr[i].name = acc->name;
		arr[i].kind = acc->kind;
		arr[i].self = acc->self;
		arr[i].total = acc->total;
		i++;
	}
	qsort(arr, i, sizeof(*arr), cmp_fn);
	*out = arr;
	*n = i;
out_free:
	HASH_ITER (hh, w.fns, acc, tmp) {
		HASH_DEL(w.fns, acc);
		free(acc);
	}
	return err;
}
