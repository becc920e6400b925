/* Flame trees (see flame.h): stacks merged frame by frame into a tree whose nodes
 * carry self and total sample counts for two sides. Each node is a public struct
 * flame_node wrapped in a private struct node that adds its key (the frame's kind
 * byte followed by its text) and capacities. A day of a busy host is half a million
 * nodes, so the tree is built for that:
 * - every node, name, children array and line breakdown comes from the tree's
 *   arena (chunks of ARENA_CHUNK bytes), so flame__free frees a few chunks instead
 *   of walking half a million nodes; a grown array leaves its old copy in the arena
 *   (geometric growth: at most as much again);
 * - an only child is compared directly, and the children of nodes with two or more
 *   are found through one open-addressing table for the whole tree, keyed by
 *   (parent, key) with the hash kept in the slot: one probe per frame, whatever
 *   the fan-out, and none at all below a new node (most of a stack trie is chains);
 * - flame__add_frames first tries the last add's node at the same depth (stacks
 *   of a process share their outer frames), comparing frame fields, not text.
 * At function granularity a Python frame's key is its text without the line
 * ("q (f.py)"), and the line goes to the node's breakdown: an array sorted by line,
 * found by binary search; a Python node is allocated with room for one line inline
 * (most functions run at one or a few lines). A run of equal placeholder frames
 * ("[unknown]" x 128) takes one node, whose repeat remembers the longest run.
 * flame__add_frames resolves the whole path (nodes and line slots) first and only
 * then adds the counts, so a failed add (-ENOMEM) never leaves partial totals
 * behind (at worst a few nodes or line entries with zero counts). flame__finish
 * sorts the children arrays of the nodes that have two or more (the tree lists
 * them as they appear) by name; flame__top walks the tree once with a
 * per-name "on the current path" counter so recursive functions count their total
 * once.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A failed table allocation leaves the element out instead of exiting (flame__top
 * notices by looking the element up again). */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "common/array.h"
#include "query/flame.h"

struct node {
	struct flame_node n;		 /* first: a flame_node pointer is a node pointer */
	uint32_t cap;			 /* allocated length of n.children */
	uint32_t klen;			 /* key length: kind byte + text */
	uint32_t linecap;		 /* allocated length of n.lines (1: the inline one) */
	struct flame_line inline_line[]; /* function granularity, Python: n.lines at first */
};

/* Arena chunk sizes: the first is small so that a one-stack tree stays cheap,
 * each next one twice the last up to the largest, so a day's half a million
 * nodes (about 150 MB) take a few dozen chunks. Chunks from HUGE_CHUNK up are
 * advised to the kernel as huge pages: the nodes are visited in no order, and
 * with 4 KB pages most visits missed the TLB as well as the cache (and each page
 * was a fault of its own). */
#define ARENA_FIRST (64 * 1024)
#define ARENA_MAX   (8 * 1024 * 1024)
#define HUGE_PAGE   (2 * 1024 * 1024)
#define HUGE_CHUNK  (2 * HUGE_PAGE)

struct chunk {
	struct chunk *next;
	size_t used, size;
	_Alignas(16) char data[];
};

/* One slot of the child table: a node and the hash of (its parent, its key). */
struct slot {
	uint64_t hash;
	struct node *nd;
};

/* The child table starts at this many slots and doubles at half full. */
#define TABLE_MIN 1024

struct flame {
	enum flame_granularity gran;
	struct node *root;
	size_t size;	     /* nodes, root included */
	struct chunk *arena; /* newest chunk first */
	size_t nextchunk;    /* size of the next chunk, ARENA_FIRST to ARENA_MAX */
	struct slot *table;  /* children of every node (the root's parent is none) */
	size_t tcap;	     /* slots, a power of two */
	size_t tused;	     /* nodes in the table */
	struct node **wide;  /* nodes with two or more children: the ones to sort */
	size_t nwide, widecap;
	size_t nends;	      /* nodes with samples ending there (either side): stacks */
	size_t endslots;      /* the sum of their depths */
	struct node **path;   /* flame__add_frames: the last add's path, FLAME_MAX_DEPTH + 1 */
	size_t pdepth;	      /* entries of path the last add filled (root excluded) */
	uint32_t *runs;	      /* scratch: path[d] stands for runs[d] equal frames */
	uint32_t *lineidx;    /* scratch: path[d]'s line entry, UINT32_MAX for none */
	struct frame *frames; /* scratch for flame__add: FLAME_MAX_DEPTH entries */
	char *key;	      /* scratch: kind byte + frame text */
	size_t keycap;
};

