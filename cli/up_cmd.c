/* `smolder up`: one option table for two components, then the collector and the
 * agent in one process; see up_cmd.h.
 *
 * The table is the agent's long options followed by the collector's (one "help");
 * the short options are the agent's (the collector has only -h). Option codes do
 * not overlap, so each code says whose option it is. Before this table, `up` parsed
 * the collector's options first and handed the rest to the agent's parser, so a bad
 * collector option was reported before any agent error and --help silenced agent
 * errors: the parser below keeps that order. The agent is then told to ship to the
 * collector, as if "--collector URL [--token INGEST_TOKEN]" ended its options.
 * The agent runs on the main thread; the collector runs its own threads,
 * maintenance included. */
#include "cli/up_cmd.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/caps.h"
#include "cli/agent_cmd.h"
#include "common/log.h"
#include "common/reason.h"

#define MAX_OPTIONS 64 /* entries of the merged table, its end included */

_Static_assert((int)AGENT_OPT_END <= (int)COLLECTOR_OPT_FIRST, "option codes overlap");

static const char up_usage[] =
	"usage: smolder up [collector options] [agent options]\n"
	"Runs the collector and the agent in one process (default database\n"
	"./smolder.db). See 'smolder collector --help' and 'smolder agent --help'.\n";

static bool is_collector_option(int c)
{
	return c >= COLLECTOR_OPT_FIRST && c < COLLECTOR_OPT_END;
}

/* The agent's long options, then the collector's but for its "help". */
static void merge_options(struct option *all)
{
	const struct option *p;
	size_t n = 0;

	for (p = agent_long_options; p->name; p++) {
		assert(n < MAX_OPTIONS - 1);
		all[n++] = *p;
	}
	for (p = collector_long_options; p->name; p++) {
		if (p->val == 'h')
			continue;
		assert(n < MAX_OPTIONS - 1);
		all[n++] = *p;
	}
	all[n] = (struct option){ 0 };
}

int up_args__parse(int argc, char **argv, struct up_args *u, char *err, size_t errlen)
{
	struct option all[MAX_OPTIONS];
	char why[256] = "";
	int c, rc, agent_rc = 0;

	collector_args__init(&u->collector);
	u->help = false;
	u->query_token_file = NULL;
	rc = agent_options__init(&u->agent);
	if (rc) {
		reason_fail(err, errlen, rc, "smolder up: %s", strerror(-rc));
		goto out_free;
	}
	merge_options(all);
	optind = 0; /* full reset, so parsing twice in one process works */
	opterr = 0;
	while ((c = getopt_long(argc, argv, AGENT_SHORT_OPTIONS, all, NULL)) != -1) {
		if (c == 'h') {
			u->help = true;
		} else if (c == COLLECTOR_OPT_TLS_CERT || c == COLLECTOR_OPT_TLS_KEY ||
			   c == COLLECTOR_OPT_TLS_CLIENT_CA) {
			/* its agent posts to its collector over loopback http */
			rc = reason_fail(
				err, errlen, -EINVAL,
				"smolder up: --tls-* options are for 'smolder collector' (up's "
				"own agent sends over loopback)");
			goto out_free;
		} else if (is_collector_option(c)) {
			rc = collector_args__set(&u->collector, c, optarg, why, sizeof(why));
			if (rc) {
				reason_fail(err, errlen, rc, "smolder: %s", why);
				goto out_free;
			}
			if (c == COLLECTOR_OPT_QUERY_TOKEN_FILE)
				u->query_token_file = optarg;
			else if (c == COLLECTOR_OPT_QUERY_TOKEN)
				u->query_token_file = NULL; /* the last one given wins */
		} else if (c == ':' && is_collector_option(optopt)) {
			rc = reason_fail(err, errlen, -EINVAL, "smolder: option '%s' needs a value",
					 argv[optind - 1]);
			goto out_free;
		} else if (agent_rc) {
			continue; /* after an agent error, only the collector's options count */
		} else if (c == ':') {
			agent_rc = reason_fail(why, sizeof(why), -EINVAL,
					       "option '%s' needs a value", argv[optind - 1]);
		} else if (c == '?') {
			agent_rc = reason_fail(why, sizeof(why), -EINVAL, "unknown option '%s'",
					       argv[optind - 1]);
		} else {
			agent_rc = agent_options__set(&u->agent, c, optarg, why, sizeof(why));
		}
	}
	if (!agent_rc && optind < argc)
		agent_rc = reason_fail(why, sizeof(why), -EINVAL, "unexpected argument '%s'",
				       argv[optind]);
	if (agent_rc && !u->help) {
		rc = reason_fail(err, errlen, agent_rc, "smolder up: %s",
				 agent_rc == -EINVAL ? why : strerror(-agent_rc));
		goto out_free;
	}
	return 0;
out_free:
	up_args__free(u);
	return rc;
}

