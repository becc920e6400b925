/* The text pieces of a Pyroscope push; see pushreq.h. */
#include "collector/pushreq.h"

#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>

#include "common/reason.h"

/* ---- name ------------------------------------------------------------------- */

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

/* ---- times ------------------------------------------------------------------ */

int pushreq_time(const char *s, int64_t now_ns, int64_t *out_ns)
{
	uint64_t v = 0, mult = 1;
	size_t i, n;

	if (!s || !*s || !strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	n = strlen(s);
	if (n > 19)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v < UINT64_C(100000000000))
		mult = 1000000000u; /* seconds */
	else if (v < UINT64_C(100000000000000))
		mult = 1000000u; /* milliseconds */
	else if (v < UINT64_C(100000000000000000))
		mult = 1000u;		    /* microseconds */
	if (v > (uint64_t)INT64_MAX / mult) /* past 2262 */
		return -EINVAL;
	v *= mult;
	*out_ns = (int64_t)v;
	return 0;
}

int pushreq_window(int64_t from_ns, int64_t until_ns, int64_t *start, uint32_t *seconds, char *why,
		   size_t whylen)
{
	int64_t s, len;

	if (from_ns < 0)
		return reason_fail(why, whylen, -EINVAL, "from before 1970");
	if (until_ns < from_ns)
		return reason_fail(why, whylen, -EINVAL, "until is before from");
	s = from_ns / 1000000000;
	len = (until_ns - s * 1000000000 + 999999999) / 1000000000;
	if (len > PUSHREQ_MAX_WINDOW_SECONDS)
		return reason_fail(why, whylen, -EINVAL,
				   "from..until covers %lld s, over the cap of %u s",
				   (long long)len, PUSHREQ_MAX_WINDOW_SECONDS);
	*start = s;
	*seconds = len < 1 ? 1 : (uint32_t)len;
	return 0;
}

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

/* ---- Basic ------------------------------------------------------------------ */

static int b64(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int pushreq_basic_password(const char *auth, char *out, size_t outlen)
{
	char dec[2048];
	size_t n = 0, i, len;
	unsigned acc = 0, bits = 0;
	const char *p, *colon;

	if (!auth || strncasecmp(auth, "Basic ", 6) != 0)
		return -EINVAL;
	p = auth + 6;
	p += strspn(p, " ");
	len = strcspn(p, "=");
	if (p[len + strspn(p + len, "=")] != '\0' || strspn(p + len, "=") > 2)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		int v = b64((unsigned char)p[i]);

		if (v < 0)
			return -EINVAL;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n == sizeof(dec))
				return -EINVAL;
			dec[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	colon = memchr(dec, ':', n);
	if (!colon || memchr(dec, '\0', n))
		return -EINVAL;
	len = n - (size_t)(colon + 1 - dec);
	if (len + 1 > outlen)
		return -EINVAL;
	memcpy(out, colon + 1, len);
	out[len] = '\0';
	return 0;
}

/* ---- gzip ----------------------------------------------------------------------- */

bool pushreq_is_gzip(const void *p, size_t len)
{
	const unsigned char *b = p;

	return len >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

int pushreq_gunzip(const void *in, size_t len, size_t max, void **out, size_t *outlen, char *why,
		   size_t whylen)
{
	z_stream z = { 0 };
	unsigned char *buf = NULL, *nb;
	size_t cap, used = 0;
	int zr, err;

	if (!pushreq_is_gzip(in, len))
		return reason_fail(why, whylen, -EINVAL, "not gzip");
	if (len > (uInt)-1)
		return reason_fail(why, whylen, -E2BIG, "gzip body too large");
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return reason_fail(why, whylen, -ENOMEM, "out of memory");
	cap = len < max / 4 ? (len < 16384 ? 65536 : len * 4) : max;
	if (cap > max)
		cap = max;
	buf = malloc(cap ? cap : 1);
	if (!buf) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	for (;;) {
		unsigned char probe;

		if (used == cap && cap < max) {
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				err = reason_fail(why, whylen, -ENOMEM, "out of memory");
				goto out;
			}
			buf = nb;
		}
		if (used == cap) { /* full at the cap: one more byte of output is over it */
			z.next_out = &probe;
			z.avail_out = 1;
		} else {
			z.next_out = buf + used;
			z.avail_out = (uInt)(cap - used);
		}
		zr = inflate(&z, Z_NO_FLUSH);
		if (used == cap && z.avail_out == 0) {
			err = reason_fail(why, whylen, -E2BIG,
					  "decompressed body over %zu MiB (the cap)", max >> 20);
			goto out;
		}
		if (used < cap)
			used = cap - z.avail_out;
		if (zr == Z_STREAM_END) {
			if (z.avail_in == 0)
				break;
			if (inflateReset(&z) != Z_OK) { /* another member follows */
				err = reason_fail(why, whylen, -EINVAL, "corrupt gzip");
				goto out;
			}
			continue;
		}
		if (zr == Z_MEM_ERROR) {
			err = reason_fail(why, whylen, -ENOMEM, "out of memory");
			goto out;
		}
		if (zr == Z_BUF_ERROR || (zr == Z_OK && z.avail_in == 0 && z.avail_out > 0)) {
			err = reason_fail(why, whylen, -EINVAL, "truncated gzip");
			goto out;
		}
		if (zr != Z_OK) {
			err = reason_fail(why, whylen, -EINVAL, "corrupt gzip");
			goto out;
		}
	}
	*out = buf;
	*outlen = used;
	buf = NULL;
	err = 0;
out:
	inflateEnd(&z);
	free(buf);
	return err;
}
