/* Soak bench for the collector: one release collector, fed by many
 * simulated agents over real HTTP while queries run, watched for memory growth,
 * lost or doubled batches and ingest latency.
 *
 *   build/bench/soak [SECONDS] [AGENTS] [SAMPLES] [DIR]   (make bench: 600 200)
 *
 * It starts `build/smolder collector --db DIR/soak.db --listen 127.0.0.1:0` (or
 * $SMOLDER), then AGENTS simulated agents, each with its own agent id and host,
 * its own source address (127.0.x.y, as hosts of a fleet would be) and one
 * keep-alive connection, sending one batch per 10 s window: bench/gen.h's host
 * mix, SAMPLES samples a window (default 198: a host 10 % busy, 2 CPUs at 99 Hz),
 * zstd protobuf from wire_encode(), window_start the wall-clock window, seq the
 * wall clock in ns as the agent's. The agents' send times are spread evenly over
 * the window, so ingest is continuous. Every 25th batch of an agent is followed by
 * a re-send of the batch before it, which must be acknowledged as a duplicate; a
 * batch that got no answer or a 5xx is retried as the agent does. A query thread
 * asks for a flame graph, top, series and a one-host folded profile over moving
 * ranges, one every QUERY_EVERY_MS (SOAK_NO_QUERIES=1 in the environment: none).
 * Every 10 s the collector's VmRSS is read. The environment passes to the
 * collector, so MALLOC_ARENA_MAX=2 build/bench/soak ... compares allocator settings.
 *
 * At the end the collector is stopped (exit status 0 wanted) and the store file is
 * opened: the samples stored for each agent's host must equal the sum of that
 * agent's acknowledged non-duplicate batches exactly (no loss, no double), and
 * the store's batch count the number of those batches. Reported: ingest latency
 * (the whole HTTP request, as an agent sees it) p50/p99/max, query latency, RSS
 * over time, its slope over the second half, and the floor (lowest sample) of each
 * quarter of the run: queries' transient peaks come and go, a leak raises the
 * floor, so "flat" is the floor's rise from the second quarter to the last, per
 * minute, against SLOPE_TOLERANCE_MB_MIN.
 * Exit status 1 when a batch was lost, doubled or never acknowledged, the
 * collector died or exited badly, or RSS was not flat.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "wire/batch.h"
#include "wire/wire.h"
#include "store/store.h"

#include "bench/gen.h"

#define WINDOW_S 10
/* A thread per agent up to this many, as agents are independent: one slow answer
 * (ingest waits for the store while a query holds it) delays only its own. */
#define SENDER_THREADS 200
#define MAX_AGENTS     4000  /* source addresses 127.0.x.y and per-agent state */
#define RESEND_EVERY   25    /* every 25th batch: re-send the one before */
#define MAX_ATTEMPTS   6     /* per batch, as the agent's retries (then: unacked) */
#define RETRY_BASE_MS  500   /* first retry delay, doubling (the agent's default) */
#define QUERY_EVERY_MS 3000  /* one query every 3 s */
#define RSS_EVERY_S    10    /* RSS sample interval */
#define START_MS       30000 /* bound on the collector's start-up */
#define STOP_MS	       30000 /* bound on its clean stop */
#define HTTP_TIMEOUT_S 30    /* bound on one request */
/* RSS is "flat" when its least-squares slope over the second half of the run is
 * under this: a per-query leak shows as many MB/min; 0.25 MB/min is 15 MB an
 * hour, below what a slow leak of per-batch state (a few hundred bytes per batch
 * at 20 batches/s, 0.3 MB/min and up) would show, above allocator noise. */
#define SLOPE_TOLERANCE_MB_MIN 0.25

struct agent {
	unsigned idx;
	CURL *curl;
	unsigned seed;
	int64_t window0;  /* window_start of its first batch */
	uint64_t next_ms; /* monotonic time of its next send */
	unsigned k;	  /* batches sent so far */
	void *prev;	  /* the previous batch's body, for the deliberate re-send */
	size_t prev_len;
	uint64_t stored;  /* samples of its acknowledged, non-duplicate batches */
	uint64_t nstored; /* those batches */
	char addr[32];
};

