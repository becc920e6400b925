/* A mistake in a query is refused with a reason, never answered with
 * a confident wrong answer and exit 0. Each case runs through the CLI in both of
 * its modes (--url against the real sanitized collector, --db on that
 * collector's store file, read-only) and through HTTP directly, and asserts the
 * status or exit code AND the reason text:
 *   - top --db typo.db: no store is created (exit 1, "no store at"); a URL of a
 *     store backend this build does not have is named as such; a file that
 *     is not SQLite, a store in rollback-journal mode and a store of another
 *     schema version are refused the same way;
 *   - labels --where: the selection is honoured (it was ignored);
 *   - diff with one range, /api/v1/diff with none: refused (they ran against the
 *     default range);
 *   - where=srvice=api: an unknown label key is refused, naming the keys in the
 *     range (it matched nothing), and so are labels --name srvice and
 *     labels/srvice/values (they answered []); a range with no data answers
 *     empty, as before;
 *   - frm=-5m, limit on flamegraph, step on top, from twice: refused, naming the
 *     parameters taken (they were ignored);
 *   - time forms people type (now-5m, -1h30m, a local "YYYY-MM-DD HH:MM:SS",
 *     --since -5m, -0s as now like now-0) are accepted (they were refused);
 *     --since now-5m is refused with a reason naming --from (it was mangled);
 *   - SMOLDER_URL and SMOLDER_TOKEN_FILE are honoured (queries went to port
 *     7171), subcommands have their own --help, top --sort orders by self or
 *     total, and the exit codes are 0 / 1 (I/O, server, store) / 2 (usage, 400).
 *
 * Data: two batches in the window 10 minutes ago: comm=api,pid=1,service=web
 * with "api;main;a" x5 and "api;main;b;c" x3 (the process frame first), and
 * comm=cron,service=batch with "cron;main;tick" x2. Every CLI run is checked for sanitizer reports;
 * the group teardown stops the collector and checks its exit status and log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "collectortest.h"
#include "wire/batch.h"
#include "testutil.h"

#define CLI_MS 60000 /* bound on one CLI run */

static struct coll srv;
static char bin[256], url[64];
static int64_t t0;
static unsigned nrun;

enum mode { BY_URL, BY_DB };

struct run {
	int code;  /* exit status; -1 when it did not exit normally */
	char *out; /* stdout and stderr texts; free them with run_free() */
	char *err;
};

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* Runs `smolder args... [--url URL | --db DB]` (m < 0: neither), bounded, checks
 * its stderr for sanitizer reports and returns its exit status and output. */
static struct run cli_v(int m, const char *const *args)
{
	char outp[256], errp[256], *argv[40];
	struct run r = { .code = -1 };
	size_t n = 0;
	pid_t pid;
	int st;

	argv[n++] = bin;
	for (; *args && n < 36; args++)
		argv[n++] = (char *)*args;
	if (m == BY_URL) {
		argv[n++] = "--url";
		argv[n++] = url;
	} else if (m == BY_DB) {
		argv[n++] = "--db";
		argv[n++] = srv.db;
	}
	argv[n] = NULL;
	snprintf(outp, sizeof(outp), "%s/run%u.out", srv.dir, nrun);
	snprintf(errp, sizeof(errp), "%s/run%u.err", srv.dir, nrun++);
	pid = test_spawn(argv, outp, errp);
	st = test_wait(pid, CLI_MS);
	if (st != -1 && WIFEXITED(st))
		r.code = WEXITSTATUS(st);
	test_assert_no_sanitizer_report(argv[1], errp);
	r.out = test_read_file(outp);
	r.err = test_read_file(errp);
	assert_non_null(r.out);
	assert_non_null(r.err);
	return r;
}

#define cli(m, ...) cli_v((m), (const char *const[]){ __VA_ARGS__, NULL })

/* Asserts the exit code and that stderr holds reason, as a sentence: a
 * collector's JSON error body is not shown raw. */
