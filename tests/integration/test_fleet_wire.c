/* The fleet wire (wire format 3: stacks by content id, schema/smolder.proto) end to
 * end on a real collector over HTTP: stacks sent in full with their ids are
 * remembered and later batches that name them by id alone are stored as if sent
 * in full; ids a collector's store does not know are answered 409 with those ids,
 * nothing stored, and the same batch in full is then accepted; a forged stack
 * (frames whose claimed id is another's) is refused and never remembered. With a
 * real agent (root): windows after the first carry ids for stacks sent before,
 * and a collector restarted on an empty store gets ids it does not know, from
 * which the agent recovers with nothing lost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "agenttest.h"
#include "collectortest.h"
#include "wire/batch.h"
#include "common/folded.h"
#include "common/frame.h"
#include "wire/stackid.h"
#include "wire/wire.h"
#include "store/store.h"
#include "testutil.h"

static char dir[64];

/* A batch of n stacks "svc;main;f<k>" (k in ks), sample k counted k + 1, in the
 * window a minute ago. */
static struct batch *make(uint64_t seq, const unsigned *ks, size_t n)
{
	const char *key[] = { "pid" }, *val[] = { "42" };
	struct batch_builder *bb;
	struct batch *b;
	char stack[64];
	size_t i;

	assert_int_equal(batch_builder__new("fleet-agent", "fleet-host", "cpu", &bb), 0);
	for (i = 0; i < n; i++) {
		snprintf(stack, sizeof(stack), "svc;main;f%u", ks[i]);
		assert_int_equal(batch_builder__add(bb, key, val, 1, stack, ks[i] + 1), 0);
	}
	assert_int_equal(
		batch_builder__finish(bb, seq, (time(NULL) / 10 - 6) * 10, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	return b;
}

/* b in format 3, the stacks with by_ref[i] as ids; forge: stack 0 claims stack
 * 1's id. Posts it; returns the reply (caller frees body). */
static struct reply post_v3(unsigned port, const struct batch *b, const bool *by_ref, bool forge)
{
	uint8_t(*ids)[STACKID_LEN] = calloc(b->nstacks, STACKID_LEN);
	struct batch *c;
	struct reply r;
	void *body;
	size_t len;

	assert_non_null(ids);
	assert_int_equal(stackid_batch(b, ids, NULL), 0);
	assert_int_equal(stackid_compact(b, (const uint8_t(*)[STACKID_LEN])ids, by_ref, &c), 0);
	if (forge) {
		assert_true(c->nstacks >= 2);
		memcpy(c->stack_ids[0], c->stack_ids[1], STACKID_LEN);
	}
	assert_int_equal(wire_encode(c, 3, &body, &len), 0);
	r = http_request(port, "/api/v1/ingest", NULL, NULL, body, len);
	free(body);
	batch__free(c);
	free(ids);
	return r;
}

/* The collector's flame graph over all time as folded text. */
static struct folded *flame(unsigned port)
{
	struct reply r = http_get(port, "/api/v1/folded?from=0&to=4102444800", NULL);
	struct folded *f;
	size_t bad = 0;
	FILE *mem;

	assert_int_equal(r.status, 200);
	assert_int_equal(folded__new(&f), 0);
	if (r.len) {
		mem = fmemopen(r.body, r.len, "r");
		assert_int_equal(folded__read(f, mem, &bad), 0);
		fclose(mem);
	}
	assert_int_equal(bad, 0);
	free(r.body);
	return f;
}

static void hex_of(const struct batch *b, uint32_t i, char hex[33])
{
	uint8_t(*ids)[STACKID_LEN] = calloc(b->nstacks, STACKID_LEN);

	assert_non_null(ids);
	assert_int_equal(stackid_batch(b, ids, NULL), 0);
	stackid_hex(ids[i], hex);
	free(ids);
}

/* Full with ids, then by id: stored as if full; the metrics count each form. */
static void test_ids_after_full(void **state)
{
	const unsigned first[] = { 1, 2, 3 }, second[] = { 1, 2, 4 };
	bool all_full[3] = { false, false, false }, two_by_id[3] = { true, true, false };
	struct batch *a = make(1, first, 3), *b = make(2, second, 3);
	struct folded *f;
	struct reply r;
	struct coll c;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	r = post_v3(c.port, a, all_full, false);
	assert_int_equal(r.status, 200);
	free(r.body);
	assert_int_equal(metric_value(c.port, "smolder_stack_ids_remembered_total"), 3);
	r = post_v3(c.port, b, two_by_id, false);
	if (r.status != 200)
		fail_msg("by id: HTTP %ld %s", r.status, r.body);
	free(r.body);
	assert_int_equal(metric_value(c.port, "smolder_stacks_received_total{form=\"id\"}"), 2);
	assert_int_equal(metric_value(c.port, "smolder_stacks_received_total{form=\"full\"}"), 4);
	f = flame(c.port);
	assert_int_equal(folded__count(f, "svc;main;f1"), 4);
	assert_int_equal(folded__count(f, "svc;main;f2"), 6);
	assert_int_equal(folded__count(f, "svc;main;f3"), 4);
	assert_int_equal(folded__count(f, "svc;main;f4"), 5);
	assert_int_equal(folded__total(f), 19);
	folded__free(f);
	coll_stop(&c);
	batch__free(a);
	batch__free(b);
}

/* A collector whose store never saw the ids: 409 listing them, nothing stored;
 * the same batch (same seq) in full is then stored once. */
static void test_unknown_ids(void **state)
{
	const unsigned ks[] = { 5, 6, 7 };
	bool two_by_id[3] = { true, false, true }, all_full[3] = { false };
	struct batch *b = make(9, ks, 3);
	char h0[33], h2[33];
	struct folded *f;
	struct reply r;
	struct coll c;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	r = post_v3(c.port, b, two_by_id, false);
	assert_int_equal(r.status, 409);
	hex_of(b, 0, h0);
	hex_of(b, 2, h2);
	if (!strstr(r.body, "\"unknown\":2") || !strstr(r.body, h0) || !strstr(r.body, h2))
		fail_msg("409 body: %s", r.body);
	free(r.body);
	assert_int_equal(metric_value(c.port, "smolder_stack_ids_unknown_total"), 2);
	f = flame(c.port);
	assert_int_equal(folded__total(f), 0);
	folded__free(f);
	r = post_v3(c.port, b, all_full, false);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"duplicate\":false"));
	free(r.body);
	r = post_v3(c.port, b, two_by_id, false); /* now known: a duplicate */
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"duplicate\":true"));
	free(r.body);
	f = flame(c.port);
	assert_int_equal(folded__total(f), 6 + 7 + 8);
	folded__free(f);
	coll_stop(&c);
	batch__free(b);
}

