/* What the browser tests (test_browser.c, test_ui.c) share: finding Node.js, the
 * playwright-core packages (<build>/browser/node_modules, the Makefile's npm ci
 * step) and Debian's chromium, and running a script of tests/browser/ that prints
 * one "ok - ..." or "not ok - ..." line a check. Header-only, static. */
#ifndef SMOLDER_BROWSERTEST_H
#define SMOLDER_BROWSERTEST_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define CHROMIUM "/usr/bin/chromium"

struct browser_run {
	char node[PATH_MAX]; /* node's absolute path */
	char modules[300];   /* NODE_PATH */
	char script[128];    /* tests/browser/NAME.js, from the worktree root */
};

static void find_node(char *buf, size_t len)
{
	FILE *p = popen("command -v node", "r");
	bool found = p && fgets(buf, (int)len, p) && buf[0] == '/';

	if (p)
		pclose(p);
	if (!found)
		fail_msg("node not found on PATH: the browser tests need Node.js 20 (make deps)");
	buf[strcspn(buf, "\n")] = '\0';
}

/* Fails the test, naming what `make deps` or the Makefile installs, unless node,
 * chromium, playwright-core and tests/browser/<name> are all there. */
static void browser_prepare(struct browser_run *b, const char *name)
{
	char pkg[400];

	if (access(CHROMIUM, X_OK) != 0)
		fail_msg("%s missing: make deps installs chromium", CHROMIUM);
	find_node(b->node, sizeof(b->node));
	test_build_path(b->modules, sizeof(b->modules), "browser/node_modules");
	snprintf(pkg, sizeof(pkg), "%s/playwright-core/package.json", b->modules);
	if (access(pkg, R_OK) != 0)
		fail_msg("%s missing: make %s/browser/node_modules/.package-lock.json", pkg,
			 test_build_dir());
	snprintf(b->script, sizeof(b->script), "tests/browser/%s", name);
	assert_int_equal(access(b->script, R_OK), 0); /* run from the worktree root */
}

/* Runs the script with argument arg (the test's expectations), its stdout to out
 * and stderr to err, for at most timeout_ms; prints its checks; fails the test
 * unless it exited 0 with no "not ok" line and at least min_checks "ok" ones. */
static void browser_run(const struct browser_run *b, const char *arg, const char *out,
			const char *err, unsigned timeout_ms, long long min_checks)
{
	char *argv[] = { (char *)b->node, (char *)b->script, (char *)arg, NULL };
	long long ok = 0;
	char *text, *p;
	bool not_ok;
	int status;
	pid_t node;

	setenv("NODE_PATH", b->modules, 1);
	setenv("SMOLDER_CHROMIUM", CHROMIUM, 0);
	node = test_spawn(argv, out, err);
	status = test_wait(node, timeout_ms);
	test_print_log("node", err);
	text = test_read_file(out);
	assert_non_null(text);
	fputs(text, stdout); /* the script's checks, one per line */
	for (p = text; (p = strstr(p, "\nok - ")); p++)
		ok++;
	ok += !strncmp(text, "ok - ", 5);
	not_ok = strstr(text, "not ok") != NULL;
	free(text);
	if (status == -1)
		fail_msg("node did not finish in %u s", timeout_ms / 1000);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || not_ok)
		fail_msg("the browser checks failed (wait status %#x)", status);
	if (ok < min_checks)
		fail_msg("only %lld checks passed, want at least %lld", ok, min_checks);
}

#endif
