/* go tool pprof as the tests' independent reader of pprof files: Go's own pprof
 * (Debian's golang-go, a hard requirement installed by `make deps`) reads what
 * query/render_pprof.c wrote, and these helpers parse its plain-text views, never
 * smolder's decoder or schema/profile.proto:
 *   -raw   the profile as pprof parsed it: period, duration, every sample's values,
 *          comm label and locations (function name, file, line). A sample is handed
 *          back as folded text (comm;root;...;leaf, a frame with a file as
 *          "name (file:line)"), ready to compare with a test's own expectations.
 *          pprof's views leave out a sample that has no location at all.
 *   -top   flat and cum per function (by name), and "Total samples", which counts
 *          every sample, those without a location too.
 * Included by tests/unit/test_render_export.c and tests/integration/test_cli.c after
 * <cmocka.h> and "testutil.h"; everything is static.
 */
#ifndef SMOLDER_TESTS_GOPPROF_H
#define SMOLDER_TESTS_GOPPROF_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gopprof_sample {
	uint64_t count; /* the first value (samples/count) */
	uint64_t cpu;	/* the second value (cpu/nanoseconds) */
	char *comm;	/* the "comm" label, or NULL */
	char *folded;	/* comm;root;...;leaf */
};

struct gopprof_raw {
	char period_type[64]; /* "cpu nanoseconds" */
	uint64_t period;
	char time[64];	   /* as pprof prints it, e.g. "2023-11-14 22:13:20 +0000 UTC" */
	char duration[32]; /* e.g. "10s" */
	struct gopprof_sample *samples;
	size_t n;
};

struct gopprof_fn {
	uint64_t flat, cum;
	char *name;
};

struct gopprof_top {
	uint64_t total; /* "Total samples = N" */
	struct gopprof_fn *fns;
	size_t n;
};

/* Runs `go tool pprof -symbolize=none VIEW... FILE` with HOME, GOCACHE and GOPATH in
 * a directory of its own under tmpdir, no network, times in UTC, stdout to out_path;
 * fails the test when go is missing or pprof does not read the file. */
static void gopprof_run(const char *tmpdir, const char *view, const char *file,
			const char *out_path)
{
	char cmd[4096], err_path[512];
	int st;

	if (system("command -v go >/dev/null 2>&1") != 0)
		fail_msg("go not found in PATH: `go tool pprof` is this test's independent pprof "
			 "reader; install golang-go (make deps)");
	snprintf(err_path, sizeof(err_path), "%s.err", out_path);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/gohome' && env HOME='%s/gohome' GOCACHE='%s/gohome/cache' "
		 "GOPATH='%s/gohome/path' GOFLAGS= GOPROXY=off GOTOOLCHAIN=local TZ=UTC "
		 "GOTELEMETRY=off go tool pprof -symbolize=none %s '%s' > '%s' 2> '%s'",
		 tmpdir, tmpdir, tmpdir, tmpdir, view, file, out_path, err_path);
	st = system(cmd);
	if (st != 0) {
		char *err = test_read_file(err_path);

		fail_msg("go tool pprof %s %s: status %d\n%s", view, file, st, err ? err : "");
	}
}

