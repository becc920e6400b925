/* Fuzz target: the decoders of CPython memory the agent reads from processes that
 * may be hostile: line tables (co_lnotab, 3.10 co_linetable, 3.11+ location
 * tables), a copy of _Py_DebugOffsets, and code objects with their strings and
 * tuples. The input's first byte picks the version and the work:
 *   - every line table kind decodes the input at a spread of offsets;
 *   - _Py_DebugOffsets is parsed from the input;
 *   - the input is laid out in this process's memory and named as a code object
 *     through pycode_cache__frame(), reading it with process_vm_readv like any
 *     target. An 8-byte word whose top two bytes are 0xAAAA is turned into a
 *     pointer into the same buffer (its low 16 bits, modulo the size), so the
 *     fuzzer can build the objects a code object points to. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/python/pycode.h"
#include "agent/python/pyoffsets.h"
#include "common/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ARENA (64 * 1024)

static uint8_t arena[ARENA] __attribute__((aligned(16)));

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pycode_cache *c = NULL;
	struct py_offsets o;
	unsigned minor;
	char buf[512];
	struct frame f;
	size_t i, n;
	int off;

	if (size < 2)
		return 0;
	minor = 9 + data[0] % 5;
	data++;
	size--;

	for (off = -2; off < 4096; off += 37) {
		pyline_addr2line(PY_LINETABLE_LNOTAB, data, size, 1, off);
		pyline_addr2line(PY_LINETABLE_310, data, size, 1, off);
		pyline_addr2line(PY_LINETABLE_LOCATIONS, data, size, 1, off);
	}
	py_offsets__from_debug(data, size, &o);

	if (py_offsets__from_table(PY_VERSION_CODE(3, minor), &o) != 0)
		return 0;
	n = size < ARENA ? size : ARENA;
	memset(arena, 0, sizeof(arena));
	memcpy(arena, data, n);
	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, arena + i, 8);
		if ((w >> 48) == 0xaaaa) {
			w = (uint64_t)(uintptr_t)arena + (w & 0xffff) % n;
			memcpy(arena + i, &w, 8);
		}
	}
	if (pycode_cache__new(8, &c) != 0)
		return 0;
	{
		uint64_t code_type, self_type;

		memcpy(&code_type, arena + (o.ob_type % (ARENA - 8)), 8);
		memcpy(&self_type, arena + ARENA - 8, 8);
		pycode_cache__frame(c, getpid(), &o, code_type, (uintptr_t)arena, (int)(size % 512),
				    self_type, buf, sizeof(buf), &f);
	}
	pycode_cache__free(c);
	return 0;
}
