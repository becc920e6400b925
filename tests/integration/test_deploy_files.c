/* The files of deploy/ that a fleet installs (docs/deploy.md), checked by the tools
 * that read them, against least privilege:
 *   - the systemd units pass `systemd-analyze verify` (with ExecStart pointed at the
 *     built binary), the agent's hold exactly CAP_BPF CAP_PERFMON CAP_SYS_PTRACE
 *     CAP_DAC_READ_SEARCH CAP_SYSLOG (ambient and bounding), with
 *     NoNewPrivileges, its user and state directory, and none of the options
 *     that would break it (ProtectKernelLogs drops CAP_SYSLOG, ProtectProc and
 *     PrivateUsers hide or unreach the processes); the collector's hold no
 *     capability, a dynamic user, ProtectSystem=strict and a loopback default;
 *     `systemd-analyze security --offline` exposure is printed and bounded;
 *   - the sysusers file makes the agent's user (systemd-sysusers into a scratch
 *     root);
 *   - the Kubernetes manifests parse (python3-yaml) and hold: the agent DaemonSet
 *     with hostPID, not privileged, exactly those capabilities added and ALL
 *     dropped, a read-only root file system, requests and limits; the collector
 *     StatefulSet with a volume claim, no capability, non-root, read-only root,
 *     and a Service on 7171; its ClickHouse variant a Deployment of several
 *     stateless replicas (no volume), its location's credentials a file of a
 *     Secret mounted read-only with mode 0440 under an fsGroup (what the store's
 *     credentials rule accepts), readiness on /healthz but not liveness (it says
 *     degraded while ClickHouse is away), a disruption budget, the same Service;
 *   - TLS everywhere a secret travels: the agent's --collector is https:// with
 *     --ca-file mounted from a ConfigMap or Secret, the collector has --tls-cert
 *     and --tls-key from a Secret (the key 0440) and probes over HTTPS, no
 *     container argument holds an http:// URL, the ClickHouse location is
 *     clickhouse+https:// with its ca= mounted and no plaintext=1, and every
 *     Secret and ConfigMap mounted is one a manifest's header or docs/deploy.md
 *     says how to create;
 *   - collector.yaml's header is true: its openssl commands, run as written,
 *     make a certificate the collector serves and a client holding only the CA
 *     accepts for the Service's name (and refuses for another).
 * The expected sets are written here from the issue, not read from the files.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "testutil.h"
#include "integration/collectortest.h"

#define AGENT_CAPS	       "CAP_BPF CAP_DAC_READ_SEARCH CAP_PERFMON CAP_SYSLOG CAP_SYS_PTRACE"
#define MAX_AGENT_EXPOSURE     5.0 /* measured 3.9 */
#define MAX_COLLECTOR_EXPOSURE 2.0 /* measured 1.3 */

static char dir[64];

static int group_setup(void **state)
{
	(void)state;
	return test_mkdtemp(dir, sizeof(dir)) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	test_rm_rf(dir);
	return 0;
}

/* The value of "key=" in a unit's text (the last one), or NULL. */
static char *unit_value(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *p = text, *hit = NULL, *end;
	char *v;

	for (; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, klen) && p[klen] == '=')
			hit = p + klen + 1;
	}
	if (!hit)
		return NULL;
	end = strchr(hit, '\n');
	v = strndup(hit, end ? (size_t)(end - hit) : strlen(hit));
	assert_non_null(v);
	return v;
}

/* Words of s sorted and joined by one space. */
static char *sorted_words(const char *s)
{
	char *copy = strdup(s), *words[32], *tok, *save = NULL, *out;
	size_t n = 0, i, j, len = 0;

	assert_non_null(copy);
	for (tok = strtok_r(copy, " \t", &save); tok && n < 32; tok = strtok_r(NULL, " \t", &save))
		words[n++] = tok;
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(words[j - 1], words[j]) > 0; j--) {
			char *t = words[j];

			words[j] = words[j - 1];
			words[j - 1] = t;
		}
	out = calloc(1, strlen(s) + 2);
	assert_non_null(out);
	for (i = 0; i < n; i++)
		len += (size_t)sprintf(out + len, "%s%s", i ? " " : "", words[i]);
	free(copy);
	return out;
}

static void assert_value(const char *text, const char *key, const char *want)
{
	char *v = unit_value(text, key);

	if (!v || strcmp(v, want))
		fail_msg("%s=%s, want %s", key, v ? v : "(absent)", want);
	free(v);
}

