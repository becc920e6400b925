/* The profile type table; see ptype.h. */
#include "common/ptype.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const struct ptype types[] = {
	{ "cpu", PTYPE_UNIT_SAMPLES, PTYPE_AGG_SUM, "CPU" },
	{ "offcpu", PTYPE_UNIT_NANOSECONDS, PTYPE_AGG_SUM, "Off-CPU time" },
	{ "process_cpu", PTYPE_UNIT_NANOSECONDS, PTYPE_AGG_SUM, "CPU time" },
	{ "wall", PTYPE_UNIT_NANOSECONDS, PTYPE_AGG_SUM, "Wall-clock time" },
	{ "alloc_space", PTYPE_UNIT_BYTES, PTYPE_AGG_SUM, "Allocated bytes" },
	{ "alloc_objects", PTYPE_UNIT_OBJECTS, PTYPE_AGG_SUM, "Allocated objects" },
	{ "inuse_space", PTYPE_UNIT_BYTES, PTYPE_AGG_AVERAGE, "Memory in use" },
	{ "inuse_objects", PTYPE_UNIT_OBJECTS, PTYPE_AGG_AVERAGE, "Objects in use" },
	{ "goroutines", PTYPE_UNIT_COUNT, PTYPE_AGG_AVERAGE, "Goroutines" },
	{ "mutex_delay", PTYPE_UNIT_NANOSECONDS, PTYPE_AGG_SUM, "Mutex wait time" },
	{ "mutex_count", PTYPE_UNIT_COUNT, PTYPE_AGG_SUM, "Mutex contentions" },
	{ "block_delay", PTYPE_UNIT_NANOSECONDS, PTYPE_AGG_SUM, "Blocking time" },
	{ "block_count", PTYPE_UNIT_COUNT, PTYPE_AGG_SUM, "Blocking events" },
};

const struct ptype *ptype__find(const char *name)
{
	if (!name || !*name)
		return NULL;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(types[i].name, name))
			return &types[i];
	return NULL;
}

const struct ptype *ptype__at(size_t i)
{
	return i < ptype__count() ? &types[i] : NULL;
}

size_t ptype__count(void)
{
	return sizeof(types) / sizeof(types[0]);
}

const char *ptype__unit_name(enum ptype_unit unit)
{
	switch (unit) {
	case PTYPE_UNIT_SAMPLES:
		return "samples";
	case PTYPE_UNIT_NANOSECONDS:
		return "nanoseconds";
	case PTYPE_UNIT_BYTES:
		return "bytes";
	case PTYPE_UNIT_OBJECTS:
		return "objects";
	case PTYPE_UNIT_COUNT:
		return "count";
	}
	return "count";
}

const char *ptype__unit_column(enum ptype_unit unit)
{
	switch (unit) {
	case PTYPE_UNIT_SAMPLES:
		return "SAMPLES";
	case PTYPE_UNIT_NANOSECONDS:
		return "TIME";
	case PTYPE_UNIT_BYTES:
		return "BYTES";
	case PTYPE_UNIT_OBJECTS:
		return "OBJECTS";
	case PTYPE_UNIT_COUNT:
		break;
	}
	return "COUNT";
}

const char *ptype__agg_name(enum ptype_agg agg)
{
	return agg == PTYPE_AGG_AVERAGE ? "average" : "sum";
}

char *ptype__list(char *buf, size_t len)
{
	size_t i, off = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (i = 0; i < ptype__count() && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", types[i].name);
	return buf;
}

/* v with about three significant digits: "850", "12.3", "4.20". */
static void sig3(double v, char *buf, size_t len)
{
	snprintf(buf, len, v >= 99.95 ? "%.0f" : v >= 9.995 ? "%.1f" : "%.2f", v);
}

/* A whole count with thousands separators (TEXT) or bare (CELL); a fractional one
 * (a gauge's average) with three significant digits. */
static void count_text(double v, bool sep, char *buf, size_t len)
{
	char digits[32];
	size_t nd, i, o = 0;

	if (v < 1e6 && v != (double)(uint64_t)v) {
		sig3(v, buf, len);
		return;
	}
	nd = (size_t)snprintf(digits, sizeof(digits), "%.0f", v);
	if (!sep || nd >= sizeof(digits)) {
		snprintf(buf, len, "%s", digits);
		return;
	}
	for (i = 0; i < nd && o + 2 < len; i++) {
		if (i && (nd - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
}

char *ptype__format(enum ptype_unit unit, double value, enum ptype_style style, char *buf,
		    size_t len)
{
	static const char *const bytes[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	static const struct {
		double ns;
		const char *text, *cell;
	} times[] = {
		{ 1, "ns", "ns" }, { 1e3, "\u00b5s", "us" }, { 1e6, "ms", "ms" }, { 1e9, "s", "s" }
	};
	const char *sp = style == PTYPE_TEXT ? " " : "";
	char num[48];
	size_t i;

	if (!len)
		return buf;
	if (!(value >= 0)) /* negative or NaN: never from a store; say it as it is */
		value = 0;
	switch (unit) {
	case PTYPE_UNIT_NANOSECONDS:
		for (i = 0;
		     i + 1 < sizeof(times) / sizeof(times[0]) && value >= times[i + 1].ns * 0.9995;
		     i++)
			;
		if (i == 0)
			snprintf(num, sizeof(num), "%.0f", value);
		else
			sig3(value / times[i].ns, num, sizeof(num));
		snprintf(buf, len, "%s%s%s", num, sp,
			 style == PTYPE_TEXT ? times[i].text : times[i].cell);
		break;
	case PTYPE_UNIT_BYTES: /* 1023.5 KiB rounds to 1024: that is 1.00 MiB */
		for (i = 0; i + 1 < sizeof(bytes) / sizeof(bytes[0]) && value >= 1023.5; i++)
			value /= 1024;
		if (i == 0)
			snprintf(num, sizeof(num), "%.0f", value);
		else
			sig3(value, num, sizeof(num));
		snprintf(buf, len, "%s%s%s", num, sp, bytes[i]);
		break;
	case PTYPE_UNIT_SAMPLES:
	case PTYPE_UNIT_OBJECTS:
	case PTYPE_UNIT_COUNT:
		count_text(value, style == PTYPE_TEXT, num, sizeof(num));
		if (style == PTYPE_TEXT && unit != PTYPE_UNIT_COUNT)
			snprintf(buf, len, "%s %s", num, ptype__unit_name(unit));
		else
			snprintf(buf, len, "%s", num);
		break;
	}
	return buf;
}
