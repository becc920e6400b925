/* The Host and Origin checks (see access.h): a small parser for the two headers'
 * host part and the comparisons against the collector's listen address and the
 * allowed names. Nothing here allocates. */
#include "collector/access.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/address.h"
#include "common/reason.h"

#define DEFAULT_HTTP  80
#define DEFAULT_HTTPS 443

bool access_parse_host(const char *s, size_t len, struct access_host *h)
{
	const char *end = s + len, *name = s, *p;
	size_t n, i;
	long port = -1;

	if (!len || len >= ACCESS_MAX_HOST)
		return false;
	if (s[0] == '[') { /* an IPv6 literal */
		p = memchr(s, ']', len);
		if (!p || p == s + 1)
			return false;
		name = s + 1;
		n = (size_t)(p - name);
		p++;
	} else {
		p = memchr(s, ':', len);
		n = p ? (size_t)(p - s) : len;
		if (!n)
			return false;
		if (!p)
			p = end;
	}
	if (p < end) {
		if (*p != ':' || p + 1 == end || end - (p + 1) > 5)
			return false;
		port = 0;
		for (p++; p < end; p++) {
			if (*p < '0' || *p > '9')
				return false;
			port = port * 10 + (*p - '0');
		}
		if (port > 65535) /* 0 is a listen port's "any" */
			return false;
	}
	for (i = 0; i < n; i++) {
		char ch = name[i];

		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		/* DNS names, IPv4 and (in brackets) IPv6 literals; nothing else */
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' ||
		      ch == '-' || ch == '_' || (ch == ':' && s[0] == '[')))
			return false;
		h->name[i] = ch;
	}
	h->name[n] = '\0';
	h->port = (int)port;
	return true;
}

/* The binary address of an IP literal name (16 bytes, IPv4 mapped into IPv6), or
 * false when name is a DNS name. */
static bool ip_literal(const char *name, unsigned char out[16])
{
	struct in_addr v4;

	if (inet_pton(AF_INET, name, &v4) == 1) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &v4, 4);
		return true;
	}
	return inet_pton(AF_INET6, name, out) == 1;
}

static bool ip_is_any(const unsigned char ip[16])
{
	static const unsigned char mapped_any[16] = { [10] = 0xff, [11] = 0xff };
	static const unsigned char any[16] = { 0 };

	return memcmp(ip, any, 16) == 0 || memcmp(ip, mapped_any, 16) == 0;
}

static bool same_name(const char *a, const char *b)
{
	unsigned char ia[16], ib[16];

	if (ip_literal(a, ia))
		return ip_literal(b, ib) && memcmp(ia, ib, 16) == 0;
	return strcmp(a, b) == 0; /* both lower-cased by access_parse_host() */
}

int access__init(struct access *a, const char *listen, bool check_host, bool tls,
		 const char *const *allow, size_t nallow, char *why, size_t whylen)
{
	unsigned char ip[16];
	size_t i;

	memset(a, 0, sizeof(*a));
	a->check_host = check_host;
	a->tls = tls;
	if (!access_parse_host(listen, strlen(listen), &a->listen) || a->listen.port < 0)
		return reason_fail(why, whylen, -EINVAL, "--listen %s: not HOST:PORT", listen);
	a->listen_any = ip_literal(a->listen.name, ip) && ip_is_any(ip);
	if (nallow > ACCESS_MAX_ALLOW_HOSTS)
		return reason_fail(why, whylen, -EINVAL, "at most %d --allow-host names",
				   ACCESS_MAX_ALLOW_HOSTS);
	for (i = 0; i < nallow; i++)
		if (!access_parse_host(allow[i], strlen(allow[i]), &a->allow[i]))
			return reason_fail(why, whylen, -EINVAL,
					   "--allow-host '%.64s': not a host name, IP literal "
					   "or NAME:PORT",
					   allow[i]);
	a->nallow = nallow;
	return 0;
}

/* Whether the Host header h names the collector (access.h). */
static bool host_ok(const struct access *a, const struct access_host *h)
{
	int eff = h->port >= 0 ? h->port : a->tls ? DEFAULT_HTTPS : DEFAULT_HTTP;
	unsigned char ip[16];
	bool literal = ip_literal(h->name, ip);
	size_t i;

	for (i = 0; i < a->nallow; i++)
		if (same_name(h->name, a->allow[i].name) &&
		    (a->allow[i].port < 0 || a->allow[i].port == eff))
			return true;
	if (address_is_loopback_name(h->name))
		return true;
	if (literal && a->listen_any)
		return true;
	return same_name(h->name, a->listen.name);
}

/* Whether origin ("scheme://host[:port]") is the collector's own as the request
 * reached it: its scheme (http, or https with TLS), and host and port those of
 * the Host header (a port-less one meaning the scheme's default). */
static bool origin_ok(const struct access *a, const char *origin, const char *host)
{
	const char *scheme = a->tls ? "https://" : "http://";
	int dflt = a->tls ? DEFAULT_HTTPS : DEFAULT_HTTP;
	struct access_host o, h;

	/* "null" (a sandboxed frame, a file) and every other scheme fail here */
	if (!host || strncasecmp(origin, scheme, strlen(scheme)) != 0)
		return false;
	origin += strlen(scheme);
	if (!access_parse_host(origin, strlen(origin), &o) ||
	    !access_parse_host(host, strlen(host), &h))
		return false;
	return same_name(o.name, h.name) &&
	       (o.port < 0 ? dflt : o.port) == (h.port < 0 ? dflt : h.port);
}

/* The paths a page of another origin must not drive: the API, the metrics, and
 * Pyroscope's /ingest (a form post needs no CORS preflight: without the check a
 * page could push profiles to a collector without tokens). */
static bool origin_guarded(const char *url)
{
	return strncmp(url, "/api/", 5) == 0 || strcmp(url, "/metrics") == 0 ||
	       strcmp(url, "/ingest") == 0;
}

enum access_verdict access__check(const struct access *a, const char *url, const char *host,
				  const char *origin, char *why, size_t whylen)
{
	struct access_host h;

	if (a->check_host && host &&
	    (!access_parse_host(host, strlen(host), &h) || !host_ok(a, &h))) {
		snprintf(why, whylen,
			 "Host '%.64s' is not this collector's address (DNS rebinding?); "
			 "--allow-host NAME admits another name",
			 host);
		return ACCESS_BAD_HOST;
	}
	if (origin && origin_guarded(url) && !origin_ok(a, origin, host)) {
		snprintf(why, whylen,
			 "cross-origin request from '%.64s' refused: the API serves its own "
			 "origin only",
			 origin);
		return ACCESS_BAD_ORIGIN;
	}
	return ACCESS_OK;
}