static void assert_caps(const char *text, const char *key, const char *want)
{
	char *v = unit_value(text, key), *s;

	assert_non_null(v);
	s = sorted_words(v);
	if (strcmp(s, want))
		fail_msg("%s=%s, want exactly %s", key, v, want);
	free(s);
	free(v);
}

/* The unit copied into dir with ExecStart's binary the built one. */
static char *install_unit(const char *name, char *path, size_t len)
{
	char bin[256], abs[PATH_MAX], *text;
	int status;

	/* ExecStart wants an absolute path */
	assert_non_null(realpath(test_build_path(bin, sizeof(bin), "smolder"), abs));
	snprintf(path, len, "%s/%s", dir, name);
	text = test_shell(dir, &status,
			  "sed 's|/usr/bin/smolder|%s|' 'deploy/systemd/%s' > '%s' && cat '%s'",
			  abs, name, path, path);
	assert_int_equal(status, 0);
	return text;
}

static double exposure(const char *path)
{
	char *out, *p;
	double v = -1;
	int status;

	out = test_shell(dir, &status, "cd '%s' && systemd-analyze security --offline=yes '%s'",
			 dir, path);
	p = out ? strstr(out, "Overall exposure level for ") : NULL;
	if (p && (p = strchr(p, ':')))
		v = strtod(p + 1, NULL);
	free(out);
	return v;
}

static void test_systemd_units(void **state)
{
	char agent[160], coll[160], *a, *c, *out, *v;
	double ea, ec;
	int status;

	(void)state;
	if (access("/usr/bin/systemd-analyze", X_OK)) {
		test_skip("systemd-analyze missing (package systemd)");
	}
	a = install_unit("smolder-agent.service", agent, sizeof(agent));
	c = install_unit("smolder-collector.service", coll, sizeof(coll));
	out = test_shell(dir, &status, "cd '%s' && systemd-analyze verify '%s' '%s'", dir, agent,
			 coll);
	if (status != 0 || (out && *out)) {
		print_message("%s", out ? out : "");
		fail_msg("systemd-analyze verify: status %d", status);
	}
	free(out);

	assert_caps(a, "AmbientCapabilities", AGENT_CAPS);
	assert_caps(a, "CapabilityBoundingSet", AGENT_CAPS);
	assert_value(a, "NoNewPrivileges", "yes");
	assert_value(a, "User", "smolder");
	assert_value(a, "StateDirectory", "smolder-agent");
	assert_value(a, "ProtectSystem", "strict");
	/* each of these would break the agent */
	assert_null(unit_value(a, "ProtectKernelLogs"));
	assert_null(unit_value(a, "ProtectProc"));
	assert_null(unit_value(a, "PrivateUsers"));
	assert_null(unit_value(a, "DynamicUser"));

	v = unit_value(c, "CapabilityBoundingSet");
	assert_non_null(v);
	assert_string_equal(v, "");
	free(v);
	v = unit_value(c, "AmbientCapabilities");
	assert_true(!v || !*v);
	free(v);
	assert_value(c, "DynamicUser", "yes");
	assert_value(c, "StateDirectory", "smolder");
	assert_value(c, "ProtectSystem", "strict");
	assert_value(c, "NoNewPrivileges", "yes");
	assert_value(c, "Environment", "\"SMOLDER_COLLECTOR_ARGS=--listen 127.0.0.1:7171\"");

	ea = exposure(agent);
	ec = exposure(coll);
	print_message("  systemd-analyze security: agent %.1f, collector %.1f (0 safe .. 10 "
		      "exposed)\n",
		      ea, ec);
	assert_true(ea >= 0 && ea <= MAX_AGENT_EXPOSURE);
	assert_true(ec >= 0 && ec <= MAX_COLLECTOR_EXPOSURE);
	free(a);
	free(c);
}

static void test_sysusers(void **state)
{
	char *out, *passwd, path[160], cwd[512];
	int status;

	(void)state;
	if (access("/usr/bin/systemd-sysusers", X_OK)) {
		test_skip("systemd-sysusers missing (package systemd)");
	}
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	out = test_shell(dir, &status,
			 "mkdir -p '%s/root/etc' && systemd-sysusers --root='%s/root' "
			 "'%s/deploy/systemd/smolder.sysusers'",
			 dir, dir, cwd);
	assert_int_equal(status, 0);
	free(out);
	snprintf(path, sizeof(path), "%s/root/etc/passwd", dir);
	passwd = test_read_file(path);
	assert_non_null(passwd);
	assert_non_null(strstr(passwd, "smolder:x:"));
	assert_non_null(strstr(passwd, ":/usr/sbin/nologin"));
	free(passwd);
}

