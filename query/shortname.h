/* Native names shortened for a person's eye: a C++ or Rust name's template
 * arguments collapsed to "<…>" (std::__introsort_loop<…>), the way a table or a
 * text tree shows it. Only text meant for reading is shortened: JSON answers and
 * the exports keep the full name, and the web UI shows it on hover. A library:
 * no I/O. ui/flame.js's shortName() is the same rule for the page. */
#ifndef SMOLDER_SHORTNAME_H
#define SMOLDER_SHORTNAME_H

#include <stddef.h>

#include "common/frame.h"

/* Room for any stored name's short form: the longest stored name, the ellipsis
 * and the NUL. */
#define SHORTNAME_BUF (FRAME_MAX_NAME_LEN + 8)

/* Writes name's short form to out (size bytes, NUL-terminated when size > 0) and
 * returns its length (snprintf-like: the full short length even when cut). Each
 * outermost "<...>" of template arguments (after a name: vector<int>) becomes
 * "<…>"; a Rust qualified path's brackets (<Vec<T> as Drop>::drop) are kept with
 * what they hold shortened; the '<' and '>' of operator names (operator<,
 * operator<<=, operator->, operator<=>) are kept; an unbalanced '<' leaves the
 * rest as it is. */
size_t shortname(const char *name, char *out, size_t size);

/* A frame's name as a table or text tree shows it: shortname() of a native
 * frame's (in buf, size bytes), any other kind's as it is (a Python "<module>"
 * or "<lambda>" is a name, not template arguments). Returns name or buf. */
const char *shortname_of(const char *name, unsigned kind, char *buf, size_t size);

#endif
