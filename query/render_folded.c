/* Folded export (see render_folded.h): the tree's stacks in text order, written
 * straight from a walk of the compact tree (flame__view) through a buffer (one
 * fwrite per FOLDED_BUF bytes; a day's export is tens of megabytes). The walk
 * keeps the current path's text ("comm;f1;") and writes a stack where it ends.
 *
 * Text order is not quite the walk's order: below a node, a child's own stack
 * ("..;run_1") and the stacks through it ("..;run_1;x") sort apart when a sibling's
 * text extends the child's with a byte below ';' ("..;run_12" sorts between them).
 * So each node's children become events, OWN(c) (the stack ending at c, key: c's
 * text) and SUB(c) (the stacks through c, key: c's text then ';'); the events are
 * taken in the children's order when that is sorted by key (nearly always), else
 * sorted. Equal keys can only come from two texts equal but for their kind
 * (flame__has_twins), whose stacks interleave by what follows: that tree is
 * written from flame__stacks' sorted list instead (it needs flame__finish).
 */
#include "query/render_folded.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

/* Bytes gathered before one fwrite. */
#define FOLDED_BUF 65536

struct fbuf {
	FILE *out;
	size_t len;
	char buf[FOLDED_BUF];
};

static void fb_put(struct fbuf *b, const char *s, size_t n)
{
	if (!n)
		return; /* s may be NULL: the empty path of the root's children */
	if (n > FOLDED_BUF - b->len) {
		fwrite(b->buf, 1, b->len, b->out);
		b->len = 0;
		if (n > FOLDED_BUF) {
			fwrite(s, 1, n, b->out);
			return;
		}
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
}

/* " N" in decimal, as " %llu" */
static void fb_count(struct fbuf *b, uint64_t v)
{
	char tmp[21], *p = tmp + sizeof(tmp);

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	*--p = ' ';
	fb_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

/* ---- the sorted list (trees with twins) -------------------------------------- */

static int write_sorted(const struct flame *tree, bool diff, struct fbuf *b)
{
	struct flame_stack *stacks;
	size_t n, i;
	uint32_t k;
	int err = flame__stacks(tree, &stacks, &n);

	for (i = 0; i < n && !err; i++) {
		const struct flame_stack *st = &stacks[i];

		if (!diff && !st->count[0])
			continue;
		for (k = 0; k < st->nframes; k++) {
			if (k)
				fb_put(b, ";", 1);
			fb_put(b, st->frames[k]->name, strlen(st->frames[k]->name));
		}
		fb_count(b, st->count[0]);
		if (diff)
			fb_count(b, st->count[1]);
		fb_put(b, "\n", 1);
	}
	free(stacks);
	return err;
}

/* ---- the walk ---------------------------------------------------------------- */

struct event {
	uint32_t node;
	uint32_t sub; /* 0: OWN, 1: SUB */
};

struct walk {
	const struct flame *f;
	bool diff;
	struct fbuf *b;
	char *path; /* the current path's text, each frame followed by ';' */
	size_t plen, pcap;
	struct event *ev; /* a stack of event lists, one per wide node being walked */
	size_t nev, evcap;
};

/* strcmp of two events' keys: a's text (alen bytes) then ';' when a is a SUB, the
 * same for b; a key that ends sorts first (an OWN is a whole stack). */
static int cmp_keys(const char *a, size_t al, bool asub, const char *b, size_t bl, bool bsub)
{
	size_t n = al < bl ? al : bl;
	int c = memcmp(a, b, n);

	if (c)
		return c;
	if (al == bl)
		return (int)asub - (int)bsub;
	if (al < bl) /* a's key goes on with ';' or ends; b's with b[n] */
		return asub && (unsigned char)b[n] < ';' ? 1 : -1;
	return bsub && (unsigned char)a[n] < ';' ? -1 : 1;
}

static int cmp_event(const void *x, const void *y, void *ctx)
{
	const struct event *a = x, *b = y;
	struct flame_view va, vb;

	flame__view(ctx, a->node, &va);
	flame__view(ctx, b->node, &vb);
	return cmp_keys(va.name, va.name_len, a->sub, vb.name, vb.name_len, b->sub);
}

/* Whether node v's own stack is written. */
static bool has_own(const struct walk *w, const struct flame_view *v)
{
	return v->self[0] || (w->diff && v->self[1]);
}

static int walk_children(struct walk *w, uint32_t parent);

/* Writes event e of the children of the node whose path is w->path. */
static int walk_event(struct walk *w, const struct event *e)
{
	struct flame_view v;
	size_t keep = w->plen;
	int err;

	flame__view(w->f, e->node, &v);
	if (!e->sub) {
		fb_put(w->b, w->path, w->plen);
		fb_put(w->b, v.name, v.name_len);
		fb_count(w->b, v.self[0]);
		if (w->diff)
			fb_count(w->b, v.self[1]);
		fb_put(w->b, "\n", 1);
		return 0;
	}
	err = array_grow((void **)&w->path, &w->pcap, w->plen + v.name_len + 1, 1);
	if (err)
		return err;
	memcpy(w->path + w->plen, v.name, v.name_len);
	w->path[w->plen + v.name_len] = ';';
	w->plen += v.name_len + 1;
	err = walk_children(w, e->node);
	w->plen = keep;
	return err;
}

/* Depth is bounded by FLAME_MAX_DEPTH, so recursion is safe. */
static int walk_children(struct walk *w, uint32_t parent)
{
	struct flame_view v, pv;
	size_t base = w->nev, n, i;
	uint32_t c;
	bool sorted = true;
	int err = 0;

	flame__view(w->f, parent, &pv);
	if (pv.child == FLAME_NONE)
		return 0;
	flame__view(w->f, pv.child, &v);
	if (v.next == FLAME_NONE) { /* an only child: OWN, then SUB */
		struct event own = { pv.child, 0 }, sub = { pv.child, 1 };

		if (has_own(w, &v))
			err = walk_event(w, &own);
		if (!err && v.child != FLAME_NONE)
			err = walk_event(w, &sub);
		return err;
	}
	for (c = pv.child; c != FLAME_NONE; c = v.next) {
		flame__view(w->f, c, &v);
		err = array_grow((void **)&w->ev, &w->evcap, w->nev + 2, sizeof(*w->ev));
		if (err)
			return err;
		if (has_own(w, &v))
			w->ev[w->nev++] = (struct event){ c, 0 };
		if (v.child != FLAME_NONE)
			w->ev[w->nev++] = (struct event){ c, 1 };
	}
	n = w->nev - base;
	for (i = base + 1; i < w->nev && sorted; i++)
		sorted = cmp_event(&w->ev[i - 1], &w->ev[i], (void *)w->f) < 0;
	if (!sorted)
		qsort_r(w->ev + base, n, sizeof(*w->ev), cmp_event, (void *)w->f);
	for (i = 0; i < n && !err; i++) {
		struct event e = w->ev[base + i]; /* w->ev may move below */

		err = walk_event(w, &e);
	}
	w->nev = base;
	return err;
}

int render_folded(const struct flame *tree, bool diff, FILE *out)
{
	struct fbuf *b = malloc(sizeof(*b)); /* not for a thread's stack */
	struct walk w = { .f = tree, .diff = diff };
	int err;

	if (!b)
		return -ENOMEM;
	b->out = out;
	b->len = 0;
	w.b = b;
	if (flame__has_twins(tree))
		err = write_sorted(tree, diff, b);
	else
		err = walk_children(&w, 0);
	if (b->len)
		fwrite(b->buf, 1, b->len, out);
	free(b);
	free(w.path);
	free(w.ev);
	return err ? err : ferror(out) ? -EIO : 0;
}
