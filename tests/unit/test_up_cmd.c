/* Unit tests of `smolder up` option parsing (cli/up_cmd.c): the collector's and the
 * agent's options in one table, and which error wins when both are wrong; and the
 * query command it prints for its port. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli/up_cmd.h"
#include "testutil.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

static void test_defaults(void **state)
{
	char *argv[] = { "up", NULL };
	struct up_args u;
	char err[300] = "";

	(void)state;
	assert_int_equal(up_args__parse(ARGC(argv), argv, &u, err, sizeof(err)), 0);
	assert_false(u.help);
	assert_string_equal(u.collector.o.db_path, "smolder.db");
	assert_string_equal(u.collector.o.listen, "127.0.0.1:7171");
	assert_int_equal(u.collector.o.ingest_linger_ms, 50);
	assert_int_equal(u.agent.frequency, 99);
	assert_null(u.agent.collector);
	up_args__free(&u);
}

static void test_mixed_options(void **state)
{
	char *argv[] = { "up",
			 "--db",
			 "x.db",
			 "-F",
			 "49",
			 "--listen=127.0.0.1:0",
			 "--label",
			 "service=api",
			 "--retention",
			 "1h",
			 "-p",
			 "7",
			 "--ingest-token",
			 "t1",
			 "--insecure",
			 "-vv",
			 "--max-body-mb",
			 "2",
			 "--ingest-linger-ms",
			 "0",
			 "--allow-host",
			 "prof.example.com",
			 "--allow-host=[::1]:8443",
			 NULL };
	struct up_args u;
	char err[300] = "";

	(void)state;
	assert_int_equal(up_args__parse(ARGC(argv), argv, &u, err, sizeof(err)), 0);
	assert_false(u.help);
	assert_string_equal(u.collector.o.db_path, "x.db");
	assert_string_equal(u.collector.o.listen, "127.0.0.1:0");
	assert_int_equal(u.collector.o.retention_seconds, 3600);
	assert_string_equal(u.collector.o.ingest_token, "t1");
	assert_true(u.collector.o.insecure);
	assert_int_equal(u.collector.o.max_body, 2u << 20);
	assert_int_equal(u.collector.o.ingest_linger_ms, 0);
	assert_int_equal(u.collector.o.nallow_hosts, 2);
	assert_string_equal(u.collector.o.allow_hosts[0], "prof.example.com");
	assert_string_equal(u.collector.o.allow_hosts[1], "[::1]:8443");
	assert_int_equal(u.agent.frequency, 49);
	assert_int_equal(u.agent.npids, 1);
	assert_int_equal(u.agent.pids[0], 7);
	assert_int_equal(u.agent.nlabels, 1);
	assert_string_equal(u.agent.labels[0].key, "service");
	assert_int_equal(u.agent.verbose, 2);
	up_args__free(&u);
}

struct err_case {
	const char *args[4];
	const char *reason; /* the start of the line to print */
};

static void test_errors(void **state)
{
	static const struct err_case cases[] = {
		{ { "--frobnicate" }, "smolder up: unknown option '--frobnicate'" },
		{ { "stray" }, "smolder up: unexpected argument 'stray'" },
		{ { "--frequency", "0" }, "smolder up: --frequency wants 1 to 10000 Hz" },
		{ { "--pid" }, "smolder up: option '--pid' needs a value" },
		{ { "--db" }, "smolder: option '--db' needs a value" },
		{ { "--retention", "xx" },
		  "smolder: --retention wants a duration like 14d, got 'xx'" },
		{ { "--max-body-mb", "0" }, "smolder: --max-body-mb wants 1 to 1024" },
		{ { "--ingest-linger-ms", "1001" },
		  "smolder: --ingest-linger-ms wants 0 to 1000, got '1001'" },
		{ { "--ingest-linger-ms", "-1" }, "smolder: --ingest-linger-ms wants 0 to 1000" },
		{ { "--allow-host", "a b" }, "smolder: --allow-host wants NAME or NAME:PORT" },
		{ { "--allow-host", "x:99999" }, "smolder: --allow-host wants NAME or NAME:PORT" },
		/* a collector error wins over an agent error before it */
		{ { "--frobnicate", "--retention", "xx" }, "smolder: --retention wants" },
		{ { "-F", "0", "--max-body-mb", "abc" }, "smolder: --max-body-mb wants" },
		/* the first agent error is the one reported */
		{ { "-F", "0", "--frobnicate" }, "smolder up: --frequency wants" },
	};
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[6] = { "up" };
		struct up_args u;
		char err[300] = "";
		int argc = 1;

		for (j = 0; j < 4 && cases[i].args[j]; j++)
			argv[argc++] = (char *)cases[i].args[j];
		assert_int_equal(up_args__parse(argc, argv, &u, err, sizeof(err)), -EINVAL);
		if (strncmp(err, cases[i].reason, strlen(cases[i].reason)))
			fail_msg("case %zu: got '%s'", i, err);
	}
}

