/* Unit tests of `smolder agent` option parsing (cli/agent_cmd.c): defaults, every
 * option, and the errors bad values get. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli/agent_cmd.h"
#include "wire/batch.h"
#include "common/token.h"
#include "testutil.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

static void test_defaults(void **state)
{
	char *argv[] = { "agent", NULL };
	struct agent_options o;
	char err[256] = "";

	(void)state;
	assert_int_equal(agent_options__parse(ARGC(argv), argv, &o, err, sizeof(err)), 0);
	assert_int_equal(o.frequency, 99);
	assert_int_equal(o.window_sec, 10);
	assert_int_equal(o.duration_sec, 0);
	assert_int_equal(o.npids, 0);
	assert_string_equal(o.output, "-");
	assert_false(o.include_idle);
	assert_true(o.python);
	assert_int_equal(o.python_depth, 128);
	assert_int_equal(o.batch_max_kb, AGENT_BATCH_MAX_KB);
	assert_false(o.unwind_fp);
	assert_int_equal(o.unwind_table_mb, AGENT_UNWIND_TABLE_MB);
	assert_false(o.lines); /* folded output by function */
	assert_int_equal(o.off_cpu, AGENT_OFFCPU_DEFAULT);
	assert_int_equal(o.off_cpu_min_us, AGENT_OFFCPU_MIN_US);
	assert_true(o.off_cpu_probability == 1.0);
	assert_int_equal(o.off_cpu_max_keys, 0); /* the sampler's default */
	agent_options__free(&o);
}

static void test_all_options(void **state)
{
	char *argv[] = { "agent",
			 "--pid",
			 "42",
			 "-p",
			 "7",
			 "--duration",
			 "30",
			 "-F",
			 "49",
			 "--window",
			 "5",
			 "-o",
			 "/tmp/x.folded",
			 "--label",
			 "service=api",
			 "-l",
			 "zone=b",
			 "-vv",
			 "--include-idle",
			 "--lines",
			 "--max-stacks",
			 "65536",
			 "--bpf-stats",
			 "--python",
			 "off",
			 "--python-depth",
			 "16",
			 "--batch-max-kb",
			 "64",
			 "--unwind",
			 "fp",
			 "--unwind-table-mb",
			 "128",
			 "--off-cpu",
			 "on",
			 "--off-cpu-min-us",
			 "250",
			 "--off-cpu-probability",
			 "0.25",
			 "--off-cpu-max-keys",
			 "65536",
			 NULL };
	struct agent_options o;
	char err[256] = "";

	(void)state;
	assert_int_equal(agent_options__parse(ARGC(argv), argv, &o, err, sizeof(err)), 0);
	assert_int_equal(o.npids, 2);
	assert_int_equal(o.pids[0], 42);
	assert_int_equal(o.pids[1], 7);
	assert_int_equal(o.duration_sec, 30);
	assert_int_equal(o.frequency, 49);
	assert_int_equal(o.window_sec, 5);
	assert_string_equal(o.output, "/tmp/x.folded");
	assert_int_equal(o.nlabels, 2);
	assert_string_equal(o.labels[0].key, "service");
	assert_string_equal(o.labels[0].value, "api");
	assert_string_equal(o.labels[1].key, "zone");
	assert_string_equal(o.labels[1].value, "b");
	assert_int_equal(o.verbose, 2);
	assert_true(o.include_idle);
	assert_true(o.bpf_stats);
	assert_int_equal(o.max_stacks, 65536);
	assert_false(o.python);
	assert_int_equal(o.python_depth, 16);
	assert_int_equal(o.batch_max_kb, 64);
	assert_true(o.unwind_fp);
	assert_int_equal(o.unwind_table_mb, 128);
	assert_true(o.lines);
	assert_true(o.off_cpu);
	assert_int_equal(o.off_cpu_min_us, 250);
	assert_true(o.off_cpu_probability == 0.25);
	assert_int_equal(o.off_cpu_max_keys, 65536);
	agent_options__free(&o);
}

