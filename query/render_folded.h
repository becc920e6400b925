/* Folded export: a flame tree's stacks as folded text, the format flamegraph.pl,
 * inferno and speedscope read (README "Reading the output"). One line per stack in
 * text order (a sorted folded file): "comm;f1;f2 COUNT" for a profile, or
 * difffolded.pl's "comm;f1;f2 BEFORE AFTER" for a diff (every stack of either
 * side, a 0 where a side has none). Frames are the tree's nodes, so the text follows
 * its granularity: "f (a.py)" at function granularity, "f (a.py:3)" by line; and a
 * run of equal placeholder frames the tree collapsed ("[unknown]" x 128) is printed
 * once (the run's length is in the JSON tree's "repeat", not in folded text).
 */
#ifndef SMOLDER_RENDER_FOLDED_H
#define SMOLDER_RENDER_FOLDED_H

#include <stdbool.h>
#include <stdio.h>

#include "query/flame.h"

/* Writes the stacks of side 0 (diff false) or of both sides (diff true). Returns
 * 0, -ENOMEM or -EIO (a write failed). */
int render_folded(const struct flame *tree, bool diff, FILE *out);

#endif