/* --help silences the agent's errors (they were never parsed before the merged
 * table), not the collector's. */
static void test_help(void **state)
{
	char *help_agent_err[] = { "up", "--frobnicate", "stray", "-h", NULL };
	char *help_collector_err[] = { "up", "--help", "--retention", "xx", NULL };
	struct up_args u;
	char err[300] = "";

	(void)state;
	assert_int_equal(up_args__parse(ARGC(help_agent_err), help_agent_err, &u, err, sizeof(err)),
			 0);
	assert_true(u.help);
	up_args__free(&u);
	assert_int_equal(
		up_args__parse(ARGC(help_collector_err), help_collector_err, &u, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "--retention wants"));
	/* TLS is the collector's alone: up's agent posts over loopback http */
	{
		char *tls[] = { "up", "--tls-cert", "c.pem", "--tls-key", "k.pem", NULL };

		assert_int_equal(up_args__parse(ARGC(tls), tls, &u, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "--tls-* options are for 'smolder collector'"));
	}
}

/* The printed query command names the port the collector listens on (queries
 * went to 7171 whatever --listen chose), and the token file when there is one. */
static void test_query_hint(void **state)
{
	char *plain[] = { "up", "--listen", "127.0.0.1:0", NULL };
	char *file[] = { "up", "--query-token-file", "/dev/null", NULL };
	char *token[] = { "up", "--query-token", "tok-1", NULL };
	char err[300] = "", hint[600];
	struct up_args u;

	(void)state;
	assert_int_equal(up_args__parse(ARGC(plain), plain, &u, err, sizeof(err)), 0);
	up_query_hint(&u, up_self("smolder"), 7272, hint, sizeof(hint));
	assert_string_equal(hint, "smolder: query with: SMOLDER_URL=http://127.0.0.1:7272 "
				  "smolder flame --since 5m");
	/* run by a path (make run's build/smolder), the hint repeats that path */
	up_query_hint(&u, up_self("build/smolder"), 7272, hint, sizeof(hint));
	assert_string_equal(hint, "smolder: query with: SMOLDER_URL=http://127.0.0.1:7272 "
				  "build/smolder flame --since 5m");
	up_args__free(&u);
	/* /dev/null holds no token: refused by the parser, no hint to give */
	assert_int_equal(up_args__parse(ARGC(file), file, &u, err, sizeof(err)), -EINVAL);
	assert_int_equal(up_args__parse(ARGC(token), token, &u, err, sizeof(err)), 0);
	up_query_hint(&u, "smolder", 40000, hint, sizeof(hint));
	assert_non_null(strstr(hint, "SMOLDER_URL=http://127.0.0.1:40000 smolder flame"));
	assert_non_null(strstr(hint, "\nsmolder: queries need the query token: add "
				     "SMOLDER_TOKEN_FILE=FILE"));
	up_args__free(&u);
	/* a real token file: its path in the hint */
	{
		char dir[64], path[128], want[200];
		char *real[] = { "up", "--query-token-file", path, NULL };
		FILE *f;

		assert_non_null(test_mkdtemp(dir, sizeof(dir)));
		snprintf(path, sizeof(path), "%s/qtok", dir);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs("tok-2\n", f);
		fclose(f);
		assert_int_equal(up_args__parse(ARGC(real), real, &u, err, sizeof(err)), 0);
		up_query_hint(&u, "smolder", 7171, hint, sizeof(hint));
		snprintf(want, sizeof(want), "SMOLDER_TOKEN_FILE=%s", path);
		assert_non_null(strstr(hint, want));
		up_args__free(&u);
		test_rm_rf(dir);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),   cmocka_unit_test(test_mixed_options),
		cmocka_unit_test(test_errors),	   cmocka_unit_test(test_help),
		cmocka_unit_test(test_query_hint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