static void expect(struct run r, int code, const char *reason, const char *what)
{
	if (r.code != code || !strstr(r.err, reason) || strstr(r.err, "{\"error\""))
		fail_msg("%s: want exit %d and \"%s\", got exit %d, stderr: %s", what, code, reason,
			 r.code, r.err);
	run_free(&r);
}

/* GET path: asserts status and that the body holds text. */
static void expect_http(const char *path, long status, const char *text)
{
	struct reply r = http_get(srv.port, path, NULL);

	if (r.status != status || !r.body || !strstr(r.body, text))
		fail_msg("%s: want %ld with \"%s\", got %ld %s", path, status, text, r.status,
			 r.body ? r.body : "");
	free(r.body);
}

static void ingest(uint64_t seq, const char **keys, const char **values, size_t nl,
		   const char *const *stacks, const uint64_t *counts, size_t ns)
{
	struct batch_builder *bb;
	struct batch *b;
	size_t i;

	assert_int_equal(batch_builder__new("strict", "stricthost", "cpu", &bb), 0);
	for (i = 0; i < ns; i++)
		assert_int_equal(batch_builder__add(bb, keys, values, nl, stacks[i], counts[i]), 0);
	assert_int_equal(batch_builder__finish(bb, seq, t0, 10, 10101010, &b), 0);
	assert_int_equal(post_batch(srv.port, NULL, b, NULL), 200);
	batch__free(b);
	batch_builder__free(bb);
}

static int group_setup(void **state)
{
	const char *k1[] = { "comm", "pid", "service" }, *v1[] = { "api", "1", "web" };
	const char *k2[] = { "comm", "service" }, *v2[] = { "cron", "batch" };

	(void)state;
	coll_env();
	unsetenv("SMOLDER_URL");
	unsetenv("SMOLDER_TOKEN_FILE");
	curl_global_init(CURL_GLOBAL_DEFAULT);
	t0 = (int64_t)time(NULL) - 600;
	t0 -= t0 % 10;
	test_build_path(bin, sizeof(bin), "asan/smolder");
	coll_start_for_group(&srv);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", srv.port);
	ingest(1, k1, v1, 3, (const char *const[]){ "api;main;a", "api;main;b;c" },
	       (uint64_t[]){ 5, 3 }, 2);
	ingest(2, k2, v2, 2, (const char *const[]){ "cron;main;tick" }, (uint64_t[]){ 2 }, 1);
	return 0;
}

static int group_teardown(void **state)
{
	coll_stop(&srv);
	coll_teardown(state);
	curl_global_cleanup();
	return 0;
}

/* A store of the right version, made by a collector of its own and stopped, then
 * copied twice by python3's sqlite3: one switched to a rollback journal, one
 * marked with a schema version from the future. */
static void make_odd_stores(const char *dir, char *rollback, char *future, size_t len)
{
	struct coll c;
	char cmd[1024];

	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	coll_register_dir(c.dir);
	coll_stop(&c);
	snprintf(rollback, len, "%s/rollback.db", dir);
	snprintf(future, len, "%s/future.db", dir);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import shutil, sqlite3, sys\n"
		 "shutil.copy(sys.argv[1], sys.argv[2]); shutil.copy(sys.argv[1], sys.argv[3])\n"
		 "d = sqlite3.connect(sys.argv[2]); d.execute(\"PRAGMA journal_mode=DELETE\"); "
		 "d.close()\n"
		 "d = sqlite3.connect(sys.argv[3]); d.execute(\"PRAGMA user_version=999\"); "
		 "d.commit(); d.close()' '%s' '%s' '%s'",
		 c.db, rollback, future);
	assert_int_equal(system(cmd), 0);
}

