/* A private ClickHouse server for a test: ch_start() writes a minimal config
 * (data, tmp and user files under a fresh temporary directory, listen_host
 * 127.0.0.1, free HTTP and TCP ports, a default user allowed from 127.0.0.1 only,
 * zstd for every part as docs/clickhouse.md advises) and starts Debian's
 * clickhouse-server on it (ch_start_with(): an https_port too, on a certificate
 * the test made, and more users), waiting on GET /ping with a deadline; ch_stop() sends
 * SIGTERM to it (a registered child, tests/testutil.h) and checks that it exited
 * 0 (or aborted while shutting down: ch_halt()); ch_halt() and ch_restart()
 * stop it and start it again on its data and ports (a server down and back).
 * zk_start() and ch_start_cluster() make a cluster: Debian's ZooKeeper and
 * servers that shard one cluster between them, each in a directory of its own.
 * No system service is touched. A test calls ch_skip_unless_available() first: it
 * skips, with the reason printed, only when clickhouse-server is not installed
 * (deploy/debian-deps.sh installs it). Include <cmocka.h> and testutil.h first.
 */
#ifndef SMOLDER_CLICKHOUSETEST_H
#define SMOLDER_CLICKHOUSETEST_H

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "store/clickhouse/schema.h"

extern const char *const ch_migrations[]; /* build/gen/ch_migrations.c */

#define CH_START_MS 60000 /* start-up bound: ~2.4 s here, far more on a loaded host */
#define CH_STOP_MS  60000 /* a clean stop flushes its parts */
#define CH_ATTEMPTS 3	  /* a free port taken by someone else before the server binds it */

struct chsrv {
	char dir[256]; /* the server's files; removed by ch_stop() unless SMOLDER_KEEP=1 */
	char err[300]; /* its stderr */
	char log[300]; /* its error log */
	pid_t pid;
	unsigned http_port, tcp_port;
	unsigned https_port;	   /* ch_start_with() with a certificate only */
	unsigned interserver_port; /* a cluster's server (ch_start_cluster) only */
};

/* The path of clickhouse-server (in /usr/sbin on Debian, maybe not on PATH), or
 * NULL. */
static inline const char *ch_server_path(void)
{
	static const char *const paths[] = { "/usr/sbin/clickhouse-server",
					     "/usr/bin/clickhouse-server",
					     "/usr/local/bin/clickhouse-server" };
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!access(paths[i], X_OK))
			return paths[i];
	return NULL;
}

/* Skips the calling test (printing why) when the server is not installed. */
#define ch_skip_unless_available()                                                                 \
	do {                                                                                       \
		if (!ch_server_path()) {                                                           \
			test_skip("clickhouse-server is not installed "                            \
				  "(deploy/debian-deps.sh installs it)");                          \
		}                                                                                  \
	} while (0)

static size_t ch_discard(char *data, size_t size, size_t n, void *ctx)
{
	char *buf = ctx;
	size_t have = strlen(buf), take = size * n;

	if (take > 15 - have)
		take = 15 - have;
	memcpy(buf + have, data, take);
	buf[have + take] = '\0';
	return size * n;
}

/* True when the server answers GET /ping with "Ok.". */
static inline bool ch_ping(unsigned http_port)
{
	char url[64], body[16] = "";
	CURL *h = curl_easy_init();
	long status = 0;

	if (!h)
		return false;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/ping", http_port);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, ch_discard);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, (void *)body);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	return status == 200 && !strncmp(body, "Ok.", 3);
}

/* Writes c's config.xml and users.xml; extra (may be "") goes inside <yandex>,
 * users (may be "") inside users.xml's <users>, beside the default user. */
