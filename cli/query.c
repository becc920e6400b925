/* `smolder flame | diff | top | series | labels | types`: queries from the command line,
 * against a collector (--url, HTTP; default $SMOLDER_URL, else
 * http://127.0.0.1:7171) or a store file directly (--db, opened read-only: a
 * query never creates or migrates a store). Both paths take the same parameters
 * as the HTTP API (query/query.h), refuse the same mistakes with the same
 * reasons, and print the same bytes; top and series default to aligned tables,
 * flame and diff to a text tree on a terminal (JSON otherwise), --format json for
 * scripts. Each subcommand has its own options and --help. Exit status: 0 ok, 1
 * failed (I/O, server, store), 2 bad usage (an option, a parameter, HTTP 400). */
#include "cli/query.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/outfile.h"
#include "common/token.h"
#include "query/query.h"
#include "query/timeparse.h"
#include "store/store.h"

#define DEFAULT_URL "http://127.0.0.1:7171"

#define K(k) (1u << (k))
#define ALL                                                                                        \
	(K(QUERY_FLAMEGRAPH) | K(QUERY_DIFF) | K(QUERY_TOP) | K(QUERY_SERIES) | K(QUERY_LABELS) |  \
	 K(QUERY_TYPES))
#define RANGED	(ALL & ~K(QUERY_DIFF))
#define PROFILE (K(QUERY_FLAMEGRAPH) | K(QUERY_DIFF) | K(QUERY_TOP))

static const char common_help[] =
	"\n"
	"where to ask (the same answers either way):\n"
	"  --url URL          collector to ask (default $SMOLDER_URL, else " DEFAULT_URL ")\n"
	"  --db PATH          read a store file directly, read-only (never created)\n"
	"  --token-file F     query token for --url, read from F (default $SMOLDER_TOKEN_FILE)\n"
	"  --token T          the token itself (discouraged: other users see it in ps)\n"
	"  -o FILE            write to FILE, replaced whole once the answer is complete; a\n"
	"                     device or FIFO (/dev/null) is written in place (default stdout)\n"
	"\n"
	"times: 2026-11-30T23:44:47Z, 2026-11-30T23:44:47+01:00, 2026-11-30 23:44[:47]\n"
	"(no zone: local time, per TZ; one that does not exist when clocks go forward is\n"
	"refused, one that exists twice is the earlier), 2026-11-30 (local midnight),\n"
	"unix seconds, now, now-5m, -1h30m. Durations: 90s, 15m, 1h30m, 2d12h, 1w.\n"
	"exit status: 0 ok, 1 failed (I/O, server, store), 2 bad usage (option,\n"
	"parameter, HTTP 400).\n";

static const char range_help[] =
	"  --from T, --to T   time range (default the last hour: -1h..now)\n"
	"  --since DUR        the last DUR, e.g. 15m or 1h30m (same as --from -DUR;\n"
	"                     -15m works too; a time is --from's)\n"
	"  --where K=V        only label sets with label K=V; repeatable, all must hold.\n"
	"                     Keys: pid, comm, exe, host, service... (smolder labels);\n"
	"                     a key no label set in the range has is an error\n";