/* What every sender thread adds to, under ledger_lock. */
struct ledger {
	uint64_t batches, samples;    /* acknowledged as stored */
	uint64_t resends, resend_dup; /* deliberate re-sends, and those acked as duplicates */
	uint64_t unexpected_dup;      /* a first send acknowledged as a duplicate: a loss */
	uint64_t resend_stored;	      /* a re-send stored again: a double */
	uint64_t retries, unacked;    /* attempts retried; batches never acknowledged */
	uint64_t late;		      /* sends that started more than a second late */
	double *lat;		      /* ingest latencies, seconds */
	size_t nlat, caplat;
};

static struct ledger ledger;
static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gen_lock = PTHREAD_MUTEX_INITIALIZER; /* gen.h's shared pool */
static atomic_bool stopping;
static struct agent *agents;
static unsigned nagents, nsamples;
static unsigned port;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Records one ingest latency; ledger_lock held. */
static void add_latency(double s)
{
	if (ledger.nlat == ledger.caplat) {
		size_t cap = ledger.caplat ? ledger.caplat * 2 : 4096;
		double *n = realloc(ledger.lat, cap * sizeof(*n));

		if (!n)
			return;
		ledger.lat = n;
		ledger.caplat = cap;
	}
	ledger.lat[ledger.nlat++] = s;
}

struct answer {
	char text[512];
	size_t len;
};

static size_t gather(char *data, size_t size, size_t n, void *ctx)
{
	struct answer *a = ctx;
	size_t take = size * n;

	if (take > sizeof(a->text) - 1 - a->len)
		take = sizeof(a->text) - 1 - a->len;
	memcpy(a->text + a->len, data, take);
	a->len += take;
	a->text[a->len] = '\0';
	return size * n;
}

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
	(void)data;
	(void)ctx;
	return size * n;
}

/* One POST on the agent's keep-alive connection. Returns the HTTP status (0: no
 * answer); *dup from the answer, *secs the request's wall time. */
