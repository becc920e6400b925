/* The Debian package (`make deb`, debian/), built once by the Makefile as a
 * prerequisite of `make check` and inspected here with the tools that read it:
 *   - lintian reports no error on it (its warnings are printed; docs/deploy.md
 *     says why each stays);
 *   - `dpkg-deb -c` lists the binary, both systemd units, the sysusers file, the
 *     two /etc/default files (conffiles), smolder(1) and the bash completion;
 *     `dpkg-deb -f` names its library dependencies;
 *   - the binary extracted from it runs `--version`; the units it holds are
 *     deploy/systemd's;
 *   - the man page renders without a groff warning and holds every option that
 *     some command's --help lists (so the page stays true when options come);
 *   - the completion script loads in bash and completes a subcommand, an option
 *     and a value, and holds every option of every --help too.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/version.h"
#include "testutil.h"

static char dir[64], deb[PATH_MAX], root[128];

/* The commands whose --help lists options ("up" lists those of agent and collector). */
static const char *const commands[] = { "agent", "collector", "flame",	"diff",
					"top",	 "series",    "labels", "types" };

static int group_setup(void **state)
{
	char rel[128], path[256];
	int status;
	char *out;

	(void)state;
	if (!test_mkdtemp(dir, sizeof(dir)))
		return -1;
	snprintf(rel, sizeof(rel), "deb/smolder_%s_amd64.deb", SMOLDER_VERSION);
	if (!realpath(test_build_path(path, sizeof(path), rel), deb)) {
		fprintf(stderr, "test_deb: %s missing: `make deb` (a prerequisite of make check)\n",
			rel);
		return -1;
	}
	snprintf(root, sizeof(root), "%s/root", dir);
	out = test_shell(dir, &status, "dpkg-deb -x '%s' '%s'", deb, root);
	if (status)
		fprintf(stderr, "dpkg-deb -x: %s\n", out);
	free(out);
	return status ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	test_rm_rf(dir);
	return 0;
}

static void test_lintian(void **state)
{
	int status;
	char *out, *p;

	(void)state;
	out = test_shell(dir, &status, "lintian --fail-on error --tag-display-limit 0 '%s'", deb);
	print_message("%s", out);
	assert_int_equal(status, 0);
	for (p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		assert_false(strncmp(p, "E: ", 3) == 0);
	free(out);
}

static void test_contents(void **state)
{
	static const char *const files[] = {
		"./usr/bin/smolder",
		"./lib/systemd/system/smolder-agent.service",
		"./lib/systemd/system/smolder-collector.service",
		"./usr/lib/sysusers.d/smolder.conf",
		"./etc/default/smolder-agent",
		"./etc/default/smolder-collector",
		"./usr/share/man/man1/smolder.1.gz",
		"./usr/share/bash-completion/completions/smolder",
		"./usr/share/doc/smolder/copyright",
	};
	static const char *const libs[] = { "libbpf1",	       "libelf1",	 "libdw1",
					    "libzstd1",	       "libsqlite3-0",	 "libcurl4",
					    "libmicrohttpd12", "libprotobuf-c1", "libgnutls30" };
	char want[256], *out;
	int status;
	size_t i;

	(void)state;
	out = test_shell(dir, &status, "dpkg-deb -c '%s'", deb);
	assert_int_equal(status, 0);
	print_message("%s", out);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(want, sizeof(want), " %s\n", files[i]);
		if (!strstr(out, want))
			fail_msg("%s is not in the package", files[i]);
	}
	free(out);
	out = test_shell(dir, &status, "dpkg-deb -f '%s' Package Version Architecture Depends",
			 deb);
	assert_int_equal(status, 0);
	print_message("%s", out);
	snprintf(want, sizeof(want), "Version: %s\n", SMOLDER_VERSION);
	assert_non_null(strstr(out, want));
	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!strstr(out, libs[i]))
			fail_msg("Depends lacks %s", libs[i]);
	free(out);
	/* the /etc/default files are conffiles: an admin's edits survive upgrades */
	out = test_shell(dir, &status, "dpkg-deb --ctrl-tarfile '%s' | tar -xOf - ./conffiles",
			 deb);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "/etc/default/smolder-agent\n"));
	assert_non_null(strstr(out, "/etc/default/smolder-collector\n"));
	free(out);
}

static void test_binary_and_units(void **state)
{
	char want[64], *out;
	int status;

	(void)state;
	out = test_shell(dir, &status, "'%s/usr/bin/smolder' --version", root);
	assert_int_equal(status, 0);
	snprintf(want, sizeof(want), "smolder %s\n", SMOLDER_VERSION);
	assert_string_equal(out, want);
	free(out);
	out = test_shell(
		dir, &status,
		"cmp deploy/systemd/smolder-agent.service "
		"'%s/lib/systemd/system/smolder-agent.service' && "
		"cmp deploy/systemd/smolder-collector.service "
		"'%s/lib/systemd/system/smolder-collector.service' && "
		"cmp deploy/systemd/smolder.sysusers '%s/usr/lib/sysusers.d/smolder.conf' && "
		"cmp deploy/bash-completion/smolder "
		"'%s/usr/share/bash-completion/completions/smolder'",
		root, root, root, root);
	if (status)
		fail_msg("the package's files differ from deploy/'s: %s", out);
	free(out);
}

