/* `smolder flame | diff | top | series | labels`: queries from the command line,
 * against a collector (--url, HTTP) or a store file directly (--db). Both paths
 * take the same parameters as the HTTP API (query/query.h) and print the same
 * bytes; top and series default to aligned tables for people, --format json for
 * scripts. */
#include "cli/query.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "query/query.h"
#include "store/store.h"

static const char usage[] =
	"usage: smolder flame|diff|top|series|labels [options]\n"
	"\n"
	"  --url URL          collector to ask (default http://127.0.0.1:7171)\n"
	"  --db PATH          read a store file directly instead\n"
	"  --token T          query token for --url\n"
	"  --from T, --to T   time range: RFC 3339, unix seconds, now, -15m (default -1h..now)\n"
	"  --since DUR        the last DUR, e.g. 15m (same as --from -DUR)\n"
	"  --where K=V        label selection, repeatable (pid, comm, exe, host, service...)\n"
	"  --format F         flame: json folded svg html pprof speedscope; diff: json folded\n"
	"                     svg html; top, series: table json (default table)\n"
	"  -o FILE            write to FILE (default stdout)\n"
	"  diff:   --before FROM,TO --after FROM,TO [--before-where K=V] [--after-where K=V]\n"
	"  --lines            frames told apart by line, not only by function\n"
	"  top:    --limit N (default 50), --sort self|total (default self)\n"
	"  series: --step DUR (default range/60)\n"
	"  labels: --name KEY lists the values of one label\n";

static int run_db(const char *db, enum query_kind kind, struct query_args *p, FILE *out)
{
	struct store_options so = { 0 };
	const char *type;
	char why[256] = "";
	struct store *s;
	struct query q;
	int err;

	err = query_parse(&q, kind, query_args__get, p, (int64_t)time(NULL), why, sizeof(why));
	if (err) {
		fprintf(stderr, "smolder: %s\n", why);
		return 2;
	}
	err = store__open(db, &so, &s);
	if (err) {
		fprintf(stderr, "smolder: cannot open %s: %s\n", db, strerror(-err));
		query_free(&q);
		return 1;
	}
	err = query_run(s, &q, out, &type, why, sizeof(why));
	if (err)
		fprintf(stderr, "smolder: %s\n", why);
	store__close(s);
	query_free(&q);
	return err ? 1 : 0;
}

static size_t write_out(char *data, size_t size, size_t n, void *ctx)
{
	return fwrite(data, size, n, ctx);
}

