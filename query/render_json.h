/* JSON renderings of a flame tree and of a top-functions table, for the query API
 * and for tools (jq, notebooks). Output is always valid JSON (RFC 8259) whatever
 * the frame names hold: strings are escaped, invalid UTF-8 becomes U+FFFD, and
 * '<', '>', '&', U+2028 and U+2029 are written as \u escapes so the text can also
 * be embedded in an HTML <script> block.
 *
 * Tree format: every node is
 *   {"name":"all","kind":"root","self":N,"total":N,"children":[...]}
 * with kind one of root, process, native, kernel, python, and self/total the
 * counts of side 0 (the profile). When side 1 has any samples (a differential
 * tree), every node also carries "before":{"self":N,"total":N} (side 0),
 * "after":{"self":N,"total":N} (side 1) and "delta", the change of the node's
 * normalized share, after.total/after_root - before.total/before_root (a share
 * of a side with no samples is 0).
 *
 * A node that stands for a run of placeholder frames (flame.h) has "repeat":N, the
 * longest run (only when N > 1). A node with a per-line breakdown (a Python
 * function at function granularity) has, before "children",
 *   "lines":[{"line":43,"self":N,"total":N},...]
 * sorted by line, with side 0's counts: total = samples that passed through the
 * node while the function was at that line, self = those that ended there. In a
 * differential tree each entry also has "before":{"self":N,"total":N} and
 * "after":{"self":N,"total":N}, like the node itself; an entry may have samples on
 * one side only. Lines' totals sum to the node's total (and selfs to its self),
 * except for samples whose frame had no line.
 *
 * Both may start with "meta":{...}, the query's context (query.c writes it).
 *
 * Top format: {"total":N,"functions":[{"name":..,"kind":..,"self":N,"total":N,
 * "self_pct":P,"total_pct":P},...]} with percentages of `total`; a function with a
 * per-line breakdown (flame_function's) also has "lines":[{"line":L,"self":N,
 * "total":N},...] of that side, sorted by line, whose selfs sum to its self and
 * totals to its total (a recursive function's samples at its outermost call's
 * line; samples of frames that had no line in none).
 *
 * Writers only; they never print elsewhere. Not thread-safe per FILE.
 */
#ifndef SMOLDER_RENDER_JSON_H
#define SMOLDER_RENDER_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "query/flame.h"

/* Writes the tree of f (after flame__finish) to out. meta, when not NULL, is the
 * text of a JSON value (the query's context: range, selection, units) written as
 * the root object's first member, "meta"; the caller makes it valid JSON.
 *
 * max_nodes (0: no limit) keeps the nodes with the largest totals (both sides
 * summed in a diff), at most max_nodes of them: a node is written when its total
 * is at least the max_nodes-th largest, and when that threshold ties, the nodes
 * of exactly that total that come first in the walk fill what is left. A node's
 * total is at least each child's, so what is kept is one tree from the root, and
 * the totals and self of the nodes written are unchanged (a pruned child's
 * samples show as the part of its parent's width that no child covers). The root
 * then has "pruned":{"nodes":N,"samples":S,"max_nodes":M} after meta: the nodes
 * left out and the samples of the outermost of them (side 0 and 1 summed).
 * Returns 0, -EINVAL (NULL argument), -ENOMEM or -EIO (a write failed). */
int render_json_tree(const struct flame *f, const char *meta, size_t max_nodes, FILE *out);

/* Writes n functions (as from flame__top) with percentages of total (0: all 0),
 * and meta as render_json_tree() does. Returns 0, -EINVAL or -EIO. */
int render_json_top(const struct flame_function *fns, size_t n, uint64_t total, const char *meta,
		    FILE *out);

/* Writes s as a quoted JSON string, escaped as described above. */
void render_json_string(FILE *out, const char *s);

/* The name the JSON answers give a frame kind: "native", "kernel", "python",
 * "process", "jit" (and "root" for the tree's root). */
const char *render_json_kind(uint8_t kind);

/* The same for the first len bytes of s (which need not be NUL-terminated). */
void render_json_string_n(FILE *out, const char *s, size_t len);

#endif
