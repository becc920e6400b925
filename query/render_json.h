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
 * Both may start with "meta":{...}, the query's context (query.c writes it).
 *
 * Top format: {"total":N,"functions":[{"name":..,"kind":..,"self":N,"total":N,
 * "self_pct":P,"total_pct":P},...]} with percentages of `total`.
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
 * Returns 0, -EINVAL (NULL argument) or -EIO (a write failed). */
int render_json_tree(const struct flame *f, const char *meta, FILE *out);

/* Writes n functions (as from flame__top) with percentages of total (0: all 0),
 * and meta as render_json_tree() does. Returns 0, -EINVAL or -EIO. */
int render_json_top(const struct flame_function *fns, size_t n, uint64_t total, const char *meta,
		    FILE *out);

/* Writes s as a quoted JSON string, escaped as described above. */
void render_json_string(FILE *out, const char *s);

/* The same for the first len bytes of s (which need not be NUL-terminated). */
void render_json_string_n(FILE *out, const char *s, size_t len);

#endif