static const struct command {
	const char *cmd, *path;
	enum query_kind kind;
	const char *help;
} cmds[] = {
	{ "flame", "/api/v1/flamegraph", QUERY_FLAMEGRAPH,
	  "usage: smolder flame [options]\n"
	  "The flame graph of a time range: stacks summed over the range's samples.\n"
	  "\n"
	  "%s"
	  "  --format F         text (default on a terminal), json (default otherwise),\n"
	  "                     folded, svg, html, pprof, speedscope\n"
	  "  --type T           the profile type: cpu (default), offcpu, wall, alloc_space,\n"
	  "                     inuse_space, ... (an unknown name is refused with the list)\n"
	  "  --lines            frames told apart by line, not only by function\n"
	  "  --max-nodes N      json: only the N heaviest frames (16 or more)\n"
	  "%s"
	  "\n"
	  "examples:\n"
	  "  smolder flame --since 15m\n"
	  "  smolder flame --since 1h --where service=api --format svg -o api.svg\n"
	  "  smolder flame --from '2026-11-30 23:40' --to '2026-11-30 23:50' --format pprof -o "
	  "cpu.pb.gz\n" },
	{ "diff", "/api/v1/diff", QUERY_DIFF,
	  "usage: smolder diff --before FROM,TO --after FROM,TO [options]\n"
	  "A differential flame graph: what changed from one range (or label set) to another.\n"
	  "Both ranges are required.\n"
	  "\n"
	  "  --before FROM,TO   the baseline range\n"
	  "  --after FROM,TO    the range compared with it\n"
	  "  --where K=V        a label selection for both sides; repeatable\n"
	  "  --before-where K=V, --after-where K=V  a selection for one side only\n"
	  "  --format F         text (default on a terminal), json (default otherwise),\n"
	  "                     folded, svg, html\n"
	  "  --type T           the profile type: cpu (default), offcpu, wall, alloc_space,\n"
	  "                     inuse_space, ... (an unknown name is refused with the list)\n"
	  "  --lines            frames told apart by line, not only by function\n"
	  "  --max-nodes N      json: only the N heaviest frames (16 or more)\n"
	  "%s"
	  "\n"
	  "examples:\n"
	  "  smolder diff --before -2h,-1h --after -1h,now\n"
	  "  smolder diff --before -10m,-5m --after -5m,now --where service=api --format svg -o "
	  "d.svg\n"
	  "  smolder diff --before -1h,now --after -1h,now --before-where host=a --after-where "
	  "host=b\n" },
	{ "top", "/api/v1/top", QUERY_TOP,
	  "usage: smolder top [options]\n"
	  "Functions by self and total samples over a time range.\n"
	  "\n"
	  "%s"
	  "  --sort self|total  order by self samples (default) or total samples\n"
	  "  --limit N          at most N functions (default 50)\n"
	  "  --format F         table (default), json\n"
	  "  --lines            functions told apart by line\n"
	  "  --type T           the profile type: cpu (default), offcpu, wall, alloc_space,\n"
	  "                     inuse_space, ... (an unknown name is refused with the list)\n"
	  "%s"
	  "\n"
	  "examples:\n"
	  "  smolder top --since 5m\n"
	  "  smolder top --since 1h --sort total --limit 20\n"
	  "  smolder top --db smolder.db --where comm=python3 --format json\n" },
	{ "series", "/api/v1/series", QUERY_SERIES,
	  "usage: smolder series [options]\n"
	  "Samples per step over time, to find a spike.\n"
	  "\n"
	  "%s"
	  "  --step DUR         bucket length (default range/60, at least 10s)\n"
	  "  --function RE      also each step's samples whose stack holds a function\n"
	  "                     matching RE (POSIX extended, anywhere in the name) and\n"
	  "                     their share: a spike in what the CPU does, not how much\n"
	  "  --breakdown N      instead, the N (1-20) heaviest functions by self samples\n"
	  "                     and each one's share per step: what changed, unnamed\n"
	  "  --format F         table (default), json\n"
	  "  --type T           the profile type: cpu (default), offcpu, wall, alloc_space,\n"
	  "                     inuse_space, ... (an unknown name is refused with the list)\n"
	  "%s"
	  "\n"
	  "examples:\n"
	  "  smolder series --since 1h\n"
	  "  smolder series --since 1d --step 1h --where service=api\n"
	  "  smolder series --since 1h --function '^validate$' --where service=api\n"
	  "  smolder series --from 2026-11-30 --to 2026-12-01 --step 30m --format json\n" },
	{ "labels", "/api/v1/labels", QUERY_LABELS,
	  "usage: smolder labels [options]\n"
	  "The label keys in use over a time range, or the values of one (--name KEY),\n"
	  "among the label sets the selection (--where) picks.\n"
	  "\n"
	  "%s"
	  "  --name KEY         list the values of label KEY\n"
	  "  --format F         json (the only one)\n"
	  "%s"
	  "\n"
	  "examples:\n"
	  "  smolder labels --since 1h\n"
	  "  smolder labels --name comm --since 15m\n"
	  "  smolder labels --name pid --where comm=python3\n" },
	{ "types", "/api/v1/types", QUERY_TYPES,
	  "usage: smolder types [options]\n"
	  "The profile types with data over a time range, among the label sets the\n"
	  "selection (--where) picks: name (what --type takes), unit, aggregation (sum,\n"
	  "or average for gauges: a range answers the mean of their snapshots) and title.\n"
	  "\n"
	  "%s"
	  "  --format F         table (default), json\n"
	  "%s"
	  "\n"
	  "examples:\n"
	  "  smolder types --since 1h\n"
	  "  smolder types --since 1d --where service=api --format json\n" },
};

