/* A flame tree as text for a terminal (query format "text" of flamegraph and
 * diff): the hottest paths as an indented tree, one frame a line, children by total
 * descending, so the first screen is the answer. The query engine writes the
 * answer's context (range, selection, totals) as "# " lines before it.
 *
 * Profile (one side):
 *    TOTAL%   SELF%       CPU  FRAME
 *    100.0%    0.0%   124.7 s  all
 *     62.3%    0.0%    77.7 s    api [process]
 *     40.1%   40.1%    50.0 s      handle (app.py) [py]
 *      3.0%    3.0%    3.74 s        [unknown] ×128 [native]
 * CPU is the node's total samples x period ("-" when the period is 0: mixed or
 * unknown); a profile of another type has its unit's column instead (BYTES
 * "200MiB", TIME "12.3ms", OBJECTS, COUNT). Frames are marked by kind: [process], [py], [native],
 * [kernel], [jit]. A placeholder frame that stood for a run of identical frames (the node's repeat
 * > 1) is shown as "[unknown] ×N" (U+00D7).
 *
 * Diff: first a movers table, the functions whose share of samples (total,
 * recursion counted once) changed most, by |delta| descending:
 *    BEFORE%  AFTER%   DELTA  FUNCTION
 *     12.0%   30.5%  +18.5pp  handle (app.py)
 * then the tree with BEFORE% AFTER% DELTA columns (node total shares per side).
 *
 * Pruning: a node is shown when its share (in a diff: on either side) is at least
 * min_share of its side's total, its depth at most max_depth, and fewer than
 * max_lines lines were written; the last line says how many nodes were hidden and
 * why. Bytes below 0x20 and 0x7f in a name are written as '?'. Writers only.
 */
#ifndef SMOLDER_RENDER_TEXT_H
#define SMOLDER_RENDER_TEXT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "query/flame.h"

#define RENDER_TEXT_DEFAULT_MIN_SHARE 0.01 /* 1 %: a terminal shows about 50 lines */
#define RENDER_TEXT_DEFAULT_MAX_DEPTH 64   /* deeper paths are rarely read as text */
#define RENDER_TEXT_DEFAULT_MAX_LINES 200  /* a few screens */
#define RENDER_TEXT_DEFAULT_MOVERS    15   /* rows of a diff's movers table */

struct ptype;

struct render_text_options {
	uint64_t period_ns;	  /* sampling period for the CPU column; 0: not shown */
	const struct ptype *type; /* a type other than cpu: its unit's column (BYTES,
				   * TIME, ...) with the node's total humanised
				   * (ptype__format) instead of CPU; NULL: CPU */
	bool diff;		  /* both sides: movers table, then before/after tree */
	double min_share;	  /* 0: RENDER_TEXT_DEFAULT_MIN_SHARE; else in (0, 1] */
	unsigned max_depth;	  /* 0: RENDER_TEXT_DEFAULT_MAX_DEPTH */
	unsigned max_lines;	  /* 0: RENDER_TEXT_DEFAULT_MAX_LINES */
	unsigned movers;	  /* 0: RENDER_TEXT_DEFAULT_MOVERS */
};

/* Writes the text tree of f (after flame__finish) to out; o may be NULL for the
 * defaults. Returns 0, -EINVAL (NULL f/out, min_share outside [0, 1]), -ENOMEM
 * or -EIO (a write failed). Does not modify f. */
int render_text(const struct flame *f, const struct render_text_options *o, FILE *out);

#endif
