/* `smolder agent`: parsing and validation of its options, and the subcommand; see
 * agent_cmd.h. */
#include "cli/agent_cmd.h"

#include "agent/caps.h"

#include "bpf/python.h"
#include "common/reason.h"
#include "common/address.h"
#include "common/token.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char agent_options_usage[] =
	"usage: smolder agent [options]\n"
	"Samples every CPU (or the given processes) and writes folded stacks.\n"
	"\n"
	"  -p, --pid PID         sample only this process (repeatable; default: all)\n"
	"  -d, --duration SEC    stop after SEC seconds (default: until SIGINT/SIGTERM)\n"
	"  -F, --frequency HZ    samples per second per CPU (default 99)\n"
	"  -w, --window SEC      aggregation window (default 10)\n"
	"  -o, --output FILE     write folded stacks to FILE, rewritten atomically after\n"
	"                        every window with the whole run so far; '-' (default)\n"
	"                        prints each window's stacks to stdout as it ends, and\n"
	"                        so does a device or FIFO (never replaced)\n"
	"      --lines           Python frames in that output with their line,\n"
	"                        'f (app.py:42)'; default one frame per function,\n"
	"                        'f (app.py)' (batches to a collector always keep lines:\n"
	"                        queries choose with --lines)\n"
	"  -l, --label KEY=VALUE attach a label to every sample (repeatable); each\n"
	"                        process's samples also get service, container_id,\n"
	"                        pod_uid (from its cgroup) and py_main (a Python\n"
	"                        program's script or module) when it has them, unless\n"
	"                        --label gives that key\n"
	"      --thread-labels   also label each sample with its thread's name, thread=\n"
	"                        (at most 32 names per process, the rest thread=[other]);\n"
	"                        needs --collector\n"
	"  -c, --collector URL   send each window to a collector (http:// or https://)\n"
	"      --token T         bearer token for the collector's ingest endpoint\n"
	"      --token-file F    read the token from F\n"
	"      --plaintext       allow the token over http:// to a collector that is not\n"
	"                        loopback (refused otherwise: it would travel in clear)\n"
	"      --ca-file F       CA bundle to verify an https collector\n"
	"      --cert F          client certificate (PEM) for a collector that asks...\n"
	"      --key F           ... and its PEM private key\n"
	"      --spool-dir D     keep unsent batches in D (default /var/lib/smolder/spool)\n"
	"      --spool-max-mb N  spool size cap; oldest batches dropped past it (default 256)\n"
	"      --metrics [ADDR:]PORT  serve Prometheus metrics at /metrics there (default\n"
	"                        off; a bare PORT listens on 127.0.0.1 only)\n"
	"      --agent-id ID     this agent's id (default: /etc/machine-id, else host name)\n"
	"      --retry-base-ms N first retry delay, doubling up to 30 s (default 500)\n"
	"      --batch-max-kb N  ship a window in batches of at most N KiB of protobuf\n"
	"                        (4 to 2048, default 1024: under the collector's limits)\n"
	"      --python on|off   show CPython frames in Python processes (default on)\n"
	"      --python-depth N  Python frames walked per sample, 1 to 128 (default 128)\n"
	"      --unwind cfi|fp   user stacks from CFI tables (.eh_frame; default cfi), or by\n"
	"                        frame pointers only\n"
	"      --unwind-table-mb N  kernel memory for unwind tables, 1 to 128 (default 32)\n"
	"      --off-cpu on|off  also record where threads wait, in nanoseconds off CPU,\n"
	"                        as a second profile type, offcpu (default off)\n"
	"      --off-cpu-min-us N  record waits of at least N microseconds, 1 to\n"
	"                        60000000 (default 1000)\n"
	"      --off-cpu-probability P  time only a share P of waits, 0.0001 to 1\n"
	"                        (default 1); values are scaled by 1/P\n"
	"      --off-cpu-max-keys N  (thread, stack) entries of off-CPU time per window,\n"
	"                        16 to 4194304 (default 4096); past it waits are lost\n"
	"                        and counted\n"
	"      --include-idle    count the idle task instead of skipping it\n"
	"      --max-stacks N    entries per stack map (default: from window and CPUs)\n"
	"      --bpf-stats       measure the BPF program's run time and report it\n"
	"  -v, --verbose         print statistics after every window (-vv: debug log)\n"
	"  -h, --help            show this help\n";

