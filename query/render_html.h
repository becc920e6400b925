/* Interactive HTML flame graph: one self-contained page (inline CSS and JS, no
 * external URL) that embeds a flame tree as JSON in a <script type="application/json">
 * element and draws it with DOM divs in the browser. The page offers a hover
 * tooltip, click to zoom, a search box (regular expression, falling back to
 * substring) that highlights matches and reports the matched share of samples, a
 * flame/icicle toggle, and a "top functions" table (self and total, recursion
 * counted once) computed in JS from the tree. The title heads the page (and is its
 * <title>), the subtitle (one line of context) under it; the line beside the
 * controls gives the total samples and, when period_ns is known, CPU time.
 *
 * The tooltip reads "NAME — 1,234 samples, 12.3 s CPU, 38.20%" (CPU time when
 * period_ns is known); a frame standing for a run of identical placeholder frames
 * is "[unknown] ×128" in its box and tooltip; a frame with a per-line breakdown
 * lists its five hottest lines by total ("  line 43: 823 samples, 82.50%", the
 * share of the frame) and how many more there are.
 *
 * Orientation: the page opens as an icicle (root at the top) when the graph is
 * taller than the window below the chart's top, and as a flame graph otherwise, so
 * the root and the widest paths are on the first screen; the toggle flips it.
 *
 * Diff mode reads both sides of the tree (side 0 "before", side 1 "after"): widths
 * follow side 1, and each frame is colored by its normalized delta
 * t1/T1 - t0/T0: red grew, blue shrank, white unchanged. The page then leads with
 * a legend saying so and a movers table (movers.h: the MOVERS_DEFAULT functions
 * whose share changed most, before %, after %, delta in percentage points), beside
 * the graph in a window at least 1100 px wide and above it otherwise, written as
 * HTML by the server; the top-functions table gets self and total before, after
 * and their delta. The tooltip adds before's figures and the delta.
 *
 * The embedded JSON is {"title":..,"subtitle":..|null,"diff":bool,"period":ns,
 * "tree":NODE} with NODE = {"n":name,"k":kind,"s":[self0,self1],"t":[total0,total1],
 * "r":repeat (only when > 1),"l":[[line,total0,total1]...] (the five hottest lines
 * by the shown side's total, only when the node has lines),"lm":lines left out
 * (only when some are),"c":[NODE...]}; every string in it has '<', '>' and '&'
 * escaped as \u003c.. so no frame name can end the element. Text written as HTML
 * (title, subtitle, movers' names) is escaped, with invalid UTF-8 and control
 * characters as U+FFFD. The output is a pure function of the tree and options.
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
	const char *unit;     /* a type other than cpu: its unit's name (ptype__unit_name),
			       * the page's values humanised in it; NULL: samples */
};

/* Writes the page for f (after flame__finish) to out; o may be NULL for defaults.
 * Returns 0, -EINVAL (NULL f/out), -ENOMEM or -EIO (a write failed; out holds a
 * partial page). Does not modify f. */
int render_html(const struct flame *f, const struct render_html_options *o, FILE *out);

/* The exact text of the page's one <style> and one executable <script> element:
 * static, the same for every page, so that a server can allow them by hash in a
 * Content-Security-Policy (collector/exports.h). Every other script element holds
 * JSON, which no browser runs. */
const char *render_html_inline_style(void);
const char *render_html_inline_script(void);

#endif