/* The manifests' checks, in Python over python3-yaml's parse; prints "ok N". */
static const char manifest_checks[] =
	"import re, sys, yaml\n"
	"n = 0\n"
	"def check(cond, what):\n"
	"    global n\n"
	"    if not cond:\n"
	"        sys.exit('manifest check failed: ' + what)\n"
	"    n += 1\n"
	"docs = {}\n"
	"for f in sys.argv[1:]:\n"
	"    for d in yaml.safe_load_all(open(f)):\n"
	"        docs[(d['kind'], d['metadata']['name'])] = d\n"
	"ds = docs[('DaemonSet', 'smolder-agent')]['spec']['template']['spec']\n"
	"check(ds.get('hostPID') is True, 'agent hostPID')\n"
	"a = ds['containers'][0]\n"
	"sc = a['securityContext']\n"
	"check(sc.get('privileged') in (None, False), 'agent not privileged')\n"
	"check(sc.get('allowPrivilegeEscalation') is False, 'agent no escalation')\n"
	"check(sc.get('readOnlyRootFilesystem') is True, 'agent read-only root')\n"
	"check(sorted(sc['capabilities']['add']) == sorted(['BPF', 'PERFMON', 'SYS_PTRACE', "
	"'DAC_READ_SEARCH', 'SYSLOG']), 'agent capabilities exactly')\n"
	"check(sc['capabilities']['drop'] == ['ALL'], 'agent drops ALL')\n"
	"for k in ('requests', 'limits'):\n"
	"    for r in ('cpu', 'memory'):\n"
	"        check(r in a['resources'][k], 'agent ' + k + ' ' + r)\n"
	"check(a['args'][0] == 'agent', 'agent command')\n"
	"def workload_common(w, what):\n"
	"    ps = w['template']['spec']\n"
	"    check(ps['securityContext']['runAsNonRoot'] is True, what + ' non-root')\n"
	"    c = ps['containers'][0]\n"
	"    csc = c['securityContext']\n"
	"    check(csc['capabilities']['drop'] == ['ALL'] and 'add' not in csc['capabilities'], "
	"what + ' no capability')\n"
	"    check(csc.get('readOnlyRootFilesystem') is True, what + ' read-only root')\n"
	"    check(csc.get('allowPrivilegeEscalation') is False, what + ' no escalation')\n"
	"    check(any(a.startswith('--ingest-token-file=') for a in c['args']) and "
	"any(a.startswith('--query-token-file=') for a in c['args']), what + ' tokens')\n"
	"    for k in ('requests', 'limits'):\n"
	"        for r in ('cpu', 'memory'):\n"
	"            check(r in c['resources'][k], what + ' ' + k + ' ' + r)\n"
	"    check(c['readinessProbe']['httpGet']['path'] == '/healthz', what + ' readiness')\n"
	"    return ps, c\n"
	"if ('StatefulSet', 'smolder-collector') in docs:\n"
	"    st = docs[('StatefulSet', 'smolder-collector')]['spec']\n"
	"    check(st['replicas'] == 1, 'SQLite: one collector')\n"
	"    check(st['volumeClaimTemplates'][0]['metadata']['name'] == 'data', "
	"'collector volume')\n"
	"    ps, c = workload_common(st, 'collector')\n"
	"    check(any(m['mountPath'] == '/var/lib/smolder' and m['name'] == 'data' for m in "
	"c['volumeMounts']), 'collector data mount')\n"
	"    check('--db=/var/lib/smolder/smolder.db' in c['args'], 'collector db on the volume')\n"
	"else:\n"
	"    st = docs[('Deployment', 'smolder-collector')]['spec']\n"
	"    check(st['replicas'] >= 2, 'ClickHouse: several collectors')\n"
	"    check('volumeClaimTemplates' not in st, 'ClickHouse: stateless collectors')\n"
	"    ps, c = workload_common(st, 'ClickHouse collector')\n"
	"    check(not any('persistentVolumeClaim' in v or 'hostPath' in v for v in "
	"ps.get('volumes', [])), 'ClickHouse: no volume of its own')\n"
	"    check('httpGet' not in c['livenessProbe'], 'ClickHouse: liveness is not the degraded "
	"health')\n"
	"    db = [a for a in c['args'] if a.startswith('--db=')]\n"
	"    check(len(db) == 1 and db[0].startswith('--db=clickhouse'), 'ClickHouse "
	"location')\n"
	"    check('?credentials=' in db[0], 'ClickHouse credentials from a file')\n"
	"    cred = db[0].split('credentials=')[1].split('&')[0]\n"
	"    mdir, key = cred.rsplit('/', 1)\n"
	"    m = [m for m in c['volumeMounts'] if m['mountPath'] == mdir]\n"
	"    check(len(m) == 1 and m[0].get('readOnly') is True, 'credentials mounted read-only')\n"
	"    v = [v for v in ps['volumes'] if v['name'] == m[0]['name']][0]\n"
	"    check('secret' in v and any(i['path'] == key for i in v['secret']['items']), "
	"'credentials from a Secret')\n"
	"    check(v['secret']['defaultMode'] == 0o440, 'credentials 0440')\n"
	"    check(ps['securityContext'].get('fsGroup') not in (None, 0), 'credentials under an "
	"fsGroup')\n"
	"    pdb = docs[('PodDisruptionBudget', 'smolder-collector')]['spec']\n"
	"    check(pdb['selector'] == st['selector'], 'disruption budget selects the collectors')\n"
	"svc = docs[('Service', 'smolder-collector')]['spec']\n"
	"check(svc['ports'][0]['port'] == 7171, 'service port')\n"
	"check(svc['selector'] == st['selector']['matchLabels'], 'service selects the collector')\n"
	"# TLS: no token or password in clear. A file an argument names, mounted from\n"
	"# a volume of the pod: that volume.\n"
	"def source(ps, c, path):\n"
	"    d, f = path.rsplit('/', 1)\n"
	"    m = [m for m in c['volumeMounts'] if m['mountPath'] == d]\n"
	"    check(len(m) == 1 and m[0].get('readOnly') is True, path + ' mounted read-only')\n"
	"    v = [v for v in ps['volumes'] if v['name'] == m[0]['name']][0]\n"
	"    src = v.get('secret') or v.get('configMap')\n"
	"    check(src is not None and any(i['path'] == f for i in src['items']), path + ' from a "
	"Secret or ConfigMap')\n"
	"    return v\n"
	"def arg(c, name):\n"
	"    v = [a.split('=', 1)[1] for a in c['args'] if a.startswith(name + '=')]\n"
	"    check(len(v) == 1, c['name'] + ' has ' + name)\n"
	"    return v[0]\n"
	"check(arg(a, '--collector').startswith('https://'), 'agent sends its token over https')\n"
	"source(ds, a, arg(a, '--token-file'))\n"
	"source(ds, a, arg(a, '--ca-file'))\n"
	"source(ps, c, arg(c, '--tls-cert'))\n"
	"key = source(ps, c, arg(c, '--tls-key'))\n"
	"check('secret' in key and key['secret']['defaultMode'] == 0o440, 'TLS key from a Secret, "
	"0440')\n"
	"check(c['readinessProbe']['httpGet'].get('scheme') == 'HTTPS', 'readiness over https')\n"
	"check('httpGet' not in c['livenessProbe'] or c['livenessProbe']['httpGet'].get('scheme') "
	"== 'HTTPS', 'liveness over https')\n"
	"check(svc['ports'][0]['targetPort'] == c['ports'][0]['name'] == 'https', 'the Service "
	"port is https')\n"
	"for d in docs.values():\n"
	"    for k in d.get('spec', {}).get('template', {}).get('spec', {}).get('containers', "
	"[]):\n"
	"        for x in k.get('args', []):\n"
	"            check('http://' not in x, k['name'] + ': no plain http URL: ' + x)\n"
	"if ('Deployment', 'smolder-collector') in docs:\n"
	"    check(db[0].startswith('--db=clickhouse+https://'), 'ClickHouse over https')\n"
	"    check('plaintext=1' not in db[0], 'ClickHouse credentials never in clear')\n"
	"    source(ps, c, db[0].split('ca=')[1].split('&')[0])\n"
	"# every Secret and ConfigMap mounted is one that a manifest's header or\n"
	"# docs/deploy.md says how to create\n"
	"text = ''.join(open(f).read() for f in sys.argv[1:] + ['docs/deploy.md'])\n"
	"made = set(re.findall(r'create secret (?:generic|tls) ([a-z0-9-]+)', text) + "
	"re.findall(r'create configmap ([a-z0-9-]+)', text))\n"
	"for d in docs.values():\n"
	"    for v in d.get('spec', {}).get('template', {}).get('spec', {}).get('volumes', []):\n"
	"        name = (v.get('secret') or {}).get('secretName') or (v.get('configMap') or "
	"{}).get('name')\n"
	"        if name:\n"
	"            check(name in made, 'how to create ' + name + ' is written')\n"
	"print('ok', n)\n";