/* --db never creates a store, and says what is wrong with the file it names. */
static void test_db_refusals(void **state)
{
	char typo[256], junk[256], rollback[256], future[256];
	struct stat sb;

	(void)state;
	snprintf(typo, sizeof(typo), "%s/typo.db", srv.dir);
	expect(cli(-1, "top", "--db", typo), 1, "no store at", "top --db typo.db");
	assert_int_equal(stat(typo, &sb), -1); /* no file was created */
	expect(cli(-1, "flame", "--db", typo, "--format", "json"), 1, "no store at", "flame");
	assert_int_equal(stat(typo, &sb), -1);

	snprintf(junk, sizeof(junk), "%s/junk.db", srv.dir);
	assert_int_equal(write_file(junk, "not a database at all, just some text\n", 39), 0);
	expect(cli(-1, "top", "--db", junk), 1, "is not a smolder store", "a text file");

	make_odd_stores(srv.dir, rollback, future, sizeof(rollback));
	expect(cli(-1, "top", "--db", rollback), 1, "is not in WAL mode", "a rollback journal");
	expect(cli(-1, "top", "--db", future), 1, "is a store of another schema version",
	       "schema version 999");
	/* a URL of a backend this smolder does not have (store/store.c) */
	expect(cli(-1, "top", "--db", "nosuch://127.0.0.1:8123/smolder"), 1,
	       "no store backend serves", "a URL of no backend's scheme");
}

/* labels and labels/NAME/values honour where (CLI, both modes, and HTTP). */
static void test_labels_where(void **state)
{
	char path[256];
	struct run r;
	int m;

	(void)state;
	for (m = BY_URL; m <= BY_DB; m++) {
		r = cli(m, "labels", "--name", "service", "--where", "comm=cron", "--since", "1h");
		assert_int_equal(r.code, 0);
		if (!strstr(r.out, "batch") || strstr(r.out, "web"))
			fail_msg("labels --name service --where comm=cron: %s", r.out);
		run_free(&r);
		r = cli(m, "labels", "--where", "comm=cron", "--since", "1h");
		assert_int_equal(r.code, 0);
		if (!strstr(r.out, "service") || strstr(r.out, "pid"))
			fail_msg("labels --where comm=cron: %s", r.out);
		run_free(&r);
	}
	snprintf(path, sizeof(path), "/api/v1/labels?from=%lld&where=comm%%3Dcron",
		 (long long)t0 - 60);
	expect_http(path, 200, "\"service\"");
	{
		struct reply h = http_get(srv.port, path, NULL);

		assert_null(strstr(h.body, "pid"));
		free(h.body);
	}
	snprintf(path, sizeof(path), "/api/v1/labels/service/values?from=%lld&where=comm%%3Dapi",
		 (long long)t0 - 60);
	{
		struct reply h = http_get(srv.port, path, NULL);

		assert_int_equal(h.status, 200);
		if (!strstr(h.body, "web") || strstr(h.body, "batch"))
			fail_msg("%s: %s", path, h.body);
		free(h.body);
	}
}

/* diff needs both ranges, all four ends. */
static void test_diff_ranges(void **state)
{
	int m;

	(void)state;
	for (m = BY_URL; m <= BY_DB; m++)
		expect(cli(m, "diff", "--before", "-5m,-2m", "--format", "json"), 2,
		       "diff needs both ranges: after_from is missing", "diff --before only");
	expect(cli(BY_URL, "diff", "--before", "-5m", "--after", "-2m,now"), 2,
	       "bad value for --before: '-5m' (wants FROM,TO", "diff --before without a comma");
	expect_http("/api/v1/diff", 400, "diff needs both ranges: before_from is missing");
	expect_http("/api/v1/diff?before_from=-5m&before_to=-2m&after_from=-2m", 400,
		    "after_to is missing");
	expect_http("/api/v1/diff?before_from=-5m&before_to=-2m&after_from=-2m&after_to=now", 200,
		    "{");
}

/* A where key that no label set in the range has, nor any in the store, is
 * refused ("wrong", exit 2), naming those that exist; a key in use at other times
 * gives an empty answer ("nothing", exit 0). */
