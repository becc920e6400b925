/* Flame trees (see flame.h): stacks merged frame by frame into a tree whose nodes
 * carry self and total sample counts for two sides. A day of a busy host is two
 * and a half million frames merged into some 650 k nodes (of 4 k distinct texts and
 * 800 k line entries), so the tree is built small and flat, and the public node
 * tree (struct flame_node) is made only for the readers that ask for it
 * (flame__finish), not for JSON and folded (flame__view):
 * - texts are interned per tree: each distinct (kind, text) key is one entry
 *   (struct text: the text once, a frame of it, its rank in text order), and a node
 *   holds the entry's 32-bit id, not a copy;
 * - a node is 40 bytes in one array: ids, not pointers (text, parent, first child,
 *   next sibling, line block), its repeat or line count, and side 0's counts;
 *   side 1's counts are an array of their own, made when a diff adds to it;
 * - a frame is matched by its fields: an only child directly against its text's
 *   frame; else the frame's fields are looked up (struct fent, a table of the
 *   distinct fields seen, each with its text id: the text is made once per
 *   distinct fields, and equal texts from unequal fields share the id) and the
 *   children of nodes with two or more are found through one open-addressing
 *   table for the whole tree, keyed by (parent, text id);
 * - flame__add_frames first tries the last add's node at the same depth (stacks of
 *   a process share their outer frames), and keeps that node's line entry when the
 *   line is the same;
 * - flame__add_frames_ids knows a frame by its id (a store's dictionary id): the
 *   frames a stack shares with the last one (equal ids from the root) are not
 *   looked at (the last add's path, runs and line entries up to there stand), and
 *   an id's key (text id, placeholder or not) is made once, found again in a flat
 *   array (ids below ID_DIRECT) or a table; stacks handed out sorted by their
 *   frames (store/sqlite/read.c) then cost about one lookup per node of the tree.
 * At function granularity a Python frame's key is its text without the line
 * ("q (f.py)"), and the line goes to the node's breakdown: a block of a pool,
 * sorted by line, found by binary search (see LINE_CLASSES). A run of equal
 * placeholder frames ("[unknown]" x 128) takes one node, whose repeat remembers
 * the longest run. flame__add_frames resolves the whole path (nodes and line
 * entries) first and only then adds the counts, so a failed add (-ENOMEM) never
 * leaves partial totals behind (at worst a few nodes or line entries with zero
 * counts). Finishing ranks the texts (strcmp, then kind) and sorts the children of
 * the nodes that have two or more by rank; flame__finish then makes the public
 * tree in one pass (nodes are created after their parents, so index order is a
 * parent-first order). flame__top walks that tree once with a per-name "on the
 * current path" counter so recursive functions count their total once.
 *
 * This file makes a tree and adds stacks to it; flame_intern.c holds its memory
 * (arena, tables, big arrays, interned texts), flame_finish.c the ranking, the
 * public tree and the node views, flame_top.c flame__top and flame__stacks; they
 * share flame_int.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "query/flame_int.h"

const struct cnt flame_zero;

int flame__new(struct flame **out)
{
	return flame__new_granular(out, FLAME_BY_LINE);
}

int flame__new_granular(struct flame **out, enum flame_granularity g)
{
	struct flame *f = calloc(1, sizeof(*f));
	char *all;

	if (!f)
		return -ENOMEM;
	f->gran = g == FLAME_BY_FUNCTION ? FLAME_BY_FUNCTION : FLAME_BY_LINE;
	memset(f->lfree, 0xff, sizeof(f->lfree)); /* NONE */
	f->path = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->path));
	f->runs = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->runs));
	f->lineidx = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->lineidx));
	f->plines = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->plines));
	f->pf = calloc(FLAME_MAX_DEPTH, sizeof(*f->pf));
	f->frames = calloc(FLAME_MAX_DEPTH, sizeof(*f->frames));
	f->texts = malloc(64 * sizeof(*f->texts));
	f->textcap = 64;
	all = flame_arena_alloc(f, 4);
	if (!f->path || !f->runs || !f->lineidx || !f->plines || !f->pf || !f->frames ||
	    !f->texts || !all || flame_table_grow(f) || flame_ttable_grow(f) ||
	    flame_ftable_grow(f) || flame_nodes_room(f))
		goto out_free;
	memcpy(all, "all", 4);
	/* the root's text is in no table: no frame is the root */
	f->texts[0] = (struct text){ .text = all,
				     .len = 3,
				     .frame = frame_make(FRAME_NATIVE, all, NULL, 0) };
	f->texts[0].frame.kind = FLAME_ROOT;
	f->ntexts = 1;
	f->nodes[0] = (struct cnode){
		.text = 0, .parent = NONE, .child = NONE, .next = NONE, .lines = NONE, .rn = 1
	};
	f->nnodes = 1;
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
	flame_big_free(f->nodes, f->nodes_cap, sizeof(*f->nodes));
	flame_big_free(f->cnt1, f->cnt1_cap, sizeof(*f->cnt1));
	free(f->texts);
	free(f->ttable);
	free(f->fents);
	free(f->ftable);
	free(f->table);
	flame_big_free(f->lline, f->llcap, sizeof(*f->lline));
	flame_big_free(f->lcnt[0], f->lccap[0], sizeof(*f->lcnt[0]));
	flame_big_free(f->lcnt[1], f->lccap[1], sizeof(*f->lcnt[1]));
	free(f->wide);
	free(f->pub);
	free(f->pubkids);
	free(f->publines);
	free(f->path);
	free(f->runs);
	free(f->lineidx);
	free(f->plines);
	free(f->pf);
	free(f->imap);
	free(f->idirect);
	free(f->frames);
	free(f->key);
	free(f);
}

