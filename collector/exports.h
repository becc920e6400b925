/* The headers of the collector's answers that are files to download (format=html,
 * svg, pprof, folded, speedscope) and the ones every other answer carries, so
 * that nothing the API returns can run as a page of the collector's origin:
 *   - every answer: X-Content-Type-Options: nosniff (a browser never guesses a
 *     type) and, but for the web UI's files (ui.h, their own policy),
 *     Content-Security-Policy EXPORTS_CSP_NONE: an answer opened as a document
 *     runs nothing and loads nothing;
 *   - the HTML export: a policy that allows its one inline script and style by
 *     their SHA-256 (the page is static but for its JSON data, which is not
 *     script: render_html.h), and nothing else;
 *   - the SVG export: inline styles only, no script: its script varies with the
 *     graph, so it runs only from the downloaded file, never on the collector's
 *     origin;
 *   - every export: Content-Disposition: attachment, filename
 *     "smolder-KIND-FROM-TO.EXT" (KIND flamegraph or diff, the range in Unix
 *     seconds), so a browser saves it rather than shows it.
 * The web UI's JSON API answers stay inline.
 */
#ifndef SMOLDER_COLLECTOR_EXPORTS_H
#define SMOLDER_COLLECTOR_EXPORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

/* The policy of every answer that is not the UI's or an export's. */
#define EXPORTS_CSP_NONE "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
/* The SVG export's. */
#define EXPORTS_CSP_SVG                                                                            \
	"default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri "         \
	"'none'"

struct exports {
	char html_csp[320]; /* the HTML export's policy, with its hashes */
};

/* Computes the HTML export's policy. Returns 0 or -EIO (GnuTLS refused to hash). */
int exports__init(struct exports *e);

/* A format whose answers are downloads. */
struct exports_download {
	const char *format; /* "html", "pprof"... */
	const char *ext;    /* the file's extension: "html", "pb.gz"... */
	const char *csp;    /* its policy; NULL: the HTML export's (struct exports) */
};

/* format's download, or NULL when format's answers are not exports (or format is
 * NULL). Static. */
const struct exports_download *exports_find(const char *format);

/* Adds to r the headers of an answer that is download d (with its file name), or
 * that is no download (d NULL; e and filename then unused). */
void exports__add_headers(const struct exports *e, struct MHD_Response *r,
			  const struct exports_download *d, const char *filename);

/* The download's name of an export: "smolder-KIND-FROM-TO.EXT" into buf. */
void exports_filename(char *buf, size_t len, const struct exports_download *d, bool diff,
		      int64_t from, int64_t to);

#endif
