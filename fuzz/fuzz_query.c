/* Fuzz target: query parameters as the collector's HTTP API receives them. The
 * input is "name=value" pairs separated by '&' (as in a query string, not
 * unescaped); each kind of query parses them, and the time parser reads every
 * value on its own; the whole input is also read as the request's
 * Accept-Encoding (collector/gzip.h). Nothing may crash, and a parsed query must be sane: a
 * non-empty range, a positive step, a diff given both of its ranges. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/gzip.h"
#include "query/query.h"
#include "query/timeparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum query_kind kinds[] = { QUERY_FLAMEGRAPH, QUERY_DIFF,	 QUERY_TOP,
						 QUERY_SERIES,	   QUERY_LABELS, QUERY_LABEL_VALUES,
						 QUERY_TYPES };
	char *text = malloc(size + 1), *save = NULL, *tok, why[256];
	struct query_args p = { 0 };
	int64_t t;
	size_t k;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	(void)gzip__accepted(text);
	for (tok = strtok_r(text, "&", &save); tok && p.n < QUERY_MAX_ARGS;
	     tok = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq)
			continue;
		*eq = '\0';
		query_args__add(&p, tok, eq + 1);
		timeparse(eq + 1, 1764547200, &t);
		timeparse_duration(eq + 1, &t);
	}
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct query q;

		why[0] = '\0';
		if (query_parse(&q, kinds[k],
				&(struct query_params){ query_args__get, query_args__name_at, &p },
				1764547200, why, sizeof(why)) != 0)
			continue;
		if (kinds[k] == QUERY_DIFF
			    ? (q.before_to <= q.before_from || q.after_to <= q.after_from)
			    : q.to <= q.from)
			abort(); /* an empty or inverted range must be refused */
		if (kinds[k] == QUERY_SERIES && q.step <= 0)
			abort();
		if (kinds[k] == QUERY_DIFF &&
		    (!query_args__get(&p, "before_from", 0) ||
		     !query_args__get(&p, "before_to", 0) ||
		     !query_args__get(&p, "after_from", 0) || !query_args__get(&p, "after_to", 0)))
			abort(); /* a diff runs only on the ranges it was given */
		query_free(&q);
	}
	free(text);
	return 0;
}
