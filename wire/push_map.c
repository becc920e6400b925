/* The names Pyroscope clients give their profiles, to smolder types
 * (common/ptype.h): a pprof's sample types (push_map_sample_type(), the table in
 * wire/push.h) and a folded push's application name suffix
 * (push_map_name_type(), wire/push_int.h). Pure lookups. */
#include "wire/push_int.h"

#include <stdbool.h>
#include <string.h>

#include "common/ptype.h"

const char *push_map_sample_type(const char *type, const char *unit, const char *display,
				 const char *name_type, int *scale_by_period)
{
	const char *n = display && *display ? display : type;
	bool block = name_type && strstr(name_type, "block");
	bool ns = push_eq(unit, "nanoseconds");

	*scale_by_period = 0;
	if (!n)
		return NULL;
	if (push_eq(n, "cpu") || push_eq(n, "samples")) {
		if (ns)
			return "process_cpu";
		if (push_eq(unit, "count") || push_eq(unit, "samples")) {
			*scale_by_period = 1;
			return "process_cpu";
		}
		return NULL;
	}
	if (push_eq(n, "wall"))
		return ns ? "wall" : NULL;
	if (push_eq(n, "alloc_objects") || push_eq(n, "alloc-samples"))
		return "alloc_objects";
	if (push_eq(n, "alloc_space") || push_eq(n, "alloc-size"))
		return push_eq(unit, "bytes") ? "alloc_space" : NULL;
	if (push_eq(n, "inuse_objects") || push_eq(n, "inuse-objects") || push_eq(n, "objects"))
		return "inuse_objects";
	if (push_eq(n, "inuse_space") || push_eq(n, "inuse-space") || push_eq(n, "space"))
		return push_eq(unit, "bytes") ? "inuse_space" : NULL;
	if (push_eq(n, "contentions"))
		return block ? "block_count" : "mutex_count";
	if (push_eq(n, "delay"))
		return !ns ? NULL : block ? "block_delay" : "mutex_delay";
	if (push_eq(n, "mutex_count") || push_eq(n, "lock-count") || push_eq(n, "lock_count"))
		return "mutex_count";
	if (push_eq(n, "mutex_duration") || push_eq(n, "mutex_delay") || push_eq(n, "lock-time") ||
	    push_eq(n, "lock_duration"))
		return ns ? "mutex_delay" : NULL;
	if (push_eq(n, "block_count"))
		return "block_count";
	if (push_eq(n, "block_duration") || push_eq(n, "block_delay"))
		return ns ? "block_delay" : NULL;
	if (push_eq(n, "goroutine") || push_eq(n, "goroutines"))
		return "goroutines";
	return NULL;
}

const char *push_map_name_type(const char *suffix, bool *samples)
{
	static const struct {
		const char *suffix, *type;
	} names[] = {
		{ "mutex_duration", "mutex_delay" },
		{ "block_duration", "block_delay" },
	};
	size_t i;

	*samples = false;
	if (!suffix || !*suffix || push_eq(suffix, "cpu") || push_eq(suffix, "itimer")) {
		*samples = true;
		return "process_cpu";
	}
	if (push_eq(suffix, "wall")) {
		*samples = true;
		return "wall";
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (push_eq(suffix, names[i].suffix))
			return names[i].type;
	return ptype__find(suffix) && !push_eq(suffix, "cpu") && !push_eq(suffix, "offcpu") ? suffix
											    : NULL;
}
