/* The profile type table; see ptype.h. */
#include "common/ptype.h"

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
