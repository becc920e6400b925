/* `smolder collector`: option parsing and the serving loop; see collector_cmd.h. */
#include "cli/collector_cmd.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/cardinality.h"
#include "collector/stall.h"
#include "common/log.h"
#include "common/reason.h"
#include "query/timeparse.h"
#include "store/store.h"
#include "common/token.h"

const char collector_usage[] =
	"usage: smolder collector [options]\n"
	"Receives agents' batches over HTTP and stores them in SQLite (one file, the\n"
	"default) or ClickHouse (a server or a cluster, shared by any number of\n"
	"collectors).\n"
	"\n"
	"      --db PATH|URL         SQLite file (PATH or sqlite:PATH, default smolder.db)\n"
	"                            or clickhouse[+https]://HOST:PORT/DATABASE[?OPTS]\n"
	"                            (its HTTP port, or with +https its https_port, the\n"
	"                            certificate verified); OPTS: credentials=FILE\n"
	"                            (user:password), ca=FILE (PEM CA of the https\n"
	"                            server; default: the system's CAs), cluster=NAME\n"
	"                            (schema ON CLUSTER), plaintext=1 (allow credentials\n"
	"                            over http to a host not loopback), joined by &\n"
	"      --listen HOST:PORT    address to serve (default 127.0.0.1:7171; port 0: any)\n"
	"      --ingest-token T      token agents must send (Authorization: Bearer)\n"
	"      --ingest-token-file F read it from F\n"
	"      --query-token T       token queries must send\n"
	"      --query-token-file F  read it from F\n"
	"      --insecure            allow a non-loopback address without both tokens\n"
	"      --allow-host NAME     answer requests whose Host is NAME (or NAME:PORT)\n"
	"                            besides localhost, loopback and the listen address;\n"
	"                            without both tokens others get 421 (DNS\n"
	"                            rebinding); repeatable, up to 16\n"
	"      --retention DUR       keep hour rollups (everything) this long: 30m, 12h,\n"
	"                            30d (default 30d)\n"
	"      --minute-retention DUR  keep minute rollups this long (default 14d, at\n"
	"                            most --retention)\n"
	"      --raw-retention DUR   keep the windows as sent this long (default 1d, at\n"
	"                            most --minute-retention)\n"
	"      --max-body-mb N       compressed batch size cap (default 16)\n"
	"      --max-connections N   open connections at once (default 4096); when all\n"
	"                            are taken, a new one evicts the one waiting longest\n"
	"      --max-connections-per-ip N  ... from one client address, an IPv6 /64\n"
	"                            counting as one (default 64; behind a proxy, raise\n"
	"                            it to --max-connections)\n"
	"      --request-timeout DUR time for a request's headers and body (default 30s)\n"
	"      --max-response-mb N   size cap of one query's answer (default 64)\n"
	"      --max-queued-queries N  queries waiting for a worker; 503 past it (default 32)\n"
	"      --query-memory-mb N   working memory of one flame graph, diff or top query;\n"
	"                            422 past it (default 160)\n"
	"      --agent-labelsets-per-min N  new label sets one agent may send a minute;\n"
	"                            429 past it (default 10000)\n"
	"      --agent-stacks-per-min N  new stacks one agent may send in full a minute;\n"
	"                            429 past it (default 100000)\n"
	"      --agent-window SEC    the agents' window length: /healthz answers 503\n"
	"                            while an agent has sent nothing for\n"
	"                            --stall-windows of them (default: off; 'up' sets\n"
	"                            its agent's)\n"
	"      --stall-windows N     windows of silence that make a stall (default 6)\n"
	"      --ingest-linger-ms N  hold a store call open up to N ms for more batches\n"
	"                            while they keep arriving (default 50; 0: off)\n"
	"      --tls-cert F          serve https with this PEM certificate (chain)...\n"
	"      --tls-key F           ... and its PEM private key (TLS 1.2 and 1.3)\n"
	"      --tls-client-ca F     require a client certificate signed by this PEM CA\n"
	"  -h, --help                show this help\n";