/* --help is reported as 1 after every option was parsed; errors still win. */
static void test_help(void **state)
{
	char *help[] = { "agent", "-F", "49", "--help", NULL };
	char *help_bad[] = { "agent", "--help", "--frobnicate", NULL };
	struct agent_options o;
	char err[256] = "";

	(void)state;
	assert_int_equal(agent_options__parse(ARGC(help), help, &o, err, sizeof(err)), 1);
	assert_int_equal(o.frequency, 49);
	agent_options__free(&o);
	assert_int_equal(agent_options__parse(ARGC(help_bad), help_bad, &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "unknown option '--frobnicate'"));
}

struct bad_case {
	const char *opt, *value, *reason;
};

static void test_bad_values(void **state)
{
	static const struct bad_case cases[] = {
		{ "--frequency", "0", "--frequency wants 1 to 10000 Hz, got '0'" },
		{ "--frequency", "100001", "--frequency wants" },
		{ "--frequency", "99hz", "--frequency wants" },
		{ "--frequency", "-5", "--frequency wants" },
		{ "--pid", "0", "--pid wants a process id, got '0'" },
		{ "--pid", "abc", "--pid wants" },
		{ "--pid", "99999999999999999999", "--pid wants" },
		{ "--duration", "", "--duration wants" },
		{ "--window", "0", "--window wants 1 to 3600 seconds" },
		{ "--window", "3601", "--window wants" },
		{ "--label", "novalue", "--label wants KEY=VALUE" },
		{ "--label", "=v", "--label wants KEY=VALUE" },
		{ "--label", "bad key=v", "--label wants KEY=VALUE" },
		{ "--label", "__type__=offcpu", "keys starting with __ are smolder's" },
		{ "--max-stacks", "10", "--max-stacks wants" },
		{ "--output", "", "--output wants" },
		{ "--python", "yes", "--python wants on or off, got 'yes'" },
		{ "--python-depth", "0", "--python-depth wants 1 to 128" },
		{ "--python-depth", "129", "--python-depth wants 1 to 128" },
		{ "--batch-max-kb", "3", "--batch-max-kb wants 4 to 2048, got '3'" },
		{ "--batch-max-kb", "2049", "--batch-max-kb wants 4 to 2048" },
		{ "--unwind", "dwarf", "--unwind wants cfi or fp, got 'dwarf'" },
		{ "--unwind-table-mb", "0", "--unwind-table-mb wants 1 to 128, got '0'" },
		{ "--unwind-table-mb", "129", "--unwind-table-mb wants 1 to 128" },
		{ "--off-cpu", "yes", "--off-cpu wants on or off, got 'yes'" },
		{ "--off-cpu-min-us", "0", "--off-cpu-min-us wants 1 to 60000000, got '0'" },
		{ "--off-cpu-min-us", "60000001", "--off-cpu-min-us wants 1 to 60000000" },
		{ "--off-cpu-probability", "0",
		  "--off-cpu-probability wants 0.0001 to 1, got '0'" },
		{ "--off-cpu-probability", "0.00009", "--off-cpu-probability wants 0.0001 to 1" },
		{ "--off-cpu-probability", "1.5", "--off-cpu-probability wants 0.0001 to 1" },
		{ "--off-cpu-probability", "nan", "--off-cpu-probability wants 0.0001 to 1" },
		{ "--off-cpu-probability", "0.5x", "--off-cpu-probability wants 0.0001 to 1" },
		{ "--off-cpu-probability", "-0.5", "--off-cpu-probability wants 0.0001 to 1" },
		{ "--off-cpu-max-keys", "15", "--off-cpu-max-keys wants 16 to 4194304, got '15'" },
		{ "--off-cpu-max-keys", "4194305", "--off-cpu-max-keys wants 16 to 4194304" },
		{ "--token", "", "--token: the token is empty" },
		{ "--token", " \t ", "--token: the token holds whitespace" },
		{ "--token", "abc\r\nX-Evil: 1", "--token: the token holds whitespace" },
		{ "--cert", "client.pem", "--cert and --key go together" },
		{ "--key", "client.key", "--cert and --key go together" },
		{ "--thread-labels", "-v",
		  "--thread-labels labels the batches sent to a collector: it needs --collector" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = { "agent", (char *)cases[i].opt, (char *)cases[i].value, NULL };
		struct agent_options o;
		char err[256] = "";

		assert_int_equal(agent_options__parse(ARGC(argv), argv, &o, err, sizeof(err)),
				 -EINVAL);
		if (!strstr(err, cases[i].reason))
			fail_msg("%s %s: got '%s'", cases[i].opt, cases[i].value, err);
	}
}

static void test_unknown_and_missing(void **state)
{
	char *unknown[] = { "agent", "--frobnicate", NULL };
	char *missing[] = { "agent", "--pid", NULL };
	char *extra[] = { "agent", "stray", NULL };
	struct agent_options o;
	char err[256];

	(void)state;
	assert_int_equal(agent_options__parse(ARGC(unknown), unknown, &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "unknown option '--frobnicate'"));
	assert_int_equal(agent_options__parse(ARGC(missing), missing, &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "needs a value"));
	assert_int_equal(agent_options__parse(ARGC(extra), extra, &o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unexpected argument 'stray'"));
}

static void test_too_many_pids(void **state)
{
	char **argv = calloc(2 * AGENT_MAX_PIDS + 4, sizeof(*argv));
	char(*nums)[12] = calloc(AGENT_MAX_PIDS + 1, sizeof(*nums));
	struct agent_options o;
	char err[256] = "";
	int i, argc = 0;

	(void)state;
	argv[argc++] = "agent";
	for (i = 0; i <= AGENT_MAX_PIDS; i++) {
		snprintf(nums[i], sizeof(nums[i]), "%d", i + 1);
		argv[argc++] = "-p";
		argv[argc++] = nums[i];
	}
	assert_int_equal(agent_options__parse(argc, argv, &o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at most 1024 --pid"));
	free(argv);
	free(nums);
}

/* --label: AGENT_MAX_LABELS distinct keys are taken, one more is refused with the
 * cap in the reason (64 were taken once: with the built-in and per-process
 * labels, the label sets were over the wire's 64 and every batch was refused). */
static void test_too_many_labels(void **state)
{
	char **argv = calloc(2 * AGENT_MAX_LABELS + 6, sizeof(*argv));
	char(*kv)[16] = calloc(AGENT_MAX_LABELS + 1, sizeof(*kv));
	struct agent_options o;
	char err[256] = "", want[64];
	int i, argc = 0;

	(void)state;
	assert_true(AGENT_MAX_LABELS + 4 + 5 <= BATCH_MAX_LABELS);
	argv[argc++] = "agent";
	argv[argc++] = "--collector";
	argv[argc++] = "http://127.0.0.1:1";
	for (i = 0; i < AGENT_MAX_LABELS; i++) {
		snprintf(kv[i], sizeof(kv[i]), "k%d=v", i);
		argv[argc++] = "--label";
		argv[argc++] = kv[i];
	}
	if (agent_options__parse(argc, argv, &o, err, sizeof(err)))
		fail_msg("%d labels refused: %s", AGENT_MAX_LABELS, err);
	assert_int_equal(o.nlabels, AGENT_MAX_LABELS);
	agent_options__free(&o);
	snprintf(kv[i], sizeof(kv[i]), "k%d=v", i);
	argv[argc++] = "--label";
	argv[argc++] = kv[i];
	assert_int_equal(agent_options__parse(argc, argv, &o, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "at most %d labels", AGENT_MAX_LABELS);
	assert_non_null(strstr(err, want));
	free(argv);
	free(kv);
}

/* --token-file: the first line without its line end; empty, whitespace-only and
 * missing files are refused with a reason (an empty file once read uninitialized
 * memory; a whitespace-only one was sent as the token). */
static void test_token_file(void **state)
{
	char dir[64], good[128], empty[128], missing[128], blank[128], err[256];
	char *ok_argv[] = { "agent", "--token-file", good, NULL };
	char *empty_argv[] = { "agent", "--token-file", empty, NULL };
	char *missing_argv[] = { "agent", "--token-file", missing, NULL };
	char *blank_argv[] = { "agent", "--token-file", blank, NULL };
	char *long_argv[] = { "agent", "--token", NULL, NULL };
	struct agent_options o;
	FILE *f;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(good, sizeof(good), "%s/good", dir);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	f = fopen(good, "w");
	fputs("s3cr3t\r\nsecond line\n", f);
	fclose(f);
	fclose(fopen(empty, "w"));

	assert_int_equal(agent_options__parse(ARGC(ok_argv), ok_argv, &o, err, sizeof(err)), 0);
	assert_string_equal(o.token, "s3cr3t");
	agent_options__free(&o);
	assert_int_equal(agent_options__parse(ARGC(empty_argv), empty_argv, &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "holds no token"));
	assert_int_equal(
		agent_options__parse(ARGC(missing_argv), missing_argv, &o, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "cannot read"));

	snprintf(blank, sizeof(blank), "%s/blank", dir);
	f = fopen(blank, "w");
	fputs(" \t \n", f);
	fclose(f);
	assert_int_equal(agent_options__parse(ARGC(blank_argv), blank_argv, &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "--token-file: the token holds whitespace"));
	test_rm_rf(dir);

	/* Longer than any token file may be (TOKEN_MAX_LEN): the header buffer
	 * would cut it. */
	{
		char *big = malloc(TOKEN_MAX_LEN + 2);

		memset(big, 'a', TOKEN_MAX_LEN + 1);
		big[TOKEN_MAX_LEN + 1] = '\0';
		long_argv[2] = big;
		assert_int_equal(
			agent_options__parse(ARGC(long_argv), long_argv, &o, err, sizeof(err)),
			-EINVAL);
		assert_non_null(strstr(err, "longer than 1024 bytes"));
		free(big);
	}
}

/* A token goes over plain http only to a collector loopback by its name, or with
 * --plaintext; https goes anywhere. Look-alike names are not loopback. */
static void test_token_in_clear(void **state)
{
	static const struct {
		const char *url;
		bool plaintext;
		int want;
	} cases[] = {
		{ "http://127.0.0.1:7171", false, 0 },
		{ "http://127.9.8.7:7171/", false, 0 },
		{ "http://localhost:7171", false, 0 },
		{ "http://[::1]:7171", false, 0 },
		{ "https://collector.example:7171", false, 0 },
		{ "http://collector.example:7171", true, 0 },
		{ "http://collector.example:7171", false, -EPERM },
		{ "http://10.0.0.5:7171", false, -EPERM },
		{ "http://localhost.example.com:7171", false, -EPERM },
		{ "http://127.0.0.1.example.com:7171", false, -EPERM },
		{ "http://127.0.0.1@collector.example:7171", false, -EPERM },
		{ "http://[::2]:7171", false, -EPERM },
		{ "http://:7171", false, -EINVAL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = {
			"agent",   "--collector", (char *)cases[i].url,
			"--token", "t0k3n-1",	  cases[i].plaintext ? "--plaintext" : NULL,
			NULL
		};
		int argc = cases[i].plaintext ? 6 : 5;
		struct agent_options o;
		char err[256] = "";
		int rc = agent_options__parse(argc, argv, &o, err, sizeof(err));

		print_message("%s%s: %d %s\n", cases[i].url,
			      cases[i].plaintext ? " --plaintext" : "", rc, err);
		assert_int_equal(rc, cases[i].want);
		if (rc == -EPERM)
			assert_non_null(strstr(err, "in clear"));
		if (!rc)
			agent_options__free(&o);
	}
	/* no token: nothing secret travels, any host */
	{
		char *argv[] = { "agent", "--collector", "http://collector.example:7171", NULL };
		struct agent_options o;
		char err[256] = "";

		assert_int_equal(agent_options__parse(ARGC(argv), argv, &o, err, sizeof(err)), 0);
		agent_options__free(&o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_all_options),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_unknown_and_missing),
		cmocka_unit_test(test_too_many_pids),
		cmocka_unit_test(test_too_many_labels),
		cmocka_unit_test(test_token_file),
		cmocka_unit_test(test_token_in_clear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
