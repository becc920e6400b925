/* Interactive SVG flame graph in the style of flamegraph.pl, written from a flame
 * tree: one self-contained file (inline CSS and ECMAScript, no external URL) with
 * one <g class="f"> per frame holding a <title> tooltip "name (N samples, P%)", a
 * <rect> whose width is the frame's share of all samples, and a label truncated
 * with ".." to fit. Frames narrower than 0.1 px are left out (their samples still
 * count in their parents). Clicking a frame zooms to it ("Reset Zoom" undoes it);
 * "Search" prompts for a regular expression, paints matches magenta and shows the
 * matched share of samples (nested matches counted once); the line at the bottom
 * shows the frame under the mouse.
 *
 * Colors follow the frame kind: Python blue-green, native warm (flamegraph.pl's
 * "hot"), kernel orange/brown, processes and the root grey; the shade is a hash of
 * the name, so a rendering is a pure function of the tree. In diff mode widths come
 * from side 1 ("after"), and a frame is red if its share of samples grew (after's
 * share minus before's share > 0), blue if it shrank, white if unchanged, with an
 * intensity proportional to the change; the tooltip shows both counts and the
 * change in percentage points.
 *
 * Every name and the title are escaped for XML, invalid UTF-8 and characters that
 * XML forbids (controls) are replaced by U+FFFD, so no frame text can add markup.
 */
#ifndef SMOLDER_RENDER_SVG_H
#define SMOLDER_RENDER_SVG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "query/flame.h"

#define RENDER_SVG_DEFAULT_WIDTH 1200
#define RENDER_SVG_MIN_WIDTH	 200
#define RENDER_SVG_MAX_WIDTH	 65536

struct render_svg_options {
	const char *title; /* NULL: "Flame Graph", "Icicle Graph" or "Differential Flame Graph" */
	const char *subtitle; /* one line of context under the title (range, selection,
			       * type, totals), escaped on output; NULL: none */
	uint64_t period_ns;   /* sampling period, to show CPU time beside samples; 0: unknown */
	bool diff;	      /* widths from side 1, colors from the change between sides */
	bool icicle;	      /* root at the top, growing down */
	unsigned width;	      /* image width in px; 0: RENDER_SVG_DEFAULT_WIDTH */
};

/* Writes the SVG for f (after flame__finish) to out; o may be NULL for defaults.
 * Returns 0, -EINVAL (NULL f or out, width outside [RENDER_SVG_MIN_WIDTH,
 * RENDER_SVG_MAX_WIDTH]) or -EIO (a write failed). A side with no samples gives a
 * valid SVG without frames. */
int render_svg(const struct flame *f, const struct render_svg_options *o, FILE *out);

#endif