/* Advises the huge pages that lie whole inside [p, p + len) (an advice: its
 * failure changes nothing). */
static void advise_huge(void *p, size_t len)
{
	uintptr_t start = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	uintptr_t end = ((uintptr_t)p + len) & ~(uintptr_t)(HUGE_PAGE - 1);

	if (end > start)
		(void)madvise((void *)start, end - start, MADV_HUGEPAGE);
}

/* size bytes, 16-aligned, from f's arena; NULL when out of memory. */
static void *arena_alloc(struct flame *f, size_t size)
{
	struct chunk *c = f->arena;
	size_t want;

	size = (size + 15) & ~(size_t)15;
	if (!c || c->size - c->used < size) {
		if (!f->nextchunk)
			f->nextchunk = ARENA_FIRST;
		want = size > f->nextchunk ? size : f->nextchunk;
		if (want > SIZE_MAX - sizeof(*c))
			return NULL;
		c = malloc(sizeof(*c) + want);
		if (!c)
			return NULL;
		if (want >= HUGE_CHUNK)
			advise_huge(c, sizeof(*c) + want);
		c->size = want;
		c->used = 0;
		if (f->nextchunk < ARENA_MAX && want == f->nextchunk)
			f->nextchunk *= 2;
		/* a big one-off block goes behind the current chunk, which keeps its room */
		if (f->arena && want > f->nextchunk) {
			c->next = f->arena->next;
			f->arena->next = c;
		} else {
			c->next = f->arena;
			f->arena = c;
		}
	}
	c->used += size;
	return c->data + c->used - size;
}

/* The hash of a key below a parent (64-bit multiply-xorshift over 8-byte words). */
static uint64_t key_hash(const struct node *parent, const char *key, size_t klen)
{
	const uint64_t m = 0x9e3779b97f4a7c15ULL;
	uint64_t h = (uint64_t)(uintptr_t)parent * m ^ klen, w;
	size_t i = 0;

	for (; i + 8 <= klen; i += 8) {
		memcpy(&w, key + i, 8);
		h = (h ^ w) * m;
		h ^= h >> 29;
	}
	if (i < klen) {
		w = 0;
		memcpy(&w, key + i, klen - i);
		h = (h ^ w) * m;
		h ^= h >> 29;
	}
	h *= m;
	return h ^ (h >> 32);
}

/* Doubles the child table (or makes it). Returns 0 or -ENOMEM (table unchanged). */
static int table_grow(struct flame *f)
{
	size_t cap = f->tcap ? f->tcap * 2 : TABLE_MIN, i, j;
	struct slot *t;

	if (cap > SIZE_MAX / sizeof(*t))
		return -ENOMEM;
	t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (cap * sizeof(*t) >= HUGE_CHUNK)
		advise_huge(t, cap * sizeof(*t));
	for (i = 0; i < f->tcap; i++) {
		if (!f->table[i].nd)
			continue;
		for (j = f->table[i].hash & (cap - 1); t[j].nd; j = (j + 1) & (cap - 1))
			;
		t[j] = f->table[i];
	}
	free(f->table);
	f->table = t;
	f->tcap = cap;
	return 0;
}

/* Puts nd into the child table, which has room. */
static void table_put(struct flame *f, struct node *nd)
{
	uint64_t h = key_hash((struct node *)nd->n.parent, nd->n.name - 1, nd->klen);
	size_t i;

	for (i = h & (f->tcap - 1); f->table[i].nd; i = (i + 1) & (f->tcap - 1))
		;
	f->table[i] = (struct slot){ .hash = h, .nd = nd };
	f->tused++;
}

/* A node for the frame whose key (kind byte + text, klen bytes) is key; its frame
 * is fr with the strings moved into the node's own copy of the text. inline_line:
 * room for one line of the breakdown. */
