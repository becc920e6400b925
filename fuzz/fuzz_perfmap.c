/* Fuzz target: perf map text (/tmp/perf-PID.map). A process writes its own map, so
 * every line must parse to a non-empty range and a name inside the line, or be
 * refused; fed in two pieces split anywhere (looked up between them, so the second
 * piece's segments are laid over the first's), the map must keep only what its
 * lines say, and every lookup of a parsed line's start must find a name. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *p = text, *end = text + size, *nl;
	struct perfmap_limits lim = { .max_bytes = 1u << 20, .max_entries = 64 };
	struct perfmap_stats st = { 0 };
	struct perfmap_line pl;
	struct perfmap *m;
	size_t split = size ? data[0] % size : 0;

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (perfmap_parse_line(p, (size_t)(nl - p), &pl) != 0)
			continue;
		if (!pl.size || pl.start > UINT64_MAX - pl.size || !pl.name_len || pl.name < p ||
		    pl.name + pl.name_len > nl)
			abort();
	}
	if (perfmap__new(1, &lim, &m))
		return 0;
	perfmap__feed(m, text, split, &st);
	perfmap__lookup(m, 0); /* segments of the first piece, the second laid over them */
	perfmap__feed(m, text + split, size - split, &st);
	if (perfmap__entries(m) > lim.max_entries)
		abort();
	for (p = text; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break; /* a partial last line is no entry */
		if (nl > p && nl[-1] == '\r')
			continue; /* read without its '\r', which may leave no name */
		if (perfmap_parse_line(p, (size_t)(nl - p), &pl) == 0 && !st.entries_capped &&
		    (size_t)(nl - p) <= PERFMAP_MAX_LINE && !perfmap__lookup(m, pl.start))
			abort();
	}
	perfmap__free(m);
	return 0;
}
