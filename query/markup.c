/* The markup escaper (see markup.h). */
#include "query/markup.h"

#include <stdint.h>
#include <string.h>

#include "common/utf8.h"

void markup_escape(FILE *out, const char *s, size_t max_cp, enum markup_lang lang)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t n, ncp = 0;

	while (*p && ncp < max_cp) {
		n = utf8_decode(p, strnlen((const char *)p, 4), &cp);
		p += n ? n : 1;
		ncp++;
		if (!n)
			cp = UTF8_REPLACEMENT;
		switch (cp) {
		case '&':
			fputs("&amp;", out);
			continue;
		case '<':
			fputs("&lt;", out);
			continue;
		case '>':
			fputs("&gt;", out);
			continue;
		case '"':
			fputs("&quot;", out);
			continue;
		case '\'':
			fputs(lang == MARKUP_HTML ? "&#39;" : "&apos;", out);
			continue;
		default:
			break;
		}
		if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0xfffe || cp == 0xffff)
			cp = UTF8_REPLACEMENT;
		utf8_put(out, cp);
	}
}
