/* UTF-8 decoding and encoding; see utf8.h. */
#include "common/utf8.h"

size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t len, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		min = 0x80;
		c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		min = 0x800;
		c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		min = 0x10000;
		c &= 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

void utf8_put(FILE *out, uint32_t cp)
{
	if (cp < 0x80) {
		fputc((int)cp, out);
	} else if (cp < 0x800) {
		fputc((int)(0xc0 | (cp >> 6)), out);
		fputc((int)(0x80 | (cp & 0x3f)), out);
	} else if (cp < 0x10000) {
		fputc((int)(0xe0 | (cp >> 12)), out);
		fputc((int)(0x80 | ((cp >> 6) & 0x3f)), out);
		fputc((int)(0x80 | (cp & 0x3f)), out);
	} else {
		fputc((int)(0xf0 | (cp >> 18)), out);
		fputc((int)(0x80 | ((cp >> 12) & 0x3f)), out);
		fputc((int)(0x80 | ((cp >> 6) & 0x3f)), out);
		fputc((int)(0x80 | (cp & 0x3f)), out);
	}
}