void up_args__free(struct up_args *u)
{
	agent_options__free(&u->agent);
	collector_args__free(&u->collector);
}

/* Points the agent at the collector: as if "--collector URL", and "--token T" with
 * an ingest token, ended the command line (they override the user's). */
static int ship_to(struct up_args *u, const char *url)
{
	const char *token = u->collector.o.ingest_token;
	char why[256];
	int err;

	err = agent_options__set(&u->agent, 'c', url, why, sizeof(why));
	if (!err && token)
		err = agent_options__set(&u->agent, AGENT_OPT_TOKEN, token, why, sizeof(why));
	err = err ?: agent_options__finish(&u->agent);
	if (!err && !u->agent.spool_dir && !(u->agent.spool_dir = strdup("smolder-spool")))
		err = -ENOMEM;
	return err;
}

const char *up_self(const char *invoked_as)
{
	return invoked_as && strchr(invoked_as, '/') ? invoked_as : "smolder";
}

void up_query_hint(const struct up_args *u, const char *self, unsigned port, char *buf, size_t len)
{
	const char *file = u->query_token_file;
	size_t n;

	n = (size_t)snprintf(buf, len,
			     "smolder: query with: SMOLDER_URL=http://127.0.0.1:%u %s flame "
			     "--since 5m",
			     port, self);
	if (u->collector.o.query_token && n < len)
		snprintf(buf + n, len - n,
			 "\nsmolder: queries need the query token: add SMOLDER_TOKEN_FILE=%s",
			 file ? file : "FILE (a file holding it, mode 0600)");
}

int up_main(int argc, char **argv)
{
	struct collector *c = NULL;
	struct up_args u;
	char url[300], why[300], hint[600];
	int err;

	err = up_args__parse(argc, argv, &u, why, sizeof(why));
	if (err) {
		fprintf(stderr, "%s\n", why);
		return 1;
	}
	if (u.help) {
		fputs(up_usage, stdout);
		goto out;
	}
	/* before the collector starts: its agent could not sample anyway */
	err = caps__check(NULL, why, sizeof(why));
	if (err) {
		fprintf(stderr, "smolder up: %s\n", why);
		goto out;
	}
	/* /healthz says when its agent has sent nothing for a while */
	if (!u.collector.o.agent_window_sec)
		u.collector.o.agent_window_sec = u.agent.window_sec;
	u.collector.o.expect_agent = true;
	err = collector_args__start(&u.collector, &c);
	if (err)
		goto out;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", collector__port(c));
	err = ship_to(&u, url);
	log_info("up: collector on %s (port %u), database %s", u.collector.o.listen,
		 collector__port(c), u.collector.o.db_path);
	up_query_hint(&u, up_self(program_invocation_name), collector__port(c), hint, sizeof(hint));
	fprintf(stderr, "%s\n", hint);
	if (!err)
		err = agent_run(&u.agent);
out:
	collector__stop(c);
	up_args__free(&u);
	return err ? 1 : 0;
}
