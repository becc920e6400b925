/* Listen addresses; see address.h. */
#include "common/address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

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