static inline void ch_write_configs_users(struct chsrv *c, const char *extra, const char *users)
{
	char path[320];
	FILE *f;

	snprintf(path, sizeof(path), "%.255s/config.xml", c->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"<?xml version=\"1.0\"?>\n<yandex>\n"
		"  <logger><level>warning</level><log>%s/server.log</log>"
		"<errorlog>%s</errorlog><console>0</console></logger>\n"
		"  <listen_host>127.0.0.1</listen_host>\n"
		"  <http_port>%u</http_port>\n  <tcp_port>%u</tcp_port>\n"
		"  <path>%s/data/</path>\n  <tmp_path>%s/tmp/</tmp_path>\n"
		"  <user_files_path>%s/user_files/</user_files_path>\n"
		"  <format_schema_path>%s/format_schemas/</format_schema_path>\n"
		"  <users_config>users.xml</users_config>\n"
		"  <default_profile>default</default_profile>\n"
		"  <default_database>default</default_database>\n"
		"  <mark_cache_size>5368709</mark_cache_size>\n"
		"  <max_concurrent_queries>16</max_concurrent_queries>\n"
		"  <compression><case><min_part_size>0</min_part_size>"
		"<min_part_size_ratio>0</min_part_size_ratio><method>zstd</method></case>"
		"</compression>\n%s</yandex>\n",
		c->dir, c->log, c->http_port, c->tcp_port, c->dir, c->dir, c->dir, c->dir, extra);
	assert_int_equal(fclose(f), 0);
	snprintf(path, sizeof(path), "%.255s/users.xml", c->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"<?xml version=\"1.0\"?>\n<yandex>\n"
		"  <profiles><default><max_memory_usage>1000000000</max_memory_usage></default>"
		"</profiles>\n"
		"  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>"
		"<profile>default</profile><quota>default</quota></default>%s</users>\n"
		"  <quotas><default></default></quotas>\n</yandex>\n",
		users);
	assert_int_equal(fclose(f), 0);
}

static inline void ch_write_configs(struct chsrv *c, const char *extra)
{
	ch_write_configs_users(c, extra, "");
}

/* Starts clickhouse-server on c's config (written already) and waits for /ping.
 * Returns true when it answers; false when it exited (a port taken in between,
 * most likely; reaped); fails the test when it is up but silent past the bound. */
static inline bool ch_spawn(struct chsrv *c)
{
	char config[320], *argv[3];
	uint64_t deadline = test_now_ms() + CH_START_MS;

	snprintf(config, sizeof(config), "--config-file=%s/config.xml", c->dir);
	argv[0] = (char *)ch_server_path();
	argv[1] = config;
	argv[2] = NULL;
	c->pid = test_spawn(argv, "/dev/null", c->err);
	while (test_now_ms() < deadline && !test_child_exited(c->pid)) {
		if (ch_ping(c->http_port))
			return true;
		usleep(50000); /* polling interval of a bounded wait */
	}
	if (!test_child_exited(c->pid)) { /* up but silent past the bound */
		test_child_kill_reap(c->pid);
		c->pid = 0;
		test_print_log("clickhouse-server error log", c->log);
		fail_msg("clickhouse-server did not answer /ping within %d ms", CH_START_MS);
	}
	test_wait(c->pid, CH_STOP_MS);
	c->pid = 0;
	return false;
}

/* Starts a private server, also serving https on c->https_port with the PEM
 * certificate (chain) cert and its key when cert is not NULL, with users (may
 * be "") beside the default one; or fails the test with its log. */
static inline void ch_start_with(struct chsrv *c, const char *cert, const char *key,
				 const char *users)
{
	char extra[2048] = "";
	int attempt;

	memset(c, 0, sizeof(*c));
	assert_non_null(test_mkdtemp(c->dir, sizeof(c->dir)));
	snprintf(c->err, sizeof(c->err), "%s/server.err", c->dir);
	snprintf(c->log, sizeof(c->log), "%s/error.log", c->dir);
	for (attempt = 0; attempt < CH_ATTEMPTS; attempt++) {
		c->http_port = test_free_port();
		do
			c->tcp_port = test_free_port();
		while (c->tcp_port == c->http_port);
		if (cert) {
			do
				c->https_port = test_free_port();
			while (c->https_port == c->http_port || c->https_port == c->tcp_port);
			/* the server's side only: no client certificate asked for */
			snprintf(extra, sizeof(extra),
				 "  <https_port>%u</https_port>\n"
				 "  <openSSL><server><certificateFile>%s</certificateFile>"
				 "<privateKeyFile>%s</privateKeyFile>"
				 "<verificationMode>none</verificationMode>"
				 "<loadDefaultCAFile>false</loadDefaultCAFile>"
				 "<cacheSessions>true</cacheSessions>"
				 "<disableProtocols>sslv2,sslv3,tlsv1,tlsv1_1</disableProtocols>"
				 "<preferServerCiphers>true</preferServerCiphers>"
				 "</server></openSSL>\n",
				 c->https_port, cert, key);
		}
		ch_write_configs_users(c, extra, users);
		if (ch_spawn(c))
			return;
	}
	test_print_log("clickhouse-server stderr", c->err);
	test_print_log("clickhouse-server error log", c->log);
	fail_msg("clickhouse-server did not answer /ping (%d attempts)", CH_ATTEMPTS);
}

