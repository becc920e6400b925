/* Fuzz target: per-process labels (agent/labels.h). /proc/PID/cgroup paths are
 * chosen by whoever creates the cgroups (a user under delegation, a container
 * runtime) and /proc/PID/cmdline by the process itself, so the same bytes are
 * read as a cgroup file, as each of its lines' paths, and as a command line; every
 * label that comes out must have exactly its documented form. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/labels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static void check(const struct proc_labels *l)
{
	size_t n = strlen(l->container_id), i;
	const char *slash = strchr(l->service, '/');

	if (n && (n != LABELS_CONTAINER_ID_LEN || !is_hex(l->container_id, n)))
		abort();
	n = strlen(l->pod_uid);
	if (n && n != LABELS_POD_UID_LEN)
		abort();
	for (i = 0; i < n; i++)
		if ((i == 8 || i == 13 || i == 18 || i == 23) ? l->pod_uid[i] != '-'
							      : !is_hex(l->pod_uid + i, 1))
			abort();
	if (strlen(l->service) > LABELS_SERVICE_MAX || strlen(l->py_main) > LABELS_PY_MAIN_MAX)
		abort();
	/* only a user's unit has a '/': "user@UID/NAME" */
	if (slash && (strncmp(l->service, "user@", 5) != 0 || strchr(slash + 1, '/')))
		abort();
	if (strchr(l->py_main, '/') || strchr(l->py_main, ' '))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *line, *nl, *end = text + size;
	struct proc_labels l;

	memset(&l, 0, sizeof(l));
	labels_parse_cgroup(text, size, &l);
	check(&l);
	for (line = text; line < end; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl)
			nl = end;
		memset(&l, 0, sizeof(l));
		if (labels_parse_cgroup_path(line, (size_t)(nl - line), &l) < 0 &&
		    (l.service[0] || l.container_id[0] || l.pod_uid[0]))
			abort();
		check(&l);
	}
	labels_parse_cmdline(text, size, &l);
	check(&l);
	return 0;
}
