/* The movers of a differential flame tree: the functions whose share of samples
 * changed most between side 0 ("before") and side 1 ("after"), the list the SVG
 * and HTML diff pages lead with. A function's share on a side is its total there
 * (samples whose stack holds it at least once: recursion counted once, as
 * flame__top's) over that side's total, so the two sides compare whatever their
 * sizes; the delta is after's share minus before's.
 *
 * Also the hottest source lines of a node (its per-line breakdown, flame.h), the
 * other thing the pages' tooltips lead with.
 */
#ifndef SMOLDER_MOVERS_H
#define SMOLDER_MOVERS_H

#include <stddef.h>
#include <stdint.h>

#include "query/flame.h"

#define MOVERS_DEFAULT 20 /* rows the HTML table shows: a screen's worth */

struct mover {
	const char *name; /* the tree's, valid until flame__free */
	uint8_t kind;	  /* enum frame_kind */
	double before;	  /* share of side 0's total, in [0, 1] */
	double after;	  /* share of side 1's total */
	double delta;	  /* after - before */
};

/* The at most max functions of f (after flame__finish) with a nonzero delta,
 * sorted by |delta| descending, then name (byte order), so equal trees give equal
 * lists. Process frames are no functions, nor are placeholder frames
 * (frame_is_placeholder: [unknown], [python: truncated]...): their change shows in
 * the tree. *out is malloc'd (caller frees; NULL
 * when *n is 0). Returns 0 or -ENOMEM. */
int movers_find(const struct flame *f, size_t max, struct mover **out, size_t *n);

/* Writes to idx the indexes into n->lines of n's at most max hottest lines on side
 * (0 or 1): by total descending, then line ascending. Returns how many it wrote
 * (the smaller of max and n->nlines). */
uint32_t movers_hot_lines(const struct flame_node *n, unsigned side, uint32_t *idx, uint32_t max);

#endif
