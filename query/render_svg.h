/* Interactive SVG flame graph in the style of flamegraph.pl, written from a flame
 * tree: one self-contained file (inline CSS and ECMAScript, no external URL) with
 * one <g class="f"> per frame holding a <title> tooltip, a <rect> whose width is
 * the frame's share of all samples, and a label truncated with ".." to fit. Frames
 * narrower than 0.1 px are left out (their samples still count in their parents).
 * Clicking a frame zooms to it ("Reset Zoom" undoes it); "Search" prompts for a
 * regular expression, paints matches magenta and shows the matched share of
 * samples (nested matches counted once); the line at the bottom shows the first
 * line of the tooltip of the frame under the mouse.
 *
 * The tooltip's first line is "NAME — 1,234 samples, 12.3 s CPU, 38.20%" (the CPU
 * time only when period_ns is known); a frame that stood for a run of identical
 * placeholder frames (repeat > 1) is named "[unknown] ×128" in its label and
 * tooltip; a frame with a per-line breakdown lists its five hottest lines by total
 * on the following lines ("  line 43: 823 samples, 82.50%", the share of the
 * frame's own total) and how many more there are. The header holds the title and,
 * when given, the subtitle (one line of context: range, selection, totals).
 *
 * Orientation: RENDER_SVG_AUTO draws a flame graph (root at the bottom) unless the
 * image would be taller than RENDER_SVG_AUTO_ICICLE_PX, and then an icicle graph
 * (root at the top, growing down), so that a deep graph opens on its root and
 * widest paths, not on a screen of thin towers; RENDER_SVG_FLAME and
 * RENDER_SVG_ICICLE force either.
 *
 * Colors follow the frame kind: Python blue-green, native warm (flamegraph.pl's
 * "hot"), kernel orange/brown, processes and the root grey; the shade is a hash of
 * the name, so a rendering is a pure function of the tree. In diff mode widths come
 * from side 1 ("after"), and a frame is red if its share of samples grew (after's
 * share minus before's share > 0), blue if it shrank, white if unchanged, with an
 * intensity proportional to the change; the tooltip shows both counts and the
 * change in percentage points ("NAME — 60 samples, 50.00%; before 10 samples,
 * 16.67%; +33.33 pp"). The header then carries a legend saying so and the top
 * RENDER_SVG_MOVERS movers (movers.h: functions by |change of share|, recursion
 * counted once) as text.
 *
 * Every name, the title and the subtitle are escaped for XML, invalid UTF-8 and
 * characters that XML forbids (controls) are replaced by U+FFFD, so no frame text
 * can add markup. The output is a pure function of the tree and the options.
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
#define RENDER_SVG_AUTO_ICICLE_PX                                                                  \
	720		    /* taller than this: icicle; a 1280 x 720 screen, the                  \
			     * smallest common one, shows a flame graph's root */
#define RENDER_SVG_MOVERS 5 /* movers listed in a diff's header: more crowd the graph */

enum render_svg_orientation {
	RENDER_SVG_AUTO,   /* flame, or icicle when taller than RENDER_SVG_AUTO_ICICLE_PX */
	RENDER_SVG_FLAME,  /* root at the bottom, growing up */
	RENDER_SVG_ICICLE, /* root at the top, growing down */
};

struct ptype;

struct render_svg_options {
	const char *title;    /* NULL: "Flame Graph", "Icicle Graph" or "Differential Flame Graph";
			       * escaped on output */
	const char *subtitle; /* one line of context under the title (range, selection,
			       * type, totals), escaped on output; NULL: none */
	uint64_t period_ns;   /* sampling period, to show CPU time beside samples; 0: unknown */
	const struct ptype *type; /* a type other than cpu: values in its unit, humanised
				   * ("200 MiB, 38.20%"); NULL: samples (and CPU time) */
	bool diff;		  /* widths from side 1, colors from the change between sides */
	enum render_svg_orientation orientation;
	unsigned width; /* image width in px; 0: RENDER_SVG_DEFAULT_WIDTH */
};

/* Writes the SVG for f (after flame__finish) to out; o may be NULL for defaults.
 * Returns 0, -EINVAL (NULL f or out, width outside [RENDER_SVG_MIN_WIDTH,
 * RENDER_SVG_MAX_WIDTH], an unknown orientation), -ENOMEM or -EIO (a write failed). A side with no
 * samples gives a valid SVG without frames. */
int render_svg(const struct flame *f, const struct render_svg_options *o, FILE *out);

#endif
