/* Finishing a flame tree (see flame.h): the texts ranked (strcmp, then kind),
 * the children of nodes with two or more sorted by rank, the public tree made in
 * one pass (flame__finish), and the sizes, texts and views of nodes that the
 * renderers read (flame__view, flame__view_line). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "query/flame_int.h"

/* ---- finishing ---------------------------------------------------------------- */

static int cmp_text(const void *a, const void *b, void *ctx)
{
	const struct text *t = ctx;
	const struct text *x = &t[*(const uint32_t *)a], *y = &t[*(const uint32_t *)b];
	int c = strcmp(x->text, y->text);

	/* equal texts of two kinds (a native "f_[k]" and a kernel "f"): kind decides */
	return c ? c : (int)x->frame.kind - (int)y->frame.kind;
}

static int cmp_rank(const void *a, const void *b, void *ctx)
{
	const struct flame *f = ctx;
	uint32_t x = f->texts[f->nodes[*(const uint32_t *)a].text].rank;
	uint32_t y = f->texts[f->nodes[*(const uint32_t *)b].text].rank;

	return x < y ? -1 : x > y;
}

/* Ranks the texts and sorts every children list by rank: the order of names
 * (strcmp), then kinds. */
static int finish_order(struct flame *f)
{
	uint32_t *ids, *kids = NULL, k, c;
	size_t i, n, cap = 0;

	if (f->finished)
		return 0;
	ids = malloc(f->ntexts * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (i = 0; i < f->ntexts; i++)
		ids[i] = (uint32_t)i;
	qsort_r(ids, f->ntexts, sizeof(*ids), cmp_text, f->texts);
	f->twins = false;
	for (i = 0; i < f->ntexts; i++) {
		f->texts[ids[i]].rank = (uint32_t)i;
		if (i && strcmp(f->texts[ids[i]].text, f->texts[ids[i - 1]].text) == 0)
			f->twins = true;
	}
	free(ids);
	for (i = 0; i < f->nwide; i++) {
		uint32_t p = f->wide[i];

		for (n = 0, c = f->nodes[p].child; c != NONE; c = f->nodes[c].next)
			n++;
		if (array_grow((void **)&kids, &cap, n, sizeof(*kids))) {
			free(kids);
			return -ENOMEM;
		}
		for (n = 0, c = f->nodes[p].child; c != NONE; c = f->nodes[c].next)
			kids[n++] = c;
		qsort_r(kids, n, sizeof(*kids), cmp_rank, f);
		f->nodes[p].child = kids[0];
		for (k = 0; k + 1 < n; k++)
			f->nodes[kids[k]].next = kids[k + 1];
		f->nodes[kids[n - 1]].next = NONE;
	}
	free(kids);
	f->finished = true;
	return 0;
}

int flame__finish_lean(struct flame *f)
{
	return f ? finish_order(f) : -EINVAL;
}

/* The public tree: one flame_node per node, children and line arrays in one
 * block each, names pointing into the interned texts. */
static int make_public(struct flame *f)
{
	size_t i, nk = 0, nl = 0, j;
	uint32_t c, l;

	free(f->pub);
	free(f->pubkids);
	free(f->publines);
	f->pubkids = NULL;
	f->publines = NULL;
	f->pub = calloc(f->nnodes, sizeof(*f->pub));
	f->pubkids = malloc((f->nnodes > 1 ? f->nnodes - 1 : 1) * sizeof(*f->pubkids));
	f->publines = calloc(f->nlines ? f->nlines : 1, sizeof(*f->publines));
	if (!f->pub || !f->pubkids || !f->publines)
		return -ENOMEM;
	f->nends = 0;
	f->endslots = 0;
	for (i = 0; i < f->nnodes; i++) {
		const struct cnode *cn = &f->nodes[i];
		struct flame_node *pn = &f->pub[i];
		const struct text *t = &f->texts[cn->text];

		pn->name = t->text;
		pn->frame = t->frame;
		for (j = 0; j < 2; j++) {
			const struct cnt *k = j ? (f->cnt1 ? &f->cnt1[i] : &flame_zero) : &cn->c0;

			pn->self[j] = k->self;
			pn->total[j] = k->total;
		}
		pn->parent = cn->parent == NONE ? NULL : &f->pub[cn->parent];
		pn->depth = pn->parent ? pn->parent->depth + 1 : 0; /* parents come first */
		pn->repeat = by_function(f, &t->frame) ? 1 : cn->rn;
		pn->children = f->pubkids + nk;
		for (c = cn->child; c != NONE; c = f->nodes[c].next)
			f->pubkids[nk++] = &f->pub[c];
		pn->nchildren = (uint32_t)(f->pubkids + nk - pn->children);
		if (!pn->nchildren)
			pn->children = NULL;
		pn->lines = NULL;
		if (by_function(f, &t->frame) && cn->rn) {
			pn->lines = f->publines + nl;
			pn->nlines = cn->rn;
			for (l = cn->lines; l < cn->lines + cn->rn; l++, nl++)
				flame__view_line(f, l, &f->publines[nl]);
		}
		if (i && (pn->self[0] || pn->self[1])) {
			f->nends++;
			f->endslots += pn->depth;
		}
	}
	return 0;
}

int flame__finish(struct flame *f)
{
	if (!f)
		return -EINVAL;
	return finish_order(f) ?: make_public(f);
}

const struct flame_node *flame__root(const struct flame *f)
{
	return f->pub;
}

uint64_t flame__total(const struct flame *f, unsigned side)
{
	if (side > 1 || (side && !f->cnt1))
		return 0;
	return side ? f->cnt1[0].total : f->nodes[0].c0.total;
}

size_t flame__size(const struct flame *f)
{
	return f->nnodes;
}

size_t flame__bytes(const struct flame *f)
{
	size_t b;

	if (!f)
		return 0;
	b = sizeof(*f) + f->nodes_cap * sizeof(*f->nodes) + f->cnt1_cap * sizeof(*f->cnt1) +
	    f->textcap * sizeof(*f->texts) + f->ttcap * sizeof(*f->ttable) +
	    f->fentcap * sizeof(*f->fents) + f->ftcap * sizeof(*f->ftable) +
	    f->tcap * sizeof(*f->table) + f->llcap * sizeof(*f->lline) +
	    (f->lccap[0] + f->lccap[1]) * sizeof(*f->lcnt[0]) + f->widecap * sizeof(*f->wide) +
	    f->imcap * sizeof(*f->imap) + f->keycap + f->arena_bytes;
	/* the id array's pages touched: store ids are dense from 1 */
	if (f->idirect)
		b += (size_t)f->idmax * sizeof(*f->idirect);
	if (f->pub)
		b += flame__public_bytes(f);
	return b;
}

size_t flame__public_bytes(const struct flame *f)
{
	return f ? f->nnodes * (sizeof(*f->pub) + sizeof(*f->pubkids)) +
			       f->nlines * sizeof(*f->publines)
		 : 0;
}

bool flame__has_twins(const struct flame *f)
{
	return f->twins;
}

size_t flame__ntexts(const struct flame *f)
{
	return f->ntexts;
}

const char *flame__text(const struct flame *f, uint32_t id, size_t *len, uint32_t *kind)
{
	*len = f->texts[id].len;
	*kind = f->texts[id].frame.kind;
	return f->texts[id].text;
}

void flame__view(const struct flame *f, uint32_t id, struct flame_view *v)
{
	const struct cnode *cn = &f->nodes[id];
	const struct text *t = &f->texts[cn->text];
	unsigned s;

	v->name = t->text;
	v->name_len = t->len;
	v->kind = t->frame.kind;
	v->text = cn->text;
	v->repeat = by_function(f, &t->frame) ? 1 : cn->rn;
	v->nlines = by_function(f, &t->frame) ? cn->rn : 0;
	v->child = cn->child;
	v->next = cn->next;
	v->lines = v->nlines ? cn->lines : NONE;
	for (s = 0; s < 2; s++) {
		const struct cnt *k = s ? (f->cnt1 ? &f->cnt1[id] : &flame_zero) : &cn->c0;

		v->self[s] = k->self;
		v->total[s] = k->total;
	}
}

void flame__view_line(const struct flame *f, uint32_t id, struct flame_line *out)
{
	unsigned s;

	out->line = f->lline[id];
	for (s = 0; s < 2; s++) {
		out->self[s] = f->lcnt[s] ? f->lcnt[s][id].self : 0;
		out->total[s] = f->lcnt[s] ? f->lcnt[s][id].total : 0;
	}
}
