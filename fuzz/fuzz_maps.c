/* Fuzz target: /proc/PID/maps lines. A process controls the paths of its mappings
 * (file names with spaces, newlines cut by the reader, " (deleted)"), so every
 * line must parse to a range and a path inside the line, or be refused. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *line, *save = NULL;
	struct procmaps_line pl;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(line);

		if (procmaps_parse_line(line, &pl) != 0)
			continue;
		if (pl.end <= pl.start || pl.path < line || pl.path > line + len ||
		    pl.path + pl.path_len > line + len)
			abort();
	}
	free(text);
	return 0;
}
