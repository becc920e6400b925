/* Listen addresses; see address.h. */
#include "common/address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

bool address_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

int address_resolve(const char *listen, struct sockaddr_storage *ss)
{
	char host[256];
	const char *colon = strrchr(listen, ':');
	struct addrinfo hints = { .ai_flags = AI_NUMERICSERV | AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM },
			*res;
	size_t hlen;

	if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof(host))
		return -EINVAL;
	hlen = (size_t)(colon - listen);
	if (listen[0] == '[' && listen[hlen - 1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)hlen - 2, listen + 1);
	else
		snprintf(host, sizeof(host), "%.*s", (int)hlen, listen);
	if (getaddrinfo(host, colon + 1, &hints, &res))
		return -EINVAL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

bool address_is_loopback_name(const char *host)
{
	struct in_addr a;
	struct in6_addr a6;
	char v6[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(host);

	if (!strcasecmp(host, "localhost"))
		return true;
	if (inet_pton(AF_INET, host, &a) == 1)
		return (ntohl(a.s_addr) >> 24) == 127;
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof(v6)) {
		snprintf(v6, sizeof(v6), "%.*s", (int)(n - 2), host + 1);
		host = v6;
	}
	if (inet_pton(AF_INET6, host, &a6) != 1)
		return false;
	return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
}

int address_url_host(const char *url, char *host, size_t len)
{
	const char *p, *end, *at;
	size_t n;

	if (!strncmp(url, "http://", 7))
		p = url + 7;
	else if (!strncmp(url, "https://", 8))
		p = url + 8;
	else
		return -EINVAL;
	end = p + strcspn(p, "/?#");
	at = memchr(p, '@', (size_t)(end - p));
	if (at)
		p = at + 1;
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (!close)
			return -EINVAL;
		p++;
		end = close;
	} else {
		const char *colon = memchr(p, ':', (size_t)(end - p));

		if (colon)
			end = colon;
	}
	n = (size_t)(end - p);
	if (!n || n >= len)
		return -EINVAL;
	memcpy(host, p, n);
	host[n] = '\0';
	return 0;
}
