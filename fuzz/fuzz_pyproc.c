/* Fuzz target: what CPython discovery (agent/python/pyproc.h) reads of a process
 * it may not trust: the whole input as an ELF image (a file the process maps,
 * its owner's to craft) read for its type, first load address and CPython's
 * symbols, and as /proc/PID/maps text (the process names its mappings), each
 * line parsed for a python* or libpython3.* file mapped from offset 0. Nothing
 * may crash; a line taken names an absolute python path inside the line. */
#include <assert.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libelf.h>

#include "agent/python/pyproc.h"
#include "agent/symbols/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_elf(const uint8_t *data, size_t size)
{
	struct pyproc_elf_facts f;
	char *copy;
	Elf *elf;

	if (!size || elf_version(EV_CURRENT) == EV_NONE)
		return;
	copy = malloc(size); /* libelf may convert in place */
	if (!copy)
		return;
	memcpy(copy, data, size);
	elf = elf_memory(copy, size);
	if (pyproc_elf_facts(elf, &f) == 0)
		assert(f.first_vaddr == UINT64_MAX || !(f.first_vaddr & 0xfff));
	else
		assert(!f.is_exec && !f.first_vaddr && !f.sym[0]);
	elf_end(elf);
	free(copy);
}

static void check_maps(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *line, *save = NULL, file[PATH_MAX];
	struct procmaps_line pl;

	if (!text)
		return;
	memcpy(text, data, size);
	text[size] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t n;

		if (pyproc_parse_maps_line(line, &pl, file))
			continue;
		n = strnlen(file, sizeof(file));
		assert(n < sizeof(file) && n <= strlen(line));
		assert(file[0] == '/' && pyproc_is_python_path(file));
		assert(strstr(line, file));
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_elf(data, size);
	check_maps(data, size);
	return 0;
}