/* Starts a private server, or fails the test with its log. Call
 * ch_skip_unless_available() first. */
static inline void ch_start(struct chsrv *c)
{
	ch_start_with(c, NULL, NULL, "");
}

/* SIGTERM, a bounded wait, exit status 0; keeps its directory (its data), for
 * ch_restart(). One exception: an abort (SIGABRT) while it shuts down is
 * reported and accepted. ClickHouse before 21.9 can end in std::terminate when
 * writing to a connection fails during its shutdown (its pull request 28761);
 * 18.16 did so here in one of nine runs of a test whose agents were sending.
 * What the tests assert is what its data holds when it is back, which an abort
 * makes harder, not easier. Any other signal or exit status fails the test. */
static inline void ch_halt(struct chsrv *c)
{
	bool aborted;
	int status;

	if (c->pid <= 0)
		return;
	test_kill(c->pid, SIGTERM);
	status = test_wait(c->pid, CH_STOP_MS);
	c->pid = 0;
	aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (aborted)
		print_message("  clickhouse-server aborted while shutting down (a known bug of "
			      "ClickHouse before 21.9); its stderr and error log:\n");
	test_print_log("clickhouse-server stderr", c->err);
	test_print_log("clickhouse-server error log", c->log);
	if (!aborted)
		fail_msg("clickhouse-server did not exit cleanly on SIGTERM: status %#x", status);
}

/* Starts a server ch_halt() stopped again, on its data and its ports (a port
 * taken meanwhile fails the test). */
static inline void ch_restart(struct chsrv *c)
{
	assert_true(c->pid <= 0);
	if (!ch_spawn(c)) {
		test_print_log("clickhouse-server stderr", c->err);
		test_print_log("clickhouse-server error log", c->log);
		fail_msg("clickhouse-server did not start again on ports %u and %u", c->http_port,
			 c->tcp_port);
	}
}

/* ch_halt(), then removes its directory unless SMOLDER_KEEP=1. */
static inline void ch_stop(struct chsrv *c)
{
	if (c->pid <= 0)
		return;
	ch_halt(c);
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(c->dir);
}

/* A binary whose tests share one private server: its cmocka group setup calls
 * ch_group_start(&srv) (nothing when clickhouse-server is missing: each test
 * then skips, saying why, by ch_skip_unless_available()), its teardown
 * ch_stop(&srv). Returns 0, cmocka's "set up". */
static inline int ch_group_start(struct chsrv *c)
{
	if (!ch_server_path())
		return 0;
	ch_start(c);
	test_child_keep(c->pid);
	return 0;
}

/* The store location of database db on c. */
static inline char *ch_location(const struct chsrv *c, const char *db, char *buf, size_t len)
{
	snprintf(buf, len, "clickhouse://127.0.0.1:%u/%s", c->http_port, db);
	return buf;
}

/* ---- a cluster: ZooKeeper and servers that know each other ---------------- */

#define ZK_JAR	       "/usr/share/java/zookeeper.jar" /* Debian's zookeeper */
#define ZK_JAVA	       "/usr/bin/java"
#define ZK_START_MS    60000 /* ~1.3 s here; the JVM is slow on a loaded host */
#define ZK_STOP_MS     30000
#define CH_CLUSTER     "smolder" /* the cluster's name in remote_servers */
#define CH_MAX_SERVERS 4

/* A private ZooKeeper (standalone, in the foreground, data under dir). */
struct zksrv {
	char dir[256];
	char err[300]; /* its stdout and stderr */
	pid_t pid;
	unsigned port;
};

/* Skips the calling test (printing why) when ZooKeeper or Java is missing. */
#define zk_skip_unless_available()                                                                 \
	do {                                                                                       \
		if (access(ZK_JAR, R_OK) || access(ZK_JAVA, X_OK)) {                               \
			test_skip("ZooKeeper (" ZK_JAR ") or " ZK_JAVA                             \
				  " is not installed (deploy/debian-deps.sh installs zookeeper)"); \
		}                                                                                  \
	} while (0)

