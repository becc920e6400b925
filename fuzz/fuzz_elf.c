/* Fuzz target: the ELF symbol reader. The root agent reads binaries that
 * unprivileged users and containers control; any file image must be read or
 * refused without a crash, and every address must resolve within bounds. */
#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/elfsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfsyms *e = NULL;
	uint64_t vaddr, off;

	if (elfsyms__from_memory(data, size, &e) != 0)
		return 0;
	elfsyms__count(e);
	for (off = 0; off < 0x20000; off += 0x1001)
		if (elfsyms__offset_to_vaddr(e, off, &vaddr) == 0)
			elfsyms__lookup(e, vaddr, NULL);
	elfsyms__put(e);
	return 0;
}