const struct option agent_long_options[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "duration", required_argument, NULL, 'd' },
	{ "frequency", required_argument, NULL, 'F' },
	{ "window", required_argument, NULL, 'w' },
	{ "output", required_argument, NULL, 'o' },
	{ "label", required_argument, NULL, 'l' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "include-idle", no_argument, NULL, AGENT_OPT_INCLUDE_IDLE },
	{ "max-stacks", required_argument, NULL, AGENT_OPT_MAX_STACKS },
	{ "bpf-stats", no_argument, NULL, AGENT_OPT_BPF_STATS },
	{ "python", required_argument, NULL, AGENT_OPT_PYTHON },
	{ "python-depth", required_argument, NULL, AGENT_OPT_PYTHON_DEPTH },
	{ "collector", required_argument, NULL, 'c' },
	{ "token", required_argument, NULL, AGENT_OPT_TOKEN },
	{ "token-file", required_argument, NULL, AGENT_OPT_TOKEN_FILE },
	{ "ca-file", required_argument, NULL, AGENT_OPT_CA_FILE },
	{ "cert", required_argument, NULL, AGENT_OPT_CERT },
	{ "key", required_argument, NULL, AGENT_OPT_KEY },
	{ "spool-dir", required_argument, NULL, AGENT_OPT_SPOOL_DIR },
	{ "spool-max-mb", required_argument, NULL, AGENT_OPT_SPOOL_MAX_MB },
	{ "metrics", required_argument, NULL, AGENT_OPT_METRICS },
	{ "agent-id", required_argument, NULL, AGENT_OPT_AGENT_ID },
	{ "retry-base-ms", required_argument, NULL, AGENT_OPT_RETRY_BASE_MS },
	{ "batch-max-kb", required_argument, NULL, AGENT_OPT_BATCH_MAX_KB },
	{ "unwind", required_argument, NULL, AGENT_OPT_UNWIND },
	{ "unwind-table-mb", required_argument, NULL, AGENT_OPT_UNWIND_TABLE_MB },
	{ "lines", no_argument, NULL, AGENT_OPT_LINES },
	{ "off-cpu", required_argument, NULL, AGENT_OPT_OFF_CPU },
	{ "off-cpu-min-us", required_argument, NULL, AGENT_OPT_OFF_CPU_MIN_US },
	{ "off-cpu-probability", required_argument, NULL, AGENT_OPT_OFF_CPU_PROBABILITY },
	{ "off-cpu-max-keys", required_argument, NULL, AGENT_OPT_OFF_CPU_MAX_KEYS },
	{ "thread-labels", no_argument, NULL, AGENT_OPT_THREAD_LABELS },
	{ "plaintext", no_argument, NULL, AGENT_OPT_PLAINTEXT },
	{ NULL, 0, NULL, 0 },
};

/* Parses a decimal in [min, max]; the whole string must be the number. */
static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Parses a probability in [AGENT_OFFCPU_PROBABILITY_MIN, 1]; the whole string must
 * be the number. */
static int parse_probability(const char *s, double *out)
{
	char *end;
	double v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	/* written as the comparisons that are false for a NaN */
	if (errno || *end || !(v >= AGENT_OFFCPU_PROBABILITY_MIN && v <= 1.0))
		return -EINVAL;
	*out = v;
	return 0;
}

/* "PORT" or "HOST:PORT" / "[V6]:PORT" with a port of 0 to 65535; the host is
 * resolved when the agent starts (common/address.h). */
static bool is_listen(const char *arg)
{
	const char *colon = strrchr(arg, ':');
	unsigned long port;

	if (colon && colon == arg)
		return false;
	return !parse_uint(colon ? colon + 1 : arg, 0, 65535, &port);
}

