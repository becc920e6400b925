/* Plain TCP clients for the tests of the collector's front door, which need what
 * libcurl does not do: a chosen source address (all of 127/8 is loopback on
 * Linux, so bind() before connect() makes a client look like another host),
 * half-sent requests, keep-alive connections held open across steps, and seeing
 * whether the collector closed a connection. Included after <cmocka.h> and
 * testutil.h by each test file that needs them, so everything is static.
 */
#ifndef SMOLDER_RAWSOCK_H
#define SMOLDER_RAWSOCK_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testutil.h"

/* A TCP connection to dst:port (an IPv4 or IPv6 address) from address src of
 * the same family (NULL: any), non-blocking after connect; -1 on failure. */
static inline int rawsock_connect_to(const char *dst, unsigned port, const char *src)
{
	struct sockaddr_storage to = { 0 }, from = { 0 };
	struct sockaddr_in *to4 = (struct sockaddr_in *)&to, *from4 = (struct sockaddr_in *)&from;
	struct sockaddr_in6 *to6 = (struct sockaddr_in6 *)&to,
			    *from6 = (struct sockaddr_in6 *)&from;
	socklen_t len;
	int fd;

	if (inet_pton(AF_INET, dst, &to4->sin_addr) == 1) {
		to4->sin_family = from4->sin_family = AF_INET;
		to4->sin_port = htons((uint16_t)port);
		len = sizeof(struct sockaddr_in);
		if (src && inet_pton(AF_INET, src, &from4->sin_addr) != 1)
			return -1;
	} else if (inet_pton(AF_INET6, dst, &to6->sin6_addr) == 1) {
		to6->sin6_family = from6->sin6_family = AF_INET6;
		to6->sin6_port = htons((uint16_t)port);
		len = sizeof(struct sockaddr_in6);
		if (src && inet_pton(AF_INET6, src, &from6->sin6_addr) != 1)
			return -1;
	} else {
		return -1;
	}
	fd = socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if ((src && bind(fd, (struct sockaddr *)&from, len)) ||
	    connect(fd, (struct sockaddr *)&to, len)) {
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* A TCP connection to 127.0.0.1:port from address src (NULL: any); see
 * rawsock_connect_to(). */
static inline int rawsock_connect(unsigned port, const char *src)
{
	return rawsock_connect_to("127.0.0.1", port, src);
}

/* Sends len bytes of data, waiting (bounded) while the socket is full; false when
 * the peer closed or reset the connection, or the bound passed. */
static inline bool rawsock_send_bytes(int fd, const void *data, size_t len, unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	struct pollfd pf = { .fd = fd, .events = POLLOUT };
	const char *p = data;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return false;
		if (test_now_ms() >= deadline)
			return false;
		poll(&pf, 1, 50);
	}
	return true;
}

/* Sends all of text; see rawsock_send_bytes(). */
static inline bool rawsock_send(int fd, const char *text, unsigned timeout_ms)
{
	return rawsock_send_bytes(fd, text, strlen(text), timeout_ms);
}

/* Whether the peer closed or reset the connection (without waiting). */
static inline bool rawsock_closed(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Waits up to timeout_ms for the peer to close the connection (bytes it sent
 * meanwhile are read and dropped); whether it did. */
static inline bool rawsock_await_close(int fd, unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	char sink[4096];
	ssize_t n;

	while (test_now_ms() < deadline) {
		if (poll(&pf, 1, 20) <= 0)
			continue;
		n = recv(fd, sink, sizeof(sink), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
	return false;
}

/* One answer read from a connection: the status of its status line (0: none
 * came, or the connection closed first) and its body (NUL-terminated, free()
 * it; sized by Content-Length, absent: none). */
struct rawsock_answer {
	int status;
	char *body;
};

/* Reads one answer within timeout_ms. A "100 Continue" counts as an answer. */
static inline struct rawsock_answer rawsock_read(int fd, unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	struct rawsock_answer a = { 0 };
	size_t len = 0, cap = 4096, want = 0, head = 0;
	char *buf = malloc(cap + 1), *end, *cl;
	ssize_t n;

	assert_non_null(buf);
	while (test_now_ms() < deadline) {
		if (head && len >= head + want)
			break;
		if (poll(&pf, 1, 20) <= 0)
			continue;
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			assert_non_null(buf);
		}
		n = recv(fd, buf + len, cap - len, 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			break;
		if (n < 0)
			continue;
		len += (size_t)n;
		buf[len] = '\0';
		if (!head && (end = strstr(buf, "\r\n\r\n"))) {
			head = (size_t)(end - buf) + 4;
			cl = strcasestr(buf, "\r\nContent-Length:");
			want = cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
		}
	}
	if (head && len >= head + want && strncmp(buf, "HTTP/1.", 7) == 0) {
		a.status = atoi(buf + 9);
		a.body = strndup(buf + head, want);
	}
	free(buf);
	return a;
}

/* The value of line "name value" in a /metrics body; -1 when absent. */
static inline long long rawsock_metric(const char *body, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return strtoll(p + n + 1, NULL, 10);
	return -1;
}

#endif
