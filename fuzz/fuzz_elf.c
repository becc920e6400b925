/* Fuzz target: the ELF symbol reader. The root agent reads binaries that
 * unprivileged users and containers control; any file image must be read or
 * refused without a crash, and every address must resolve within bounds. Reaches
 * .symtab/.dynsym, the PLT stubs and their relocations, demangling, the
 * MiniDebugInfo decoder (.gnu_debugdata), and the build-id note and
 * .gnu_debuglink readers whose output names the debug files the agent opens. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libelf.h>

#include "agent/symbols/debuginfo.h"
#include "agent/symbols/elfsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The ids a hostile file can give: a link name that is a plain name, nothing else. */
static void check_ids(const uint8_t *data, size_t size)
{
	struct debuginfo_ids ids;
	char *copy;
	size_t len;
	Elf *elf;

	if (!size || elf_version(EV_CURRENT) == EV_NONE)
		return;
	copy = malloc(size); /* libelf may convert in place */
	if (!copy)
		return;
	memcpy(copy, data, size);
	elf = elf_memory(copy, size);
	if (elf) {
		debuginfo_read_ids(elf, &ids);
		len = strnlen(ids.link, sizeof(ids.link));
		assert(len < sizeof(ids.link));
		assert(!strchr(ids.link, '/') && !strstr(ids.link, ".."));
		assert(ids.build_id_len <= DEBUGINFO_MAX_BUILD_ID);
		elf_end(elf);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfsyms *e = NULL;
	uint64_t vaddr, off;
	const char *name;

	check_ids(data, size);
	if (elfsyms__from_memory(data, size, &e) != 0)
		return 0;
	elfsyms__count(e);
	for (off = 0; off < 0x20000; off += 0x1001)
		if (elfsyms__offset_to_vaddr(e, off, &vaddr) == 0) {
			name = elfsyms__lookup(e, vaddr, NULL);
			if (name)
				(void)strlen(name);
		}
	elfsyms__put(e);
	return 0;
}
