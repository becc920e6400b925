/* The form of a Pyroscope push: the boundary of a multipart/form-data
 * Content-Type, the body split into the parts /ingest reads (profile,
 * prev_profile, sample_type_config; at most PUSHREQ_MAX_PARTS, each header block
 * at most PUSHREQ_MAX_PART_HEADERS bytes), and the sample_type_config part's JSON
 * read into display names (wire/push.h, struct push_display). One of the push's
 * text pieces (collector/pushreq_*.c). */
#include "collector/pushreq.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/reason.h"

/* ---- multipart -------------------------------------------------------------- */

int pushreq_boundary(const char *ct, char out[71])
{
	const char *p;
	size_t n = 0;

	if (!ct || strncasecmp(ct, "multipart/form-data", 19) != 0)
		return -EINVAL;
	for (p = ct + 19; (p = strchr(p, ';'));) {
		p++;
		p += strspn(p, " \t");
		if (strncasecmp(p, "boundary=", 9) != 0)
			continue;
		p += 9;
		if (*p == '"') {
			const char *q = strchr(++p, '"');

			if (!q)
				return -EINVAL;
			n = (size_t)(q - p);
		} else {
			n = strcspn(p, "; \t");
		}
		if (n == 0 || n > 70)
			return -EINVAL;
		memcpy(out, p, n);
		out[n] = '\0';
		return 0;
	}
	return -EINVAL;
}

static const char *find(const char *h, size_t hn, const char *needle, size_t nn)
{
	return nn <= hn ? memmem(h, hn, needle, nn) : NULL;
}

/* The name="..." of a part's Content-Disposition in its header block. */
static bool part_name(const char *h, size_t n, char *name, size_t cap)
{
	const char *line = h, *end = h + n;

	while (line < end) {
		const char *eol = find(line, (size_t)(end - line), "\r\n", 2);
		size_t ll = eol ? (size_t)(eol - line) : (size_t)(end - line);

		if (ll > 20 && !strncasecmp(line, "content-disposition:", 20)) {
			const char *p = line + 20, *le = line + ll;

			while (p < le) {
				const char *q = find(p, (size_t)(le - p), "name=", 5);
				size_t k;

				if (!q)
					break;
				if (q > line + 20 && q[-1] != ' ' && q[-1] != ';' &&
				    q[-1] != '\t') {
					p = q + 5; /* filename= */
					continue;
				}
				q += 5;
				if (q < le && *q == '"') {
					q++;
					for (k = 0; q + k < le && q[k] != '"'; k++)
						;
				} else {
					for (k = 0; q + k < le && q[k] != ';' && q[k] != ' '; k++)
						;
				}
				if (k >= cap)
					return false;
				memcpy(name, q, k);
				name[k] = '\0';
				return true;
			}
		}
		line = eol ? eol + 2 : end;
	}
	return false;
}

int pushreq_multipart(const char *body, size_t len, const char *boundary, struct pushreq_form *out,
		      char *why, size_t whylen)
{
	char delim[80];
	size_t dn, nparts = 0;
	const char *p, *end = body + len;

	memset(out, 0, sizeof(*out));
	dn = (size_t)snprintf(delim, sizeof(delim), "\r\n--%s", boundary);
	/* the first delimiter may open the body (no CRLF before it) */
	if (len >= dn - 2 && !memcmp(body, delim + 2, dn - 2))
		p = body + dn - 2;
	else if ((p = find(body, len, delim, dn)))
		p += dn;
	else
		return reason_fail(why, whylen, -EINVAL, "multipart: no boundary in the body");
	for (;;) {
		const char *hend, *next;
		struct pushreq_part *part = NULL;
		char name[64];

		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return 0; /* the closing delimiter */
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			return reason_fail(why, whylen, -EINVAL,
					   "multipart: a delimiter's line goes on");
		p += 2;
		if (++nparts > PUSHREQ_MAX_PARTS)
			return reason_fail(why, whylen, -EINVAL,
					   "multipart: over %u parts (the cap)", PUSHREQ_MAX_PARTS);
		hend = find(p, (size_t)(end - p), "\r\n\r\n", 4);
		if (p + 2 <= end && p[0] == '\r' && p[1] == '\n')
			hend = p - 2; /* no headers at all */
		if (!hend || hend - p > PUSHREQ_MAX_PART_HEADERS)
			return reason_fail(why, whylen, -EINVAL,
					   "multipart: part %zu: no end of headers within %u bytes",
					   nparts, PUSHREQ_MAX_PART_HEADERS);
		next = find(hend + 4, (size_t)(end - (hend + 4)), delim, dn);
		if (!next)
			return reason_fail(why, whylen, -EINVAL,
					   "multipart: part %zu: no closing boundary", nparts);
		if (hend > p && part_name(p, (size_t)(hend - p), name, sizeof(name))) {
			if (!strcmp(name, "profile"))
				part = &out->profile;
			else if (!strcmp(name, "prev_profile"))
				part = &out->prev_profile;
			else if (!strcmp(name, "sample_type_config"))
				part = &out->sample_type_config;
		}
		if (part) {
			if (part->present)
				return reason_fail(why, whylen, -EINVAL, "multipart: part %s twice",
						   name);
			*part = (struct pushreq_part){ hend + 4, (size_t)(next - (hend + 4)),
						       true };
		}
		p = next + dn;
	}
}