static struct node *node_new(struct flame *f, const char *key, size_t klen, const struct frame *fr,
			     struct node *parent, bool inline_line)
{
	size_t size = sizeof(struct node) + (inline_line ? sizeof(struct flame_line) : 0);
	struct node *nd = arena_alloc(f, size + klen + 1);
	char *copy;

	if (!nd)
		return NULL;
	memset(nd, 0, size);
	copy = (char *)nd + size;
	memcpy(copy, key, klen);
	copy[klen] = '\0';
	nd->n.name = copy + 1;
	nd->n.frame = *fr;
	nd->n.frame.name = nd->n.name;
	nd->n.frame.file = fr->kind == FRAME_PYTHON ? nd->n.name + fr->name_len + 2 : "";
	nd->n.parent = parent ? &parent->n : NULL;
	nd->n.depth = parent ? parent->n.depth + 1 : 0;
	nd->n.repeat = 1;
	nd->klen = (uint32_t)klen;
	if (inline_line) {
		nd->n.lines = nd->inline_line;
		nd->linecap = 1;
	}
	return nd;
}

int flame__new(struct flame **out)
{
	return flame__new_granular(out, FLAME_BY_LINE);
}

int flame__new_granular(struct flame **out, enum flame_granularity g)
{
	static const char root_key[] = { FLAME_ROOT, 'a', 'l', 'l' };
	struct flame *f = calloc(1, sizeof(*f));
	struct frame root;

	if (!f)
		return -ENOMEM;
	f->gran = g == FLAME_BY_FUNCTION ? FLAME_BY_FUNCTION : FLAME_BY_LINE;
	f->path = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->path));
	f->runs = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->runs));
	f->lineidx = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->lineidx));
	f->frames = calloc(FLAME_MAX_DEPTH, sizeof(*f->frames));
	if (!f->path || !f->runs || !f->lineidx || !f->frames || table_grow(f))
		goto out_free;
	root = frame_make(FRAME_NATIVE, "all", NULL, 0);
	root.kind = FLAME_ROOT;
	f->root = node_new(f, root_key, sizeof(root_key), &root, NULL, false);
	if (!f->root)
		goto out_free;
	f->size = 1;
	*out = f;
	return 0;

out_free:
	flame__free(f);
	return -ENOMEM;
}

void flame__free(struct flame *f)
{
	struct chunk *c, *next;

	if (!f)
		return;
	for (c = f->arena; c; c = next) {
		next = c->next;
		free(c);
	}
	free(f->table);
	free(f->wide);
	free(f->path);
	free(f->runs);
	free(f->lineidx);
	free(f->frames);
	free(f->key);
	free(f);
}

/* Whether frames of this kind keep their line out of their node's identity. */
static bool by_function(const struct flame *f, const struct frame *fr)
{
	return f->gran == FLAME_BY_FUNCTION && fr->kind == FRAME_PYTHON;
}

/* Whether node nd is frame fr (a frame the node was made from would be), comparing
 * fields, not text: equal fields make equal keys. */
static bool node_is(const struct flame *f, const struct node *nd, const struct frame *fr)
{
	const struct frame *k = &nd->n.frame;

	return k->kind == fr->kind && k->name_len == fr->name_len && k->file_len == fr->file_len &&
	       (k->line == fr->line || by_function(f, fr)) &&
	       memcmp(k->name, fr->name, fr->name_len) == 0 &&
	       (!fr->file_len || memcmp(k->file, fr->file, fr->file_len) == 0);
}

/* The child of parent for frame fr, created if new. */
static int child_get(struct flame *f, struct node *parent, const struct frame *frame,
		     struct node **out)
{
	struct frame fn = *frame;
	const struct frame *fr = frame;
	struct node *kid;
	size_t len, klen, i;
	uint64_t h;
	int err;

	if (by_function(f, frame)) {
		fn.line = FRAME_NO_LINE;
		fr = &fn;
	}
	len = frame_format(fr, NULL, 0);
	klen = len + 1;

