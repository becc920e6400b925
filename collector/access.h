/* Which web origins may talk to the collector: the Host check that stops DNS
 * rebinding, and the Origin check that stops a page of another origin from driving
 * the API through the operator's browser. Decided from a request's Host and Origin
 * headers, before anything else is done with it; CORS is never offered.
 *
 * Host check (check_host: the collector has not both tokens; with both, a page
 * that rebinds a name to the collector still lacks the tokens): the Host header
 * must name the collector, i.e. its host be
 *   - "localhost", a loopback IP literal (127.0.0.0/8, [::1]) or the listen
 *     address's own host;
 *   - any IP literal when the listen address is a wildcard (0.0.0.0, [::]):
 *     every local address is the listen address then;
 *   - an allowed name (--allow-host NAME, any port; NAME:PORT, that port only, a
 *     port-less Host counting as the scheme's default, 80 or 443).
 * A rebinding page's requests carry the attacker's name in Host, which is none
 * of these: the name is what tells them apart. The port of the collector's own
 * names is not checked: a browser only sends a loopback name to a loopback
 * socket, whatever port a relay or proxy (socat, ssh -L, a TLS terminator) put
 * in between, and a page of another local origin is the Origin check's. A
 * request without Host (HTTP/1.0) passes: every browser sends one.
 *
 * Origin check (every /api/ endpoint, /metrics and /ingest, tokens or not): a request with
 * an Origin header passes only when that origin is the collector's own, i.e. its
 * scheme is the collector's (http, or https when it serves TLS) and its host and
 * port are those of the request's Host header (which the Host check vouched for
 * when it applies); "null" and every other origin are refused. Requests without
 * Origin pass: agents, curl, and the browser's own same-origin GETs (browsers
 * send Origin on same-origin requests only for other methods), which is all the
 * web UI sends, also through a proxy that terminates TLS.
 */
#ifndef SMOLDER_COLLECTOR_ACCESS_H
#define SMOLDER_COLLECTOR_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --allow-host names at most: a collector answers under a few names (a DNS name,
 * a short name, a proxy's); 16 is plenty and bounds the per-request scan. */
#define ACCESS_MAX_ALLOW_HOSTS 16
/* The longest host name (RFC 1035: 253 characters) plus brackets and ":65535". */
#define ACCESS_MAX_HOST 264

enum access_verdict {
	ACCESS_OK,
	ACCESS_BAD_HOST,   /* Host names something else: 421 */
	ACCESS_BAD_ORIGIN, /* a foreign Origin on a guarded path: 403 */
};

struct access_host {
	char name[ACCESS_MAX_HOST]; /* lower case, without brackets */
	int port;		    /* -1: any */
};

struct access {
	bool check_host;
	bool tls;		   /* the collector serves https: port-less Host means 443 */
	bool listen_any;	   /* the listen address is 0.0.0.0 or [::] */
	_Atomic uint16_t port;	   /* the port bound; 0 until known (listen port 0) */
	struct access_host listen; /* the listen address's host, port = port */
	struct access_host allow[ACCESS_MAX_ALLOW_HOSTS];
	size_t nallow;
};

/* Sets up *a for a collector listening on listen ("HOST:PORT", as
 * address_resolve() takes it) with the allowed names allow[0..nallow) (each
 * "NAME" or "NAME:PORT", NAME a DNS name or an IP literal, IPv6 in brackets).
 * Returns 0, or -EINVAL (a listen address or an allowed name that does not
 * parse, more than ACCESS_MAX_ALLOW_HOSTS names) with the reason in why. */
int access__init(struct access *a, const char *listen, bool check_host, bool tls,
		 const char *const *allow, size_t nallow, char *why, size_t whylen);

/* The verdict on a request to url with the headers host and origin (NULL: not
 * sent). A refusal's one-line reason is in why. Thread-safe (reads a only). */
enum access_verdict access__check(const struct access *a, const char *url, const char *host,
				  const char *origin, char *why, size_t whylen);

/* Parses a Host header value ("name", "name:port", "[v6]", "[v6]:port") into h:
 * name lower-cased without brackets, port -1 when absent. Returns false for
 * anything else (empty, too long, a bad port, characters no host name has). */
bool access_parse_host(const char *s, size_t len, struct access_host *h);

#endif