/* The child of parent of text id t, created if new. */
static int child_of(struct flame *f, uint32_t parent, uint32_t t, uint32_t *out)
{
	uint32_t first = f->nodes[parent].child, kid, ch;
	bool only = first != NONE && f->nodes[first].next == NONE;
	size_t i;
	int err;

	if (only && f->nodes[first].text == t) {
		*out = first;
		return 0;
	}
	if (first != NONE && !only) {
		ch = child_hash(parent, t);
		for (i = ch & (f->tcap - 1); f->table[i].node != NONE;
		     i = (i + 1) & (f->tcap - 1)) {
			kid = f->table[i].node;
			if (f->table[i].hash == ch && f->nodes[kid].parent == parent &&
			    f->nodes[kid].text == t) {
				*out = kid;
				return 0;
			}
		}
	}
	err = flame_nodes_room(f);
	if (!err && only)
		err = array_grow((void **)&f->wide, &f->widecap, f->nwide + 1, sizeof(*f->wide));
	if (!err && first != NONE && (f->tused + 2) * 2 > f->tcap)
		err = flame_table_grow(f);
	if (err)
		return err;
	kid = (uint32_t)f->nnodes++;
	f->nodes[kid] = (struct cnode){ .text = t,
					.parent = parent,
					.child = NONE,
					.next = first,
					.lines = NONE,
					.rn = by_function(f, &f->texts[t].frame) ? 0 : 1 };
	if (f->cnt1)
		f->cnt1[kid] = (struct cnt){ 0, 0 };
	if (only) { /* a second child: both go into the table */
		table_put(f, first);
		f->wide[f->nwide++] = parent;
	}
	if (first != NONE)
		table_put(f, kid);
	f->nodes[parent].child = kid; /* newest first; finishing sorts */
	f->finished = false;
	*out = kid;
	return 0;
}

/* The child of parent for frame fr (line already dropped at function
 * granularity), created if new. */
static int child_get(struct flame *f, uint32_t parent, const struct frame *fr, uint32_t *out)
{
	uint32_t first = f->nodes[parent].child, t;
	int err;

	if (first != NONE && f->nodes[first].next == NONE &&
	    same_fields(&f->texts[f->nodes[first].text].frame, fr)) {
		*out = first;
		return 0;
	}
	err = flame_frame_text(f, fr, &t);
	return err ? err : child_of(f, parent, t, out);
}

