/* Export and answer headers (see exports.h): the HTML export's policy is built
 * once, at start, from the SHA-256 of render_html's inline script and style. */
#include "collector/exports.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "query/render_html.h"

#define SHA256_LEN 32

static const struct exports_download downloads[] = {
	{ "html", "html", NULL },
	{ "svg", "svg", EXPORTS_CSP_SVG },
	{ "pprof", "pb.gz", EXPORTS_CSP_NONE },
	{ "folded", "folded", EXPORTS_CSP_NONE },
	{ "speedscope", "speedscope.json", EXPORTS_CSP_NONE },
};
#define NDOWNLOADS (sizeof(downloads) / sizeof(downloads[0]))

/* 'sha256-BASE64' of text into out (at least 56 bytes). */
static int csp_hash(const char *text, char *out, size_t len)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char d[SHA256_LEN + 1] = { 0 }; /* a zero byte past the end pads */
	size_t i, n = 0;

	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, text, strlen(text), d) < 0)
		return -EIO;
	n += (size_t)snprintf(out, len, "'sha256-");
	for (i = 0; i < SHA256_LEN; i += 3) {
		unsigned v = (unsigned)d[i] << 16 | (unsigned)d[i + 1] << 8 |
			     (i + 2 < SHA256_LEN ? d[i + 2] : 0);

		out[n++] = b64[v >> 18 & 63];
		out[n++] = b64[v >> 12 & 63];
		out[n++] = i + 1 < SHA256_LEN ? b64[v >> 6 & 63] : '=';
		out[n++] = i + 2 < SHA256_LEN ? b64[v & 63] : '=';
	}
	snprintf(out + n, len - n, "'");
	return 0;
}

int exports__init(struct exports *e)
{
	char script[64], style[64];

	if (csp_hash(render_html_inline_script(), script, sizeof(script)) ||
	    csp_hash(render_html_inline_style(), style, sizeof(style)))
		return -EIO;
	snprintf(e->html_csp, sizeof(e->html_csp),
		 "default-src 'none'; script-src %s; style-src %s; frame-ancestors 'none'; "
		 "base-uri 'none'; form-action 'none'",
		 script, style);
	return 0;
}

const struct exports_download *exports_find(const char *format)
{
	size_t i;

	for (i = 0; format && i < NDOWNLOADS; i++)
		if (strcmp(format, downloads[i].format) == 0)
			return &downloads[i];
	return NULL;
}

void exports__add_headers(const struct exports *e, struct MHD_Response *r,
			  const struct exports_download *d, const char *filename)
{
	char disp[160];

	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Content-Security-Policy",
				!d	 ? EXPORTS_CSP_NONE
				: d->csp ? d->csp
					 : e->html_csp);
	if (d) {
		/* the name holds [a-z0-9.-] only: no quoting needed */
		snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", filename);
		MHD_add_response_header(r, "Content-Disposition", disp);
	}
}

void exports_filename(char *buf, size_t len, const struct exports_download *d, bool diff,
		      int64_t from, int64_t to)
{
	snprintf(buf, len, "smolder-%s-%lld-%lld.%s", diff ? "diff" : "flamegraph", (long long)from,
		 (long long)to, d->ext);
}
