/* The agent's /metrics endpoint: its Prometheus text and its libmicrohttpd server;
 * see metrics.h. Every metric has HELP and TYPE lines, counters end in _total,
 * units are in the names; the loss counters are one family labelled by reason,
 * named as in the exit summary. The process figures are the ones every Prometheus
 * client library exports (process_cpu_seconds_total, process_resident_memory_bytes),
 * read at the scrape. */
#include "agent/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/address.h"
#include "common/version.h"

struct agent_metrics {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock; /* guards snap and published */
	struct agent_metrics_snapshot snap;
	bool published;
	uint16_t port;
	bool loopback;
};

/* The BPF program's counters (bpf/profile.h): the losses, by the reason the exit
 * summary gives, and what is no loss, each under its own name. */
struct loss_metric {
	const char *reason; /* smolder_agent_losses_total{reason=...}, or NULL */
	const char *name;   /* else a counter of its own */
	const char *help;
};

static const struct loss_metric loss_metrics[PROFILE_LOSS_NR] = {
	[PROFILE_LOSS_KSTACK_FAULT] = { "kernel_stack_unreadable", NULL, NULL },
	[PROFILE_LOSS_USTACK_FAULT] = { "user_stack_unreadable", NULL, NULL },
	[PROFILE_LOSS_STACK_FULL] = { "stack_map_full", NULL, NULL },
	[PROFILE_LOSS_COUNTS_FULL] = { "counts_map_full", NULL, NULL },
	[PROFILE_LOSS_EVENTS_FULL] = { "process_events_dropped", NULL, NULL },
	[PROFILE_LOSS_PY_NO_TSTATE] = { "python_thread_state_not_found", NULL, NULL },
	[PROFILE_LOSS_PY_READ_FAULT] = { "python_frame_unreadable", NULL, NULL },
	[PROFILE_LOSS_PY_TRUNCATED] = { "python_stack_truncated", NULL, NULL },
	[PROFILE_LOSS_PY_STACK_FULL] = { "python_stack_map_full", NULL, NULL },
	[PROFILE_LOSS_UNWIND_NO_PROC] = { "unwind_process_not_published", NULL, NULL },
	[PROFILE_LOSS_UNWIND_NO_TABLE] = { "unwind_no_table", NULL, NULL },
	[PROFILE_LOSS_UNWIND_CUT] = { "unwind_cut", NULL, NULL },
	[PROFILE_LOSS_UNWIND_TRUNCATED] = { "user_stack_truncated", NULL, NULL },
	[PROFILE_LOSS_OFFCPU_START_FULL] = { "offcpu_start_map_full", NULL, NULL },
	[PROFILE_LOSS_OFFCPU_COUNTS_FULL] = { "offcpu_counts_map_full", NULL, NULL },
	[PROFILE_LOSS_OFFCPU_PENDING_FULL] = { "offcpu_pending_map_full", NULL, NULL },
	[PROFILE_LOSS_OFFCPU_NO_USER] = { "offcpu_user_stack_unknown", NULL, NULL },
	[PROFILE_LOSS_OFFCPU_SWAPPED] = { "offcpu_kernel_stack_window_ended", NULL, NULL },
	[PROFILE_LOSS_OFFCPU_NESTED] = { "samples_during_offcpu_walk", NULL, NULL },
	[PROFILE_LOSS_SAMPLES] = { NULL, "smolder_agent_samples_total",
				   "Samples the BPF program counted (every CPU, every sampled "
				   "process)." },
	[PROFILE_LOSS_IDLE] = { NULL, "smolder_agent_idle_samples_skipped_total",
				"Samples of the idle task, skipped (--include-idle counts them)." },
	[PROFILE_LOSS_PY_SAMPLES] = { NULL, "smolder_agent_python_samples_total",
				      "Samples of CPython processes whose Python stack was "
				      "walked." },
	[PROFILE_LOSS_UNWIND_TABLE_FRAMES] = { NULL, "smolder_agent_unwind_frames_by_table_total",
					       "User frames unwound by a CFI table." },
	[PROFILE_LOSS_UNWIND_FP_FRAMES] = { NULL,
					    "smolder_agent_unwind_frames_by_frame_pointer_total",
					    "User frames unwound by frame pointer." },
	[PROFILE_LOSS_OFFCPU_INTERVALS] = { NULL, "smolder_agent_offcpu_intervals_total",
					    "Off-CPU waits recorded." },
	[PROFILE_LOSS_OFFCPU_SHORT] = { NULL, "smolder_agent_offcpu_intervals_short_total",
					"Off-CPU waits shorter than --off-cpu-min-us, not "
					"recorded." },
};
_Static_assert(PROFILE_LOSS_NR == 26, "profile_loss entries: name new ones in loss_metrics too");