/* The options: the parameter each sets (NULL: handled here), whether it takes a
 * value, and the commands that take it. */
static const struct option {
	const char *opt, *param;
	bool value;
	unsigned kinds;
} options[] = {
	{ "--url", NULL, true, ALL },
	{ "--db", NULL, true, ALL },
	{ "--token", NULL, true, ALL },
	{ "--token-file", NULL, true, ALL },
	{ "-o", NULL, true, ALL },
	{ "--output", NULL, true, ALL },
	{ "--from", "from", true, RANGED },
	{ "--to", "to", true, RANGED },
	{ "--since", NULL, true, RANGED },
	{ "--where", "where", true, ALL },
	{ "--format", "format", true, ALL },
	{ "--type", "type", true, PROFILE | K(QUERY_SERIES) },
	{ "--lines", NULL, false, PROFILE },
	{ "--max-nodes", "max_nodes", true, K(QUERY_FLAMEGRAPH) | K(QUERY_DIFF) },
	{ "--limit", "limit", true, K(QUERY_TOP) },
	{ "--sort", "sort", true, K(QUERY_TOP) },
	{ "--step", "step", true, K(QUERY_SERIES) },
	{ "--function", "function", true, K(QUERY_SERIES) },
	{ "--breakdown", "breakdown", true, K(QUERY_SERIES) },
	{ "--name", "name", true, K(QUERY_LABELS) },
	{ "--before", NULL, true, K(QUERY_DIFF) },
	{ "--after", NULL, true, K(QUERY_DIFF) },
	{ "--before-where", "before_where", true, K(QUERY_DIFF) },
	{ "--after-where", "after_where", true, K(QUERY_DIFF) },
};

static void print_help(const struct command *c, FILE *f)
{
	fprintf(f, c->help, c->kind == QUERY_DIFF ? common_help : range_help, common_help);
}

/* The reason a collector gave for a refusal, as a sentence: the string of its
 * {"error":"..."} body unescaped, or else the body's first line (a proxy's
 * page, say), control characters dropped. */
static void http_reason(const char *body, size_t len, char *out, size_t size)
{
	static const char key[] = "{\"error\":\"";
	size_t i = 0, n = 0;
	bool json = len >= sizeof(key) - 1 && !memcmp(body, key, sizeof(key) - 1);

	if (json)
		i = sizeof(key) - 1;
	for (; i < len && n + 1 < size; i++) {
		char ch = body[i];

		if (json && ch == '"')
			break;
		if (json && ch == '\\' && i + 1 < len) {
			ch = body[++i];
			if (ch == 'n' || ch == 't' || ch == 'r')
				ch = ' ';
			else if (ch == 'u') /* the collector escapes none; a proxy might */
				ch = '?', i += i + 4 < len ? 4 : 0;
		} else if (!json && ch == '\n') {
			break;
		}
		if ((unsigned char)ch >= 0x20 && ch != 0x7f)
			out[n++] = ch;
	}
	out[n] = '\0';
	if (!n)
		snprintf(out, size, "the collector gave no reason");
}