static void test_unknown_key(void **state)
{
	static const char reason[] =
		"unknown label key 'srvice' (keys in range: comm, pid, service)";
	char path[256];
	struct run r;
	int m;

	(void)state;
	for (m = BY_URL; m <= BY_DB; m++) {
		expect(cli(m, "top", "--where", "srvice=api", "--since", "1h"), 2, reason,
		       "top --where srvice=api");
		expect(cli(m, "labels", "--where", "srvice=api", "--since", "1h"), 2, reason,
		       "labels --where srvice=api");
		expect(cli(m, "diff", "--before", "-1h,-5m", "--after", "-5m,now", "--format",
			   "json", "--before-where", "srvice=api"),
		       2, reason, "diff --before-where srvice=api");
		/* the values of a key nobody has: the same refusal (it answered []) */
		expect(cli(m, "labels", "--name", "srvice", "--since", "1h"), 2, reason,
		       "labels --name srvice");
		/* the last minute has no data: a typo is still one (exit 2, the store's
		 * keys named), and a key in use at other times is nothing (exit 0) */
		expect(cli(m, "top", "--where", "srvice=api", "--since", "1m"), 2,
		       "unknown label key 'srvice' (keys stored: comm, pid, service)",
		       "top --where srvice=api, empty range");
		expect(cli(m, "labels", "--name", "srvice", "--since", "1m"), 2,
		       "unknown label key 'srvice' (keys stored: ",
		       "labels --name srvice, empty range");
		r = cli(m, "top", "--where", "pid=1", "--since", "1m", "--format", "json");
		if (r.code != 0 || !strstr(r.out, "\"total\":0"))
			fail_msg("empty range, a known key: exit %d %s %s", r.code, r.out, r.err);
		run_free(&r);
		r = cli(m, "labels", "--name", "pid", "--since", "1m");
		if (r.code != 0 || strcmp(r.out, "[]\n") != 0)
			fail_msg("labels --name pid, empty range: exit %d %s %s", r.code, r.out,
				 r.err);
		run_free(&r);
		/* a known key with a value nobody has is an empty answer too */
		r = cli(m, "top", "--where", "service=nobody", "--since", "1h", "--format", "json");
		if (r.code != 0 || !strstr(r.out, "\"total\":0"))
			fail_msg("unknown value: exit %d %s %s", r.code, r.out, r.err);
		run_free(&r);
	}
	snprintf(path, sizeof(path), "/api/v1/flamegraph?from=%lld&where=srvice%%3Dapi",
		 (long long)t0 - 60);
	expect_http(path, 400, reason);
	snprintf(path, sizeof(path), "/api/v1/labels/srvice/values?from=%lld", (long long)t0 - 60);
	expect_http(path, 400, reason);
	snprintf(path, sizeof(path), "/api/v1/series?from=%lld&where=service%%3Dweb&where=x%%3Dy",
		 (long long)t0 - 60);
	expect_http(path, 400, "unknown label key 'x'");
}

/* Unknown parameters, and parameters a kind does not take, are refused with the
 * list it takes; single-valued ones may not repeat. */