/* Stack 0's frames sent with stack 1's id: refused (400, the reason names it),
 * nothing remembered, so a later ref to that id is still unknown. */
static void test_forged_id(void **state)
{
	const unsigned ks[] = { 8, 9 };
	bool all_full[2] = { false, false }, first_by_id[2] = { false, true };
	struct batch *b = make(3, ks, 2);
	struct folded *f;
	struct reply r;
	struct coll c;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	r = post_v3(c.port, b, all_full, true);
	assert_int_equal(r.status, 400);
	if (!strstr(r.body, "stack 0: id ") || !strstr(r.body, "is not the id of its frames"))
		fail_msg("400 body: %s", r.body);
	free(r.body);
	assert_int_equal(metric_value(c.port, "smolder_stack_ids_remembered_total"), 0);
	r = post_v3(c.port, b, first_by_id, false);
	assert_int_equal(r.status, 409);
	free(r.body);
	f = flame(c.port);
	assert_int_equal(folded__total(f), 0);
	folded__free(f);
	coll_stop(&c);
	batch__free(b);
}

/* A stack of a stopped collector's store into a folded (ctx), as the folded
 * API writes it: frame_format()'s text of each frame, ';' between. */
static int add_stored(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	static char line[BATCH_MAX_STACK_DEPTH * 256];
	size_t n = 0, i;

	for (i = 0; i < nframes; i++) {
		if (i)
			line[n++] = ';';
		n += frame_format(&frames[i], line + n, sizeof(line) - n);
		assert_true(n + 1 < sizeof(line));
	}
	line[n] = '\0';
	return folded__add(ctx, line, count);
}

/* Everything in the store at db, read after its collector stopped: nothing it
 * acknowledged can come in after the read. */
static struct folded *stored(const char *db)
{
	struct store_options ro = { .read_only = true };
	struct store_query q = { .from = 0, .to = INT64_C(4102444800) };
	struct folded *f;
	struct store *s;

	assert_int_equal(folded__new(&f), 0);
	assert_int_equal(store__open(db, &ro, &s), 0);
	assert_int_equal(store__query_stacks(s, &q, add_stored, f), 0);
	store__close(s);
	return f;
}

struct sum_check {
	const struct folded *a, *b; /* the two collectors' answers */
	uint64_t mismatches;
};

static int check_sum(void *ctx, const char *stack, uint64_t count)
{
	struct sum_check *c = ctx;
	uint64_t got = folded__count(c->a, stack) + folded__count(c->b, stack);

	if (got != count && c->mismatches++ < 5)
		print_message("  %s: agent %llu, stored %llu\n", stack, (unsigned long long)count,
			      (unsigned long long)got);
	return 0;
}

/* A real agent shipping 1 s windows: once a collector acknowledged stacks, later
 * windows name them by id (the collector's count of stacks by id rises). That
 * collector is then stopped and another one started on the same port on an
 * empty store: the agent's ids are unknown there (409), it re-sends in full, and
 * the two stores together hold exactly what the agent sampled (its own --output
 * of the same windows). */
