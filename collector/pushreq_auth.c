/* The credentials of a Pyroscope push: the password of an HTTP Basic
 * Authorization value (the SDKs' basic_auth, whose password /ingest compares with
 * its ingest token). One of the push's text pieces (collector/pushreq_*.c). */
#include "collector/pushreq.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

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