/* True when the ZooKeeper on port serves requests: its "srvr" answer says
 * "Mode: standalone" ("ruok" answers "imok" before the server takes sessions,
 * and clickhouse-server 18.16's DDL worker crashes on a ZooKeeper that drops
 * its handshake). */
static inline bool zk_ok(unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 2 };
	char buf[1024];
	ssize_t n = 0, got;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a)) && write(fd, "srvr", 4) == 4)
		while (n < (ssize_t)sizeof(buf) - 1 &&
		       (got = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
			n += got;
	close(fd);
	buf[n] = '\0';
	return strstr(buf, "Mode: standalone") != NULL;
}

/* Starts ZooKeeper on a free loopback port and waits until it answers; fails the
 * test otherwise. Call zk_skip_unless_available() first. */
static inline void zk_start(struct zksrv *z)
{
	char cfg[320], data[300], *argv[8];
	uint64_t deadline;
	FILE *f;

	memset(z, 0, sizeof(*z));
	assert_non_null(test_mkdtemp(z->dir, sizeof(z->dir)));
	snprintf(z->err, sizeof(z->err), "%s/zk.out", z->dir);
	snprintf(cfg, sizeof(cfg), "%s/zoo.cfg", z->dir);
	snprintf(data, sizeof(data), "-Dzookeeper.log.dir=%s", z->dir);
	z->port = test_free_port();
	f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f,
		"tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=%s/data\nclientPort=%u\n"
		"clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
		"4lw.commands.whitelist=srvr\n",
		z->dir, z->port);
	assert_int_equal(fclose(f), 0);
	argv[0] = (char *)ZK_JAVA;
	argv[1] = (char *)"-Xmx128m";
	argv[2] = (char *)"-cp";
	argv[3] = (char *)ZK_JAR;
	argv[4] = data;
	argv[5] = (char *)"org.apache.zookeeper.server.ZooKeeperServerMain";
	argv[6] = cfg;
	argv[7] = NULL;
	z->pid = test_spawn(argv, z->err, z->err);
	deadline = test_now_ms() + ZK_START_MS;
	while (test_now_ms() < deadline && !test_child_exited(z->pid)) {
		if (zk_ok(z->port))
			return;
		usleep(50000); /* polling interval of a bounded wait */
	}
	test_print_log("zookeeper", z->err);
	fail_msg("ZooKeeper did not serve on port %u within %d ms", z->port, ZK_START_MS);
}

/* SIGTERM and a bounded wait: the JVM exits 143 (128 + SIGTERM) from its
 * shutdown hook; removes its directory unless SMOLDER_KEEP=1. */
static inline void zk_stop(struct zksrv *z)
{
	int status;

	if (z->pid <= 0)
		return;
	test_kill(z->pid, SIGTERM);
	status = test_wait(z->pid, ZK_STOP_MS);
	z->pid = 0;
	if (!(WIFEXITED(status) && (WEXITSTATUS(status) == 143 || !WEXITSTATUS(status))) &&
	    !(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)) {
		test_print_log("zookeeper", z->err);
		fail_msg("ZooKeeper did not stop cleanly on SIGTERM: status %#x", status);
	}
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(z->dir);
}

/* Starts n servers forming cluster CH_CLUSTER of n shards of one replica each
 * (macros shard 01.., replica r1..), all on z, with distributed DDL: the config
 * an operator writes for each node of a cluster. ZooKeeper must answer before
 * they start (18.16's DDL worker crashes when it cannot reach it at start). */