static void test_agent_ids_and_new_store(void **state)
{
	char out[128], err[128], spool[128], listen[32], shapes[256], url[64], pid[16];
	char *argv[] = { test_build_path(shapes, sizeof(shapes), "workloads/shapes"), "1", NULL };
	struct folded *agent_view, *first, *second;
	unsigned port = test_free_port();
	long long by_id, unknown, by_id_after;
	struct sum_check sc = { 0 };
	uint64_t deadline;
	struct coll a, b;
	pid_t work, agent;

	(void)state;
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
	snprintf(out, sizeof(out), "%s/agent.folded", dir);
	snprintf(err, sizeof(err), "%s/agent.err", dir);
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	assert_int_equal(coll_start(&a, listen, NULL), 0);
	work = test_spawn(argv, "/dev/null", NULL);
	snprintf(pid, sizeof(pid), "%d", (int)work);
	agent = start_agent(out, err, "--collector", url, "--spool-dir", spool, "--pid", pid,
			    "--frequency", "499", "--window", "1", "--duration", "10",
			    "--retry-base-ms", "50", NULL);
	/* later windows name acknowledged stacks by id */
	deadline = test_now_ms() + 30000;
	do {
		by_id = metric_value(a.port, "smolder_stacks_received_total{form=\"id\"}");
		if (by_id > 0)
			break;
		usleep(100000); /* polling interval of a bounded wait */
	} while (test_now_ms() < deadline);
	print_message("first collector: %lld stacks by id, %lld in full\n", by_id,
		      metric_value(a.port, "smolder_stacks_received_total{form=\"full\"}"));
	assert_true(by_id > 0);
	assert_int_equal(metric_value(a.port, "smolder_stack_ids_unknown_total"), 0);
	/* read once stopped: a window the agent sends after a flame graph read
	 * from the running collector would be stored there and counted nowhere */
	coll_stop(&a);
	first = stored(a.db);
	/* another store behind the same address */
	assert_int_equal(coll_start(&b, listen, NULL), 0);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);
	test_wait(work, 10000);
	unknown = metric_value(b.port, "smolder_stack_ids_unknown_total");
	by_id_after = metric_value(b.port, "smolder_stacks_received_total{form=\"id\"}");
	print_message("second collector: %lld ids unknown (409), then %lld stacks by id\n", unknown,
		      by_id_after);
	assert_true(unknown > 0);
	agent_view = load_folded(out);
	second = flame(b.port);
	print_message("agent sampled %llu in %zu stacks; stored %llu + %llu\n",
		      (unsigned long long)folded__total(agent_view), folded__size(agent_view),
		      (unsigned long long)folded__total(first),
		      (unsigned long long)folded__total(second));
	assert_true(folded__total(agent_view) > 500);
	assert_true(folded__total(second) > 0);
	sc.a = first;
	sc.b = second;
	folded__foreach(agent_view, check_sum, &sc);
	assert_int_equal(sc.mismatches, 0);
	assert_int_equal(folded__total(first) + folded__total(second), folded__total(agent_view));
	folded__free(agent_view);
	folded__free(first);
	folded__free(second);
	coll_stop(&b);
}

/* A stack of more than STACKID_MAX_REMEMBERED canonical bytes (20 frames of 4000
 * bytes) is stored but not remembered: a ref to it is unknown (409), so agents
 * send it in full every time. */
static void test_large_stack_not_remembered(void **state)
{
	const char *key[] = { "pid" }, *val[] = { "1" };
	bool all_full[2] = { false, false }, big_by_id[2] = { true, false };
	struct batch_builder *bb;
	struct batch *b;
	char *stack = malloc(20 * 4010 + 16);
	size_t pos, k;
	struct reply r;
	struct coll c;

	(void)state;
	assert_non_null(stack);
	pos = (size_t)sprintf(stack, "big");
	for (k = 0; k < 20; k++) {
		stack[pos++] = ';';
		memset(stack + pos, 'a' + (int)k, 4000);
		pos += 4000;
	}
	stack[pos] = '\0';
	assert_int_equal(batch_builder__new("fleet-agent", "fleet-host", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, key, val, 1, stack, 3), 0);
	assert_int_equal(batch_builder__add(bb, key, val, 1, "small;main", 2), 0);
	assert_int_equal(batch_builder__finish(bb, 5, (time(NULL) / 10 - 6) * 10, 10, 10101010, &b),
			 0);
	batch_builder__free(bb);
	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	r = post_v3(c.port, b, all_full, false);
	assert_int_equal(r.status, 200);
	free(r.body);
	assert_int_equal(metric_value(c.port, "smolder_stack_ids_remembered_total"), 1);
	b->seq++;
	r = post_v3(c.port, b, big_by_id, false);
	assert_int_equal(r.status, 409);
	assert_non_null(strstr(r.body, "\"unknown\":1"));
	free(r.body);
	coll_stop(&c);
	batch__free(b);
	free(stack);
}

static int group_setup(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return test_mkdtemp(dir, sizeof(dir)) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	test_kill_children();
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(dir);
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_ids_after_full, coll_teardown),
		cmocka_unit_test_teardown(test_unknown_ids, coll_teardown),
		cmocka_unit_test_teardown(test_forged_id, coll_teardown),
		cmocka_unit_test_teardown(test_large_stack_not_remembered, coll_teardown),
		cmocka_unit_test_teardown(test_agent_ids_and_new_store, coll_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
