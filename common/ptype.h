/* Profile types: the one table of what a profile measures. Every type has a name
 * (what a batch's profile_type, the store's type label, a query's type= and the
 * CLI's --type say), a unit (what one count of a sample is) and an aggregation
 * (how a range answers: cumulative types sum their windows, gauges answer the
 * average of their snapshots, never a sum of them). The agent sends cpu and
 * offcpu; the collector's /ingest maps a pushed pprof's sample types onto the
 * others. A name not in the table is not a type: the collector refuses it. */
#ifndef SMOLDER_PTYPE_H
#define SMOLDER_PTYPE_H

#include <stdbool.h>
#include <stddef.h>

enum ptype_unit {
	PTYPE_UNIT_SAMPLES,	/* one stack seen once (a period_ns apart: CPU time) */
	PTYPE_UNIT_NANOSECONDS, /* time */
	PTYPE_UNIT_BYTES,	/* memory */
	PTYPE_UNIT_OBJECTS,	/* allocated or live objects */
	PTYPE_UNIT_COUNT,	/* events or things (contentions, goroutines) */
};

enum ptype_agg {
	PTYPE_AGG_SUM,	   /* cumulative: a range answers the sum of its windows */
	PTYPE_AGG_AVERAGE, /* gauge: each window is a snapshot; a range answers the
			    * average of its snapshots */
};

struct ptype {
	const char *name; /* "cpu", "inuse_space", ... */
	enum ptype_unit unit;
	enum ptype_agg agg;
	const char *title; /* what a person reads: "CPU", "Heap in use" */
};

/* The most types the table may hold: arrays indexed by a type's place (a query's
 * listing) have this many entries. */
#define PTYPE_MAX 32

/* The type named name, or NULL when there is none (NULL or "" is not a name). */
const struct ptype *ptype__find(const char *name);

/* The i-th type of the table (i < ptype__count()), in a fixed order: cpu first. */
const struct ptype *ptype__at(size_t i);
size_t ptype__count(void);

/* The unit's name as JSON and the docs say it: "samples", "nanoseconds", "bytes",
 * "objects", "count". */
const char *ptype__unit_name(enum ptype_unit unit);

/* The word a table column of values in unit is named by (CLI tables, the text
 * tree): "SAMPLES", "TIME", "BYTES", "OBJECTS", "COUNT". */
const char *ptype__unit_column(enum ptype_unit unit);

/* The aggregation's name as JSON says it: "sum" or "average". */
const char *ptype__agg_name(enum ptype_agg agg);

/* How ptype__format() writes a value. */
enum ptype_style {
	PTYPE_TEXT, /* for people: "200 MiB", "12.3 ms", "1,234 objects", "12,345 samples" */
	PTYPE_CELL, /* one ASCII word for a table column, awk-readable: "200MiB",
		     * "12.3ms", "850us", "1234" (samples, objects and count bare) */
};

/* value (a sum or, for a gauge, an average: fractional) in unit, humanised: time
 * in ns, us, ms or s, memory in B, KiB, MiB, GiB or TiB (powers of 1024), about
 * three significant digits; counts whole when whole. Writes at most len bytes
 * (NUL included) into buf and returns buf. The UI's twin is fmtUnit() in
 * ui/flame.js: both follow this one rule. */
char *ptype__format(enum ptype_unit unit, double value, enum ptype_style style, char *buf,
		    size_t len);

/* The names of every type, ", "-separated, in table order, into buf (len bytes,
 * truncated): for a refusal's reason. Returns buf. */
char *ptype__list(char *buf, size_t len);

/* Whether a type is a gauge (answers averages). */
static inline bool ptype__is_gauge(const struct ptype *t)
{
	return t && t->agg == PTYPE_AGG_AVERAGE;
}

#endif