/* Does text hold opt as a word of its own (not inside a longer option)? */
static bool has_option(const char *text, const char *opt)
{
	size_t n = strlen(opt);
	const char *p;

	for (p = strstr(text, opt); p; p = strstr(p + 1, opt)) {
		char before = p == text ? ' ' : p[-1], after = p[n];

		if (before != '-' && !(before >= 'a' && before <= 'z') &&
		    !(after >= 'a' && after <= 'z') && after != '-' &&
		    !(after >= '0' && after <= '9'))
			return true;
	}
	return false;
}

/* Every option a command's --help lists (the first column of its option lines:
 * "  -p, --pid PID", "      --from T, --to T", "  -o FILE") must be in text. */
static void check_help_options(const char *text, const char *what)
{
	size_t i, checked = 0;
	int status;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char *help = test_shell(dir, &status, "'%s/usr/bin/smolder' %s --help", root,
					commands[i]);
		const char *line;

		assert_int_equal(status, 0);
		for (line = help; line && *line;
		     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
			const char *p = line + strspn(line, " "), *end = strstr(p, "  ");
			const char *eol = strchr(p, '\n');

			/* option lines are indented 2 or 6 columns, their continuations more */
			if (*p != '-' || p == line || p - line > 6)
				continue;
			if (!end || (eol && end > eol))
				end = eol ? eol : p + strlen(p);
			while (p < end) { /* the option words of the first column */
				size_t n = strspn(p, "-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQR"
						     "STUVWXYZ0123456789");
				char opt[64];

				if (*p == '-' && n > 1 && n < sizeof(opt)) {
					snprintf(opt, sizeof(opt), "%.*s", (int)n, p);
					if (!has_option(text, opt))
						fail_msg("%s: '%s' (smolder %s --help) is missing",
							 what, opt, commands[i]);
					checked++;
				}
				p += n ? n : 1;
			}
		}
		free(help);
	}
	print_message("  %s: %zu options of %zu commands' --help found\n", what, checked, i);
	assert_true(checked > 80);
}

static void test_man_page(void **state)
{
	char *out;
	int status;

	(void)state;
	/* rendered as man does, with every groff warning on */
	out = test_shell(dir, &status,
			 "zcat '%s/usr/share/man/man1/smolder.1.gz' | groff -man -Tutf8 -ww -z",
			 root);
	if (status || *out)
		fail_msg("groff warns on smolder(1): %s", out);
	free(out);
	out = test_shell(dir, &status,
			 "MANWIDTH=80 man -l '%s/usr/share/man/man1/smolder.1.gz' | head -3", root);
	assert_int_equal(status, 0);
	print_message("%s", out);
	assert_non_null(strstr(out, "SMOLDER(1)"));
	free(out);
	/* one long line per paragraph, no hyphenation: options stay whole */
	out = test_shell(
		dir, &status,
		"zcat '%s/usr/share/man/man1/smolder.1.gz' | groff -man -Tascii -rLL=1000n "
		"-rHY=0 -P-cbou",
		root);
	assert_int_equal(status, 0);
	check_help_options(out, "smolder(1)");
	free(out);
}

/* What the completion script offers for the words given (the last is completed). */
static char *complete(const char *words)
{
	int status;
	char *out =
		test_shell(dir, &status,
			   "bash -c 'source \"%s/usr/share/bash-completion/completions/smolder\"; "
			   "COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
			   "_smolder; echo \"${COMPREPLY[*]}\"'",
			   root, words);

	assert_int_equal(status, 0);
	print_message("  smolder %s<TAB>: %s", words + 8, out);
	return out;
}

static void test_completion(void **state)
{
	char *out, path[PATH_MAX];

	(void)state;
	out = complete("smolder fl");
	assert_string_equal(out, "flame\n");
	free(out);
	out = complete("smolder agent --metr");
	assert_string_equal(out, "--metrics\n");
	free(out);
	out = complete("smolder up --tls-c");
	assert_string_equal(out, "--tls-cert --tls-client-ca\n");
	free(out);
	out = complete("smolder top --sort t");
	assert_string_equal(out, "total\n");
	free(out);
	out = complete("smolder flame --format s");
	assert_string_equal(out, "svg speedscope\n");
	free(out);
	snprintf(path, sizeof(path), "%s/usr/share/bash-completion/completions/smolder", root);
	out = test_read_file(path);
	assert_non_null(out);
	check_help_options(out, "bash completion");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contents), cmocka_unit_test(test_binary_and_units),
		cmocka_unit_test(test_man_page), cmocka_unit_test(test_completion),
		cmocka_unit_test(test_lintian),
	};

	if (getenv("SMOLDER_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SMOLDER_TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
