/* gzip for the collector; see gzip.h. Answers: zlib's deflate in one call over
 * the whole answer (it is in memory already), into a buffer of deflateBound().
 * Push bodies: inflate into a buffer that doubles up to the cap, a 1-byte probe
 * at the cap telling a body that fits from one that would pass it. */
#include "collector/gzip.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "common/reason.h"

bool gzip__accepted(const char *v)
{
	const char *p = v, *end, *w;

	if (!v)
		return false;
	while (*p) {
		size_t n;

		p += strspn(p, " \t,");
		n = strcspn(p, " \t;,");
		end = p + strcspn(p, ",");
		if ((n == 4 && strncasecmp(p, "gzip", 4) == 0) || (n == 1 && *p == '*')) {
			w = strstr(p, "q=");
			return !w || w > end || strtod(w + 2, NULL) > 0;
		}
		p = end;
	}
	return false;
}

int gzip__compress(const void *in, size_t len, int level, size_t max, void **out, size_t *outlen)
{
	z_stream z = { 0 };
	size_t bound;
	void *buf;
	int err = 0;

	if (len > (uInt)-1) /* one deflate() call takes at most 4 GiB - 1: sent as it is */
		return -E2BIG;
	/* windowBits 15 + 16: a gzip header and trailer around the deflate stream */
	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&z, (uLong)len);
	if (bound > max)
		bound = max;
	if (bound > (uInt)-1)
		bound = (uInt)-1;
	buf = malloc(bound ? bound : 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)bound;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		err = -E2BIG; /* it did not fit in max */
		free(buf);
		goto cleanup;
	}
	*out = buf;
	*outlen = z.total_out;
cleanup:
	deflateEnd(&z);
	return err;
}

bool gzip__has_magic(const void *p, size_t len)
{
	const unsigned char *b = p;

	return len >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

int gzip__inflate(const void *in, size_t len, size_t max, void **out, size_t *outlen, char *why,
		  size_t whylen)
{
	z_stream z = { 0 };
	unsigned char *buf = NULL, *nb;
	size_t cap, used = 0;
	int zr, err;

	if (!gzip__has_magic(in, len))
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
