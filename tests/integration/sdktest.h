/* What the real clients' tests (test_sdk_node.c, test_sdk_go.c) share: running a
 * client program to its end with its output kept, reading the numbers of the one
 * JSON line it prints last, asking the collector a query that must answer 200,
 * and summing a folded answer's samples per function. Included after
 * collectortest.h by one test file each, so everything is static. */
#ifndef SMOLDER_SDKTEST_H
#define SMOLDER_SDKTEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "testutil.h"

/* Runs argv to its end (at most timeout_ms) with stdout to dir/NAME.out and stderr
 * to dir/NAME.err; fails the test with its stderr unless it exited 0. Its stdout
 * goes to buf (cut to len - 1 bytes). */
static inline void sdk_run(char *const argv[], const char *dir, const char *name,
			   unsigned timeout_ms, char *buf, size_t len)
{
	char out[256], err[256], *text;
	int status;
	pid_t pid;

	snprintf(out, sizeof(out), "%s/%s.out", dir, name);
	snprintf(err, sizeof(err), "%s/%s.err", dir, name);
	pid = test_spawn(argv, out, err);
	status = test_wait(pid, timeout_ms);
	text = test_read_file(out);
	snprintf(buf, len, "%s", text ? text : "");
	free(text);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		test_print_log(name, err);
		fprintf(stderr, "%s printed: %s\n", name, buf);
		if (status == -1)
			fail_msg("%s did not finish in %u s", name, timeout_ms / 1000);
		fail_msg("%s failed (wait status %#x)", name, status);
	}
	printf("%s: %s", name, buf);
}

/* The number after "key": in text (the client's JSON line); fails the test when
 * there is none. */
static inline long long sdk_json_ll(const char *text, const char *key)
{
	char needle[64];
	const char *p;
	char *end;
	long long v;

	snprintf(needle, sizeof(needle), "\"%s\":", key);
	p = strstr(text, needle);
	if (!p)
		fail_msg("no \"%s\" in the client's answer: %s", key, text);
	v = strtoll(p + strlen(needle), &end, 10);
	if (end == p + strlen(needle))
		fail_msg("\"%s\" is not a number in: %s", key, text);
	return v;
}

/* GET path from the collector on port (no query token); fails the test with the
 * answer unless it is 200. The caller frees the body. */
static inline struct reply sdk_query(unsigned port, const char *path)
{
	struct reply r = http_get(port, path, NULL);

	if (r.status != 200)
		fail_msg("GET %s answered %ld: %s", path, r.status, r.body ? r.body : "");
	return r;
}

/* The sum of the counts of the folded lines ("f1;f2;...;fn COUNT") of text that
 * have a frame containing name: the function's total (inclusive) samples, when it
 * is not recursive. */
static inline long long sdk_folded_total(const char *text, const char *name)
{
	const char *line = text, *nl, *sp, *p;
	long long sum = 0;

	for (; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		sp = nl ? nl : line + strlen(line);
		while (sp > line && sp[-1] != ' ')
			sp--;
		if (sp == line)
			continue;
		p = strstr(line, name);
		if (p && p < sp)
			sum += strtoll(sp, NULL, 10);
	}
	return sum;
}

#endif