/* Splits text into lines in place; returns a malloc'd array of them. */
static char **gopprof_lines(char *text, size_t *n)
{
	size_t cap = 64;
	char **v = malloc(cap * sizeof(*v)), *p = text;

	assert_non_null(v);
	*n = 0;
	while (*p) {
		char *nl = strchr(p, '\n');

		if (*n == cap) {
			v = realloc(v, (cap *= 2) * sizeof(*v));
			assert_non_null(v);
		}
		v[(*n)++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return v;
}

/* "     12: 0x0 M=1 " at the start of a -raw location line; returns the text after. */
static char *gopprof_loc_start(char *line, unsigned long *id)
{
	int used = 0;
	unsigned long long addr;

	if (sscanf(line, " %lu: %llx %n", id, &addr, &used) != 2 || !used)
		return NULL;
	line += used;
	if (strncmp(line, "M=", 2) == 0) {
		line = strchr(line, ' ');
		if (!line)
			return NULL;
		line++;
	}
	return line;
}

struct gopprof_loc {
	unsigned long id;
	char *text; /* "name file:line s=N", lines of a multi-line name rejoined */
};

/* Turns "name file:line s=N" into the folded frame "name" or "name (file:line)". */
static char *gopprof_frame(const char *text)
{
	char *t = strdup(text), *s, *sp, *colon, *out = NULL;

	assert_non_null(t);
	s = strrchr(t, ' ');
	/* " s=N" ends it; a "(system name)" after it would be a name pprof changed */
	if (!s || strncmp(s, " s=", 3) != 0 || s[3 + strspn(s + 3, "0123456789")] != '\0')
		fail_msg("go tool pprof -raw: location '%s' does not end in ' s=N'", text);
	*s = '\0';
	sp = strrchr(t, ' ');
	colon = sp ? strrchr(sp, ':') : NULL;
	if (!sp || !colon)
		fail_msg("go tool pprof -raw: no 'file:line' in location '%s'", text);
	*sp = '\0';
	*colon = '\0';
	if (sp[1] == '\0')
		out = strdup(t);
	else
		assert_true(asprintf(&out, "%s (%s:%s)", t, sp + 1, colon + 1) > 0);
	assert_non_null(out);
	free(t);
	return out;
}

/* Parses the output of `go tool pprof -raw` (the text in path). */
static void gopprof_parse_raw(const char *path, struct gopprof_raw *r)
{
	char *text = test_read_file(path), **line;
	struct gopprof_loc *locs = NULL;
	size_t n, i, nloc = 0, k;
	enum { HEAD, SAMPLES, LOCATIONS, DONE } at = HEAD;
	char **ids = NULL; /* per sample: its location ids, as text */

	assert_non_null(text);
	memset(r, 0, sizeof(*r));
	line = gopprof_lines(text, &n);
	locs = calloc(n, sizeof(*locs));
	ids = calloc(n, sizeof(*ids));
	r->samples = calloc(n, sizeof(*r->samples));
	assert_true(locs && ids && r->samples);
	for (i = 0; i < n; i++) {
		char *l = line[i], *rest;
		unsigned long long a, b;
		unsigned long id;
		int used = 0;

		if (at == HEAD) {
			if (sscanf(l, "PeriodType: %63[^\n]", r->period_type) == 1)
				continue;
			if (sscanf(l, "Period: %" SCNu64, &r->period) == 1)
				continue;
			if (sscanf(l, "Time: %63[^\n]", r->time) == 1)
				continue;
			if (sscanf(l, "Duration: %31s", r->duration) == 1)
				continue;
			if (strcmp(l, "Samples:") == 0) {
				at = SAMPLES;
				i++; /* the sample types' header line */
			}
		} else if (at == SAMPLES) {
			if (strcmp(l, "Locations") == 0) {
				at = LOCATIONS;
			} else if (sscanf(l, " %llu %llu:%n", &a, &b, &used) == 2 && used) {
				r->samples[r->n].count = a;
				r->samples[r->n].cpu = b;
				ids[r->n++] = l + used;
			} else if ((rest = strstr(l, "comm:[")) && r->n) {
				char *end = strrchr(rest, ']');

				assert_non_null(end);
				r->samples[r->n - 1].comm =
					strndup(rest + 6, (size_t)(end - rest - 6));
			} else if (*l) {
				fail_msg("go tool pprof -raw: unexpected sample line '%s'", l);
			}
		} else if (at == LOCATIONS) {
			if (strcmp(l, "Mappings") == 0) {
				at = DONE;
			} else if ((rest = gopprof_loc_start(l, &id))) {
				locs[nloc].id = id;
				locs[nloc++].text = strdup(rest);
			} else if (nloc) { /* a name with a newline in it goes on */
				char *joined;

				assert_true(asprintf(&joined, "%s\n%s", locs[nloc - 1].text, l) >
					    0);
				free(locs[nloc - 1].text);
				locs[nloc - 1].text = joined;
			}
		}
	}
	if (at != DONE)
		fail_msg("go tool pprof -raw: no Samples/Locations/Mappings sections in %s", path);

	/* each sample's folded text: comm, then its locations from the last (root) */
	for (k = 0; k < r->n; k++) {
		char *list = ids[k], *tok, *save = NULL, *ordered[512];
		size_t depth = 0, len, off;

		for (tok = strtok_r(list, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			unsigned long want = strtoul(tok, NULL, 10);
			size_t j;

			assert_true(depth < 512);
			for (j = 0; j < nloc && locs[j].id != want; j++)
				;
			if (j == nloc)
				fail_msg("go tool pprof -raw: sample refers to location %lu, not "
					 "listed",
					 want);
			ordered[depth++] = gopprof_frame(locs[j].text);
		}
		len = (r->samples[k].comm ? strlen(r->samples[k].comm) : 0) + 1;
		for (i = 0; i < depth; i++)
			len += strlen(ordered[i]) + 1;
		r->samples[k].folded = malloc(len + 1);
		assert_non_null(r->samples[k].folded);
		off = (size_t)sprintf(r->samples[k].folded, "%s",
				      r->samples[k].comm ? r->samples[k].comm : "");
		for (i = depth; i-- > 0;) {
			off += (size_t)sprintf(r->samples[k].folded + off, ";%s", ordered[i]);
			free(ordered[i]);
		}
	}
	for (i = 0; i < nloc; i++)
		free(locs[i].text);
	free(locs);
	free(ids);
	free(line);
	free(text);
}

static void gopprof_raw_free(struct gopprof_raw *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		free(r->samples[i].comm);
		free(r->samples[i].folded);
	}
	free(r->samples);
	memset(r, 0, sizeof(*r));
}

/* Parses the output of `go tool pprof -top -sample_index=0 ...` (the text in path). */
static void gopprof_parse_top(const char *path, struct gopprof_top *t)
{
	char *text = test_read_file(path), **line, *p;
	size_t n, i;
	bool rows = false;

	assert_non_null(text);
	memset(t, 0, sizeof(*t));
	p = strstr(text, "Total samples = ");
	if (!p)
		fail_msg("go tool pprof -top: no 'Total samples' in:\n%s", text);
	t->total = strtoull(p + 16, NULL, 10);
	line = gopprof_lines(text, &n);
	t->fns = calloc(n, sizeof(*t->fns));
	assert_non_null(t->fns);
	for (i = 0; i < n; i++) {
		unsigned long long flat, cum;
		double x, y, z;
		int used = 0;

		if (!rows) {
			rows = strstr(line[i], "flat%") && strstr(line[i], "cum%");
			continue;
		}
		if (sscanf(line[i], " %llu %lf%% %lf%% %llu %lf%%%n", &flat, &x, &y, &cum, &z,
			   &used) == 5 &&
		    used && strncmp(line[i] + used, "  ", 2) == 0) {
			t->fns[t->n].flat = flat;
			t->fns[t->n].cum = cum;
			t->fns[t->n++].name = strdup(line[i] + used + 2);
		} else if (t->n) { /* a name with a newline in it goes on */
			char *joined;

			assert_true(asprintf(&joined, "%s\n%s", t->fns[t->n - 1].name, line[i]) >
				    0);
			free(t->fns[t->n - 1].name);
			t->fns[t->n - 1].name = joined;
		}
	}
	free(line);
	free(text);
}

/* The function a folded frame names, as pprof's -top groups it: the frame without
 * its " (file:line)". Returns a malloc'd string. */
static char *gopprof_function_of(const char *frame, size_t len)
{
	const char *open = NULL, *p;

	for (p = frame; p + 1 < frame + len; p++)
		if (p[0] == ' ' && p[1] == '(')
			open = p;
	if (open && frame[len - 1] == ')')
		len = (size_t)(open - frame);
	return strndup(frame, len);
}

/* Expected flat and cum of function fn over n folded stacks (the first frame, the
 * process, is not a function): flat counts the stacks whose leaf is fn, cum those
 * that hold fn at least once. */
static void gopprof_expect_fn(const char *const *stacks, const uint64_t *counts, size_t n,
			      const char *fn, uint64_t *flat, uint64_t *cum)
{
	size_t i;

	*flat = *cum = 0;
	for (i = 0; i < n; i++) {
		const char *f = strchr(stacks[i], ';');
		bool held = false, leaf = false;

		while (f) {
			const char *start = f + 1, *end = strchr(start, ';');
			size_t len = end ? (size_t)(end - start) : strlen(start);
			char *name = gopprof_function_of(start, len);

			assert_non_null(name);
			if (strcmp(name, fn) == 0) {
				held = true;
				leaf = !end;
			}
			free(name);
			f = end;
		}
		*cum += held ? counts[i] : 0;
		*flat += leaf ? counts[i] : 0;
	}
}

static const struct gopprof_fn *gopprof_top_find(const struct gopprof_top *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->fns[i].name, name) == 0)
			return &t->fns[i];
	return NULL;
}

static void gopprof_top_free(struct gopprof_top *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->fns[i].name);
	free(t->fns);
	memset(t, 0, sizeof(*t));
}

#endif
