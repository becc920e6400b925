/* The application name of a Pyroscope push (name=, "app.cpu{k=v,...}"): its
 * service, type suffix and labels, held to the store's label caps; see the
 * grammar at pushreq_name__parse() in pushreq.h. One of the push's text pieces
 * (collector/pushreq_*.c); the collector's /ingest (collector/pyroscope.c) reads
 * it first. */
#include "collector/pushreq.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reason.h"

static bool service_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '.' || c == '-' || c == '/';
}

static bool key_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '.';
}

/* s[0..n) without the spaces around it, NUL-terminated in place. */
static char *trim(char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	s[n] = '\0';
	return s;
}

void pushreq_name__free(struct pushreq_name *n)
{
	if (n) {
		free(n->buf);
		memset(n, 0, sizeof(*n));
	}
}

/* Adds or replaces key's value. */
static int put_label(struct pushreq_name *out, const char *k, const char *v, char *why,
		     size_t whylen)
{
	size_t i;

	if (strlen(k) > BATCH_MAX_STRING_LEN || strlen(v) > BATCH_MAX_STRING_LEN)
		return reason_fail(why, whylen, -EINVAL, "name: label '%.64s' over %u bytes", k,
				   BATCH_MAX_STRING_LEN);
	for (i = 0; i < out->n; i++)
		if (!strcmp(out->keys[i], k)) {
			out->values[i] = v;
			return 0;
		}
	if (out->n == BATCH_MAX_LABELS)
		return reason_fail(why, whylen, -EINVAL,
				   "name: over %u labels, service included (the cap)",
				   BATCH_MAX_LABELS);
	out->keys[out->n] = k;
	out->values[out->n++] = v;
	return 0;
}

static const char *const name_types[] = {
	"cpu",	       "itimer",	 "wall",	"alloc_objects",
	"alloc_space", "inuse_objects",	 "inuse_space", "goroutines",
	"mutex_count", "mutex_duration", "block_count", "block_duration",
};

int pushreq_name__parse(const char *name, struct pushreq_name *out, char *why, size_t whylen)
{
	char *p, *brace, *app, *dot, *svc = NULL;
	size_t i, len;
	int err;

	memset(out, 0, sizeof(*out));
	if (!name || !*name)
		return reason_fail(why, whylen, -EINVAL, "name: the application name is missing");
	len = strlen(name);
	out->buf = malloc(len + 1);
	if (!out->buf)
		return -ENOMEM;
	memcpy(out->buf, name, len + 1);
	brace = strchr(out->buf, '{');
	app = trim(out->buf, brace ? (size_t)(brace - out->buf) : len);
	if (!*app || strlen(app) > PUSHREQ_MAX_SERVICE) {
		err = reason_fail(why, whylen, -EINVAL,
				  "name: the application name wants 1 to %u bytes",
				  PUSHREQ_MAX_SERVICE);
		goto fail;
	}
	for (p = app; *p; p++)
		if (!service_char((unsigned char)*p)) {
			err = reason_fail(why, whylen, -EINVAL,
					  "name: '%c' in the application name (it takes "
					  "A-Z a-z 0-9 _ . / -)",
					  isprint((unsigned char)*p) ? *p : '?');
			goto fail;
		}
	dot = strrchr(app, '.');
	for (i = 0; dot && i < sizeof(name_types) / sizeof(name_types[0]); i++)
		if (!strcmp(dot + 1, name_types[i]) && dot > app) {
			snprintf(out->type, sizeof(out->type), "%s", dot + 1);
			*dot = '\0';
			break;
		}
	err = put_label(out, "service", app, why, whylen);
	if (err)
		goto fail;
	if (brace) {
		char *end = strrchr(brace + 1, '}'), *tag = brace + 1;

		if (!end || end[strspn(end + 1, " \t") + 1]) {
			err = reason_fail(why, whylen, -EINVAL,
					  "name: labels want {k=v,...} at the end");
			goto fail;
		}
		*end = '\0';
		while (tag < end) {
			char *comma = strchr(tag, ','), *eqs, *k, *v;

			if (comma)
				*comma = '\0';
			eqs = strchr(tag, '=');
			if (!eqs) {
				if (*trim(tag, strlen(tag))) {
					err = reason_fail(why, whylen, -EINVAL,
							  "name: label '%.64s' without '='", tag);
					goto fail;
				}
			} else {
				*eqs = '\0';
				k = trim(tag, strlen(tag));
				v = trim(eqs + 1, strlen(eqs + 1));
				for (p = k; *p && key_char((unsigned char)*p); p++)
					;
				if (!*k || *p) {
					err = reason_fail(why, whylen, -EINVAL,
							  "name: label key '%.64s' (keys take A-Z "
							  "a-z 0-9 _ .)",
							  k);
					goto fail;
				}
				if (!strcmp(k, "service")) {
					err = reason_fail(why, whylen, -EINVAL,
							  "name: the label key service is the "
							  "application name's");
					goto fail;
				}
				if (!strcmp(k, "service_name") && *v) {
					svc = v;
				} else if (strncmp(k, "__", 2) && *v) {
					err = put_label(out, k, v, why, whylen);
					if (err)
						goto fail;
				}
			}
			if (!comma)
				break;
			tag = comma + 1;
		}
	}
	if (svc) { /* Pyroscope's rule: service_name wins, the name is app_name */
		if ((err = put_label(out, "app_name", app, why, whylen)))
			goto fail;
		out->values[0] = svc;
		if (strlen(svc) > PUSHREQ_MAX_SERVICE) {
			err = reason_fail(why, whylen, -EINVAL, "name: service_name over %u bytes",
					  PUSHREQ_MAX_SERVICE);
			goto fail;
		}
	}
	out->service = out->values[0];
	return 0;
fail:
	pushreq_name__free(out);
	return err;
}
