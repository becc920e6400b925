/* A gzip push body inflated, never past its cap (the SDKs gzip their pprof, and
 * curl users the whole body). One of the push's text pieces
 * (collector/pushreq_*.c). */
#include "collector/pushreq.h"

#include <errno.h>
#include <stdlib.h>

#include <zlib.h>

#include "common/reason.h"

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
