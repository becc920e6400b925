/* A writer of the Prometheus text exposition format (version 0.0.4), the one
 * both /metrics endpoints (the agent's, agent/metrics.c; the collector's,
 * collector/metrics.c) write through: a family's "# HELP" and "# TYPE" lines
 * once, then its samples, each "NAME[{LABEL="VALUE"}] NUMBER". Label values and
 * help texts are escaped as the format wants (a label value's backslash, double
 * quote and newline as \\, \" and \n; a help text's backslash and newline);
 * metric and label names are the caller's constants, written as they are.
 *
 * Errors are the stream's: write everything, then prom__end() says whether a
 * write failed. Not thread-safe: one writer per stream. */
#ifndef SMOLDER_COMMON_PROM_H
#define SMOLDER_COMMON_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum prom_type {
	PROM_COUNTER,
	PROM_GAUGE,
	PROM_HISTOGRAM,
};

struct prom {
	FILE *out;
	char family[128]; /* the family whose HELP and TYPE were written last */
};

/* Starts writing to out. */
void prom__init(struct prom *p, FILE *out);

/* Starts family name (at most 127 bytes): writes its HELP and TYPE lines, or
 * nothing when name is the family already started (its samples continue). */
void prom__family(struct prom *p, const char *name, enum prom_type type, const char *help);

/* A sample of the family started last: its name, with label="value" when label
 * is not NULL, and v. */
void prom__u64(struct prom *p, const char *label, const char *value, uint64_t v);
void prom__i64(struct prom *p, const char *label, const char *value, int64_t v);
/* v with decimals digits after the point ("%.*f"). */
void prom__double(struct prom *p, const char *label, const char *value, int decimals, double v);

/* A family of one unlabelled sample. */
void prom__counter(struct prom *p, const char *name, const char *help, uint64_t v);
void prom__gauge(struct prom *p, const char *name, const char *help, uint64_t v);

/* The samples of the histogram family started last: NAME_bucket{le="B"} for
 * each of the n upper bounds (printed "%g") and le="+Inf", cumulative, from
 * counts[0..n] (counts[i] the observations in bucket i alone, counts[n] those
 * above the last bound), then NAME_sum (sum, 6 decimals) and NAME_count. */
void prom__histogram(struct prom *p, const double *bounds, const uint64_t *counts, size_t n,
		     double sum);

/* 0, or -EIO when a write to the stream failed. */
int prom__end(const struct prom *p);

#endif