static void test_unknown_params(void **state)
{
	static const struct {
		const char *path, *reason;
	} bad[] = {
		{ "/api/v1/flamegraph?frm=-5m",
		  "unknown parameter 'frm' (flamegraph takes from, to, where, type, format, "
		  "granularity, max_nodes)" },
		{ "/api/v1/top?max_nodes=100", "unknown parameter 'max_nodes' (top takes" },
		{ "/api/v1/flamegraph?limit=5", "unknown parameter 'limit' (flamegraph takes" },
		{ "/api/v1/top?step=10s",
		  "unknown parameter 'step' (top takes from, to, where, type, format, granularity, "
		  "limit, sort)" },
		{ "/api/v1/series?sort=self", "unknown parameter 'sort' (series takes" },
		{ "/api/v1/diff?from=-5m", "unknown parameter 'from' (diff takes before_from" },
		{ "/api/v1/labels?name=comm", "unknown parameter 'name' (labels takes" },
		{ "/api/v1/flamegraph?from=-5m&from=-2m",
		  "parameter 'from' given more than once (flamegraph takes one)" },
		{ "/api/v1/top?limit=5&limit=6", "parameter 'limit' given more than once" },
		{ "/api/v1/labels/comm/values?name=pid", "parameter 'name' given more than once" },
		{ "/api/v1/folded?format=json", "parameter 'format' given more than once" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_http(bad[i].path, 400, bad[i].reason);
	/* an empty piece names nothing; an empty name with a value is unknown */
	expect_http("/api/v1/top?&from=-1h&&format=json", 200, "\"total\":10");
	expect_http("/api/v1/top?=5", 400, "unknown parameter '' (top takes");
	/* where repeats */
	expect_http("/api/v1/top?where=comm%3Dapi&where=service%3Dweb&from=-1h", 200, "\"total\"");
	expect(cli(BY_URL, "flame", "--limit", "5"), 2, "unknown option '--limit'",
	       "flame --limit");
	expect(cli(BY_DB, "top", "--step", "5m"), 2, "unknown option '--step'", "top --step");
	expect(cli(BY_DB, "top", "--from", "-5m", "--from", "-2m"), 2,
	       "parameter 'from' given more than once", "top --from twice");
}

/* Time forms people type, through HTTP and both CLI modes. */
static void test_time_forms(void **state)
{
	char path[256], local[64];
	time_t at = (time_t)(t0 - 60);
	struct tm tm;
	struct run r;
	int m;

	(void)state;
	expect_http("/api/v1/top?from=now-1h", 200, "\"total\":10");
	expect_http("/api/v1/top?from=-1h30m&to=now%2B0", 200, "\"total\":10");
	expect_http("/api/v1/top?from=-1w", 200, "\"total\":10");
	assert_non_null(localtime_r(&at, &tm));
	strftime(local, sizeof(local), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(path, sizeof(path), "/api/v1/top?from=%.10s%%20%s", local, local + 11);
	expect_http(path, 200, "\"total\":10");
	snprintf(path, sizeof(path), "/api/v1/top?from=%.10sT%s", local, local + 11);
	expect_http(path, 200, "\"total\":10");
	expect_http("/api/v1/top?from=yesterday", 400,
		    "from: 'yesterday' is not a time (forms: 2026-11-30T23:44:47Z");
	expect_http("/api/v1/top?from=-5", 400, "from: '-5' is not a time (forms: ");
	for (m = BY_URL; m <= BY_DB; m++) {
		r = cli(m, "top", "--since", "-1h", "--format", "json");
		if (r.code != 0 || !strstr(r.out, "\"total\":10"))
			fail_msg("--since -1h: exit %d %s %s", r.code, r.out, r.err);
		run_free(&r);
		r = cli(m, "top", "--from", local, "--format", "json");
		if (r.code != 0 || !strstr(r.out, "\"total\":10"))
			fail_msg("--from '%s': exit %d %s %s", local, r.code, r.out, r.err);
		run_free(&r);
		r = cli(m, "series", "--since", "1h30m", "--step", "1h", "--format", "json");
		assert_int_equal(r.code, 0);
		run_free(&r);
		/* a function's timeline: of the 10 samples, "api;main;b;c"'s 3 hold c */
		r = cli(m, "series", "--since", "1h", "--step", "1h", "--function", "^c$",
			"--format", "json");
		if (r.code != 0 || !strstr(r.out, ",10,3]") ||
		    !strstr(r.out, "\"function\":\"^c$\""))
			fail_msg("series --function ^c$: exit %d %s %s", r.code, r.out, r.err);
		run_free(&r);
		expect(cli(m, "series", "--since", "1h", "--function", "a\\1"), 2,
		       "function: back-references (\\1) are not taken", "--function a\\1");
		/* a time given to --since is refused as such (it became '-now-5m') */
		expect(cli(m, "flame", "--since", "now-5m"), 2,
		       "smolder flame: --since wants a duration like 5m or 1h30m (for a time, use "
		       "--from; a unit is required: 90s, 15m, 1h30m, 2d12h, 1w), got 'now-5m'",
		       "--since now-5m");
		/* a bare number could be seconds or minutes: refused, with the forms */
		expect(cli(m, "top", "--since", "5"), 2,
		       "--since wants a duration like 5m or 1h30m (for a time, use --from; a unit "
		       "is required",
		       "--since 5");
		expect(cli(m, "series", "--since", "1h", "--step", "20"), 2,
		       "smolder series: --step wants a duration with its unit (90s, 15m",
		       "--step 20");
		expect(cli(m, "top", "--since", "2026-11-30"), 2,
		       "--since wants a duration like 5m or 1h30m", "--since 2026-11-30");
		/* a zero offset is now, as now-0 is (-0s was refused) */
		r = cli(m, "top", "--from", "-1h", "--to", "-0s", "--format", "json");
		if (r.code != 0 || !strstr(r.out, "\"total\":10"))
			fail_msg("--to -0s: exit %d %s %s", r.code, r.out, r.err);
		run_free(&r);
	}
	expect_http("/api/v1/top?from=-1h&to=-0m", 200, "\"total\":10");
	/* a local time that does not exist (Berlin skips 02:00-03:00 that day) */
	setenv("TZ", "Europe/Berlin", 1);
	r = cli(BY_DB, "top", "--from", "2026-03-29 02:30", "--to", "2026-03-29 04:00");
	unsetenv("TZ");
	expect(r, 2,
	       "from: '2026-03-29 02:30' does not exist in local time (clocks went forward "
	       "then): give a zone",
	       "a time in the DST gap");
}

/* The name of top's first function in its JSON. */
static void assert_first(const char *json, const char *name)
{
	const char *p = strstr(json, "\"functions\":[{\"name\":\"");

	if (!p || strncmp(p + 22, name, strlen(name)) != 0 || p[22 + strlen(name)] != '"')
		fail_msg("want %s first: %s", name, json);
}

/* top --sort self|total in both modes: main has no self samples but all 8 of
 * api's in total. */
static void test_top_sort(void **state)
{
	struct run r;
	int m;

	(void)state;
	for (m = BY_URL; m <= BY_DB; m++) {
		r = cli(m, "top", "--since", "1h", "--where", "comm=api", "--format", "json",
			"--sort", "self");
		assert_int_equal(r.code, 0);
		assert_first(r.out, "a");
		run_free(&r);
		r = cli(m, "top", "--since", "1h", "--where", "comm=api", "--format", "json",
			"--sort", "total");
		assert_int_equal(r.code, 0);
		assert_first(r.out, "main");
		run_free(&r);
		expect(cli(m, "top", "--sort", "size"), 2, "sort wants self or total",
		       "--sort size");
	}
}

/* SMOLDER_URL is the default collector; SMOLDER_TOKEN_FILE (or --token-file) its
 * query token. */
static void test_env(void **state)
{
	const char *extra[] = { "--query-token", "s3cret-token", NULL };
	char tokfile[256], curl_url[64];
	struct coll c;
	struct run r;

	(void)state;
	setenv("SMOLDER_URL", url, 1);
	r = cli(-1, "top", "--since", "1h", "--format", "json");
	unsetenv("SMOLDER_URL");
	if (r.code != 0 || !strstr(r.out, "\"total\":10"))
		fail_msg("SMOLDER_URL=%s smolder top: exit %d %s %s", url, r.code, r.out, r.err);
	run_free(&r);

	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	coll_register_dir(c.dir);
	snprintf(curl_url, sizeof(curl_url), "http://127.0.0.1:%u", c.port);
	snprintf(tokfile, sizeof(tokfile), "%s/token", c.dir);
	assert_int_equal(write_file(tokfile, "s3cret-token\n", 13), 0);
	setenv("SMOLDER_URL", curl_url, 1);
	expect(cli(-1, "top", "--since", "1h"), 1, "HTTP 401", "no token");
	setenv("SMOLDER_TOKEN_FILE", tokfile, 1);
	r = cli(-1, "top", "--since", "1h", "--format", "json");
	unsetenv("SMOLDER_TOKEN_FILE");
	if (r.code != 0 || !strstr(r.out, "\"total\":0"))
		fail_msg("SMOLDER_TOKEN_FILE: exit %d %s %s", r.code, r.out, r.err);
	run_free(&r);
	r = cli(-1, "top", "--since", "1h", "--format", "json", "--token-file", tokfile);
	assert_int_equal(r.code, 0);
	run_free(&r);
	expect(cli(-1, "top", "--token-file", "/nonexistent/token"), 1,
	       "no usable query token in /nonexistent/token", "a missing token file");
	unsetenv("SMOLDER_URL");
	coll_stop(&c);
	/* nothing listens there any more: a failure, exit 1 */
	expect(cli(-1, "top", "--url", curl_url), 1, "is a collector there?", "no collector");
}

/* Each subcommand's own --help. */
static void test_help(void **state)
{
	static const char *const typed[] = { "flame", "diff", "top", "series" };
	struct run r;
	size_t i;

	(void)state;
	r = cli(-1, "top", "--help");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "--sort self|total"));
	assert_non_null(strstr(r.out, "smolder top --since"));
	assert_null(strstr(r.out, "--before"));
	run_free(&r);
	r = cli(-1, "diff", "--help");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "--before FROM,TO"));
	assert_non_null(strstr(r.out, "smolder diff --before"));
	assert_null(strstr(r.out, "--sort"));
	run_free(&r);
	r = cli(-1, "flame", "--help");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "SMOLDER_URL"));
	assert_non_null(strstr(r.out, "no zone: local time"));
	assert_null(strstr(r.out, "--limit"));
	run_free(&r);
	/* --type is taken by these four, so their help lists it (none did) */
	for (i = 0; i < sizeof(typed) / sizeof(typed[0]); i++) {
		r = cli(-1, typed[i], "--help");
		if (r.code != 0 ||
		    !strstr(r.out, "--type T           the profile type: cpu (default), offcpu, "
				   "wall, alloc_space,"))
			fail_msg("%s --help does not list --type with its names: %s", typed[i],
				 r.out);
		run_free(&r);
	}
	r = cli(-1, "labels", "--help");
	assert_int_equal(r.code, 0);
	assert_null(strstr(r.out, "--type"));
	run_free(&r);
	/* types lists what --type takes, and takes none itself */
	r = cli(-1, "types", "--help");
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out, "what --type takes"));
	assert_null(strstr(r.out, "--type T"));
	run_free(&r);
}