const struct option collector_long_options[] = {
	{ "db", required_argument, NULL, COLLECTOR_OPT_DB },
	{ "listen", required_argument, NULL, COLLECTOR_OPT_LISTEN },
	{ "ingest-token", required_argument, NULL, COLLECTOR_OPT_INGEST_TOKEN },
	{ "ingest-token-file", required_argument, NULL, COLLECTOR_OPT_INGEST_TOKEN_FILE },
	{ "query-token", required_argument, NULL, COLLECTOR_OPT_QUERY_TOKEN },
	{ "query-token-file", required_argument, NULL, COLLECTOR_OPT_QUERY_TOKEN_FILE },
	{ "insecure", no_argument, NULL, COLLECTOR_OPT_INSECURE },
	{ "retention", required_argument, NULL, COLLECTOR_OPT_RETENTION },
	{ "minute-retention", required_argument, NULL, COLLECTOR_OPT_MINUTE_RETENTION },
	{ "raw-retention", required_argument, NULL, COLLECTOR_OPT_RAW_RETENTION },
	{ "max-body-mb", required_argument, NULL, COLLECTOR_OPT_MAX_BODY_MB },
	{ "max-connections", required_argument, NULL, COLLECTOR_OPT_MAX_CONNECTIONS },
	{ "max-connections-per-ip", required_argument, NULL, COLLECTOR_OPT_MAX_CONNECTIONS_PER_IP },
	{ "request-timeout", required_argument, NULL, COLLECTOR_OPT_REQUEST_TIMEOUT },
	{ "max-response-mb", required_argument, NULL, COLLECTOR_OPT_MAX_RESPONSE_MB },
	{ "max-queued-queries", required_argument, NULL, COLLECTOR_OPT_MAX_QUEUED_QUERIES },
	{ "ingest-linger-ms", required_argument, NULL, COLLECTOR_OPT_INGEST_LINGER_MS },
	{ "tls-cert", required_argument, NULL, COLLECTOR_OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, COLLECTOR_OPT_TLS_KEY },
	{ "tls-client-ca", required_argument, NULL, COLLECTOR_OPT_TLS_CLIENT_CA },
	{ "allow-host", required_argument, NULL, COLLECTOR_OPT_ALLOW_HOST },
	{ "query-memory-mb", required_argument, NULL, COLLECTOR_OPT_QUERY_MEMORY_MB },
	{ "agent-labelsets-per-min", required_argument, NULL,
	  COLLECTOR_OPT_AGENT_LABELSETS_PER_MIN },
	{ "agent-stacks-per-min", required_argument, NULL, COLLECTOR_OPT_AGENT_STACKS_PER_MIN },
	{ "agent-window", required_argument, NULL, COLLECTOR_OPT_AGENT_WINDOW },
	{ "stall-windows", required_argument, NULL, COLLECTOR_OPT_STALL_WINDOWS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* A retention longer than a century is a typo, and keeps now - retention far from
 * overflowing. */
#define MAX_RETENTION_SECONDS (100LL * 366 * 24 * 3600)

static volatile sig_atomic_t stop_requested;

static const char *retention_name(int opt)
{
	return opt == COLLECTOR_OPT_RETENTION	       ? "retention"
	       : opt == COLLECTOR_OPT_MINUTE_RETENTION ? "minute-retention"
						       : "raw-retention";
}

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* A whole number in [min, max], or false. */
static bool parse_count(const char *arg, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

void collector_args__init(struct collector_args *a)
{
	*a = (struct collector_args){ 0 };
	collector_options__defaults(&a->o);
}

int collector_args__set(struct collector_args *a, int opt, const char *arg, char *err,
			size_t errlen)
{
	unsigned long mb, n;
	int64_t secs;
	int k;

	switch (opt) {
	case COLLECTOR_OPT_DB:
		a->o.db_path = arg;
		break;
	case COLLECTOR_OPT_LISTEN:
		a->o.listen = arg;
		break;
	case COLLECTOR_OPT_TLS_CERT:
		a->o.tls_cert = arg;
		break;
	case COLLECTOR_OPT_TLS_KEY:
		a->o.tls_key = arg;
		break;
	case COLLECTOR_OPT_TLS_CLIENT_CA:
		a->o.tls_client_ca = arg;
		break;
	case COLLECTOR_OPT_ALLOW_HOST: {
		struct access_host h;

		if (a->o.nallow_hosts == ACCESS_MAX_ALLOW_HOSTS)
			return reason_fail(err, errlen, -EINVAL, "at most %d --allow-host names",
					   ACCESS_MAX_ALLOW_HOSTS);
		if (!access_parse_host(arg, strlen(arg), &h))
			return reason_fail(err, errlen, -EINVAL,
					   "--allow-host wants NAME or NAME:PORT (IPv6 in "
					   "brackets), got '%.64s'",
					   arg);
		a->o.allow_hosts[a->o.nallow_hosts++] = arg;
		break;
	}
	case COLLECTOR_OPT_INGEST_TOKEN:
		if (token_check(arg, "--ingest-token", err, errlen))
			return -EINVAL;
		a->o.ingest_token = arg;
		break;
	case COLLECTOR_OPT_QUERY_TOKEN:
		if (token_check(arg, "--query-token", err, errlen))
			return -EINVAL;
		a->o.query_token = arg;
		break;
	case COLLECTOR_OPT_INGEST_TOKEN_FILE:
	case COLLECTOR_OPT_QUERY_TOKEN_FILE:
		k = opt == COLLECTOR_OPT_INGEST_TOKEN_FILE ? 0 : 1;
		free(a->tokens[k]);
		a->tokens[k] = NULL;
		if (token_read_file(arg, &a->tokens[k])) {
			/* o may still point to the token just freed: clear it */
			if (k == 0)
				a->o.ingest_token = NULL;
			else
				a->o.query_token = NULL;
			return reason_fail(err, errlen, -EINVAL, "no token in '%s'", arg);
		}
		if (token_check(a->tokens[k], arg, err, errlen)) {
			if (k == 0)
				a->o.ingest_token = NULL;
			else
				a->o.query_token = NULL;
			return -EINVAL;
		}
		if (k == 0)
			a->o.ingest_token = a->tokens[0];
		else
			a->o.query_token = a->tokens[1];
		break;
	case COLLECTOR_OPT_INSECURE:
		a->o.insecure = true;
		break;
	case COLLECTOR_OPT_RETENTION:
	case COLLECTOR_OPT_MINUTE_RETENTION:
	case COLLECTOR_OPT_RAW_RETENTION:
		/* the order of the three is checked at start, once all are known */
		if (timeparse_duration(arg, &secs) || secs < 1 || secs > MAX_RETENTION_SECONDS)
			return reason_fail(err, errlen, -EINVAL,
					   "--%s wants a duration like 14d, got '%s'",
					   retention_name(opt), arg);
		if (opt == COLLECTOR_OPT_RETENTION)
			a->o.retention_seconds = secs;
		else if (opt == COLLECTOR_OPT_MINUTE_RETENTION)
			a->o.minute_retention_seconds = secs;
		else
			a->o.raw_retention_seconds = secs;
		break;
	case COLLECTOR_OPT_MAX_BODY_MB:
		mb = strtoul(arg, NULL, 10);
		if (mb < 1 || mb > 1024)
			return reason_fail(err, errlen, -EINVAL, "--max-body-mb wants 1 to 1024");
		a->o.max_body = mb << 20;
		break;
	case COLLECTOR_OPT_MAX_CONNECTIONS:
		/* 65536: far past any descriptor limit a collector is given */
		if (!parse_count(arg, 1, 65536, &n))
			return reason_fail(err, errlen, -EINVAL,
					   "--max-connections wants 1 to 65536, got '%s'", arg);
		a->o.max_connections = (unsigned)n;
		break;
	case COLLECTOR_OPT_MAX_CONNECTIONS_PER_IP:
		if (!parse_count(arg, 1, 65536, &n))
			return reason_fail(err, errlen, -EINVAL,
					   "--max-connections-per-ip wants 1 to 65536, got '%s'",
					   arg);
		a->o.max_connections_per_ip = (unsigned)n;
		break;
	case COLLECTOR_OPT_REQUEST_TIMEOUT:
		/* a day: longer would let a slow client keep a connection for good */
		if (timeparse_duration(arg, &secs) || secs < 1 || secs > 86400)
			return reason_fail(err, errlen, -EINVAL,
					   "--request-timeout wants a duration from 1s to 1d, "
					   "got '%s'",
					   arg);
		a->o.request_timeout = (unsigned)secs;
		break;
	case COLLECTOR_OPT_MAX_RESPONSE_MB:
		/* 4 GiB: no browser or tool loads a larger profile */
		if (!parse_count(arg, 1, 4096, &n))
			return reason_fail(err, errlen, -EINVAL,
					   "--max-response-mb wants 1 to 4096, got '%s'", arg);
		a->o.max_response = (size_t)n << 20;
		break;
	case COLLECTOR_OPT_QUERY_MEMORY_MB:
		/* 64 GiB: past any machine a collector runs on */
		if (!parse_count(arg, 1, 65536, &n))
			return reason_fail(err, errlen, -EINVAL,
					   "--query-memory-mb wants 1 to 65536, got '%s'", arg);
		a->o.query_memory = (size_t)n << 20;
		break;
	case COLLECTOR_OPT_AGENT_LABELSETS_PER_MIN:
	case COLLECTOR_OPT_AGENT_STACKS_PER_MIN:
		if (!parse_count(arg, 1, CARDINALITY_MAX_PER_MIN, &n))
			return reason_fail(err, errlen, -EINVAL, "--%s wants 1 to %u, got '%s'",
					   opt == COLLECTOR_OPT_AGENT_STACKS_PER_MIN
						   ? "agent-stacks-per-min"
						   : "agent-labelsets-per-min",
					   CARDINALITY_MAX_PER_MIN, arg);
		if (opt == COLLECTOR_OPT_AGENT_STACKS_PER_MIN)
			a->o.stacks_per_min = (uint32_t)n;
		else
			a->o.labelsets_per_min = (uint32_t)n;
		break;
	case COLLECTOR_OPT_AGENT_WINDOW:
		/* the agent's own bound on --window */
		if (!parse_count(arg, 1, 3600, &n))
			return reason_fail(err, errlen, -EINVAL,
					   "--agent-window wants 1 to 3600 (seconds), got '%s'",
					   arg);
		a->o.agent_window_sec = (uint32_t)n;
		break;
	case COLLECTOR_OPT_STALL_WINDOWS:
		if (!parse_count(arg, 1, STALL_FORGET_WINDOWS - 1, &n))
			return reason_fail(err, errlen, -EINVAL,
					   "--stall-windows wants 1 to %d, got '%s'",
					   STALL_FORGET_WINDOWS - 1, arg);
		a->o.stall_windows = (unsigned)n;
		break;
	case COLLECTOR_OPT_MAX_QUEUED_QUERIES:
		/* each waiting query holds its parsed parameters only; the cap bounds the
		 * wait a client sees, not memory */
		if (!parse_count(arg, 1, 4096, &n))
			return reason_fail(err, errlen, -EINVAL,
					   "--max-queued-queries wants 1 to 4096, got '%s'", arg);
		a->o.max_queued_queries = (unsigned)n;
		break;
	case COLLECTOR_OPT_INGEST_LINGER_MS:
		if (!parse_count(arg, 0, COLLECTOR_MAX_INGEST_LINGER_MS, &n))
			return reason_fail(err, errlen, -EINVAL,
					   "--ingest-linger-ms wants 0 to %d, got '%s'",
					   COLLECTOR_MAX_INGEST_LINGER_MS, arg);
		a->o.ingest_linger_ms = (unsigned)n;
		break;
	default:
		return reason_fail(err, errlen, -EINVAL, "unknown option code %d", opt);
	}
	return 0;
}

void collector_args__free(struct collector_args *a)
{
	free(a->tokens[0]);
	free(a->tokens[1]);
	a->tokens[0] = a->tokens[1] = NULL;
}

int collector_args__start(const struct collector_args *a, struct collector **out)
{
	int64_t ret, minute, raw;
	char why[768];
	int err;

	/* before anything is opened or bound: a location refused is a usage error */
	err = store__check_location(a->o.db_path, why, sizeof(why));
	if (err) {
		fprintf(stderr, "smolder: refusing to start the collector with --db %s: %s\n",
			a->o.db_path, why);
		return err == -EPERM || err == -EPROTONOSUPPORT ? err : -EINVAL;
	}
	if (!collector_options__retentions(&a->o, &ret, &minute, &raw)) {
		fprintf(stderr,
			"smolder: refusing to start the collector: each tier must be kept at "
			"most as long as the next (--raw-retention %llds <= --minute-retention "
			"%llds <= --retention %llds, defaults 1d, 14d and 30d, a default cut to "
			"the tier above)\n",
			(long long)raw, (long long)minute, (long long)ret);
		return -EINVAL;
	}
	err = collector__start(&a->o, out);
	if (err == -EINVAL)
		fprintf(stderr,
			"smolder: refusing to start the collector: an empty or invalid "
			"token, a zero limit, a bad --listen address '%s', TLS files "
			"that cannot be used (the reason is above), or a --db location "
			"that is not one of " STORE_LOCATION_FORMS " ('%s')\n",
			a->o.listen, a->o.db_path);
	else if (err == -EPERM)
		fprintf(stderr,
			"smolder: refusing to listen on %s without --ingest-token and "
			"--query-token (or --insecure)\n",
			a->o.listen);
	else if (err == -EPROTONOSUPPORT)
		fprintf(stderr,
			"smolder: no store backend serves --db %s: it takes " STORE_LOCATION_FORMS
			"\n",
			a->o.db_path);
	else if (err)
		fprintf(stderr, "smolder: failed to start the collector on %s with %s: %s\n",
			a->o.listen, a->o.db_path, strerror(-err));
	return err;
}

static int unknown_option(const char *arg)
{
	fprintf(stderr, "smolder collector: unknown option '%s'\n%s", arg, collector_usage);
	return -EINVAL;
}

/* Parses argv, explaining an error on stderr. Arguments are read in order ("-" in
 * optstring): the collector takes no operands, so the first one is an error, and so
 * is "--". Returns 0 or -EINVAL; a is to be freed either way. */
static int parse(int argc, char **argv, struct collector_args *a, bool *help)
{
	char why[256];
	int c, at, err = 0;

	collector_args__init(a);
	*help = false;
	optind = 0; /* full reset, so parsing twice in one process works */
	opterr = 0;
	while (!err) {
		at = optind ? optind : 1; /* the argument getopt_long is about to read */
		c = getopt_long(argc, argv, "-:h", collector_long_options, NULL);
		if (c == -1) {
			if (at < argc) /* getopt_long skipped a "--" */
				err = unknown_option(argv[at]);
			break;
		}
		switch (c) {
		case 'h':
			*help = true;
			break;
		case ':':
			fprintf(stderr, "smolder: option '%s' needs a value\n", argv[at]);
			err = -EINVAL;
			break;
		case 1:	  /* an operand */
		case '?': /* an unknown option, or a value given to one that takes none */
			err = unknown_option(argv[at]);
			break;
		default:
			err = collector_args__set(a, c, optarg, why, sizeof(why));
			if (err)
				fprintf(stderr, "smolder: %s\n", why);
			break;
		}
	}
	return err;
}

int collector_main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct collector *c = NULL;
	struct collector_args a;
	bool help;
	int err;

	err = parse(argc, argv, &a, &help);
	if (err || help) {
		if (help)
			fputs(collector_usage, stdout);
		collector_args__free(&a);
		return err ? 2 : 0;
	}
	if (collector_args__start(&a, &c)) {
		collector_args__free(&a);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	log_info("collector: listening on %s port %u, database %s%s", a.o.listen,
		 collector__port(c), a.o.db_path,
		 a.o.tls_client_ca ? ", https with client certificates"
		 : a.o.tls_cert	   ? ", https"
				   : "");
	/* the collector runs its own maintenance and serving threads: wait */
	while (!stop_requested)
		sleep(10); /* interrupted by the signal */
	log_info("collector: stopping");
	collector__stop(c);
	collector_args__free(&a);
	return 0;
}
