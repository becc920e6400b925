/* Interactive HTML flame graph: one self-contained page (inline CSS and JS, no
 * external URL) that embeds a flame tree as JSON in a <script type="application/json">
 * element and draws it with DOM divs in the browser. The page offers a hover
 * tooltip (function, samples, percentage), click to zoom, a search box (regular
 * expression, falling back to substring) that highlights matches and reports the
 * matched share of samples, a flame/icicle toggle, and a "top functions" table
 * (self and total, recursion counted once) computed in JS from the tree.
 *
 * Diff mode reads both sides of the tree (side 0 "before", side 1 "after"): widths
 * follow side 1, and each frame is colored by its normalized delta
 * t1/T1 - t0/T0: red grew, blue shrank, white unchanged. The embedded JSON is
 * {"title":..,"diff":bool,"tree":NODE} with NODE = {"n":name,"k":kind,
 * "s":[self0,self1],"t":[total0,total1],"c":[NODE...]}; every string in it has
 * '<', '>' and '&' escaped as \u003c.. so no frame name can end the element.
 */
#ifndef SMOLDER_RENDER_HTML_H
#define SMOLDER_RENDER_HTML_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "query/flame.h"

struct render_html_options {
	const char *title;    /* page title, HTML-escaped on output; NULL: "smolder flame graph" */
	const char *subtitle; /* one line of context under the title (range, selection,
			       * type, totals), escaped on output; NULL: none */
	uint64_t period_ns;   /* sampling period, to show CPU time beside samples; 0: unknown */
	bool diff;	      /* differential coloring from both sides of the tree */
};

/* Writes the page for f (after flame__finish) to out; o may be NULL for defaults.
 * Returns 0, -EINVAL (NULL f/out) or -EIO (a write failed; out holds a partial
 * page). Does not modify f. */
int render_html(const struct flame *f, const struct render_html_options *o, FILE *out);

#endif
