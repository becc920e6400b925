/* Fuzz target: the text pieces of a Pyroscope push (collector/pushreq.h) and its
 * gzip body (collector/gzip.h), all of them the client's: the same bytes are read as an application
 * name with labels, a from/until time, a Content-Type's boundary, a multipart body (at the boundary
 * "XyZ" and at the one its first line names), a sample_type_config, an Authorization value and a
 * gzip body. A parsed name keeps its documented form (a service of the allowed characters, unique
 * keys, no "__" key, at most BATCH_MAX_LABELS labels); every part lies inside the body; inflated
 * bytes never pass the cap. Built by `make fuzz` (libFuzzer); seeds in fuzz/seeds/pushreq/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/gzip.h"
#include "collector/pushreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *s)
{
	struct pushreq_name n;
	char why[256];
	size_t i, j;

	if (pushreq_name__parse(s, &n, why, sizeof(why)))
		return;
	if (!n.service || !*n.service || n.n < 1 || n.n > BATCH_MAX_LABELS ||
	    strcmp(n.keys[0], "service") || n.service != n.values[0])
		abort();
	for (i = 0; i < n.n; i++) {
		if (!*n.keys[i] || !*n.values[i] || !strncmp(n.keys[i], "__", 2))
			abort();
		for (j = 0; j < i; j++)
			if (!strcmp(n.keys[i], n.keys[j]))
				abort();
	}
	pushreq_name__free(&n);
}

static void check_part(const struct pushreq_part *p, const char *body, size_t len)
{
	if (p->present && (p->data < body || p->data + p->len > body + len))
		abort();
}

static void check_form(const char *body, size_t len, const char *boundary)
{
	struct pushreq_form f;
	char why[256];

	if (pushreq_multipart(body, len, boundary, &f, why, sizeof(why)))
		return;
	check_part(&f.profile, body, len);
	check_part(&f.prev_profile, body, len);
	check_part(&f.sample_type_config, body, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), boundary[71], why[256], pass[64], *nl;
	struct push_display d[PUSH_MAX_DISPLAY];
	int64_t t, start;
	uint32_t secs;
	void *out;
	size_t n, outlen;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	check_name(s);
	if (!pushreq_time(s, 1, &t) && t < 0)
		abort();
	if (!pushreq_window(0, t, &start, &secs, why, sizeof(why)) &&
	    (secs < 1 || secs > PUSHREQ_MAX_WINDOW_SECONDS))
		abort();
	check_form((const char *)data, size, "XyZ");
	nl = memchr(s, '\n', size);
	if (nl) {
		*nl = '\0';
		if (!pushreq_boundary(s, boundary)) {
			if (!*boundary || strlen(boundary) > 70)
				abort();
			check_form(nl + 1, size - (size_t)(nl + 1 - s), boundary);
		}
		*nl = '\n';
	}
	if (!pushreq_sample_type_config((const char *)data, size, d, &n, why, sizeof(why)) &&
	    n > PUSH_MAX_DISPLAY)
		abort();
	if (!pushreq_basic_password(s, pass, sizeof(pass)) && strlen(pass) >= sizeof(pass))
		abort();
	if (!gzip__inflate(data, size, 1u << 20, &out, &outlen, why, sizeof(why))) {
		if (outlen > (1u << 20))
			abort();
		free(out);
	}
	free(s);
	return 0;
}