static int run_url(const char *base, const char *token, const char *path, struct query_args *p,
		   FILE *out)
{
	char *url = NULL, *tmp, *buf = NULL, auth[1100];
	size_t len = 0, i;
	struct curl_slist *h = NULL;
	FILE *body = open_memstream(&buf, &len);
	CURL *c = curl_easy_init();
	long status = 0;
	CURLcode rc;
	int ret = 1;

	if (!body || !c || asprintf(&url, "%s%s?", base, path) < 0)
		goto out;
	for (i = 0; i < p->n; i++) {
		char *v = curl_easy_escape(c, p->values[i], 0);

		if (!v || asprintf(&tmp, "%s%s%s=%s", url, i ? "&" : "", p->names[i], v) < 0) {
			curl_free(v);
			goto out;
		}
		curl_free(v);
		free(url);
		url = tmp;
	}
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_out);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
	rc = curl_easy_perform(c);
	fclose(body);
	body = NULL;
	if (rc != CURLE_OK) {
		fprintf(stderr, "smolder: %s: %s\n", base, curl_easy_strerror(rc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		fprintf(stderr, "smolder: HTTP %ld: %.*s", status, (int)len, buf);
		ret = status == 400 ? 2 : 1;
		goto out;
	}
	ret = fwrite(buf, 1, len, out) == len ? 0 : 1;
out:
	if (body)
		fclose(body);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	free(buf);
	return ret;
}

/* "FROM,TO" into two parameters. */
static bool add_range(struct query_args *p, const char *prefix, char *value)
{
	char *comma = strchr(value, ',');

	if (!comma)
		return false;
	*comma = '\0';
	return query_args__add(p, strcmp(prefix, "before") == 0 ? "before_from" : "after_from",
			       value) &&
	       query_args__add(p, strcmp(prefix, "before") == 0 ? "before_to" : "after_to",
			       comma + 1);
}

int query_main(int argc, char **argv)
{
	static const struct {
		const char *cmd, *path;
		enum query_kind kind;
	} cmds[] = {
		{ "flame", "/api/v1/flamegraph", QUERY_FLAMEGRAPH },
		{ "diff", "/api/v1/diff", QUERY_DIFF },
		{ "top", "/api/v1/top", QUERY_TOP },
		{ "series", "/api/v1/series", QUERY_SERIES },
		{ "labels", "/api/v1/labels", QUERY_LABELS },
	};
	const char *url = "http://127.0.0.1:7171", *db = NULL, *token = NULL, *output = NULL;
	char since[64], path[512];
	struct query_args p = { 0 };
	bool has_format = false;
	size_t c;
	FILE *out = stdout;
	int i, ret;

	for (c = 0; c < sizeof(cmds) / sizeof(cmds[0]) && strcmp(argv[0], cmds[c].cmd); c++)
		;
	if (c == sizeof(cmds) / sizeof(cmds[0]))
		return 2;
	snprintf(path, sizeof(path), "%s", cmds[c].path);
	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool ok = true;

		if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			fputs(usage, stdout);
			return 0;
		}
		if (!strcmp(o, "--lines")) {
			if (!query_args__add(&p, "granularity", "line"))
				return 2;
			continue;
		}
		if (!v) {
			fprintf(stderr, "smolder %s: '%s' needs a value\n%s", argv[0], o, usage);
			return 2;
		}
		i++;
		if (!strcmp(o, "--url"))
			url = v;
		else if (!strcmp(o, "--db"))
			db = v;
		else if (!strcmp(o, "--token"))
			token = v;
		else if (!strcmp(o, "-o") || !strcmp(o, "--output"))
			output = v;
		else if (!strcmp(o, "--from") || !strcmp(o, "--to") || !strcmp(o, "--where") ||
			 !strcmp(o, "--format") || !strcmp(o, "--limit") || !strcmp(o, "--step") ||
			 !strcmp(o, "--type"))
			ok = query_args__add(&p, o + 2, v), has_format |= !strcmp(o, "--format");
		else if (!strcmp(o, "--sort"))
			ok = query_args__add(&p, "sort", v);
		else if (!strcmp(o, "--before-where"))
			ok = query_args__add(&p, "before_where", v);
		else if (!strcmp(o, "--after-where"))
			ok = query_args__add(&p, "after_where", v);
		else if (!strcmp(o, "--since"))
			ok = snprintf(since, sizeof(since), "-%s", v) < (int)sizeof(since) &&
			     query_args__add(&p, "from", since);
		else if (!strcmp(o, "--before") || !strcmp(o, "--after"))
			ok = add_range(&p, o + 2, argv[i]);
		else if (!strcmp(o, "--name") && cmds[c].kind == QUERY_LABELS) {
			snprintf(path, sizeof(path), "/api/v1/labels/%s/values", v);
			ok = query_args__add(&p, "name", v);
		} else {
			fprintf(stderr, "smolder %s: unknown option '%s'\n%s", argv[0], o, usage);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "smolder %s: bad value for %s: '%s'\n", argv[0], o, v);
			return 2;
		}
	}
	if (!has_format && (cmds[c].kind == QUERY_TOP || cmds[c].kind == QUERY_SERIES))
		query_args__add(&p, "format", "table");
	if (output && !(out = fopen(output, "we"))) {
		fprintf(stderr, "smolder: cannot write %s: %s\n", output, strerror(errno));
		return 1;
	}
	if (db) {
		enum query_kind kind = cmds[c].kind;

		if (kind == QUERY_LABELS && query_args__get(&p, "name", 0))
			kind = QUERY_LABEL_VALUES;
		ret = run_db(db, kind, &p, out);
	} else {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		ret = run_url(url, token, path, &p, out);
		curl_global_cleanup();
	}
	if (out != stdout && fclose(out) && !ret) {
		fprintf(stderr, "smolder: cannot write %s\n", output);
		ret = 1;
	}
	return ret;
}