/* On a terminal, flame and diff ask for the text tree, not JSON (600 KB on one
 * line); -o or --format say otherwise. python3's pty module gives the terminal.
 * Where the collector has no text format it refuses it by name: either way the
 * answer is not JSON. */
static void test_terminal_default(void **state)
{
	char pty_out[256], pty_err[256], *text;
	const char *const argv[] = { "/usr/bin/env",
				     "python3",
				     "-c",
				     "import os, pty, sys\n"
				     "sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))",
				     bin,
				     "flame",
				     "--since",
				     "1h",
				     "--url",
				     url,
				     NULL };
	pid_t pid;
	int st;

	(void)state;
	snprintf(pty_out, sizeof(pty_out), "%s/pty.out", srv.dir);
	snprintf(pty_err, sizeof(pty_err), "%s/pty.err", srv.dir);
	pid = test_spawn((char *const *)argv, pty_out, pty_err);
	st = test_wait(pid, CLI_MS);
	assert_true(st != -1 && WIFEXITED(st));
	test_assert_no_sanitizer_report("flame on a terminal", pty_out);
	text = test_read_file(pty_out);
	assert_non_null(text);
	if (strstr(text, "\"children\"") ||
	    !(strstr(text, "unknown format 'text'") || WEXITSTATUS(st) == 0))
		fail_msg("flame on a terminal: exit %d: %s", WEXITSTATUS(st), text);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_db_refusals, test_teardown_children),
		cmocka_unit_test_teardown(test_labels_where, test_teardown_children),
		cmocka_unit_test_teardown(test_diff_ranges, test_teardown_children),
		cmocka_unit_test_teardown(test_unknown_key, test_teardown_children),
		cmocka_unit_test_teardown(test_unknown_params, test_teardown_children),
		cmocka_unit_test_teardown(test_time_forms, test_teardown_children),
		cmocka_unit_test_teardown(test_top_sort, test_teardown_children),
		cmocka_unit_test_teardown(test_env, test_teardown_children),
		cmocka_unit_test_teardown(test_help, test_teardown_children),
		cmocka_unit_test_teardown(test_terminal_default, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