	err = array_grow((void **)&f->key, &f->keycap, klen + 1, 1);
	if (err)
		return err;
	f->key[0] = (char)fr->kind;
	frame_format(fr, f->key + 1, len + 1);
	if (parent->n.nchildren == 1) {
		kid = (struct node *)parent->n.children[0];
		if (kid->klen == klen && memcmp(kid->n.name - 1, f->key, klen) == 0) {
			*out = kid;
			return 0;
		}
	} else if (parent->n.nchildren > 1) {
		h = key_hash(parent, f->key, klen);
		for (i = h & (f->tcap - 1); f->table[i].nd; i = (i + 1) & (f->tcap - 1)) {
			kid = f->table[i].nd;
			if (f->table[i].hash == h && kid->n.parent == &parent->n &&
			    kid->klen == klen && memcmp(kid->n.name - 1, f->key, klen) == 0) {
				*out = kid;
				return 0;
			}
		}
	}
	if (parent->n.nchildren == parent->cap) {
		size_t cap = parent->cap ? (size_t)parent->cap * 2 : 1;
		void *p;

		if (cap >= UINT32_MAX / 2)
			return -ENOMEM;
		p = arena_alloc(f, cap * sizeof(*parent->n.children));
		if (!p)
			return -ENOMEM;
		if (parent->n.nchildren)
			memcpy(p, parent->n.children,
			       parent->n.nchildren * sizeof(*parent->n.children));
		parent->n.children = p;
		parent->cap = (uint32_t)cap;
	}
	if (parent->n.nchildren == 1) {
		err = array_grow((void **)&f->wide, &f->widecap, f->nwide + 1, sizeof(*f->wide));
		if (err)
			return err;
	}
	if (parent->n.nchildren && (f->tused + 2) * 2 > f->tcap) {
		err = table_grow(f);
		if (err)
			return err;
	}
	kid = node_new(f, f->key, klen, fr, parent, by_function(f, frame));
	if (!kid)
		return -ENOMEM;
	if (parent->n.nchildren == 1) { /* a second child: both go into the table */
		table_put(f, (struct node *)parent->n.children[0]);
		f->wide[f->nwide++] = parent;
	}
	if (parent->n.nchildren)
		table_put(f, kid);
	parent->n.children[parent->n.nchildren++] = &kid->n;
	f->size++;
	*out = kid;
	return 0;
}

/* a + b, saturated at INT64_MAX like the store's sums: a tree's totals must
 * never wrap (a wrapped parent is smaller than its child, and a renderer then
 * draws a box wider than the graph), whatever counts a folded file holds. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_add_overflow(a, b, &r) || r > (uint64_t)INT64_MAX)
		return (uint64_t)INT64_MAX;
	return r;
}

/* The index of line in nd's breakdown, a zeroed entry inserted when new. */
static int line_slot(struct flame *f, struct node *nd, uint32_t line, uint32_t *idx)
{
	struct flame_line *l = nd->n.lines;
	uint32_t lo = 0, hi = nd->n.nlines, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (l[mid].line == line) {
			*idx = mid;
			return 0;
		}
		if (l[mid].line < line)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (nd->n.nlines == nd->linecap) {
		size_t cap = nd->linecap < 4 ? 4 : (size_t)nd->linecap * 2;

		if (cap >= UINT32_MAX / 2)
			return -ENOMEM;
		l = arena_alloc(f, cap * sizeof(*l));
		if (!l)
			return -ENOMEM;
		memcpy(l, nd->n.lines, sizeof(*l) * nd->n.nlines);
		nd->n.lines = l;
		nd->linecap = (uint32_t)cap;
	}
	memmove(l + lo + 1, l + lo, (nd->n.nlines - lo) * sizeof(*l));
	l[lo] = (struct flame_line){ .line = line };
	nd->n.nlines++;
	*idx = lo;
	return 0;
}

/* Equal placeholder frames, which merge into one node. */
static bool same_placeholder(const struct frame *a, const struct frame *b)
{
	return frame_is_placeholder(a) && frame_is_placeholder(b) && a->name_len == b->name_len &&
	       memcmp(a->name, b->name, a->name_len) == 0;
}

