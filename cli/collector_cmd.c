/* `smolder collector` and `smolder up`: option parsing and the serving loop. `up`
 * runs the collector and the agent in one process, on the embedded SQLite store. */
#include "collector/collector.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cli/agent_cmd.h"
#include "common/log.h"
#include "common/timeparse.h"
#include "common/token.h"

#define MAINTAIN_SECONDS 10

static const char collector_usage[] =
	"usage: smolder collector [options]\n"
	"Receives agents' batches over HTTP and stores them in SQLite.\n"
	"\n"
	"      --db PATH             database file (default smolder.db)\n"
	"      --listen HOST:PORT    address to serve (default 127.0.0.1:7171; port 0: any)\n"
	"      --ingest-token T      token agents must send (Authorization: Bearer)\n"
	"      --ingest-token-file F read it from F\n"
	"      --query-token T       token queries must send\n"
	"      --query-token-file F  read it from F\n"
	"      --insecure            allow a non-loopback address without both tokens\n"
	"      --retention DUR       keep data this long: 30m, 12h, 14d (default 14d)\n"
	"      --max-body-mb N       compressed batch size cap (default 16)\n"
	"  -h, --help                show this help\n";

enum {
	OPT_DB = 256,
	OPT_LISTEN,
	OPT_INGEST_TOKEN,
	OPT_INGEST_TOKEN_FILE,
	OPT_QUERY_TOKEN,
	OPT_QUERY_TOKEN_FILE,
	OPT_INSECURE,
	OPT_RETENTION,
	OPT_MAX_BODY_MB,
};

static const struct option collector_long[] = {
	{ "db", required_argument, NULL, OPT_DB },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "ingest-token", required_argument, NULL, OPT_INGEST_TOKEN },
	{ "ingest-token-file", required_argument, NULL, OPT_INGEST_TOKEN_FILE },
	{ "query-token", required_argument, NULL, OPT_QUERY_TOKEN },
	{ "query-token-file", required_argument, NULL, OPT_QUERY_TOKEN_FILE },
	{ "insecure", no_argument, NULL, OPT_INSECURE },
	{ "retention", required_argument, NULL, OPT_RETENTION },
	{ "max-body-mb", required_argument, NULL, OPT_MAX_BODY_MB },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

struct parsed {
	struct collector_options o;
	char *tokens[2]; /* from files: owned */
	bool help;
};

/* Parses collector options; with `passthrough`, unknown options are left for the
 * agent (for `smolder up`): their indices are collected in rest. */
static int parse_collector(int argc, char **argv, struct parsed *p, bool passthrough,
			   char **rest, int *nrest)
{
	unsigned long mb;
	int c, i;

	collector_options__defaults(&p->o);
	*nrest = 0;
	for (i = 1; i < argc; i++) {
		const struct option *opt = NULL;
		const char *name = argv[i], *value = NULL, *eq;
		size_t len;

		if (strncmp(name, "--", 2) == 0) {
			eq = strchr(name, '=');
			len = eq ? (size_t)(eq - name - 2) : strlen(name + 2);
			for (opt = collector_long; opt->name; opt++)
				if (strlen(opt->name) == len && !strncmp(opt->name, name + 2, len))
					break;
			if (!opt->name)
				opt = NULL;
		} else if (strcmp(name, "-h") == 0) {
			opt = &collector_long[sizeof(collector_long) / sizeof(collector_long[0]) - 2];
		}
		if (!opt) {
			if (!passthrough) {
				fprintf(stderr, "smolder collector: unknown option '%s'\n%s", name,
					collector_usage);
				return -EINVAL;
			}
			rest[(*nrest)++] = argv[i];
			continue;
		}
		c = opt->val;
		if (opt->has_arg == required_argument) {
			eq = strchr(name, '=');
			value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (!value) {
				fprintf(stderr, "smolder: option '%s' needs a value\n", name);
				return -EINVAL;
			}
		}
		switch (c) {
		case OPT_DB:
			p->o.db_path = value;
			break;
		case OPT_LISTEN:
			p->o.listen = value;
			break;
		case OPT_INGEST_TOKEN:
			p->o.ingest_token = value;
			break;
		case OPT_QUERY_TOKEN:
			p->o.query_token = value;
			break;
		case OPT_INGEST_TOKEN_FILE:
		case OPT_QUERY_TOKEN_FILE: {
			int k = c == OPT_INGEST_TOKEN_FILE ? 0 : 1;

			free(p->tokens[k]);
			p->tokens[k] = NULL;
			if (token_read_file(value, &p->tokens[k])) {
				fprintf(stderr, "smolder: no token in '%s'\n", value);
				return -EINVAL;
			}
			if (k == 0)
				p->o.ingest_token = p->tokens[0];
			else
				p->o.query_token = p->tokens[1];
			break;
		}
		case OPT_INSECURE:
			p->o.insecure = true;
			break;
		case OPT_RETENTION:
			if (timeparse_duration(value, &p->o.retention_seconds)) {
				fprintf(stderr, "smolder: --retention wants a duration like 14d, got '%s'\n",
					value);
				return -EINVAL;
			}
			break;
		case OPT_MAX_BODY_MB:
			mb = strtoul(value, NULL, 10);
			if (mb < 1 || mb > 1024) {
				fprintf(stderr, "smolder: --max-body-mb wants 1 to 1024\n");
				return -EINVAL;
			}
			p->o.max_body = mb << 20;
			break;
		case 'h':
			p->help = true;
			break;
		}
	}
	return 0;
}