/* ---- sample_type_config ------------------------------------------------------- */

struct json {
	const char *p, *end;
};

static void ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool lit(struct json *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

/* A string into out (cap bytes; longer ones fail). \uXXXX becomes '?'. */
static int jstring(struct json *j, char *out, size_t cap)
{
	size_t n = 0;

	if (!lit(j, '"'))
		return -EINVAL;
	while (j->p < j->end && *j->p != '"') {
		char c = *j->p++;

		if ((unsigned char)c < 0x20)
			return -EINVAL;
		if (c == '\\') {
			if (j->p >= j->end)
				return -EINVAL;
			c = *j->p++;
			switch (c) {
			case '"':
			case '\\':
			case '/':
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'n':
				c = '\n';
				break;
			case 'r':
				c = '\r';
				break;
			case 't':
				c = '\t';
				break;
			case 'u':
				if (j->end - j->p < 4)
					return -EINVAL;
				for (int k = 0; k < 4; k++)
					if (!isxdigit((unsigned char)j->p[k]))
						return -EINVAL;
				j->p += 4;
				c = '?';
				break;
			default:
				return -EINVAL;
			}
		}
		if (n + 1 >= cap)
			return -E2BIG;
		out[n++] = c;
	}
	if (j->p >= j->end)
		return -EINVAL;
	j->p++;
	out[n] = '\0';
	return 0;
}

/* A value other than a string: a number, true, false or null. */
static int jscalar(struct json *j)
{
	static const char *const words[] = { "true", "false", "null" };
	size_t i;

	ws(j);
	if (j->p >= j->end)
		return -EINVAL;
	for (i = 0; i < 3; i++) {
		size_t n = strlen(words[i]);

		if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, words[i], n)) {
			j->p += n;
			return 0;
		}
	}
	if (*j->p == '-' || isdigit((unsigned char)*j->p)) {
		j->p++;
		while (j->p < j->end &&
		       (isdigit((unsigned char)*j->p) || *j->p == '.' || *j->p == 'e' ||
			*j->p == 'E' || *j->p == '+' || *j->p == '-'))
			j->p++;
		return 0;
	}
	return -EINVAL;
}

int pushreq_sample_type_config(const char *json, size_t len, struct push_display *out, size_t *n,
			       char *why, size_t whylen)
{
	struct json j = { json, json + len };

	*n = 0;
	if (len > PUSHREQ_MAX_CONFIG)
		return reason_fail(why, whylen, -EINVAL, "sample_type_config: over %u bytes",
				   PUSHREQ_MAX_CONFIG);
	if (!lit(&j, '{'))
		goto bad;
	if (lit(&j, '}'))
		goto done;
	do {
		char type[64], key[64], name[64] = "";

		if (jstring(&j, type, sizeof(type)) || !lit(&j, ':'))
			goto bad;
		if (lit(&j, 'n')) { /* null */
			if (j.end - j.p < 3 || memcmp(j.p, "ull", 3))
				goto bad;
			j.p += 3;
			continue;
		}
		if (!lit(&j, '{'))
			goto bad;
		if (!lit(&j, '}')) {
			do {
				ws(&j);
				if (jstring(&j, key, sizeof(key)) || !lit(&j, ':'))
					goto bad;
				ws(&j);
				if (!strcmp(key, "display-name") && j.p < j.end && *j.p == '"') {
					if (jstring(&j, name, sizeof(name)))
						goto bad;
				} else if (j.p < j.end && *j.p == '"') {
					char skip[1024];

					if (jstring(&j, skip, sizeof(skip)))
						goto bad;
				} else if (jscalar(&j)) {
					goto bad;
				}
			} while (lit(&j, ','));
			if (!lit(&j, '}'))
				goto bad;
		}
		if (*name) {
			if (*n == PUSH_MAX_DISPLAY)
				return reason_fail(why, whylen, -EINVAL,
						   "sample_type_config: over %u display names",
						   PUSH_MAX_DISPLAY);
			snprintf(out[*n].type, sizeof(out[*n].type), "%s", type);
			snprintf(out[*n].name, sizeof(out[*n].name), "%s", name);
			(*n)++;
		}
	} while (lit(&j, ','));
	if (!lit(&j, '}'))
		goto bad;
done:
	ws(&j);
	if (j.p != j.end)
		goto bad;
	return 0;
bad:
	*n = 0;
	return reason_fail(why, whylen, -EINVAL,
			   "sample_type_config: not {\"TYPE\": {\"display-name\": \"NAME\", ...}} "
			   "(at byte %zu)",
			   (size_t)(j.p - json));
}
