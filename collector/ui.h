/* The web UI the collector serves at "/": the files of the top-level ui/ folder,
 * embedded into the binary at build time by ui/embed.sh (build/gen/ui_assets.c),
 * so a collector needs no file and no network to serve it (docs/ui.md). The page
 * reads the same query API the CLI uses; nothing here reads the store.
 *
 * Every answer carries: its content type; an ETag (a hash of the file) with
 * "Cache-Control: no-cache", so a browser revalidates and gets 304 Not Modified
 * for what it has; the gzipped copy with "Content-Encoding: gzip" when the request
 * accepts gzip (Vary: Accept-Encoding); and the security headers UI_CSP (scripts,
 * styles, images and requests from this origin only, no inline script, no
 * framing), "X-Content-Type-Options: nosniff", "Referrer-Policy: no-referrer" and
 * "X-Frame-Options: DENY". The UI is not behind the query token: it holds no
 * data, and the page itself asks for the token the API wants. */
#ifndef SMOLDER_COLLECTOR_UI_H
#define SMOLDER_COLLECTOR_UI_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#define UI_CSP                                                                                     \
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "    \
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "             \
	"frame-ancestors 'none'"

/* One embedded file (ui/embed.sh writes the table). */
struct ui_asset {
	const char *path;	  /* URL path: "/" for ui/index.html, "/ui/P" for ui/P */
	const char *type;	  /* Content-Type */
	const char *etag;	  /* quoted, as sent */
	const unsigned char *raw; /* the file */
	size_t len;
	const unsigned char *gz; /* gzip -9n of it */
	size_t gzlen;
};

extern const struct ui_asset ui_assets[];
extern const size_t ui_nassets;
extern const size_t ui_total_bytes; /* the files' bytes before compression */

/* The asset at URL path url (no query string: libmicrohttpd strips it), or NULL. */
const struct ui_asset *ui_find(const char *url);

/* Queues a's answer on conn (GET only: the caller checked the method and that
 * there is no body): 304 when If-None-Match names its ETag, else 200 with the
 * file, gzipped when Accept-Encoding allows. Returns libmicrohttpd's result. */
enum MHD_Result ui_respond(struct MHD_Connection *conn, const struct ui_asset *a);

#endif