/* Each collector variant beside the agent: SQLite (one StatefulSet replica) and
 * ClickHouse (a Deployment of stateless replicas); they are alternatives, with
 * the same Service. */
static void test_k8s_manifests(void **state)
{
	static const char *const variants[] = { "deploy/k8s/collector.yaml",
						"deploy/k8s/collector-clickhouse.yaml" };
	char script[160], *out;
	int status;
	size_t i;
	FILE *f;

	(void)state;
	snprintf(script, sizeof(script), "%s/checks.py", dir);
	f = fopen(script, "w");
	assert_non_null(f);
	fputs(manifest_checks, f);
	fclose(f);
	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		out = test_shell(dir, &status, "/usr/bin/python3 '%s' deploy/k8s/agent.yaml %s",
				 script, variants[i]);
		print_message("  %s: %s", variants[i], out ? out : "(no output)\n");
		assert_int_equal(status, 0);
		assert_non_null(strstr(out, "ok "));
		assert_true(strtol(strstr(out, "ok ") + 3, NULL, 10) >= 45);
		free(out);
	}
}

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
	(void)data;
	(void)ctx;
	return size * n;
}

/* GET https://NAME:port/healthz, NAME resolved to 127.0.0.1, verified against
 * ca: curl's result, *status the HTTP status. */