/* A block of 1 << k line entries: its first entry's index. */
static int line_block(struct flame *f, unsigned k, uint32_t *out)
{
	size_t n = (size_t)1 << k;
	unsigned s;
	int err = 0;

	if (f->lfree[k] != NONE) {
		*out = f->lfree[k];
		f->lfree[k] = f->lline[*out];
		return 0;
	}
	if (f->lused + n >= NONE)
		return -ENOMEM;
	if (f->lused + n > f->lcap) {
		err = flame_big_grow((void **)&f->lline, &f->llcap, f->lused + n,
				     sizeof(*f->lline));
		for (s = 0; s < 2 && !err; s++) {
			if (s && !f->cnt1)
				continue; /* no side 1 yet */
			err = flame_big_grow((void **)&f->lcnt[s], &f->lccap[s], f->lused + n,
					     sizeof(*f->lcnt[s]));
		}
		if (err)
			return err;
		f->lcap = f->llcap < f->lccap[0] ? f->llcap : f->lccap[0];
		if (f->lcnt[1] && f->lccap[1] < f->lcap)
			f->lcap = f->lccap[1];
	}
	*out = (uint32_t)f->lused;
	f->lused += n;
	return 0;
}

/* The smallest k with 1 << k >= n (n >= 1). */
static unsigned line_class(uint32_t n)
{
	return n <= 1 ? 0 : 32 - (unsigned)__builtin_clz(n - 1);
}

/* The entry of line in node nd's breakdown, a zeroed one inserted when new. */
static int line_slot(struct flame *f, uint32_t nd, uint32_t line, uint32_t *idx)
{
	struct cnode *cn = &f->nodes[nd];
	uint32_t start = cn->lines, n = cn->rn, lo = 0, hi = n, mid, to;
	unsigned s, k;
	int err;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (f->lline[start + mid] == line) {
			*idx = start + mid;
			return 0;
		}
		if (f->lline[start + mid] < line)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (n >= (1u << (LINE_CLASSES - 2)))
		return -ENOMEM;
	k = line_class(n + 1);
	to = start;
	if (!n || line_class(n) != k) { /* full (or none): a block twice the size */
		err = line_block(f, k, &to);
		if (err)
			return err;
		cn = &f->nodes[nd];
	}
	if (n) { /* [0, lo) to the new block, [lo, n) one up */
		if (to != start) {
			memcpy(f->lline + to, f->lline + start, lo * sizeof(*f->lline));
			for (s = 0; s < 2; s++)
				if (f->lcnt[s])
					memcpy(f->lcnt[s] + to, f->lcnt[s] + start,
					       lo * sizeof(struct cnt));
		}
		memmove(f->lline + to + lo + 1, f->lline + start + lo,
			(n - lo) * sizeof(*f->lline));
		for (s = 0; s < 2; s++)
			if (f->lcnt[s])
				memmove(f->lcnt[s] + to + lo + 1, f->lcnt[s] + start + lo,
					(n - lo) * sizeof(struct cnt));
	}
	if (to != start && n) { /* the old block to its free list */
		f->lline[start] = f->lfree[line_class(n)];
		f->lfree[line_class(n)] = start;
	}
	f->lline[to + lo] = line;
	for (s = 0; s < 2; s++)
		if (f->lcnt[s])
			f->lcnt[s][to + lo] = (struct cnt){ 0, 0 };
	cn->lines = to;
	cn->rn = n + 1;
	f->nlines++;
	*idx = to + lo;
	return 0;
}

/* Equal placeholder frames, which merge into one node. */
static bool same_placeholder(const struct frame *a, const struct frame *b)
{
	return frame_is_placeholder(a) && frame_is_placeholder(b) && a->name_len == b->name_len &&
	       memcmp(a->name, b->name, a->name_len) == 0;
}

/* Side 1's arrays, made by its first add. */
static int side_room(struct flame *f, unsigned side)
{
	int err = 0;

	if (side && !f->cnt1)
		err = flame_big_grow((void **)&f->cnt1, &f->cnt1_cap, f->nodecap, sizeof(*f->cnt1));
	if (!err && side && f->lcap && !f->lcnt[1])
		err = flame_big_grow((void **)&f->lcnt[1], &f->lccap[1], f->lcap,
				     sizeof(*f->lcnt[1]));
	return err;
}

/* Adds count to the nodes and line entries of the path of depth levels (below the
 * root) that an add resolved. */
