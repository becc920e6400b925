/* Readable names for mangled C++ and Rust symbols, through libiberty's demangler
 * (the one binutils, gdb and perf use).
 *
 * Names are demangled without parameter lists (`ns::Foo<int>::bar`, not
 * `ns::Foo<int>::bar(int, char const*)`), the way profilers show frames; template
 * arguments stay. Rust legacy names lose their `::h<hash>` suffix, Rust v0 names
 * their crate disambiguators. The input is untrusted (symbol tables of any binary a
 * process maps), so its length is capped before the demangler sees it.
 */
#ifndef SMOLDER_DEMANGLE_H
#define SMOLDER_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/* Mangled names longer than this stay mangled: the demangler's time and output
 * can grow much faster than its input on crafted back-references, and real names
 * this long (deep template metaprogramming) are rare and unreadable anyway. */
#define DEMANGLE_MAX_IN 4096
/* Demangled names longer than this are dropped (the mangled name is kept): a
 * folded frame holds at most FRAME_MAX_NAME_LEN (1024) bytes of it anyway. */
#define DEMANGLE_MAX_OUT 4096

/* True when name (len bytes, not necessarily NUL-terminated at len) looks mangled
 * in a scheme demangle_name() knows: `_Z` (C++ and Rust legacy) or `_R` (Rust v0). */
bool demangle_is_mangled(const char *name, size_t len);

/* Demangles the NUL-terminated name. Returns 0 with *out a malloc'd string (the
 * caller frees it), -EINVAL when the name is not mangled, is malformed, or is past
 * the caps above (keep the name as it is), or -ENOMEM. */
int demangle_name(const char *name, char **out);

#endif