int flame__add_frames(struct flame *f, const struct frame *frames, size_t n, uint64_t count,
		      unsigned side)
{
	struct node *cur;
	size_t i, depth = 0;
	int err;

	if (!f || !frames || n == 0 || n > FLAME_MAX_DEPTH || side > 1)
		return -EINVAL;
	cur = f->root;
	f->path[0] = cur;
	for (i = 0; i < n; i++) {
		if (i > 1 && same_placeholder(&frames[i], &frames[i - 1])) {
			f->runs[depth]++; /* frames[0] is the process, never merged */
			continue;
		}
		/* Stacks of a process share their outer frames: the last add's node at
		 * this depth, still in cache, is most often the one. */
		if (depth < f->pdepth && f->path[depth + 1]->n.parent == &cur->n &&
		    node_is(f, f->path[depth + 1], &frames[i])) {
			cur = f->path[depth + 1];
		} else {
			f->pdepth = depth; /* path beyond is being replaced */
			err = child_get(f, cur, &frames[i], &cur);
			if (err)
				return err;
		}
		f->path[++depth] = cur;
		f->runs[depth] = 1;
		f->lineidx[depth] = UINT32_MAX;
		if (by_function(f, &frames[i]) && frames[i].line != FRAME_NO_LINE) {
			err = line_slot(f, cur, frames[i].line, &f->lineidx[depth]);
			if (err)
				return err;
		}
	}
	f->pdepth = depth;
	f->root->n.total[side] = sat_add(f->root->n.total[side], count);
	for (i = 1; i <= depth; i++) {
		struct flame_node *nd = &f->path[i]->n;

		nd->total[side] = sat_add(nd->total[side], count);
		if (f->runs[i] > nd->repeat)
			nd->repeat = f->runs[i];
		if (f->lineidx[i] != UINT32_MAX) {
			struct flame_line *l = &nd->lines[f->lineidx[i]];

			l->total[side] = sat_add(l->total[side], count);
			if (i == depth)
				l->self[side] = sat_add(l->self[side], count);
		}
	}
	if (count && !cur->n.self[0] && !cur->n.self[1]) {
		f->nends++;
		f->endslots += cur->n.depth;
	}
	cur->n.self[side] = sat_add(cur->n.self[side], count);
	return 0;
}

int flame__add(struct flame *f, const char *stack, uint64_t count, unsigned side)
{
	const char *p, *semi;
	size_t n = 0;

	if (!f || !stack || !*stack)
		return -EINVAL;
	for (p = stack;; p = semi + 1) {
		semi = strchrnul(p, ';');
		if (n == FLAME_MAX_DEPTH)
			return -EINVAL;
		frame_parse(p, (size_t)(semi - p), n == 0, &f->frames[n]);
		n++;
		if (!*semi)
			break;
	}
	return flame__add_frames(f, f->frames, n, count, side);
}

static int cmp_node(const void *a, const void *b)
{
	const struct flame_node *x = *(const struct flame_node *const *)a;
	const struct flame_node *y = *(const struct flame_node *const *)b;
	int c = strcmp(x->name, y->name);

	/* equal texts of two kinds (a native "f_[k]" and a kernel "f"): kind decides */
	return c ? c : (int)x->frame.kind - (int)y->frame.kind;
}

/* Only nodes with two or more children have an order to make, and the tree keeps
 * a list of them: no walk over the half a million others. */
void flame__finish(struct flame *f)
{
	size_t i;

	for (i = 0; f && i < f->nwide; i++)
		qsort(f->wide[i]->n.children, f->wide[i]->n.nchildren,
		      sizeof(*f->wide[i]->n.children), cmp_node);
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

	if (side > 1)
		return -EINVAL;
	err = top_visit(&w, &f->root->n);
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
	if (!nstacks)
		return 0;
	w.stacks = malloc(nstacks * sizeof(*w.stacks) + slots * sizeof(*w.pool));
	if (!w.stacks)
		return -ENOMEM;
	w.pool = (const struct flame_node **)(w.stacks + nstacks);
	collect_stacks(&f->root->n, &w);
	qsort(w.stacks, w.n, sizeof(*w.stacks), cmp_stack_text);
	*out = w.stacks;
	*n = w.n;
	return 0;
}
