/* Fuzz target: the Host and Origin checks (collector/access.h), whose input is
 * any request's headers. The input is "HOST\nORIGIN\nURL" (missing parts are
 * absent headers). A parsed host must be lower case, of the allowed characters,
 * with a port of -1 to 65535; without the Host check and without Origin every
 * request passes; a verdict never depends on more than the three strings (the
 * same input gives the same verdict twice). Built by `make fuzz` (libFuzzer);
 * seeds in fuzz/seeds/access/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/access.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parsed(const char *s)
{
	struct access_host h;
	const char *p;

	if (!access_parse_host(s, strlen(s), &h))
		return;
	if (h.port < -1 || h.port > 65535 || !h.name[0])
		abort();
	for (p = h.name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr(".-_:", *p)))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const allow[] = { "profiler.example.com", "prof:8443" };
	char *buf = malloc(size + 1), *parts[3] = { NULL, NULL, NULL }, *p, why[256];
	struct access on, off;
	const char *url;
	int i;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (i = 0, p = buf; i < 3 && p; i++) {
		parts[i] = p;
		p = strchr(p, '\n');
		if (p)
			*p++ = '\0';
	}
	url = parts[2] ? parts[2] : "/api/v1/labels";
	if (access__init(&on, "127.0.0.1:7171", true, false, allow, 2, why, sizeof(why)) ||
	    access__init(&off, "[::]:0", false, true, NULL, 0, why, sizeof(why)))
		abort();
	if (parts[0])
		check_parsed(parts[0]);
	if (parts[1])
		check_parsed(parts[1]);
	if (access__check(&on, url, parts[0], parts[1], why, sizeof(why)) !=
	    access__check(&on, url, parts[0], parts[1], why, sizeof(why)))
		abort();
	if (access__check(&off, url, parts[0], NULL, why, sizeof(why)) != ACCESS_OK)
		abort();
	free(buf);
	return 0;
}