static void add_counts(struct flame *f, size_t depth, uint64_t count, unsigned side)
{
	struct cnt *cn = side ? f->cnt1 : NULL; /* side 0: in the nodes */
	size_t i;

	for (i = 0; i <= depth; i++) { /* path[0] is the root */
		struct cnode *nd = &f->nodes[f->path[i]];
		struct cnt *c = cn ? &cn[f->path[i]] : &nd->c0;

		c->total = sat_add(c->total, count);
		if (i == depth)
			c->self = sat_add(c->self, count);
		if (i && f->runs[i] > 1 && f->runs[i] > nd->rn) /* placeholders only */
			nd->rn = f->runs[i];
		if (i && f->lineidx[i] != NONE) {
			struct cnt *l = &f->lcnt[side][f->lineidx[i]];

			l->total = sat_add(l->total, count);
			if (i == depth)
				l->self = sat_add(l->self, count);
		}
	}
}

/* path[depth]'s line entry for line (a Python frame at function granularity):
 * the last add's when it had this node here at this line (same), else looked
 * up. Only a line_slot() of this node, which is at this depth of any path,
 * moves its block, so the last add's entry is still good. */
static int path_line(struct flame *f, size_t depth, bool same, uint32_t line)
{
	int err;

	if (same && f->lineidx[depth] != NONE && f->plines[depth] == line)
		return 0;
	err = line_slot(f, f->path[depth], line, &f->lineidx[depth]);
	if (!err)
		f->plines[depth] = line;
	return err;
}

int flame__add_frames(struct flame *f, const struct frame *frames, size_t n, uint64_t count,
		      unsigned side)
{
	uint32_t cur = 0, next;
	size_t i, depth = 0;
	struct frame fn;
	bool same;
	int err;

	if (!f || !frames || n == 0 || n > FLAME_MAX_DEPTH || side > 1)
		return -EINVAL;
	err = side_room(f, side);
	if (err)
		return err;
	f->npf = 0; /* no ids: the next add with ids starts from the root */
	f->path[0] = 0;
	for (i = 0; i < n; i++) {
		const struct frame *fr = &frames[i];

		if (i > 1 && same_placeholder(fr, &frames[i - 1])) {
			f->runs[depth]++; /* frames[0] is the process, never merged */
			continue;
		}
		if (by_function(f, fr)) {
			fn = *fr;
			fn.line = FRAME_NO_LINE;
			fr = &fn;
		}
		/* Stacks of a process share their outer frames: the last add's node at
		 * this depth, still in cache, is most often the one. */
		next = depth < f->pdepth ? f->path[depth + 1] : NONE;
		same = next != NONE && f->nodes[next].parent == cur &&
		       same_fields(&f->texts[f->nodes[next].text].frame, fr);
		if (same) {
			cur = next;
		} else {
			f->pdepth = depth; /* path beyond is being replaced */
			err = child_get(f, cur, fr, &cur);
			if (err)
				goto out_forget;
		}
		f->path[++depth] = cur;
		f->runs[depth] = 1;
		if (fr != &fn || frames[i].line == FRAME_NO_LINE)
			f->lineidx[depth] = NONE;
		else if ((err = path_line(f, depth, same, frames[i].line)))
			goto out_forget;
	}
	f->pdepth = depth;
	add_counts(f, depth, count, side);
	return 0;

out_forget:
	f->pdepth = 0; /* the next add trusts nothing of this one's path */
	return err;
}

/* The id's entry in f->imap: its key's text id and whether it is a placeholder,
 * made from fr (the frame of that id) when new. */