static void header(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(FILE *out, const char *name, const char *help, uint64_t v)
{
	header(out, name, "counter", help);
	fprintf(out, "%s %llu\n", name, (unsigned long long)v);
}

static void gauge(FILE *out, const char *name, const char *help, uint64_t v)
{
	header(out, name, "gauge", help);
	fprintf(out, "%s %llu\n", name, (unsigned long long)v);
}

/* The process's own figures, read now. */
static void write_process(FILE *out)
{
	struct rusage ru;
	long pages = 0, rss = 0;
	FILE *f;

	if (!getrusage(RUSAGE_SELF, &ru)) {
		header(out, "process_cpu_seconds_total", "counter",
		       "User and system CPU time the agent spent, in seconds.");
		fprintf(out, "process_cpu_seconds_total %.3f\n",
			(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
				(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
	}
	f = fopen("/proc/self/statm", "re");
	if (f && fscanf(f, "%ld %ld", &pages, &rss) == 2)
		gauge(out, "process_resident_memory_bytes",
		      "Resident memory of the agent, in bytes.",
		      (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE));
	if (f)
		fclose(f);
	header(out, "smolder_agent_build_info", "gauge", "The agent's build; the value is 1.");
	fprintf(out, "smolder_agent_build_info{version=\"%s\"} 1\n", SMOLDER_VERSION);
}

static void write_losses(FILE *out, const struct agent_metrics_snapshot *s)
{
	size_t i;

	header(out, "smolder_agent_losses_total", "counter",
	       "Samples dropped or kept incomplete, and process events dropped, by reason "
	       "(the exit summary's losses).");
	for (i = 0; i < PROFILE_LOSS_NR; i++)
		if (loss_metrics[i].reason)
			fprintf(out, "smolder_agent_losses_total{reason=\"%s\"} %llu\n",
				loss_metrics[i].reason, (unsigned long long)s->loss[i]);
	fprintf(out, "smolder_agent_losses_total{reason=\"folded_line_truncated\"} %llu\n",
		(unsigned long long)s->truncated);
	for (i = 0; i < PROFILE_LOSS_NR; i++)
		if (loss_metrics[i].name)
			counter(out, loss_metrics[i].name, loss_metrics[i].help, s->loss[i]);
}

static void write_unwind(FILE *out, const struct unwinder_stats *u)
{
	counter(out, "smolder_agent_unwind_tables_loaded_total", "Unwind tables built and loaded.",
		u->loaded);
	counter(out, "smolder_agent_unwind_tables_evicted_total",
		"Unwind tables evicted to make room.", u->evicted);
	counter(out, "smolder_agent_unwind_tables_moved_total",
		"Unwind tables moved to join free rows.", u->moved);
	counter(out, "smolder_agent_unwind_tables_without_cfi_total",
		"Files without CFI, walked by frame pointer.", u->no_cfi);
	counter(out, "smolder_agent_unwind_tables_failed_total",
		"Unwind table loads that failed (unreadable file, bad CFI).", u->failed);
	counter(out, "smolder_agent_unwind_tables_too_big_total",
		"Unwind tables larger than the whole pool (--unwind-table-mb).", u->too_big);
	counter(out, "smolder_agent_unwind_tables_put_off_total",
		"Unwind table loads put off: the tables in use fill the pool.", u->no_room);
	counter(out, "smolder_agent_unwind_mappings_dropped_total",
		"Mappings of a process past the unwinder's cap per process.", u->dropped_maps);
	header(out, "smolder_agent_unwind_build_seconds_total", "counter",
	       "Time spent building unwind tables, in seconds.");
	fprintf(out, "smolder_agent_unwind_build_seconds_total %.6f\n", (double)u->build_ns / 1e9);
	gauge(out, "smolder_agent_unwind_rows_used", "Rows of the loaded unwind tables.",
	      u->rows_used);
	gauge(out, "smolder_agent_unwind_rows", "Rows the unwind table pool holds.", u->rows_total);
	gauge(out, "smolder_agent_unwind_files", "Files with an unwind table id now.", u->files);
	gauge(out, "smolder_agent_unwind_processes", "Processes whose mappings are published now.",
	      u->procs);
}

static void write_perf_maps(FILE *out, const struct perfmap_stats *j)
{
	counter(out, "smolder_agent_perf_maps_read_total", "Perf maps (JIT symbols) read.",
		j->opened);
	header(out, "smolder_agent_perf_maps_refused_total", "counter",
	       "Perf maps not read, by reason.");
	fprintf(out,
		"smolder_agent_perf_maps_refused_total{reason=\"symlink\"} %llu\n"
		"smolder_agent_perf_maps_refused_total{reason=\"not_regular\"} %llu\n"
		"smolder_agent_perf_maps_refused_total{reason=\"wrong_owner\"} %llu\n"
		"smolder_agent_perf_maps_refused_total{reason=\"other_error\"} %llu\n",
		(unsigned long long)j->symlink, (unsigned long long)j->not_regular,
		(unsigned long long)j->wrong_owner, (unsigned long long)j->other_errors);
	header(out, "smolder_agent_perf_maps_capped_total", "counter",
	       "Perf maps read only up to a cap, by cap.");
	fprintf(out,
		"smolder_agent_perf_maps_capped_total{cap=\"bytes\"} %llu\n"
		"smolder_agent_perf_maps_capped_total{cap=\"entries\"} %llu\n",
		(unsigned long long)j->bytes_capped, (unsigned long long)j->entries_capped);
	counter(out, "smolder_agent_perf_map_lines_malformed_total",
		"Perf map lines skipped: malformed or too long.", j->malformed);
	counter(out, "smolder_agent_perf_map_restarts_total",
		"Perf maps read again from the start (shrunk or replaced).", j->restarts);
}

static void write_files(FILE *out, const struct procfile_stats *f)
{
	counter(out, "smolder_agent_files_opened_total",
		"Files opened on processes' behalf (binaries, libraries, debug files, perf maps).",
		f->opened);
	header(out, "smolder_agent_files_refused_total", "counter",
	       "Files a process's paths led to that were not opened, by reason.");
	fprintf(out,
		"smolder_agent_files_refused_total{reason=\"not_regular\"} %llu\n"
		"smolder_agent_files_refused_total{reason=\"not_mapped\"} %llu\n"
		"smolder_agent_files_refused_total{reason=\"link\"} %llu\n",
		(unsigned long long)f->not_regular, (unsigned long long)f->not_mapped,
		(unsigned long long)f->link);
}

static void write_shipping(FILE *out, const struct agent_metrics_snapshot *s)
{
	const struct sender_stats *st = &s->sender;

	counter(out, "smolder_agent_batches_spooled_total",
		"Batches written to the spool, to be sent.", s->batches_spooled);
	counter(out, "smolder_agent_batches_failed_total",
		"Batches lost before the spool (encoding failed, disk full).", s->batches_failed);
	counter(out, "smolder_agent_batches_split_total",
		"Batches shipped before their window ended, over --batch-max-kb.",
		s->batches_parts);
	counter(out, "smolder_agent_batches_sent_total", "Batches the collector stored.", st->sent);
	counter(out, "smolder_agent_batches_duplicate_total",
		"Batches the collector had already stored (a retry after a lost answer).",
		st->duplicates);
	counter(out, "smolder_agent_send_retries_total",
		"Sends that failed (no connection, timeout, HTTP 5xx or 429) and will be "
		"retried.",
		st->retries);
	counter(out, "smolder_agent_batches_rejected_total",
		"Batches the collector refused for good (HTTP 4xx): deleted.", st->rejected);
	counter(out, "smolder_agent_batches_dropped_total",
		"Batches deleted unsent to keep the spool under --spool-max-mb.", st->dropped);
	gauge(out, "smolder_agent_spool_batches", "Batches in the spool now.", st->pending);
	gauge(out, "smolder_agent_spool_bytes", "Bytes of the batches in the spool now.",
	      st->bytes);
}

/* --bpf-stats: what the summary's "bpf:" lines say, by program. */
static void write_bpf(FILE *out, const struct agent_metrics_snapshot *s)
{
	header(out, "smolder_agent_bpf_runs_total", "counter",
	       "Runs of the BPF programs (--bpf-stats), by program: cpu (sampling) or offcpu.");
	fprintf(out,
		"smolder_agent_bpf_runs_total{program=\"cpu\"} %llu\n"
		"smolder_agent_bpf_runs_total{program=\"offcpu\"} %llu\n",
		(unsigned long long)s->bpf_runs, (unsigned long long)s->offcpu_runs);
	header(out, "smolder_agent_bpf_run_seconds_total", "counter",
	       "Time the BPF programs ran (--bpf-stats), in seconds, by program.");
	fprintf(out,
		"smolder_agent_bpf_run_seconds_total{program=\"cpu\"} %.9f\n"
		"smolder_agent_bpf_run_seconds_total{program=\"offcpu\"} %.9f\n",
		(double)s->bpf_run_ns / 1e9, (double)s->offcpu_run_ns / 1e9);
}

int agent_metrics_write(FILE *out, const struct agent_metrics_snapshot *s)
{
	write_process(out);
	if (s) {
		gauge(out, "smolder_agent_cpus", "CPUs sampled.", s->ncpus);
		counter(out, "smolder_agent_windows_total", "Windows drained.", s->windows);
		gauge(out, "smolder_agent_largest_window_stacks",
		      "Distinct stacks of the largest window so far.", s->most_stacks);
		counter(out, "smolder_agent_samples_recorded_total",
			"CPU samples drained into the windows' output (folded stacks, batches).",
			s->recorded);
		write_losses(out, s);
		header(out, "smolder_agent_offcpu_seconds_total", "counter",
		       "Off-CPU time recorded (scaled by 1/--off-cpu-probability), in seconds.");
		fprintf(out, "smolder_agent_offcpu_seconds_total %.9f\n",
			(double)s->offcpu_ns / 1e9);
		if (s->unwinding)
			write_unwind(out, &s->unwind);
		write_perf_maps(out, &s->procs.jit);
		write_files(out, &s->files);
		if (s->shipping)
			write_shipping(out, s);
		if (s->bpf_stats)
			write_bpf(out, s);
	}
	return ferror(out) ? -EIO : 0;
}

/* ---- the server --------------------------------------------------------------- */

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, void *body, size_t len,
			       enum MHD_ResponseMemoryMode mode, const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result refuse(struct MHD_Connection *conn, unsigned status, const char *why)
{
	return respond(conn, status, (void *)why, strlen(why), MHD_RESPMEM_PERSISTENT,
		       "text/plain");
}

static bool has_body(struct MHD_Connection *conn)
{
	const char *cl =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (cl && strcmp(cl, "0") != 0) ||
	       MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

static enum MHD_Result scrape(struct agent_metrics *m, struct MHD_Connection *conn)
{
	struct agent_metrics_snapshot snap;
	bool published;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	int err;

	pthread_mutex_lock(&m->lock);
	published = m->published;
	if (published)
		snap = m->snap;
	pthread_mutex_unlock(&m->lock);
	out = open_memstream(&buf, &len);
	if (!out)
		return MHD_NO;
	err = agent_metrics_write(out, published ? &snap : NULL);
	if (fclose(out) || err) {
		free(buf);
		return MHD_NO;
	}
	return respond(conn, MHD_HTTP_OK, buf, len, MHD_RESPMEM_MUST_FREE,
		       "text/plain; version=0.0.4");
}

/* Decides from the headers (first call): path, method, no body; answers on the
 * second call. A refusal is queued at once, so a body is never read. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req_cls)
{
	static int headers_seen; /* its address marks a request past its headers */

	(void)version;
	(void)upload;
	if (!*req_cls) {
		*req_cls = &headers_seen;
		if (strcmp(url, "/metrics") != 0)
			return refuse(conn, MHD_HTTP_NOT_FOUND, "not found: only /metrics\n");
		if (strcmp(method, "GET") != 0)
			return refuse(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only\n");
		if (has_body(conn))
			return refuse(conn, MHD_HTTP_CONTENT_TOO_LARGE, "no request body\n");
		return MHD_YES;
	}
	if (*upload_size) { /* cannot happen: a request with a body was refused */
		*upload_size = 0;
		return MHD_NO;
	}
	return scrape(cls, conn);
}

/* "PORT" -> "127.0.0.1:PORT"; anything else as given. */
static int resolve(const char *listen, struct sockaddr_storage *ss)
{
	char buf[64];

	if (!strchr(listen, ':')) {
		if (!*listen || strspn(listen, "0123456789") != strlen(listen) ||
		    strlen(listen) > 5)
			return -EINVAL;
		snprintf(buf, sizeof(buf), "127.0.0.1:%s", listen);
		listen = buf;
	}
	return address_resolve(listen, ss);
}

int agent_metrics__start(const char *listen, struct agent_metrics **out)
{
	struct sockaddr_storage ss = { 0 };
	const union MHD_DaemonInfo *info;
	struct agent_metrics *m;
	sigset_t block, old;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	int err;

	err = resolve(listen, &ss);
	if (err)
		return err;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->loopback = address_is_loopback((struct sockaddr *)&ss);
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_DUAL_STACK;
	/* The server's thread inherits this mask: SIGINT and SIGTERM go to the
	 * sampling loop's thread, whose poll they interrupt. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	errno = 0;
	m->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, handle, m, MHD_OPTION_SOCK_ADDR, &ss,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)AGENT_METRICS_MAX_CONNECTIONS,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)AGENT_METRICS_MEMORY,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)AGENT_METRICS_TIMEOUT, MHD_OPTION_END);
	err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!m->daemon) {
		pthread_mutex_destroy(&m->lock);
		free(m);
		return err ? -err : -EADDRINUSE;
	}
	info = MHD_get_daemon_info(m->daemon, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : 0;
	*out = m;
	return 0;
}

uint16_t agent_metrics__port(const struct agent_metrics *m)
{
	return m->port;
}

bool agent_metrics__is_loopback(const struct agent_metrics *m)
{
	return m->loopback;
}

bool agent_metrics__publish(struct agent_metrics *m, const struct agent_metrics_snapshot *s)
{
	if (pthread_mutex_trylock(&m->lock))
		return false;
	m->snap = *s;
	m->published = true;
	pthread_mutex_unlock(&m->lock);
	return true;
}

void agent_metrics__stop(struct agent_metrics *m)
{
	if (!m)
		return;
	MHD_stop_daemon(m->daemon);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
