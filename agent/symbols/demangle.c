/* C++ and Rust demangling for symbol tables, with libiberty's cplus_demangle();
 * see demangle.h. Called once per kept symbol when a file's table is built, never
 * per sample.
 */
#include "agent/symbols/demangle.h"

#include <errno.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

bool demangle_is_mangled(const char *name, size_t len)
{
	return len > 2 && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

/* DMGL_AUTO: C++ (Itanium ABI) and Rust, legacy and v0, recognised by their
 * prefixes. No DMGL_PARAMS: no parameter lists. No DMGL_VERBOSE: Rust hashes and
 * disambiguators dropped, std:: abbreviations kept short (`std::string`). The
 * recursion limit stays on (no DMGL_NO_RECURSE_LIMIT). */
#define DEMANGLE_OPTIONS (DMGL_AUTO | DMGL_ANSI)

int demangle_name(const char *name, char **out)
{
	size_t len = strnlen(name, DEMANGLE_MAX_IN + 1);
	char *r;

	if (len > DEMANGLE_MAX_IN || !demangle_is_mangled(name, len))
		return -EINVAL;
	errno = 0;
	r = cplus_demangle(name, DEMANGLE_OPTIONS);
	if (!r)
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	if (!*r || strnlen(r, DEMANGLE_MAX_OUT + 1) > DEMANGLE_MAX_OUT) {
		free(r);
		return -EINVAL;
	}
	*out = r;
	return 0;
}