static CURLcode get_healthz_as(const char *name, unsigned port, const char *ca, long *status)
{
	char url[160], resolve[160], errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *r;
	CURL *h = curl_easy_init();
	CURLcode rc;

	assert_non_null(h);
	snprintf(url, sizeof(url), "https://%s:%u/healthz", name, port);
	snprintf(resolve, sizeof(resolve), "%s:%u:127.0.0.1", name, port);
	r = curl_slist_append(NULL, resolve);
	assert_non_null(r);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_RESOLVE, r);
	curl_easy_setopt(h, CURLOPT_CAINFO, ca);
	curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	*status = 0;
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	else
		print_message("  %s: %s\n", url, errbuf);
	curl_easy_cleanup(h);
	curl_slist_free_all(r);
	return rc;
}

/* collector.yaml's header is true: its openssl commands, run as written, make a
 * CA and a certificate that the collector serves with --tls-cert/--tls-key and
 * that a client holding only ca.crt (the agents' --ca-file) accepts for the
 * Service's name, and refuses for another name. */
static void test_k8s_tls_commands(void **state)
{
	char *yaml, *line, *save = NULL, *out, tls[160], cert[200], key[200], ca[200];
	/* both tokens, as collector.yaml runs it: the Host check is a tokenless
	 * collector's, and here the Service's names must reach /healthz */
	const char *extra[] = {
		"--tls-cert",	 cert,		"--tls-key", key, "--ingest-token", "ingest-t0k3n",
		"--query-token", "query-t0k3n", NULL
	};
	struct coll c;
	long status;
	int ran = 0, st;

	(void)state;
	if (access("/usr/bin/openssl", X_OK)) {
		test_skip("openssl missing (make deps installs it)");
	}
	coll_env();
	snprintf(tls, sizeof(tls), "%s/tls", dir);
	assert_int_equal(mkdir(tls, 0700), 0);
	yaml = test_read_file("deploy/k8s/collector.yaml");
	assert_non_null(yaml);
	for (line = strtok_r(yaml, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "#   openssl ", 12) && strncmp(line, "#   printf ", 11))
			continue;
		out = test_shell(dir, &st, "cd '%s' && (%s)", tls, line + 4);
		if (st != 0)
			fail_msg("collector.yaml's '%s': status %d: %s", line + 4, st,
				 out ? out : "");
		free(out);
		ran++;
	}
	free(yaml);
	assert_true(ran >= 4); /* CA, key and request, names, signature */
	snprintf(cert, sizeof(cert), "%s/tls.crt", tls);
	snprintf(key, sizeof(key), "%s/tls.key", tls);
	snprintf(ca, sizeof(ca), "%s/ca.crt", tls);
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the collector did not start on collector.yaml's certificate");
	}
	assert_int_equal(get_healthz_as("smolder-collector.smolder.svc", c.port, ca, &status),
			 CURLE_OK);
	assert_int_equal(status, 200);
	assert_int_equal(
		get_healthz_as("smolder-collector.smolder.svc.cluster.local", c.port, ca, &status),
		CURLE_OK);
	assert_int_equal(get_healthz_as("smolder-collector.other.svc", c.port, ca, &status),
			 CURLE_PEER_FAILED_VERIFICATION);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_systemd_units),
		cmocka_unit_test(test_sysusers),
		cmocka_unit_test(test_k8s_manifests),
		cmocka_unit_test_teardown(test_k8s_tls_commands, coll_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