/* The one-line message and exit status of a store that cannot be opened. */
static int open_failed(const char *db, int err, const char *why)
{
	/* the backend said why: the guesses below but -EPROTO's are SQLite's */
	if (why[0] && err != -EPROTO) {
		fprintf(stderr, "smolder: cannot open the store %s: %s\n", db, why);
		return 1;
	}
	switch (err) {
	case -ENOENT:
		fprintf(stderr,
			"smolder: no store at %s: check the path (--db), or start "
			"'smolder up' or 'smolder collector --db %s' to make one\n",
			db, db);
		break;
	case -EPROTO:
		fprintf(stderr,
			"smolder: %s is a store of another schema version (or one whose "
			"conversion to profile blocks is not finished): query it with the "
			"smolder that wrote it, or let this smolder's collector migrate it "
			"(smolder collector --db %s)\n",
			db, db);
		break;
	case -EINVAL:
		fprintf(stderr,
			"smolder: %s is not in WAL mode (a rollback journal), so reading it "
			"would block its writer: open it once with 'smolder collector --db %s', "
			"which switches it\n",
			db, db);
		break;
	case -EIO:
	case -ENOTSUP:
		fprintf(stderr, "smolder: %s is not a smolder store (not an SQLite database?)\n",
			db);
		break;
	case -EPROTONOSUPPORT:
		fprintf(stderr,
			"smolder: no store backend serves %s: it takes " STORE_LOCATION_FORMS "\n",
			db);
		break;
	default:
		fprintf(stderr, "smolder: cannot open the store %s: %s\n", db, strerror(-err));
	}
	return 1;
}

static int run_db(const char *db, enum query_kind kind, struct query_args *p, FILE *out)
{
	struct store_options so = { .read_only = true };
	const char *type;
	char why[256] = "";
	struct store *s;
	struct query q;
	int err, ret = 1;

	err = query_parse(&q, kind,
			  &(struct query_params){ query_args__get, query_args__name_at, p },
			  (int64_t)time(NULL), why, sizeof(why));
	if (err) {
		fprintf(stderr, "smolder: %s\n", why);
		return 2;
	}
	err = store__open_why(db, &so, &s, why, sizeof(why));
	if (err) {
		query_free(&q);
		return open_failed(db, err, why);
	}
	err = query_check_keys(s, &q, why, sizeof(why));
	if (err) {
		fprintf(stderr, "smolder: %s\n", why);
		ret = err == -EINVAL ? 2 : 1;
		goto out;
	}
	err = query_run(s, &q, out, &type, why, sizeof(why));
	if (err)
		fprintf(stderr, "smolder: %s: %s\n", db, why);
	ret = err ? 1 : 0;
out:
	store__close(s);
	query_free(&q);
	return ret;
}

static size_t write_out(char *data, size_t size, size_t n, void *ctx)
{
	return fwrite(data, size, n, ctx);
}

