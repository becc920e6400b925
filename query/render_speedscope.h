/* speedscope export: a flame tree's stacks (side 0) as one "sampled" profile in the speedscope file
 * format (https://www.speedscope.app/file-format-schema.json), which
 * speedscope.app opens directly. The process frame stays the first (root) frame of
 * every sample, since speedscope has no notion of processes; a Python frame
 * becomes a frame {name: qualname, file, line} ({name, file} in a tree of function
 * granularity, whose Python frames have no line), any other frame {name: its folded
 * text}. A run of placeholder frames the tree collapsed (flame.h) is one frame. Samples are written
 * in stack-text order, weights are the counts and the unit is "none". Output is always valid JSON:
 * strings are escaped per RFC 8259, invalid UTF-8 becomes U+FFFD, and '<', '>', '&', U+2028, U+2029
 * are written as \u escapes so the text can also be embedded in HTML <script> elements.
 */
#ifndef SMOLDER_RENDER_SPEEDSCOPE_H
#define SMOLDER_RENDER_SPEEDSCOPE_H

#include <stdio.h>

#include "query/flame.h"

/* Writes the tree's stacks to out as a speedscope file; name (NULL: "smolder")
 * names the file and its profile. Returns 0, -EINVAL (NULL tree or out),
 * -ENOMEM or -EIO (a write failed; out holds a partial document). Reentrant. */
int render_speedscope(const struct flame *tree, const char *name, FILE *out);

/* render_speedscope() with the profile's unit: "nanoseconds" or "bytes" (a type's
 * unit speedscope shows as time or memory), anything else (NULL, samples,
 * objects, count) "none". */
int render_speedscope_unit(const struct flame *tree, const char *name, const char *unit, FILE *out);

#endif
