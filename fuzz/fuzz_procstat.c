/* Fuzz target: the /proc/PID/stat and /proc/PID/status texts the agent parses
 * (agent/symbols/procmaps.h, agent/python/pyproc.h, agent/symbols/perfmap.h).
 * The process names itself (comm: spaces, ')' and digits in field 2, the Name
 * line of status), and a read may be cut short, so any text must parse or be
 * refused without reading past its end: the input is copied to a buffer of its
 * exact length plus the terminating NUL. */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/python/pyproc.h"
#include "agent/symbols/perfmap.h"
#include "agent/symbols/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	uint32_t nspid = 0, ruid = 0, euid = 0;
	uint64_t start = 0;
	int err;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	err = procmaps_parse_start_time(text, &start);
	assert(err == 0 || err == -EINVAL || err == -ESRCH);
	assert(err != -ESRCH || !strchr(text, ')'));
	(void)pyproc_parse_start_time(text);
	err = perfmap_parse_status(text, 4242, &nspid, &ruid, &euid);
	assert(err == 0 || err == -EINVAL);
	if (!strstr(text, "\nNSpid:"))
		assert(nspid == 4242);
	if (err == 0)
		assert(strstr(text, "\nUid:"));
	free(text);
	return 0;
}
