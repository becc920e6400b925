/* Folded text pushed to /ingest ("a;b;c 12" lines, root first) to one batch of
 * the type its application name's suffix names (wire/push.h, push_folded()): each
 * line's frames read by the one frame grammar (common/frame.h), its count held to
 * BATCH_MAX_COUNT once scaled, at most PUSH_MAX_FOLDED_LINES lines. */
#include "wire/push_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "common/frame.h"
#include "common/reason.h"

int push_folded(const char *text, size_t len, const struct push_meta *m, struct push_result *out,
		char *why, size_t whylen)
{
	struct push_building bd = { .m = m };
	struct frame frames[BATCH_MAX_STACK_DEPTH];
	const char *p = text, *end = text + len;
	size_t line = 0;
	bool samples;
	const char *type = push_map_name_type(m->name_type, &samples);
	uint64_t mult = 1;
	int err;

	memset(out, 0, sizeof(*out));
	if (m->nlabels > BATCH_MAX_LABELS)
		return reason_fail(why, whylen, -EINVAL, "over %u labels (the cap)",
				   BATCH_MAX_LABELS);
	if (!type)
		return reason_fail(why, whylen, -EINVAL, "folded: unknown profile type '%.64s'",
				   m->name_type);
	if (samples)
		mult = 1000000000u / (m->sample_rate ? m->sample_rate : 100);
	if (!mult)
		mult = 1;
	err = push_building__add_type(&bd, type, 0, mult);
	if (err)
		return reason_fail(why, whylen, err, "out of memory");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		const char *sp, *q, *f;
		size_t nframes = 0;
		uint64_t v = 0;

		line++;
		if (line > PUSH_MAX_FOLDED_LINES) {
			err = reason_fail(why, whylen, -EINVAL, "folded: over %u lines (the cap)",
					  PUSH_MAX_FOLDED_LINES);
			goto out;
		}
		if (eol > p && eol[-1] == '\r')
			eol--;
		for (sp = eol; sp > p && sp[-1] != ' '; sp--)
			;
		if (eol == p) {
			p = nl ? nl + 1 : end;
			continue;
		}
		if (sp == p || sp == eol || sp - 1 == p) {
			err = reason_fail(why, whylen, -EINVAL,
					  "folded: line %zu: no 'stack count'", line);
			goto out;
		}
		for (q = sp; q < eol; q++) {
			if (*q < '0' || *q > '9' ||
			    v > (BATCH_MAX_COUNT - (uint64_t)(*q - '0')) / 10) {
				err = reason_fail(
					why, whylen, -EINVAL,
					"folded: line %zu: count not a number up to %" PRIu64, line,
					(uint64_t)BATCH_MAX_COUNT);
				goto out;
			}
			v = v * 10 + (uint64_t)(*q - '0');
		}
		frames[nframes++] = frame_make(FRAME_PROCESS, m->service, NULL, 0);
		for (f = p; f < sp - 1;) {
			const char *semi = memchr(f, ';', (size_t)(sp - 1 - f)),
				   *fe = semi ? semi : sp - 1;

			if (fe > f) {
				if (nframes == BATCH_MAX_STACK_DEPTH) {
					err = reason_fail(
						why, whylen, -EINVAL,
						"folded: line %zu: over %u frames (the cap)", line,
						BATCH_MAX_STACK_DEPTH - 1);
					goto out;
				}
				frame_parse(f, (size_t)(fe - f), false, &frames[nframes]);
				if (frames[nframes].name_len > FRAME_MAX_NAME_LEN ||
				    frames[nframes].file_len > FRAME_MAX_NAME_LEN) {
					err = reason_fail(why, whylen, -EINVAL,
							  "folded: line %zu: a frame over %u bytes",
							  line, FRAME_MAX_NAME_LEN);
					goto out;
				}
				nframes++;
			}
			f = fe + 1;
		}
		if (nframes == 1) {
			err = reason_fail(why, whylen, -EINVAL, "folded: line %zu: no frames",
					  line);
			goto out;
		}
		if (v) {
			err = push_building__add_stack(&bd, &bd.t[0], m->keys, m->values,
						       m->nlabels, frames, nframes, v, why, whylen);
			if (err)
				goto out;
		}
		p = nl ? nl + 1 : end;
	}
	err = push_building__finish(&bd, out, why, whylen);
out:
	if (err)
		push_result__clear(out);
	push_building__free(&bd);
	return err;
}