static int run_url(const char *base, const char *token, const char *path, struct query_args *p,
		   FILE *out)
{
	char *url = NULL, *tmp, *buf = NULL, auth[TOKEN_MAX_LEN + 64];
	const char *name;
	size_t len = 0, i;
	struct curl_slist *h = NULL;
	FILE *body = open_memstream(&buf, &len);
	CURL *c = curl_easy_init();
	long status = 0;
	CURLcode rc;
	int ret = 1;

	if (!body || !c)
		goto out;
	if ((name = query_args__get(p, "name", 0))) { /* labels/NAME/values, NAME escaped */
		char *e = curl_easy_escape(c, name, 0);
		int n = e ? asprintf(&url, "%s/api/v1/labels/%s/values", base, e) : -1;

		curl_free(e);
		if (n < 0)
			goto out;
	} else if (asprintf(&url, "%s%s", base, path) < 0) {
		goto out;
	}
	for (i = 0; i < p->n; i++) {
		char *v;

		if (!strcmp(p->names[i], "name"))
			continue; /* labels/NAME/values: in the path already */
		v = curl_easy_escape(c, p->values[i], 0);
		if (!v || asprintf(&tmp, "%s%c%s=%s", url, strchr(url, '?') ? '&' : '?',
				   p->names[i], v) < 0) {
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
		fprintf(stderr, "smolder: %s: %s (is a collector there? --url or SMOLDER_URL)\n",
			base, curl_easy_strerror(rc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		char why[512];

		http_reason(buf, len, why, sizeof(why));
		if (status == 400) /* the query was refused: as --db says it */
			fprintf(stderr, "smolder: %s\n", why);
		else
			fprintf(stderr, "smolder: %s (HTTP %ld from %s)\n", why, status, base);
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

/* "FROM,TO" (a copy, split in place) into two parameters. */
static bool add_range(struct query_args *p, const char *prefix, char *value)
{
	char *comma = strchr(value, ',');
	bool before = strcmp(prefix, "before") == 0;

	if (!comma || comma == value || !comma[1])
		return false;
	*comma = '\0';
	return query_args__add(p, before ? "before_from" : "after_from", value) &&
	       query_args__add(p, before ? "before_to" : "after_to", comma + 1);
}

int query_main(int argc, char **argv)
{
	const char *url = getenv("SMOLDER_URL"), *db = NULL, *token = NULL, *output = NULL;
	const char *token_file = getenv("SMOLDER_TOKEN_FILE");
	char *strings[QUERY_MAX_ARGS] = { 0 }; /* values made here: "-DUR", range halves */
	size_t nstrings = 0, c, k;
	char why[256];
	struct query_args p = { 0 };
	char *file_token = NULL;
	bool has_format = false, token_given = false;
	const struct command *cmd;
	FILE *out = stdout;
	struct outfile_plan plan = { 0 };
	struct outfile_tmp tmp = { 0 };
	int i, ret = 2;

	for (c = 0; c < sizeof(cmds) / sizeof(cmds[0]) && strcmp(argv[0], cmds[c].cmd); c++)
		;
	if (c == sizeof(cmds) / sizeof(cmds[0]))
		return 2;
	cmd = &cmds[c];
	if (!url || !*url)
		url = DEFAULT_URL;
	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *v;
		const struct option *op = NULL;
		bool ok = true;

		if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			print_help(cmd, stdout);
			ret = 0;
			goto out;
		}
		for (k = 0; k < sizeof(options) / sizeof(options[0]); k++)
			if (!strcmp(o, options[k].opt) && (options[k].kinds & K(cmd->kind)))
				op = &options[k];
		if (!op) {
			fprintf(stderr,
				"smolder %s: unknown option '%s' (see 'smolder %s --help')\n",
				cmd->cmd, o, cmd->cmd);
			goto out;
		}
		if (!op->value) { /* --lines */
			if (!query_args__add(&p, "granularity", "line"))
				goto out;
			continue;
		}
		if (i + 1 >= argc) {
			fprintf(stderr,
				"smolder %s: '%s' needs a value (see 'smolder %s --help')\n",
				cmd->cmd, o, cmd->cmd);
			goto out;
		}
		v = argv[++i];
		if (!strcmp(o, "--url"))
			url = v;
		else if (!strcmp(o, "--db"))
			db = v;
		else if (!strcmp(o, "--token"))
			token = v, token_given = true;
		else if (!strcmp(o, "--token-file"))
			token_file = v;
		else if (!strcmp(o, "-o") || !strcmp(o, "--output"))
			output = v;
		else if (!strcmp(o, "--since")) {
			/* "--since -5m" means what "--since 5m" does; a time is --from's */
			int64_t t;

			if (nstrings == QUERY_MAX_ARGS ||
			    asprintf(&strings[nstrings], "-%s", v + (v[0] == '-')) < 0) {
				strings[nstrings] = NULL;
				goto out;
			}
			if (timeparse(strings[nstrings++], 0, &t)) {
				fprintf(stderr,
					"smolder %s: --since wants a duration like 5m or 1h30m "
					"(for a time, use --from; a unit is "
					"required: " TIMEPARSE_DURATION_FORMS "), got '%s'\n",
					cmd->cmd, v);
				goto out;
			}
			ok = query_args__add(&p, "from", strings[nstrings - 1]);
		} else if (!strcmp(o, "--step")) {
			/* the API also takes plain seconds (programs send them); a person's
			 * "--step 5" may mean minutes, so here a unit is required */
			int64_t d;

			if (timeparse_duration(v, &d)) {
				fprintf(stderr,
					"smolder %s: --step wants a duration with its unit "
					"(" TIMEPARSE_DURATION_FORMS "), got '%s'\n",
					cmd->cmd, v);
				goto out;
			}
			ok = query_args__add(&p, "step", v);
		} else if (!strcmp(o, "--before") || !strcmp(o, "--after"))
			ok = nstrings < QUERY_MAX_ARGS && (strings[nstrings++] = strdup(v)) &&
			     add_range(&p, o + 2, strings[nstrings - 1]);
		else
			ok = query_args__add(&p, op->param, v);
		has_format |= !strcmp(o, "--format");
		if (!ok) {
			fprintf(stderr, "smolder %s: bad value for %s: '%s'%s\n", cmd->cmd, o, v,
				!strcmp(o, "--before") || !strcmp(o, "--after")
					? " (wants FROM,TO, e.g. -10m,-5m)"
					: "");
			goto out;
		}
	}
	if (!has_format) {
		if (cmd->kind == QUERY_TOP || cmd->kind == QUERY_SERIES || cmd->kind == QUERY_TYPES)
			query_args__add(&p, "format", "table");
		else if ((cmd->kind == QUERY_FLAMEGRAPH || cmd->kind == QUERY_DIFF) && !output &&
			 isatty(STDOUT_FILENO))
			query_args__add(&p, "format",
					"text"); /* not 600 KB of JSON on a terminal */
	}
	if (!db && !token_given && token_file && *token_file) {
		if (token_read_file(token_file, &file_token) ||
		    token_check(file_token, token_file, why, sizeof(why))) {
			fprintf(stderr, "smolder: no usable query token in %s%s%s\n", token_file,
				file_token ? ": " : "", file_token ? why : "");
			ret = 1;
			goto out;
		}
		token = file_token;
	}
	if (output) { /* a file is replaced whole once the answer is in; a device in place */
		int err = outfile_plan__make(output, &plan);

		if (!err && plan.in_place)
			err = outfile_open_in_place(plan.path, &out);
		else if (!err)
			err = outfile_replace_begin(plan.path, &tmp);
		if (err) {
			fprintf(stderr, "smolder: cannot write %s: %s\n", output,
				outfile_strerror(err));
			ret = 1;
			goto out;
		}
		if (tmp.f)
			out = tmp.f;
	}
	if (db) {
		enum query_kind kind = cmd->kind;

		if (kind == QUERY_LABELS && query_args__get(&p, "name", 0))
			kind = QUERY_LABEL_VALUES;
		ret = run_db(db, kind, &p, out);
	} else {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		ret = run_url(url, token, cmd->path, &p, out);
		curl_global_cleanup();
	}
	if (tmp.f) {
		int err = outfile_replace_end(&tmp, plan.path, ret == 0);

		if (err) {
			fprintf(stderr, "smolder: cannot write %s: %s\n", output,
				outfile_strerror(err));
			ret = 1;
		}
	} else if (out != stdout && fclose(out) && !ret) {
		fprintf(stderr, "smolder: cannot write %s\n", output);
		ret = 1;
	}
out:
	outfile_plan__clear(&plan);
	free(file_token);
	for (k = 0; k < nstrings; k++)
		free(strings[k]);
	return ret;
}
