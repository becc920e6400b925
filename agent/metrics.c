/* The agent's /metrics endpoint: its Prometheus text and its libmicrohttpd server;
 * see metrics.h. Written through common/prom.h; counters end in _total,
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
#include "common/prom.h"
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

/* The process's own figures, read now. */
static void write_process(struct prom *p)
{
	struct rusage ru;
	long pages = 0, rss = 0;
	FILE *f;

	if (!getrusage(RUSAGE_SELF, &ru)) {
		prom__family(p, "process_cpu_seconds_total", PROM_COUNTER,
			     "User and system CPU time the agent spent, in seconds.");
		prom__double(p, NULL, NULL, 3,
			     (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
				     (double)ru.ru_stime.tv_sec +
				     (double)ru.ru_stime.tv_usec / 1e6);
	}
	f = fopen("/proc/self/statm", "re");
	if (f && fscanf(f, "%ld %ld", &pages, &rss) == 2)
		prom__gauge(p, "process_resident_memory_bytes",
			    "Resident memory of the agent, in bytes.",
			    (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE));
	if (f)
		fclose(f);
	prom__family(p, "smolder_agent_build_info", PROM_GAUGE,
		     "The agent's build; the value is 1.");
	prom__u64(p, "version", SMOLDER_VERSION, 1);
}

static void write_losses(struct prom *p, const struct agent_metrics_snapshot *s)
{
	size_t i;

	prom__family(p, "smolder_agent_losses_total", PROM_COUNTER,
		     "Samples dropped or kept incomplete, and process events dropped, by reason "
		     "(the exit summary's losses).");
	for (i = 0; i < PROFILE_LOSS_NR; i++)
		if (loss_metrics[i].reason)
			prom__u64(p, "reason", loss_metrics[i].reason, s->loss[i]);
	prom__u64(p, "reason", "folded_line_truncated", s->truncated);
	for (i = 0; i < PROFILE_LOSS_NR; i++)
		if (loss_metrics[i].name)
			prom__counter(p, loss_metrics[i].name, loss_metrics[i].help, s->loss[i]);
}

static void write_unwind(struct prom *p, const struct unwinder_stats *u)
{
	prom__counter(p, "smolder_agent_unwind_tables_loaded_total",
		      "Unwind tables built and loaded.", u->loaded);
	prom__counter(p, "smolder_agent_unwind_tables_evicted_total",
		      "Unwind tables evicted to make room.", u->evicted);
	prom__counter(p, "smolder_agent_unwind_tables_moved_total",
		      "Unwind tables moved to join free rows.", u->moved);
	prom__counter(p, "smolder_agent_unwind_tables_without_cfi_total",
		      "Files without CFI, walked by frame pointer.", u->no_cfi);
	prom__counter(p, "smolder_agent_unwind_tables_failed_total",
		      "Unwind table loads that failed (unreadable file, bad CFI).", u->failed);
	prom__counter(p, "smolder_agent_unwind_tables_too_big_total",
		      "Unwind tables larger than the whole pool (--unwind-table-mb).", u->too_big);
	prom__counter(p, "smolder_agent_unwind_tables_put_off_total",
		      "Unwind table loads put off: the tables in use fill the pool.", u->no_room);
	prom__counter(p, "smolder_agent_unwind_mappings_dropped_total",
		      "Mappings of a process past the unwinder's cap per process.",
		      u->dropped_maps);
	prom__family(p, "smolder_agent_unwind_build_seconds_total", PROM_COUNTER,
		     "Time spent building unwind tables, in seconds.");
	prom__double(p, NULL, NULL, 6, (double)u->build_ns / 1e9);
	prom__gauge(p, "smolder_agent_unwind_rows_used", "Rows of the loaded unwind tables.",
		    u->rows_used);
	prom__gauge(p, "smolder_agent_unwind_rows", "Rows the unwind table pool holds.",
		    u->rows_total);
	prom__gauge(p, "smolder_agent_unwind_files", "Files with an unwind table id now.",
		    u->files);
	prom__gauge(p, "smolder_agent_unwind_processes",
		    "Processes whose mappings are published now.", u->procs);
}

static void write_perf_maps(struct prom *p, const struct perfmap_stats *j)
{
	prom__counter(p, "smolder_agent_perf_maps_read_total", "Perf maps (JIT symbols) read.",
		      j->opened);
	prom__family(p, "smolder_agent_perf_maps_refused_total", PROM_COUNTER,
		     "Perf maps not read, by reason.");
	prom__u64(p, "reason", "symlink", j->symlink);
	prom__u64(p, "reason", "not_regular", j->not_regular);
	prom__u64(p, "reason", "wrong_owner", j->wrong_owner);
	prom__u64(p, "reason", "other_error", j->other_errors);
	prom__family(p, "smolder_agent_perf_maps_capped_total", PROM_COUNTER,
		     "Perf maps read only up to a cap, by cap.");
	prom__u64(p, "cap", "bytes", j->bytes_capped);
	prom__u64(p, "cap", "entries", j->entries_capped);
	prom__counter(p, "smolder_agent_perf_map_lines_malformed_total",
		      "Perf map lines skipped: malformed or too long.", j->malformed);
	prom__counter(p, "smolder_agent_perf_map_restarts_total",
		      "Perf maps read again from the start (shrunk or replaced).", j->restarts);
}

static void write_files(struct prom *p, const struct procfile_stats *f)
{
	prom__counter(p, "smolder_agent_files_opened_total",
		      "Files opened on processes' behalf (binaries, libraries, debug files, perf "
		      "maps).",
		      f->opened);
	prom__family(p, "smolder_agent_files_refused_total", PROM_COUNTER,
		     "Files a process's paths led to that were not opened, by reason.");
	prom__u64(p, "reason", "not_regular", f->not_regular);
	prom__u64(p, "reason", "not_mapped", f->not_mapped);
	prom__u64(p, "reason", "link", f->link);
}

static void write_shipping(struct prom *p, const struct agent_metrics_snapshot *s)
{
	const struct sender_stats *st = &s->sender;

	prom__counter(p, "smolder_agent_batches_spooled_total",
		      "Batches written to the spool, to be sent.", s->batches_spooled);
	prom__counter(p, "smolder_agent_batches_failed_total",
		      "Batches lost before the spool (encoding failed, disk full).",
		      s->batches_failed);
	prom__counter(p, "smolder_agent_batches_split_total",
		      "Batches shipped before their window ended, over --batch-max-kb.",
		      s->batches_parts);
	prom__counter(p, "smolder_agent_batches_sent_total", "Batches the collector stored.",
		      st->sent);
	prom__counter(p, "smolder_agent_batches_duplicate_total",
		      "Batches the collector had already stored (a retry after a lost answer).",
		      st->duplicates);
	prom__counter(p, "smolder_agent_send_retries_total",
		      "Sends that failed (no connection, timeout, HTTP 5xx or 429) and will be "
		      "retried.",
		      st->retries);
	prom__counter(p, "smolder_agent_batches_rejected_total",
		      "Batches the collector refused for good (HTTP 4xx): deleted.", st->rejected);
	prom__counter(p, "smolder_agent_batches_dropped_total",
		      "Batches deleted unsent to keep the spool under --spool-max-mb.",
		      st->dropped);
	prom__gauge(p, "smolder_agent_spool_batches", "Batches in the spool now.", st->pending);
	prom__gauge(p, "smolder_agent_spool_bytes", "Bytes of the batches in the spool now.",
		    st->bytes);
}

/* --bpf-stats: what the summary's "bpf:" lines say, by program. */
static void write_bpf(struct prom *p, const struct agent_metrics_snapshot *s)
{
	prom__family(p, "smolder_agent_bpf_runs_total", PROM_COUNTER,
		     "Runs of the BPF programs (--bpf-stats), by program: cpu (sampling) or "
		     "offcpu.");
	prom__u64(p, "program", "cpu", s->bpf_runs);
	prom__u64(p, "program", "offcpu", s->offcpu_runs);
	prom__family(p, "smolder_agent_bpf_run_seconds_total", PROM_COUNTER,
		     "Time the BPF programs ran (--bpf-stats), in seconds, by program.");
	prom__double(p, "program", "cpu", 9, (double)s->bpf_run_ns / 1e9);
	prom__double(p, "program", "offcpu", 9, (double)s->offcpu_run_ns / 1e9);
	prom__family(p, "smolder_agent_bpf_ns_per_sample", PROM_GAUGE,
		     "Mean time of a BPF program run since the start (--bpf-stats), in ns, by "
		     "program: cpu, per sample (every CPU's timer tick, early returns for the idle "
		     "task or other processes included); offcpu, per context switch.");
	prom__double(p, "program", "cpu", 1,
		     s->bpf_runs ? (double)s->bpf_run_ns / (double)s->bpf_runs : 0.0);
	prom__double(p, "program", "offcpu", 1,
		     s->offcpu_runs ? (double)s->offcpu_run_ns / (double)s->offcpu_runs : 0.0);
}

int agent_metrics_write(FILE *out, const struct agent_metrics_snapshot *s)
{
	struct prom p;

	prom__init(&p, out);
	write_process(&p);
	if (s) {
		prom__gauge(&p, "smolder_agent_cpus", "CPUs sampled.", s->ncpus);
		prom__counter(&p, "smolder_agent_windows_total", "Windows drained.", s->windows);
		prom__counter(&p, "smolder_agent_windows_dropped_total",
			      "Windows drained but dropped: windows waiting to be shipped were at "
			      "their bound.",
			      s->windows_dropped);
		prom__gauge(&p, "smolder_agent_largest_window_stacks",
			    "Distinct stacks of the largest window so far.", s->most_stacks);
		prom__counter(&p, "smolder_agent_samples_recorded_total",
			      "CPU samples drained into the windows' output (folded stacks, "
			      "batches).",
			      s->recorded);
		write_losses(&p, s);
		prom__family(&p, "smolder_agent_offcpu_seconds_total", PROM_COUNTER,
			     "Off-CPU time recorded (scaled by 1/--off-cpu-probability), in "
			     "seconds.");
		prom__double(&p, NULL, NULL, 9, (double)s->offcpu_ns / 1e9);
		if (s->unwinding)
			write_unwind(&p, &s->unwind);
		write_perf_maps(&p, &s->procs.jit);
		write_files(&p, &s->files);
		if (s->shipping)
			write_shipping(&p, s);
		if (s->bpf_stats)
			write_bpf(&p, s);
	}
	return prom__end(&p);
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
