/* gzip for the collector's answers; see gzip.h. zlib's deflate in one call over
 * the whole answer (it is in memory already), into a buffer of deflateBound(). */
#include "collector/gzip.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

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