static inline void ch_start_cluster(struct chsrv *c, size_t n, const struct zksrv *z)
{
	char shards[CH_MAX_SERVERS * 200], extra[sizeof(shards) + 1024];
	size_t i, len = 0;

	assert_true(n > 0 && n <= CH_MAX_SERVERS);
	for (i = 0; i < n; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		assert_non_null(test_mkdtemp(c[i].dir, sizeof(c[i].dir)));
		snprintf(c[i].err, sizeof(c[i].err), "%.255s/server.err", c[i].dir);
		snprintf(c[i].log, sizeof(c[i].log), "%.255s/error.log", c[i].dir);
		c[i].http_port = test_free_port();
		c[i].tcp_port = test_free_port();
		c[i].interserver_port = test_free_port();
		len += (size_t)snprintf(shards + len, sizeof(shards) - len,
					"<shard><internal_replication>true</internal_replication>"
					"<replica><host>127.0.0.1</host><port>%u</port></replica>"
					"</shard>",
					c[i].tcp_port);
	}
	for (i = 0; i < n; i++) {
		snprintf(extra, sizeof(extra),
			 "  <interserver_http_host>127.0.0.1</interserver_http_host>\n"
			 "  <interserver_http_port>%u</interserver_http_port>\n"
			 "  <remote_servers><" CH_CLUSTER ">%s</" CH_CLUSTER "></remote_servers>\n"
			 "  <zookeeper><node><host>127.0.0.1</host><port>%u</port></node>"
			 "</zookeeper>\n"
			 "  <macros><shard>%02zu</shard><replica>r%zu</replica></macros>\n"
			 "  <distributed_ddl><path>/clickhouse/task_queue/ddl</path>"
			 "</distributed_ddl>\n",
			 c[i].interserver_port, shards, z->port, i + 1, i + 1);
		ch_write_configs(&c[i], extra);
	}
	for (i = 0; i < n; i++)
		if (!ch_spawn(&c[i])) {
			test_print_log("clickhouse-server stderr", c[i].err);
			test_print_log("clickhouse-server error log", c[i].log);
			fail_msg("cluster server %zu did not start (ports %u, %u, %u)", i + 1,
				 c[i].http_port, c[i].tcp_port, c[i].interserver_port);
		}
}

/* Runs sql on c's HTTP interface, in database db unless NULL; returns its
 * answer (free it), failing the test on an error. */
static inline char *ch_query_db(const struct chsrv *c, const char *db, const char *sql)
{
	char url[192], *body = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&body, &len);
	CURL *h = curl_easy_init();
	long status = 0;
	CURLcode rc;

	assert_non_null(mem);
	assert_non_null(h);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/%s%s", c->http_port, db ? "?database=" : "",
		 db ? db : "");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, sql);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	fclose(mem);
	if (status != 200)
		fail_msg("ClickHouse on %u: %s: %s %ld %s", c->http_port, sql,
			 curl_easy_strerror(rc), status, body ? body : "");
	return body;
}

/* The same in the server's default database. */
static inline char *ch_query(const struct chsrv *c, const char *sql)
{
	return ch_query_db(c, NULL, sql);
}

/* Runs sql on c, its answer discarded. */
static inline void ch_exec(const struct chsrv *c, const char *sql)
{
	free(ch_query(c, sql));
}

/* The number sql (a one-row, one-column query such as a count()) answers on c
 * in database db unless NULL; fails the test when the answer is not a number. */
static inline uint64_t ch_query_number_db(const struct chsrv *c, const char *db, const char *sql)
{
	char *body = ch_query_db(c, db, sql);
	uint64_t v;

	if (!body || body[0] < '0' || body[0] > '9')
		fail_msg("%s: not a number: %s", sql, body ? body : "");
	v = strtoull(body, NULL, 10);
	free(body);
	return v;
}

static inline uint64_t ch_query_number(const struct chsrv *c, const char *sql)
{
	return ch_query_number_db(c, NULL, sql);
}

/* Schema files ch_schema__run() applies for ch_make_at_version(): each
 * statement in database ctx->db of ctx->c. */
struct ch_old_db {
	const struct chsrv *c;
	const char *db;
};

static inline int ch_old_statement(void *ctx, const char *sql)
{
	const struct ch_old_db *o = ctx;

	free(ch_query_db(o->c, o->db, sql));
	return 0;
}

/* Makes database db on c what a collector of schema version left, without its
 * rows: schema files 001 to version applied as that build did (as written, on
 * one server), their versions recorded in schema_migrations. For the upgrade
 * tests, which then fill it. */
static inline void ch_make_at_version(const struct chsrv *c, const char *db, size_t version)
{
	struct ch_schema_target t = { db, "", ch_migrations, version };
	struct ch_old_db o = { c, db };
	char sql[256];
	size_t i;

	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
	ch_exec(c, sql);
	free(ch_query_db(c, db,
			 "CREATE TABLE schema_migrations (version UInt32) ENGINE = MergeTree() "
			 "ORDER BY version"));
	for (i = 0; i < version; i++) {
		assert_int_equal(
			ch_schema__run(&t, ch_migrations[i], ch_old_statement, &o, NULL, 0), 0);
		snprintf(sql, sizeof(sql), "INSERT INTO %s.schema_migrations VALUES (%zu)", db,
			 i + 1);
		ch_exec(c, sql);
	}
}

#endif