static bool is_label_key(const char *k, size_t len)
{
	size_t i;

	if (!len || len > 64)
		return false;
	for (i = 0; i < len; i++) {
		char c = k[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (i > 0 && c >= '0' && c <= '9');
		if (!ok)
			return false;
	}
	return true;
}

static int add_label(struct agent_options *o, const char *arg, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	struct agent_label *l;

	if (!eq || !is_label_key(arg, (size_t)(eq - arg)))
		return reason_fail(
			err, errlen, -EINVAL,
			"--label wants KEY=VALUE with KEY of [A-Za-z_][A-Za-z0-9_]*: '%s'", arg);
	/* the store's own labels (store.h's STORE_TYPE_LABEL, the profile type) */
	if (!strncmp(arg, "__", 2))
		return reason_fail(err, errlen, -EINVAL,
				   "--label keys starting with __ are smolder's (__type__ is the "
				   "profile type): '%s'",
				   arg);
	if (strlen(eq + 1) > 1024)
		return reason_fail(err, errlen, -EINVAL, "--label value longer than 1024 bytes");
	if (o->nlabels == AGENT_MAX_LABELS)
		return reason_fail(err, errlen, -EINVAL, "at most %d labels", AGENT_MAX_LABELS);
	l = &o->labels[o->nlabels];
	l->key = strndup(arg, (size_t)(eq - arg));
	l->value = strdup(eq + 1);
	if (!l->key || !l->value) {
		free(l->key);
		free(l->value);
		return -ENOMEM;
	}
	o->nlabels++;
	return 0;
}

static int set_string(char **field, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return -ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

/* The token in a file (common/token.h), replacing any earlier --token. */
static int read_token(char **field, const char *path, char *err, size_t errlen)
{
	char *token = NULL;
	int rc = token_read_file(path, &token);

	if (rc == -ENODATA)
		return reason_fail(err, errlen, -EINVAL, "--token-file: '%s' holds no token", path);
	if (rc)
		return reason_fail(err, errlen, -EINVAL, "--token-file: cannot read '%s': %s", path,
				   strerror(-rc));
	rc = token_check(token, "--token-file", err, errlen);
	if (rc) {
		free(token);
		return rc;
	}
	free(*field);
	*field = token;
	return 0;
}

int agent_options__init(struct agent_options *o)
{
	*o = (struct agent_options){
		.frequency = 99,
		.window_sec = 10,
		.python = true,
		.python_depth = PY_MAX_DEPTH,
		.spool_max_mb = 256,
		.retry_base_ms = 500,
		.batch_max_kb = AGENT_BATCH_MAX_KB,
		.unwind_table_mb = AGENT_UNWIND_TABLE_MB,
		.off_cpu = AGENT_OFFCPU_DEFAULT,
		.off_cpu_min_us = AGENT_OFFCPU_MIN_US,
		.off_cpu_probability = 1.0,
	};
	o->pids = calloc(AGENT_MAX_PIDS, sizeof(*o->pids));
	o->labels = calloc(AGENT_MAX_LABELS, sizeof(*o->labels));
	return o->pids && o->labels ? 0 : -ENOMEM;
}

int agent_options__set(struct agent_options *o, int opt, const char *arg, char *err, size_t errlen)
{
	unsigned long v = 0;
	int rc = 0;

	switch (opt) {
	case 'p':
		if (parse_uint(arg, 1, 4194304, &v))
			rc = reason_fail(err, errlen, -EINVAL, "--pid wants a process id, got '%s'",
					 arg);
		else if (o->npids == AGENT_MAX_PIDS)
			rc = reason_fail(err, errlen, -EINVAL, "at most %d --pid options",
					 AGENT_MAX_PIDS);
		else
			o->pids[o->npids++] = (uint32_t)v;
		break;
	case 'd':
		if (parse_uint(arg, 1, 31536000, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--duration wants whole seconds >= 1, got '%s'", arg);
		o->duration_sec = (unsigned)v;
		break;
	case 'F':
		if (parse_uint(arg, 1, 10000, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--frequency wants 1 to 10000 Hz, got '%s'", arg);
		o->frequency = (unsigned)v;
		break;
	case 'w':
		if (parse_uint(arg, 1, 3600, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--window wants 1 to 3600 seconds, got '%s'", arg);
		o->window_sec = (unsigned)v;
		break;
	case 'o':
		if (!*arg)
			rc = reason_fail(err, errlen, -EINVAL, "--output wants a file name or '-'");
		else
			rc = set_string(&o->output, arg);
		break;
	case 'l':
		rc = add_label(o, arg, err, errlen);
		break;
	case 'v':
		o->verbose++;
		break;
	case AGENT_OPT_INCLUDE_IDLE:
		o->include_idle = true;
		break;
	case AGENT_OPT_BPF_STATS:
		o->bpf_stats = true;
		break;
	case AGENT_OPT_LINES:
		o->lines = true;
		break;
	case AGENT_OPT_THREAD_LABELS:
		o->thread_labels = true;
		break;
	case AGENT_OPT_PLAINTEXT:
		o->plaintext = true;
		break;
	case AGENT_OPT_MAX_STACKS:
		if (parse_uint(arg, 1024, 1u << 22, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--max-stacks wants 1024 to 4194304, got '%s'", arg);
		o->max_stacks = (uint32_t)v;
		break;
	case AGENT_OPT_PYTHON:
		if (strcmp(arg, "on") == 0)
			o->python = true;
		else if (strcmp(arg, "off") == 0)
			o->python = false;
		else
			rc = reason_fail(err, errlen, -EINVAL, "--python wants on or off, got '%s'",
					 arg);
		break;
	case AGENT_OPT_OFF_CPU:
		if (strcmp(arg, "on") == 0)
			o->off_cpu = true;
		else if (strcmp(arg, "off") == 0)
			o->off_cpu = false;
		else
			rc = reason_fail(err, errlen, -EINVAL,
					 "--off-cpu wants on or off, got '%s'", arg);
		break;
	case AGENT_OPT_OFF_CPU_MIN_US:
		if (parse_uint(arg, 1, AGENT_OFFCPU_MIN_US_MAX, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--off-cpu-min-us wants 1 to %d, got '%s'",
					 AGENT_OFFCPU_MIN_US_MAX, arg);
		o->off_cpu_min_us = (unsigned)v;
		break;
	case AGENT_OPT_OFF_CPU_PROBABILITY:
		if (parse_probability(arg, &o->off_cpu_probability))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--off-cpu-probability wants 0.0001 to 1, got '%s'", arg);
		break;
	case AGENT_OPT_OFF_CPU_MAX_KEYS:
		if (parse_uint(arg, 16, 1u << 22, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--off-cpu-max-keys wants 16 to 4194304, got '%s'", arg);
		o->off_cpu_max_keys = (uint32_t)v;
		break;
	case AGENT_OPT_UNWIND:
		if (strcmp(arg, "cfi") == 0)
			o->unwind_fp = false;
		else if (strcmp(arg, "fp") == 0)
			o->unwind_fp = true;
		else
			rc = reason_fail(err, errlen, -EINVAL, "--unwind wants cfi or fp, got '%s'",
					 arg);
		break;
	case AGENT_OPT_UNWIND_TABLE_MB:
		if (parse_uint(arg, 1, AGENT_UNWIND_TABLE_MB_MAX, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--unwind-table-mb wants 1 to %d, got '%s'",
					 AGENT_UNWIND_TABLE_MB_MAX, arg);
		o->unwind_table_mb = (unsigned)v;
		break;
	case AGENT_OPT_PYTHON_DEPTH:
		if (parse_uint(arg, 1, PY_MAX_DEPTH, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--python-depth wants 1 to %d, got '%s'", PY_MAX_DEPTH,
					 arg);
		o->python_depth = (unsigned)v;
		break;
	case 'c':
		if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--collector wants an http:// or https:// URL, got '%s'",
					 arg);
		else
			rc = set_string(&o->collector, arg);
		break;
	case AGENT_OPT_TOKEN:
		rc = token_check(arg, "--token", err, errlen);
		rc = rc ?: set_string(&o->token, arg);
		break;
	case AGENT_OPT_TOKEN_FILE:
		rc = read_token(&o->token, arg, err, errlen);
		break;
	case AGENT_OPT_CA_FILE:
		rc = set_string(&o->ca_file, arg);
		break;
	case AGENT_OPT_CERT:
		rc = set_string(&o->cert_file, arg);
		break;
	case AGENT_OPT_KEY:
		rc = set_string(&o->key_file, arg);
		break;
	case AGENT_OPT_SPOOL_DIR:
		rc = *arg ? set_string(&o->spool_dir, arg)
			  : reason_fail(err, errlen, -EINVAL, "--spool-dir wants a directory");
		break;
	case AGENT_OPT_SPOOL_MAX_MB:
		if (parse_uint(arg, 1, 1u << 20, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--spool-max-mb wants 1 to 1048576, got '%s'", arg);
		o->spool_max_mb = (unsigned)v;
		break;
	case AGENT_OPT_METRICS:
		rc = is_listen(arg) ? set_string(&o->metrics, arg)
				    : reason_fail(err, errlen, -EINVAL,
						  "--metrics wants PORT or ADDR:PORT (port 0 to "
						  "65535), got '%s'",
						  arg);
		break;
	case AGENT_OPT_AGENT_ID:
		rc = *arg && strlen(arg) <= 256
			     ? set_string(&o->agent_id, arg)
			     : reason_fail(err, errlen, -EINVAL,
					   "--agent-id wants 1 to 256 characters");
		break;
	case AGENT_OPT_RETRY_BASE_MS:
		if (parse_uint(arg, 1, 30000, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--retry-base-ms wants 1 to 30000, got '%s'", arg);
		o->retry_base_ms = (unsigned)v;
		break;
	case AGENT_OPT_BATCH_MAX_KB:
		if (parse_uint(arg, 4, 2048, &v))
			rc = reason_fail(err, errlen, -EINVAL,
					 "--batch-max-kb wants 4 to 2048, got '%s'", arg);
		o->batch_max_kb = (unsigned)v;
		break;
	default:
		rc = reason_fail(err, errlen, -EINVAL, "unknown option code %d", opt);
		break;
	}
	return rc;
}

/* A token goes over plain http only to a loopback collector (by its name alone,
 * common/address.h), or with --plaintext: anyone on the path could read it and
 * forge the host's profiles. */
static int check_plaintext(const struct agent_options *o, char *err, size_t errlen)
{
	char host[256];

	if (!o->token || !o->collector || o->plaintext || strncmp(o->collector, "http://", 7))
		return 0;
	if (address_url_host(o->collector, host, sizeof(host)))
		return reason_fail(err, errlen, -EINVAL, "--collector: no host in '%s'",
				   o->collector);
	if (address_is_loopback_name(host))
		return 0;
	return reason_fail(err, errlen, -EPERM,
			   "--collector %s: the token would travel in clear to %s, which is not "
			   "loopback: use https:// (and --ca-file), or --plaintext on a network "
			   "you trust",
			   o->collector, host);
}

/* --output defaults to "-", except with a collector: then folded output only when
 * asked for. */
int agent_options__finish(struct agent_options *o)
{
	if (!o->output && !o->collector && !(o->output = strdup("-")))
		return -ENOMEM;
	return 0;
}

int agent_options__parse(int argc, char **argv, struct agent_options *o, char *err, size_t errlen)
{
	bool help = false;
	int c, rc;

	rc = agent_options__init(o);
	optind = 0; /* full reset, so parsing twice in one process works */
	opterr = 0;
	while (!rc &&
	       (c = getopt_long(argc, argv, AGENT_SHORT_OPTIONS, agent_long_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			help = true;
			break;
		case ':':
			rc = reason_fail(err, errlen, -EINVAL, "option '%s' needs a value",
					 argv[optind - 1]);
			break;
		case '?':
			rc = reason_fail(err, errlen, -EINVAL, "unknown option '%s'",
					 argv[optind - 1]);
			break;
		default:
			rc = agent_options__set(o, c, optarg, err, errlen);
			break;
		}
	}
	if (!rc && optind < argc)
		rc = reason_fail(err, errlen, -EINVAL, "unexpected argument '%s'", argv[optind]);
	if (!rc)
		rc = agent_options__finish(o);
	if (!rc && !o->cert_file != !o->key_file)
		rc = reason_fail(err, errlen, -EINVAL, "--cert and --key go together");
	if (!rc)
		rc = check_plaintext(o, err, errlen);
	if (!rc && o->thread_labels && !o->collector)
		rc = reason_fail(err, errlen, -EINVAL,
				 "--thread-labels labels the batches sent to a collector: it needs "
				 "--collector");
	if (rc)
		agent_options__free(o);
	return rc ? rc : help ? 1 : 0;
}

void agent_options__free(struct agent_options *o)
{
	size_t i;

	for (i = 0; o->labels && i < o->nlabels; i++) {
		free(o->labels[i].key);
		free(o->labels[i].value);
	}
	free(o->labels);
	free(o->pids);
	free(o->output);
	free(o->collector);
	free(o->token);
	free(o->ca_file);
	free(o->cert_file);
	free(o->key_file);
	free(o->spool_dir);
	free(o->metrics);
	free(o->agent_id);
	*o = (struct agent_options){ 0 };
}

int agent_main(int argc, char **argv)
{
	struct agent_options o;
	char why[256] = "";
	int err;

	err = agent_options__parse(argc, argv, &o, why, sizeof(why));
	if (err < 0) {
		fprintf(stderr, "smolder agent: %s\n%s", err == -EINVAL ? why : strerror(-err),
			agent_options_usage);
		return 2;
	}
	if (err == 1) {
		fputs(agent_options_usage, stdout);
		agent_options__free(&o);
		return 0;
	}
	err = caps__check(NULL, why, sizeof(why));
	if (err) {
		fprintf(stderr, "smolder agent: %s\n", why);
		agent_options__free(&o);
		return 1;
	}
	err = agent_run(&o);
	agent_options__free(&o);
	return err ? 1 : 0;
}