static void free_parsed(struct parsed *p)
{
	free(p->tokens[0]);
	free(p->tokens[1]);
}

static int start(struct parsed *p, struct collector **c)
{
	int err = collector__start(&p->o, c);

	if (err == -EPERM)
		fprintf(stderr, "smolder: refusing to listen on %s without --ingest-token and "
				"--query-token (or --insecure)\n",
			p->o.listen);
	else if (err)
		fprintf(stderr, "smolder: failed to start the collector on %s with %s: %s\n",
			p->o.listen, p->o.db_path, strerror(-err));
	return err;
}

int collector_main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct collector *c = NULL;
	struct parsed p = { 0 };
	char *rest[1];
	int nrest, err;

	err = parse_collector(argc, argv, &p, false, rest, &nrest);
	if (err || p.help) {
		if (p.help)
			fputs(collector_usage, stdout);
		free_parsed(&p);
		return err ? 2 : 0;
	}
	if (start(&p, &c)) {
		free_parsed(&p);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	log_info("collector: listening on %s port %u, database %s", p.o.listen,
		 collector__port(c), p.o.db_path);
	while (!stop_requested) {
		collector__maintain(c);
		sleep(MAINTAIN_SECONDS); /* interrupted by the signal */
	}
	log_info("collector: stopping");
	collector__stop(c);
	free_parsed(&p);
	return 0;
}

int up_main(int argc, char **argv)
{
	struct collector *c = NULL;
	struct parsed p = { 0 };
	struct agent_options ao;
	char **rest = calloc((size_t)argc + 8, sizeof(*rest)), url[300], why[256] = "";
	int nrest = 0, err, n;

	if (!rest)
		return 1;
	err = parse_collector(argc, argv, &p, true, rest + 1, &nrest);
	if (err)
		goto out;
	if (p.help) {
		fputs("usage: smolder up [collector options] [agent options]\n"
		      "Runs the collector and the agent in one process (default database\n"
		      "./smolder.db). See 'smolder collector --help' and 'smolder agent --help'.\n",
		      stdout);
		goto out;
	}
	err = start(&p, &c);
	if (err)
		goto out;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", collector__port(c));
	n = nrest + 1;
	rest[0] = "up";
	rest[n++] = "--collector";
	rest[n++] = url;
	if (p.o.ingest_token) {
		rest[n++] = "--token";
		rest[n++] = (char *)p.o.ingest_token;
	}
	rest[n] = NULL;
	err = agent_options__parse(n, rest, &ao, why, sizeof(why));
	if (err == 1) /* -h went to the collector's options: an agent's -vh is ignored */
		err = 0;
	if (err) {
		fprintf(stderr, "smolder up: %s\n", why);
		goto out;
	}
	if (!ao.spool_dir) {
		ao.spool_dir = strdup("smolder-spool");
		err = ao.spool_dir ? 0 : -ENOMEM;
	}
	log_info("up: collector on %s (port %u), database %s; query with "
		 "curl '%s/api/v1/folded?from=0&to=%s'",
		 p.o.listen, collector__port(c), p.o.db_path, url, "9999999999");
	if (!err)
		err = agent_run(&ao);
	agent_options__free(&ao);
out:
	collector__stop(c);
	free_parsed(&p);
	free(rest);
	return err ? 1 : 0;
}