static long post(struct agent *a, const void *body, size_t len, bool *dup, double *secs)
{
	struct answer ans = { .len = 0 };
	long status = 0;
	uint64_t t0 = realtime_ns();

	curl_easy_setopt(a->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(a->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(a->curl, CURLOPT_WRITEDATA, &ans);
	if (curl_easy_perform(a->curl) == CURLE_OK)
		curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
	*secs = (double)(realtime_ns() - t0) / 1e9;
	*dup = strstr(ans.text, "\"duplicate\":true") != NULL;
	return status;
}

static int agent_init(struct agent *a, unsigned i, struct curl_slist *headers, int64_t now)
{
	char url[64];

	a->idx = i;
	a->seed = 1000u + i * 7919u;
	a->window0 = now / WINDOW_S * WINDOW_S;
	snprintf(a->addr, sizeof(a->addr), "127.0.%u.%u", 1 + i / 250, 1 + i % 250);
	a->curl = curl_easy_init();
	if (!a->curl)
		return -ENOMEM;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/ingest", port);
	curl_easy_setopt(a->curl, CURLOPT_URL, url);
	curl_easy_setopt(a->curl, CURLOPT_INTERFACE, a->addr);
	curl_easy_setopt(a->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(a->curl, CURLOPT_WRITEFUNCTION, gather);
	curl_easy_setopt(a->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(a->curl, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(a->curl, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
	return 0;
}

/* Builds the agent's next batch: gen.h's window with this agent's identity, the
 * current wall-clock window and seq. Returns the body, or NULL. */
static void *next_body(struct agent *a, size_t *len, uint64_t *samples)
{
	struct batch *b;
	void *body = NULL;
	uint32_t i;

	pthread_mutex_lock(&gen_lock);
	b = make_window(a->k, a->idx, nsamples, &a->seed);
	pthread_mutex_unlock(&gen_lock);
	if (!b)
		return NULL;
	b->seq = realtime_ns();
	b->window_start = a->window0 + (int64_t)a->k * WINDOW_S;
	*samples = 0;
	for (i = 0; i < b->nsamples; i++)
		*samples += b->samples[i].count;
	if (wire_encode(b, 3, &body, len))
		body = NULL;
	batch__free(b);
	return body;
}

/* Sends one batch until acknowledged (as the agent: retries with backoff on no
 * answer and on 5xx). A first send answered "duplicate" means the batch was never
 * stored; an answer "duplicate" to a retry after an unanswered attempt is an
 * acknowledgement of the first attempt. */
static void send_batch(struct agent *a, const void *body, size_t len, uint64_t samples)
{
	bool dup, unanswered = false;
	unsigned attempt;
	long status;
	double secs;

	for (attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
		if (attempt)
			sleep_ms((uint64_t)RETRY_BASE_MS << (attempt - 1));
		status = post(a, body, len, &dup, &secs);
		pthread_mutex_lock(&ledger_lock);
		if (attempt)
			ledger.retries++;
		if (status == 200) {
			add_latency(secs);
			if (dup && !unanswered)
				ledger.unexpected_dup++;
			else {
				ledger.batches++;
				ledger.samples += samples;
				a->stored += samples;
				a->nstored++;
			}
		}
		pthread_mutex_unlock(&ledger_lock);
		if (status == 200)
			return;
		if (status == 0)
			unanswered = true;
		if (status >= 400 && status < 500)
			break; /* refused for good: the agent would drop it */
		if (status)
			fprintf(stderr, "soak: agent %u: HTTP %ld, retrying\n", a->idx, status);
	}
	fprintf(stderr, "soak: agent %u: batch %u never acknowledged (last HTTP %ld)\n", a->idx,
		a->k, status);
	pthread_mutex_lock(&ledger_lock);
	ledger.unacked++;
	pthread_mutex_unlock(&ledger_lock);
}

/* The deliberate re-send of the previous batch: must be a duplicate. */
static void resend_prev(struct agent *a)
{
	bool dup;
	double secs;
	long status = post(a, a->prev, a->prev_len, &dup, &secs);

	pthread_mutex_lock(&ledger_lock);
	ledger.resends++;
	if (status == 200) {
		add_latency(secs);
		if (dup)
			ledger.resend_dup++;
		else
			ledger.resend_stored++;
	}
	pthread_mutex_unlock(&ledger_lock);
}

struct sender {
	pthread_t thread;
	unsigned first, n; /* agents [first, first + n) */
};

static void *sender_main(void *arg)
{
	struct sender *s = arg;

	while (s->n && !atomic_load(&stopping)) {
		struct agent *a = NULL;
		uint64_t now = mono_ms(), samples = 0;
		unsigned i;
		size_t len = 0;
		void *body;

		for (i = s->first; i < s->first + s->n; i++)
			if (!a || agents[i].next_ms < a->next_ms)
				a = &agents[i];
		if (a->next_ms > now) {
			sleep_ms(a->next_ms - now > 200 ? 200 : a->next_ms - now);
			continue;
		}
		if (now - a->next_ms > 1000) {
			pthread_mutex_lock(&ledger_lock);
			ledger.late++;
			pthread_mutex_unlock(&ledger_lock);
		}
		body = next_body(a, &len, &samples);
		if (!body) {
			fprintf(stderr, "soak: cannot build a batch\n");
			atomic_store(&stopping, true);
			break;
		}
		send_batch(a, body, len, samples);
		if (a->prev && (a->k + a->idx) % RESEND_EVERY == 0) /* spread over agents */
			resend_prev(a);
		free(a->prev);
		a->prev = body;
		a->prev_len = len;
		a->k++;
		a->next_ms += WINDOW_S * 1000;
	}
	return NULL;
}

/* ---- queries ---------------------------------------------------------------- */

struct qstats {
	const char *name;
	double *lat;
	size_t n, cap;
	unsigned failed;
};

static struct qstats qs[] = {
	{ "flamegraph json, last 5 min" },
	{ "top, last 10 min" },
	{ "series, whole run, 10 s step" },
	{ "folded, one host, last 5 min" },
};
#define NQUERIES (sizeof(qs) / sizeof(qs[0]))

static void *query_main(void *arg)
{
	int64_t t0 = *(int64_t *)arg;
	CURL *c = curl_easy_init();
	unsigned n = 0;

	if (!c)
		return NULL;
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)(HTTP_TIMEOUT_S * 4));
	while (!atomic_load(&stopping)) {
		uint64_t start = mono_ms();
		int64_t now = (int64_t)time(NULL);
		struct qstats *q = &qs[n % NQUERIES];
		char url[512];
		long status = 0;

		switch (n % NQUERIES) {
		case 0:
			snprintf(url, sizeof(url),
				 "http://127.0.0.1:%u/api/v1/"
				 "flamegraph?from=%lld&to=%lld&format=json",
				 port, (long long)(now - 300), (long long)now);
			break;
		case 1:
			snprintf(url, sizeof(url),
				 "http://127.0.0.1:%u/api/v1/top?from=%lld&to=%lld&limit=20", port,
				 (long long)(now - 600), (long long)now);
			break;
		case 2:
			snprintf(url, sizeof(url),
				 "http://127.0.0.1:%u/api/v1/series?from=%lld&to=%lld&step=10s",
				 port, (long long)(t0 - 60), (long long)now);
			break;
		default:
			snprintf(url, sizeof(url),
				 "http://127.0.0.1:%u/api/v1/folded?from=%lld&to=%lld"
				 "&where=host=bench-host-%u",
				 port, (long long)(now - 300), (long long)now, n % nagents);
			break;
		}
		curl_easy_setopt(c, CURLOPT_URL, url);
		if (curl_easy_perform(c) == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (status != 200) {
			q->failed++;
			fprintf(stderr, "soak: query %s: HTTP %ld\n", q->name, status);
		} else if (q->n < q->cap || (q->cap = q->cap ? q->cap * 2 : 256,
					     q->lat = realloc(q->lat, q->cap * sizeof(double)))) {
			q->lat[q->n++] = (double)(mono_ms() - start) / 1000.0;
		}
		n++;
		while (!atomic_load(&stopping) && mono_ms() < start + QUERY_EVERY_MS)
			sleep_ms(100);
	}
	curl_easy_cleanup(c);
	return NULL;
}

/* ---- the collector ------------------------------------------------------------ */

static pid_t start_collector(const char *bin, const char *db, const char *err_path)
{
	uint64_t deadline = mono_ms() + START_MS;
	pid_t pid;

	unlink(err_path); /* so that an old run's port is not read */
	pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execl(bin, bin, "collector", "--db", db, "--listen", "127.0.0.1:0", (char *)NULL);
		_exit(127);
	}
	while (mono_ms() < deadline) {
		char text[4096];
		FILE *f = fopen(err_path, "r");
		size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
		const char *p;

		if (f)
			fclose(f);
		text[n] = '\0';
		p = strstr(text, " port ");
		if (p && (port = (unsigned)strtoul(p + 6, NULL, 10)))
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		sleep_ms(20); /* polling interval of a bounded wait */
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* SIGTERM, then a bounded wait. Returns the wait status, or -1 (then killed). */
static int stop_collector(pid_t pid)
{
	uint64_t deadline = mono_ms() + STOP_MS;
	int status;

	if (waitpid(pid, &status, WNOHANG) == pid)
		return status; /* it had died on its own */
	kill(pid, SIGTERM);
	while (mono_ms() < deadline) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		sleep_ms(20);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* VmRSS, VmHWM or another "Name:  N kB" line of /proc/PID/status, in kB. */
static long status_kb(pid_t pid, const char *name)
{
	char path[64], line[256];
	size_t n = strlen(name);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, name, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Least-squares slope in MB per minute of n RSS samples (kB), the first taken at
 * sample index first, every `every` samples of RSS_EVERY_S. */
static double fit_slope(const long *v, size_t n, size_t first, size_t every)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, m = (double)n;
	size_t i;

	for (i = 0; i < n; i++) {
		double x = (double)((first + i) * every * RSS_EVERY_S) / 60.0;
		double y = (double)v[i] / 1024.0;

		sx += x, sy += y, sxx += x * x, sxy += x * y;
	}
	return n > 1 ? (m * sxy - sx * sy) / (m * sxx - sx * sx) : 0;
}

/* The database file and its WAL and shared-memory files. */
static void remove_db(const char *db)
{
	char path[PATH_MAX + 8];

	unlink(db);
	snprintf(path, sizeof(path), "%s-wal", db);
	unlink(path);
	snprintf(path, sizeof(path), "%s-shm", db);
	unlink(path);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p)
{
	if (!n)
		return 0;
	return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

struct sum_ctx {
	uint64_t total;
};

static int add_point(void *ctx, int64_t bucket, uint64_t count)
{
	(void)bucket;
	((struct sum_ctx *)ctx)->total += count;
	return 0;
}

/* Checks the store against the ledger, agent by agent. Returns the number of
 * agents whose stored samples differ from what was acknowledged, or -1. */
static int check_store(const char *db, int64_t from, int64_t to, uint64_t *total, uint64_t *batches)
{
	const char *key = "host";
	struct store_stats st;
	struct store *s;
	int bad = 0;
	unsigned i;

	if (store__open(db, NULL, &s))
		return -1;
	*total = 0;
	for (i = 0; i < nagents; i++) {
		char host[32];
		const char *value = host;
		struct store_query q = { from, to, &key, &value, 1 };
		struct sum_ctx c = { 0 };

		snprintf(host, sizeof(host), "bench-host-%u", i);
		if (store__query_series(s, &q, to - from, add_point, &c)) {
			fprintf(stderr, "soak: series query failed: %s\n", store__errmsg(s));
			store__close(s);
			return -1;
		}
		*total += c.total;
		if (c.total != agents[i].stored) {
			if (bad < 10)
				fprintf(stderr,
					"soak: agent %u: %llu samples stored, %llu acknowledged\n",
					i, (unsigned long long)c.total,
					(unsigned long long)agents[i].stored);
			bad++;
		}
	}
	*batches = store__stats(s, &st) ? UINT64_MAX : st.batches;
	store__close(s);
	return bad;
}

int main(int argc, char **argv)
{
	unsigned seconds = argc > 1 ? (unsigned)atoi(argv[1]) : 600;
	const char *dir = argc > 4 ? argv[4] : "/tmp";
	struct curl_slist *headers = NULL;
	static struct sender senders[SENDER_THREADS];
	char bin[PATH_MAX], db[PATH_MAX], err_path[PATH_MAX + 16], *slash;
	long *rss = NULL, hwm, threads_max = 0;
	size_t nrss = 0, nsenders, i, p, k;
	int64_t t0 = (int64_t)time(NULL);
	uint64_t start_ms, total = 0, store_batches = 0;
	pthread_t qthread = 0;
	int status, bad, fail = 0;
	bool died = false;
	pid_t pid;
	ssize_t n;

	nagents = argc > 2 ? (unsigned)atoi(argv[2]) : 200;
	nsamples = argc > 3 ? (unsigned)atoi(argv[3]) : 198;
	if (!seconds || !nagents || nagents > MAX_AGENTS || !nsamples) {
		fprintf(stderr, "usage: soak [SECONDS] [AGENTS (1..%u)] [SAMPLES] [DIR]\n",
			MAX_AGENTS);
		return 2;
	}
	if (getenv("SMOLDER")) {
		snprintf(bin, sizeof(bin), "%s", getenv("SMOLDER"));
	} else { /* build/bench/soak -> build/smolder */
		n = readlink("/proc/self/exe", bin, sizeof(bin) - 16);
		if (n <= 0)
			return 1;
		bin[n] = '\0';
		slash = strrchr(bin, '/');
		*slash = '\0';
		slash = strrchr(bin, '/');
		snprintf(slash ? slash + 1 : bin,
			 sizeof(bin) - (size_t)(slash ? slash + 1 - bin : 0), "smolder");
	}
	snprintf(db, sizeof(db), "%s/soak.db", dir);
	snprintf(err_path, sizeof(err_path), "%s/soak-collector.err", dir);
	remove_db(db);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_ALL);

	pid = start_collector(bin, db, err_path);
	if (pid < 0) {
		fprintf(stderr, "soak: %s did not start; see %s\n", bin, err_path);
		return 1;
	}
	printf("soak: %s, pid %d, port %u; %u agents x %u samples per %d s window, %u s\n", bin,
	       (int)pid, port, nagents, nsamples, WINDOW_S, seconds);

	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack((unsigned)p, (unsigned)k,
				   &(unsigned){ 42 + (unsigned)(p * POOL + k) }, pool[p][k].text,
				   sizeof(pool[p][k].text));
	headers = curl_slist_append(headers, "Content-Type: " WIRE_CONTENT_TYPE);
	headers = curl_slist_append(headers, "Content-Encoding: zstd");
	agents = calloc(nagents, sizeof(*agents));
	start_ms = mono_ms();
	for (i = 0; i < nagents; i++) {
		if (agent_init(&agents[i], (unsigned)i, headers, t0))
			return 1;
		agents[i].next_ms = start_ms + i * WINDOW_S * 1000 / nagents;
	}
	nsenders = nagents < SENDER_THREADS ? nagents : SENDER_THREADS;
	for (i = 0; i < nsenders; i++) {
		senders[i].first = (unsigned)(i * nagents / nsenders);
		senders[i].n = (unsigned)((i + 1) * nagents / nsenders) - senders[i].first;
		pthread_create(&senders[i].thread, NULL, sender_main, &senders[i]);
	}
	if (!getenv("SOAK_NO_QUERIES")) /* to tell ingest's memory from the queries' */
		pthread_create(&qthread, NULL, query_main, &t0);

	printf("%6s %10s %10s %8s %10s\n", "t (s)", "VmRSS kB", "RssAnon kB", "threads", "batches");
	rss = calloc(seconds / RSS_EVERY_S + 2, sizeof(*rss));
	for (;;) {
		uint64_t t = (mono_ms() - start_ms) / 1000;
		long th = status_kb(pid, "Threads");
		uint64_t batches;

		if (waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "soak: the collector died (status 0x%x)\n", status);
			died = true;
			break;
		}
		pthread_mutex_lock(&ledger_lock);
		batches = ledger.batches;
		pthread_mutex_unlock(&ledger_lock);
		rss[nrss] = status_kb(pid, "VmRSS");
		if (th > threads_max)
			threads_max = th;
		printf("%6llu %10ld %10ld %8ld %10llu\n", (unsigned long long)t, rss[nrss],
		       status_kb(pid, "RssAnon"), th, (unsigned long long)batches);
		fflush(stdout);
		nrss++;
		if (t >= seconds || nrss >= seconds / RSS_EVERY_S + 1)
			break;
		while (mono_ms() < start_ms + nrss * RSS_EVERY_S * 1000)
			sleep_ms(100);
	}
	hwm = died ? -1 : status_kb(pid, "VmHWM");
	atomic_store(&stopping, true);
	for (i = 0; i < nsenders; i++)
		pthread_join(senders[i].thread, NULL);
	if (!getenv("SOAK_NO_QUERIES"))
		pthread_join(qthread, NULL);
	if (!died) {
		status = stop_collector(pid);
		if (status != 0) {
			fprintf(stderr, "soak: the collector's exit: status 0x%x; see %s\n", status,
				err_path);
			died = true;
		}
	}

	/* Ledger against store. */
	bad = check_store(db, t0 - 3600, t0 + (int64_t)seconds + 7200, &total, &store_batches);
	printf("\nbatches acknowledged as stored %llu (%llu samples), store holds %llu samples in "
	       "%llu batches\n",
	       (unsigned long long)ledger.batches, (unsigned long long)ledger.samples,
	       (unsigned long long)total, (unsigned long long)store_batches);
	printf("deliberate re-sends %llu, acknowledged as duplicates %llu, stored again %llu; "
	       "first sends answered duplicate %llu; retries %llu, never acknowledged %llu, "
	       "sends over 1 s late %llu\n",
	       (unsigned long long)ledger.resends, (unsigned long long)ledger.resend_dup,
	       (unsigned long long)ledger.resend_stored, (unsigned long long)ledger.unexpected_dup,
	       (unsigned long long)ledger.retries, (unsigned long long)ledger.unacked,
	       (unsigned long long)ledger.late);
	if (bad != 0 || total != ledger.samples || store_batches != ledger.batches ||
	    ledger.resend_stored || ledger.resend_dup != ledger.resends || ledger.unexpected_dup) {
		printf("FAIL: stored samples differ from the acknowledged ones (%d agents "
		       "differ)\n",
		       bad);
		fail = 1;
	} else {
		printf("PASS: every acknowledged batch stored exactly once (%d agents checked)\n",
		       (int)nagents);
	}
	if (ledger.unacked) {
		printf("FAIL: %llu batches never acknowledged\n",
		       (unsigned long long)ledger.unacked);
		fail = 1;
	}

	qsort(ledger.lat, ledger.nlat, sizeof(double), cmp_double);
	printf("ingest latency (HTTP request as the agent sees it, %zu requests): p50 %.1f ms, "
	       "p99 %.1f ms, max %.1f ms\n",
	       ledger.nlat, pct(ledger.lat, ledger.nlat, 0.5) * 1e3,
	       pct(ledger.lat, ledger.nlat, 0.99) * 1e3,
	       ledger.nlat ? ledger.lat[ledger.nlat - 1] * 1e3 : 0.0);
	for (i = 0; i < NQUERIES; i++) {
		qsort(qs[i].lat, qs[i].n, sizeof(double), cmp_double);
		printf("query %-30s %4zu runs, %u failed: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		       qs[i].name, qs[i].n, qs[i].failed, pct(qs[i].lat, qs[i].n, 0.5) * 1e3,
		       pct(qs[i].lat, qs[i].n, 0.99) * 1e3,
		       qs[i].n ? qs[i].lat[qs[i].n - 1] * 1e3 : 0.0);
		if (qs[i].failed)
			fail = 1;
	}

	/* RSS: the least-squares slope over the second half of every sample, and the
	 * floor (lowest sample) of each quarter of the run: queries come and go, a leak
	 * raises the floor. Flat: the floor of the last quarter over that of the second,
	 * per minute between them, within SLOPE_TOLERANCE_MB_MIN. */
	if (nrss >= 8) {
		size_t q = nrss / 4, j;
		double slope = fit_slope(rss + nrss / 2, nrss - nrss / 2, nrss / 2, 1), floor_slope;
		long floors[4];

		for (j = 0; j < 4; j++)
			for (i = j * q, floors[j] = rss[i]; i < (j == 3 ? nrss : (j + 1) * q); i++)
				if (rss[i] < floors[j])
					floors[j] = rss[i];
		floor_slope = (double)(floors[3] - floors[1]) / 1024.0 /
			      ((double)(2 * q * RSS_EVERY_S) / 60.0);
		printf("collector RSS: %.1f MB at start, %.1f MB at the end, peak (VmHWM) %.1f MB, "
		       "up to %ld threads\n",
		       (double)rss[0] / 1024, (double)rss[nrss - 1] / 1024, (double)hwm / 1024,
		       threads_max);
		printf("RSS floor (lowest sample) of each quarter: %.1f, %.1f, %.1f, %.1f MB; "
		       "slope "
		       "of every sample over the second half %.3f MB/min\n",
		       (double)floors[0] / 1024, (double)floors[1] / 1024, (double)floors[2] / 1024,
		       (double)floors[3] / 1024, slope);
		printf("%s: RSS floor from the second quarter to the last: %+.3f MB/min "
		       "(tolerance %.2f)\n",
		       floor_slope <= SLOPE_TOLERANCE_MB_MIN ? "PASS" : "FAIL", floor_slope,
		       SLOPE_TOLERANCE_MB_MIN);
		if (floor_slope > SLOPE_TOLERANCE_MB_MIN)
			fail = 1;
	}
	if (died) {
		printf("FAIL: the collector died or exited badly\n");
		fail = 1;
	}
	for (i = 0; i < nagents; i++) {
		curl_easy_cleanup(agents[i].curl);
		free(agents[i].prev);
	}
	free(agents);
	free(rss);
	free(ledger.lat);
	for (i = 0; i < NQUERIES; i++)
		free(qs[i].lat);
	curl_slist_free_all(headers);
	curl_global_cleanup();
	if (!getenv("SMOLDER_KEEP"))
		remove_db(db);
	return fail;
}
