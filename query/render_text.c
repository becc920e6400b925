/* The text tree of a flame tree for a terminal; see render_text.h. */
#include "query/render_text.h"

#include "common/ptype.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "query/movers.h"
#include "query/shortname.h"

struct text {
	const struct flame *f;
	const struct render_text_options *o;
	FILE *out;
	uint64_t root[2];  /* side totals */
	size_t lines;	   /* tree lines written */
	size_t shown;	   /* nodes written */
	size_t small, cut; /* nodes hidden: below min_share; past depth or lines */
	int err;	   /* -ENOMEM */
};

static double share(uint64_t n, uint64_t total)
{
	return total ? (double)n / (double)total : 0.0;
}

/* The node's largest share over the sides drawn. */
static double node_share(const struct text *t, const struct flame_node *n)
{
	double a = share(n->total[0], t->root[0]), b = share(n->total[1], t->root[1]);

	return t->o->diff && b > a ? b : a;
}

static size_t subtree_size(const struct flame_node *n)
{
	size_t s = 1;
	uint32_t i;

	for (i = 0; i < n->nchildren; i++)
		s += subtree_size(n->children[i]);
	return s;
}

static const char *kind_mark(uint32_t kind)
{
	switch (kind) {
	case FRAME_PROCESS:
		return " [process]";
	case FRAME_PYTHON:
		return " [py]";
	case FRAME_NATIVE:
		return " [native]";
	case FRAME_KERNEL:
		return " [kernel]";
	case FRAME_JIT:
		return " [jit]";
	default:
		return "";
	}
}

/* A name with control bytes as '?': frame names are sanitized when stored, but a
 * terminal is no place to trust that. A native name's template arguments are
 * collapsed (query/shortname.h): the JSON and the exports keep them. */
static void put_name(FILE *out, const char *s, uint8_t kind)
{
	char buf[SHORTNAME_BUF];

	for (s = shortname_of(s, kind, buf, sizeof(buf)); *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
}

static void put_node(struct text *t, const struct flame_node *n)
{
	char cpu[32];
	double secs;

	if (t->o->diff) {
		double b = 100 * share(n->total[0], t->root[0]);
		double a = 100 * share(n->total[1], t->root[1]);

		fprintf(t->out, "%7.1f%% %7.1f%% %+7.1fpp  ", b, a, a - b);
	} else {
		if (t->o->type) {
			ptype__format(t->o->type->unit, (double)n->total[0], PTYPE_CELL, cpu,
				      sizeof(cpu));
		} else if (t->o->period_ns) {
			secs = (double)n->total[0] * (double)t->o->period_ns / 1e9;
			snprintf(cpu, sizeof(cpu),
				 secs >= 100  ? "%.0f s"
				 : secs >= 10 ? "%.1f s"
					      : "%.2f s",
				 secs);
		} else {
			snprintf(cpu, sizeof(cpu), "-");
		}
		fprintf(t->out, "%7.1f%% %7.1f%% %9s  ", 100 * share(n->total[0], t->root[0]),
			100 * share(n->self[0], t->root[0]), cpu);
	}
	fprintf(t->out, "%*s", (int)(2 * (n->depth < 40 ? n->depth : 40)), "");
	put_name(t->out, n->name, n->frame.kind);
	if (n->repeat > 1)
		fprintf(t->out, " \u00d7%" PRIu32, n->repeat);
	fprintf(t->out, "%s\n", n->parent ? kind_mark(n->frame.kind) : "");
	t->lines++;
	t->shown++;
}

/* A child and its share, sorted by share descending, then by name. */
struct kid {
	double share;
	const struct flame_node *n;
};

static int by_share(const void *pa, const void *pb)
{
	const struct kid *a = pa, *b = pb;

	if (a->share != b->share)
		return a->share < b->share ? 1 : -1;
	return strcmp(a->n->name, b->n->name);
}

static void walk(struct text *t, const struct flame_node *n)
{
	struct kid *kids;
	uint32_t i;

	if (t->err)
		return;
	put_node(t, n);
	if (!n->nchildren)
		return;
	kids = malloc(n->nchildren * sizeof(*kids));
	if (!kids) {
		t->err = -ENOMEM;
		return;
	}
	for (i = 0; i < n->nchildren; i++)
		kids[i] = (struct kid){ node_share(t, n->children[i]), n->children[i] };
	qsort(kids, n->nchildren, sizeof(*kids), by_share);
	for (i = 0; i < n->nchildren; i++) {
		const struct flame_node *c = kids[i].n;

		if (kids[i].share < t->o->min_share)
			t->small += subtree_size(c);
		else if (c->depth > t->o->max_depth || t->lines >= t->o->max_lines)
			t->cut += subtree_size(c);
		else
			walk(t, c);
	}
	free(kids);
}

/* ---- diff movers ---------------------------------------------------------- */

/* The movers table (movers_find(), the same list the SVG and HTML diffs lead
 * with), at most t->o->movers rows, and how many moved less. */
static int movers(struct text *t)
{
	struct mover *m = NULL;
	size_t n = 0, k;
	int err = movers_find(t->f, SIZE_MAX, &m, &n);

	if (err)
		return err;
	fprintf(t->out, "%8s %8s %9s  %s\n", "BEFORE%", "AFTER%", "DELTA", "FUNCTION");
	for (k = 0; k < n && k < t->o->movers; k++) {
		fprintf(t->out, "%7.1f%% %7.1f%% %+7.1fpp  ", 100 * m[k].before, 100 * m[k].after,
			100 * m[k].delta);
		put_name(t->out, m[k].name, m[k].kind);
		fprintf(t->out, "%s\n", kind_mark(m[k].kind));
	}
	if (n > k)
		fprintf(t->out, "# %zu more functions moved less\n", n - k);
	fputc('\n', t->out);
	free(m);
	return 0;
}

int render_text(const struct flame *f, const struct render_text_options *o, FILE *out)
{
	struct render_text_options d = { 0 };
	struct text t = { .f = f, .out = out };
	size_t all;
	int err = 0;

	if (!f || !out)
		return -EINVAL;
	if (o)
		d = *o;
	if (d.min_share < 0 || d.min_share > 1)
		return -EINVAL;
	d.min_share = d.min_share > 0 ? d.min_share : RENDER_TEXT_DEFAULT_MIN_SHARE;
	d.max_depth = d.max_depth ? d.max_depth : RENDER_TEXT_DEFAULT_MAX_DEPTH;
	d.max_lines = d.max_lines ? d.max_lines : RENDER_TEXT_DEFAULT_MAX_LINES;
	d.movers = d.movers ? d.movers : RENDER_TEXT_DEFAULT_MOVERS;
	t.o = &d;
	t.root[0] = flame__total(f, 0);
	t.root[1] = flame__total(f, 1);

	if (d.diff)
		err = movers(&t);
	if (err)
		return err;
	if (d.diff)
		fprintf(out, "%8s %8s %9s  %s\n", "BEFORE%", "AFTER%", "DELTA", "FRAME");
	else
		fprintf(out, "%8s %8s %9s  %s\n", "TOTAL%", "SELF%",
			d.type ? ptype__unit_column(d.type->unit) : "CPU", "FRAME");
	walk(&t, flame__root(f));
	if (t.err)
		return t.err;
	all = flame__size(f);
	if (t.small || t.cut)
		fprintf(out,
			"# %zu of %zu frames shown; hidden: %zu below %.3g %% of samples, %zu "
			"deeper than %u or past %u lines\n",
			t.shown, all, t.small, 100 * d.min_share, t.cut, d.max_depth, d.max_lines);
	return ferror(out) ? -EIO : 0;
}