static int id_slot(struct flame *f, const struct frame *fr, uint64_t id, const struct islot **out)
{
	uint64_t h = id * HASH_M;
	struct islot *e;
	struct frame fn;
	size_t i;
	int err;

	h ^= h >> 29;
	for (i = h & (f->imcap - 1); f->imcap && f->imap[i].used; i = (i + 1) & (f->imcap - 1)) {
		if (f->imap[i].id == id) {
			*out = &f->imap[i];
			return 0;
		}
	}
	if ((f->imused + 1) * 2 > f->imcap) {
		size_t cap = f->imcap ? f->imcap * 2 : TABLE_MIN, j;
		struct islot *t = calloc(cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (j = 0; j < f->imcap; j++) {
			uint64_t g = f->imap[j].id * HASH_M;

			if (!f->imap[j].used)
				continue;
			g ^= g >> 29;
			for (i = g & (cap - 1); t[i].used; i = (i + 1) & (cap - 1))
				;
			t[i] = f->imap[j];
		}
		free(f->imap);
		f->imap = t;
		f->imcap = cap;
		for (i = h & (cap - 1); t[i].used; i = (i + 1) & (cap - 1))
			;
	}
	fn = *fr;
	if (by_function(f, fr))
		fn.line = FRAME_NO_LINE;
	e = &f->imap[i];
	err = flame_frame_text(f, &fn, &e->text);
	if (err)
		return err;
	e->id = id;
	e->used = true;
	e->ph = frame_is_placeholder(fr);
	f->imused++;
	*out = e;
	return 0;
}

/* The text id of the key of id's frame fr, and whether it is a placeholder. */
static inline int id_info(struct flame *f, const struct frame *fr, uint64_t id, uint32_t *text,
			  bool *ph)
{
	const struct islot *e;
	struct frame fn;
	uint32_t v;
	int err;

	if (id < ID_DIRECT && !f->idirect) {
		f->idirect = calloc(ID_DIRECT, sizeof(*f->idirect));
		if (!f->idirect)
			return -ENOMEM;
	}
	if (id < ID_DIRECT && (v = f->idirect[id])) {
		*text = (v - 1) >> 1;
		*ph = (v - 1) & 1;
		return 0;
	}
	if (id < ID_DIRECT) { /* new: its key, kept in the array alone */
		fn = *fr;
		if (by_function(f, fr))
			fn.line = FRAME_NO_LINE;
		err = flame_frame_text(f, &fn, text);
		if (err)
			return err;
		if (*text >= (1u << 30))
			return -ENOMEM; /* a billion texts: not to be packed with the flag */
		*ph = frame_is_placeholder(fr);
		f->idirect[id] = ((*text << 1) | *ph) + 1;
		if (id > f->idmax)
			f->idmax = id;
		return 0;
	}
	err = id_slot(f, fr, id, &e);
	if (err)
		return err;
	*text = e->text;
	*ph = e->ph;
	return 0;
}

int flame__add_frames_ids(struct flame *f, const struct frame *frames, const uint64_t *ids,
			  size_t n, uint64_t count, unsigned side)
{
	uint32_t cur = 0, next, t, pt = NONE;
	size_t i = 0, depth = 0;
	bool same, ph = false;
	int err;

	if (!ids)
		return flame__add_frames(f, frames, n, count, side);
	if (!f || !frames || n == 0 || n > FLAME_MAX_DEPTH || side > 1)
		return -EINVAL;
	err = side_room(f, side);
	if (err)
		return err;
	/* The frames this stack shares with the last one (equal ids) lead where they
	 * led it: path, runs and line entries up to there are as it left them. */
	while (i < n && i < f->npf && ids[i] == f->pf[i].id)
		i++;
	f->path[0] = 0;
	if (i) {
		depth = f->pf[i - 1].depth;
		cur = f->path[depth];
		f->runs[depth] = f->pf[i - 1].run;
		pt = f->pf[i - 1].text;
		ph = f->pf[i - 1].ph;
	}
	for (; i < n; i++) {
		const struct frame *fr = &frames[i];
		bool was_ph = ph;

		err = id_info(f, fr, ids[i], &t, &ph);
		if (err)
			goto out_forget;
		if (i > 1 && ph && was_ph && t == pt) { /* placeholders: equal texts, equal names */
			f->runs[depth]++;
			f->pf[i] =
				(struct pframe){ ids[i], (uint32_t)depth, f->runs[depth], t, ph };
			continue;
		}
		pt = t;
		next = depth < f->pdepth ? f->path[depth + 1] : NONE;
		same = next != NONE && f->nodes[next].parent == cur && f->nodes[next].text == t;
		if (same) {
			cur = next;
		} else {
			f->pdepth = depth; /* path beyond is being replaced */
			err = child_of(f, cur, t, &cur);
			if (err)
				goto out_forget;
		}
		f->path[++depth] = cur;
		f->runs[depth] = 1;
		if (!by_function(f, fr) || fr->line == FRAME_NO_LINE)
			f->lineidx[depth] = NONE;
		else if ((err = path_line(f, depth, same, fr->line)))
			goto out_forget;
		f->pf[i] = (struct pframe){ ids[i], (uint32_t)depth, 1, t, ph };
	}
	f->pdepth = depth;
	f->npf = n;
	add_counts(f, depth, count, side);
	return 0;

out_forget:
	f->pdepth = 0; /* the next add trusts nothing of this one's path */
	f->npf = 0;
	return err;
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
