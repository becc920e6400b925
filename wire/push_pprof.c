/* A pushed pprof to batches (wire/push.h, push_pprof()): unpacked and checked by
 * wire/push_unpack.c, its sample types mapped to smolder types
 * (wire/push_map.c) and chosen one per smolder type, each sample's locations and
 * lines turned into frames (root first, under the application's process frame,
 * cut at BATCH_MAX_STACK_DEPTH) and its labels joined to the push's, and the
 * stacks added to the push's batches (wire/push.c). */
#include "wire/push_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "common/ptype.h"
#include "common/reason.h"
#include "wire/push_unpack.h"

struct fn_info {
	const char *name, *file;
	size_t name_len, file_len;
	bool clean; /* name and file need no sanitizing */
};

/* One pprof's conversion: the checked Profile, and what one sample's stack and
 * labels are built in. */
struct pprof {
	const Perftools__Profiles__Profile *p;
	struct fn_info *fi;			    /* per function */
	const struct push_idmap *locs, *fns, *maps; /* the push_unpacked's */
	const struct push_meta *m;
	bool python;
	/* a sample's frames, root first, and the text they borrow when it is made
	 * (addresses) or cleaned: allocated on first use, most pushes need none */
	struct frame frames[BATCH_MAX_STACK_DEPTH];
	char (*text)[FRAME_MAX_NAME_LEN + 32];
	size_t ntext;
	bool oom; /* text could not be allocated */
	/* a sample's labels */
	const char *keys[BATCH_MAX_LABELS], *values[BATCH_MAX_LABELS];
};

/* The next of the sample's text buffers (two a frame at most), NULL when they
 * cannot be allocated (pp->oom). */
static char *text_slot(struct pprof *pp)
{
	if (!pp->text && !pp->oom) {
		pp->text = malloc(2 * BATCH_MAX_STACK_DEPTH * sizeof(*pp->text));
		pp->oom = !pp->text;
	}
	if (!pp->text || pp->ntext == 2 * BATCH_MAX_STACK_DEPTH)
		return NULL;
	return pp->text[pp->ntext++];
}

/* Text kept for one frame: s as it is when clean, else sanitized into one of the
 * sample's text buffers. */
static const char *keep(struct pprof *pp, const char *s, size_t *len)
{
	size_t n = strlen(s);
	char *buf;

	if (frame_is_clean(s, n)) {
		*len = n;
		return s;
	}
	buf = text_slot(pp);
	if (!buf) {
		*len = 0;
		return "";
	}
	*len = frame_sanitize(s, n, buf);
	return buf;
}

/* Every function's name (else its system name, else "[unknown]") and file, and
 * whether they need no sanitizing: read once, not at every sample. */
static int fn_infos(struct pprof *pp)
{
	const Perftools__Profiles__Profile *p = pp->p;
	size_t i;

	pp->fi = calloc(p->n_function ? p->n_function : 1, sizeof(*pp->fi));
	if (!pp->fi)
		return -ENOMEM;
	for (i = 0; i < p->n_function; i++) {
		const Perftools__Profiles__Function *fn = p->function[i];
		struct fn_info *fi = &pp->fi[i];

		fi->name = push_str(p, fn->name);
		if (!*fi->name)
			fi->name = push_str(p, fn->system_name);
		if (!*fi->name)
			fi->name = "[unknown]";
		fi->file = push_str(p, fn->filename);
		fi->name_len = strlen(fi->name);
		fi->file_len = strlen(fi->file);
		fi->clean = frame_is_clean(fi->name, fi->name_len) &&
			    frame_is_clean(fi->file, fi->file_len);
	}
	return 0;
}

/* The frames of one line (function, file, line) or of an address. */
static struct frame line_frame(struct pprof *pp, const Perftools__Profiles__Line *ln)
{
	struct frame f = { .kind = FRAME_NATIVE, .file = "" };
	const struct fn_info *fi;
	size_t k = 0;

	push_idmap__find(pp->fns, ln->function_id, &k); /* checked */
	fi = &pp->fi[k];
	if (fi->clean) {
		f.name = fi->name;
		f.name_len = fi->name_len;
	} else {
		f.name = keep(pp, fi->name, &f.name_len);
	}
	if (pp->python && fi->file_len) {
		f.kind = FRAME_PYTHON;
		if (fi->clean) {
			f.file = fi->file;
			f.file_len = fi->file_len;
		} else {
			f.file = keep(pp, fi->file, &f.file_len);
		}
		f.line = ln->line > 0 && ln->line < (int64_t)FRAME_NO_LINE ? (uint32_t)ln->line
									   : FRAME_NO_LINE;
	}
	return f;
}

static struct frame address_frame(struct pprof *pp, const Perftools__Profiles__Location *l)
{
	const Perftools__Profiles__Profile *p = pp->p;
	char *buf = text_slot(pp);
	size_t k;

	if (!buf)
		return frame_make(FRAME_NATIVE, "[unknown]", NULL, 0);

	if (l->mapping_id && push_idmap__find(pp->maps, l->mapping_id, &k) &&
	    *push_str(p, p->mapping[k]->filename)) {
		const Perftools__Profiles__Mapping *mp = p->mapping[k];
		const char *file = push_str(p, mp->filename), *base = strrchr(file, '/');
		char clean[FRAME_MAX_NAME_LEN + 1];

		frame_sanitize(base ? base + 1 : file, strlen(base ? base + 1 : file), clean);
		snprintf(buf, FRAME_MAX_NAME_LEN + 32, "%.*s+0x%" PRIx64, FRAME_MAX_NAME_LEN - 20,
			 clean, l->address - mp->memory_start + mp->file_offset);
	} else {
		snprintf(buf, FRAME_MAX_NAME_LEN + 32, "0x%" PRIx64, l->address);
	}
	return (struct frame){
		.kind = FRAME_NATIVE, .name = buf, .name_len = strlen(buf), .file = ""
	};
}

/* Fills pp->frames with sample s's stack, root first. Returns the count. */
static size_t sample_frames(struct pprof *pp, const Perftools__Profiles__Sample *s)
{
	const size_t max = BATCH_MAX_STACK_DEPTH;
	struct frame leafward[BATCH_MAX_STACK_DEPTH];
	size_t n = 0, i, j, k = 0, nout = 0;
	bool cut = false;

	pp->ntext = 0;
	/* leaf first, as pprof has them, keeping the leaf-most max - 2 */
	for (i = 0; i < s->n_location_id && !cut; i++) {
		const Perftools__Profiles__Location *l;

		push_idmap__find(pp->locs, s->location_id[i], &k); /* checked */
		l = pp->p->location[k];
		if (!l->n_line) {
			if (n == max - 2) {
				cut = true;
				break;
			}
			leafward[n++] = address_frame(pp, l);
			continue;
		}
		for (j = 0; j < l->n_line; j++) {
			if (n == max - 2) {
				cut = true;
				break;
			}
			leafward[n++] = line_frame(pp, l->line[j]);
		}
	}
	pp->frames[nout++] = frame_make(FRAME_PROCESS, pp->m->service, NULL, 0);
	if (cut)
		pp->frames[nout++] = frame_make(FRAME_NATIVE, "[truncated]", NULL, 0);
	while (n)
		pp->frames[nout++] = leafward[--n];
	return nout;
}

static bool skip_label_key(const char *k)
{
	return !*k || !strncmp(k, "__", 2) || push_eq(k, "span_id") || push_eq(k, "span_name") ||
	       push_eq(k, "trace_id") || push_eq(k, "profile_id");
}

/* The push's labels and sample s's string labels. Returns the count, or -EINVAL
 * past BATCH_MAX_LABELS or a string past BATCH_MAX_STRING_LEN. */
static int sample_labels(struct pprof *pp, const Perftools__Profiles__Sample *s, size_t si,
			 char *why, size_t whylen)
{
	const Perftools__Profiles__Profile *p = pp->p;
	size_t n = pp->m->nlabels, i, j;

	memcpy(pp->keys, pp->m->keys, n * sizeof(*pp->keys));
	memcpy(pp->values, pp->m->values, n * sizeof(*pp->values));
	for (i = 0; i < s->n_label; i++) {
		const char *k = push_str(p, s->label[i]->key), *v = push_str(p, s->label[i]->str);
		bool dup = false;

		if (skip_label_key(k) || !*v)
			continue;
		for (j = 0; j < n && !dup; j++)
			dup = push_eq(pp->keys[j], k);
		if (dup)
			continue;
		if (n == BATCH_MAX_LABELS)
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: sample %zu: over %u labels (the cap)", si,
					   BATCH_MAX_LABELS);
		if (strlen(k) > BATCH_MAX_STRING_LEN || strlen(v) > BATCH_MAX_STRING_LEN)
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: sample %zu: a label over %u bytes (the cap)", si,
					   BATCH_MAX_STRING_LEN);
		pp->keys[n] = k;
		pp->values[n++] = v;
	}
	return (int)n;
}

static const char *display_of(const struct push_meta *m, const char *type)
{
	size_t i;

	for (i = 0; i < m->ndisplay; i++)
		if (push_eq(m->display[i].type, type))
			return m->display[i].name;
	return NULL;
}

/* Chooses the sample types to store: one per smolder type, a direct one before one
 * scaled by the period; the rest named in out->skipped. */
static int choose_types(struct pprof *pp, struct push_building *bd, struct push_result *out)
{
	const Perftools__Profiles__Profile *p = pp->p;
	const char *mapped[PUSH_MAX_SAMPLE_TYPES];
	int scaled[PUSH_MAX_SAMPLE_TYPES];
	bool has_wall = false;
	size_t i, j;
	int err;

	for (i = 0; i < p->n_sample_type; i++) {
		const char *t = push_str(p, p->sample_type[i]->type),
			   *u = push_str(p, p->sample_type[i]->unit);

		mapped[i] = push_map_sample_type(t, u, display_of(pp->m, t), pp->m->name_type,
						 &scaled[i]);
		has_wall |= push_eq(mapped[i], "wall");
	}
	for (i = 0; i < p->n_sample_type; i++) {
		const char *t = push_str(p, p->sample_type[i]->type),
			   *u = push_str(p, p->sample_type[i]->unit);
		uint64_t mult = 1;
		bool taken = false;

		if (mapped[i] && scaled[i]) {
			const Perftools__Profiles__ValueType *pt = p->period_type;

			if (pt && push_eq(push_str(p, pt->type), "cpu") &&
			    push_eq(push_str(p, pt->unit), "nanoseconds") && p->period > 0)
				mult = (uint64_t)p->period;
			else if (!pt && !has_wall && pp->m->sample_rate)
				mult = 1000000000u / pp->m->sample_rate;
			else
				mapped[i] = NULL; /* samples of what? not CPU time */
			if (mult == 0)
				mapped[i] = NULL;
		}
		for (j = 0; mapped[i] && j < p->n_sample_type; j++)
			if (j != i && push_eq(mapped[j], mapped[i]) &&
			    (scaled[i] > scaled[j] || (scaled[i] == scaled[j] && j < i)))
				taken = true;
		if (!mapped[i] || taken || !ptype__find(mapped[i])) {
			push_note(out->skipped, sizeof(out->skipped), t, u);
			continue;
		}
		err = push_building__add_type(bd, mapped[i], (unsigned)i, mult);
		if (err)
			return err;
	}
	return 0;
}

int push_pprof(const void *pb, size_t len, const struct push_meta *m, struct push_result *out,
	       char *why, size_t whylen)
{
	struct push_unpacked u;
	struct push_building bd = { .m = m };
	struct pprof *pp = NULL;
	const Perftools__Profiles__Profile *p;
	size_t i, t;
	int err;

	memset(out, 0, sizeof(*out));
	if (m->nlabels > BATCH_MAX_LABELS)
		return reason_fail(why, whylen, -EINVAL, "over %u labels (the cap)",
				   BATCH_MAX_LABELS);
	err = push_unpack(pb, len, m->max_unpacked, &u, why, whylen);
	if (err)
		goto out_free;
	p = u.p;
	pp = calloc(1, sizeof(*pp));
	if (!pp) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	pp->p = p;
	pp->locs = &u.locs;
	pp->fns = &u.fns;
	pp->maps = &u.maps;
	pp->m = m;
	pp->python = push_eq(m->spy_name, "pyspy");
	if (fn_infos(pp)) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	err = choose_types(pp, &bd, out);
	if (err) {
		err = reason_fail(why, whylen, err, "out of memory");
		goto out_free;
	}
	for (i = 0; i < p->n_sample && bd.nt; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		size_t nframes = 0;
		int nl = -1;

		for (t = 0; t < bd.nt; t++) {
			uint64_t v = (uint64_t)s->value[bd.t[t].vi];

			if (!v)
				continue;
			if (nl < 0) {
				nl = sample_labels(pp, s, i, why, whylen);
				if (nl < 0) {
					err = nl;
					goto out_free;
				}
				nframes = sample_frames(pp, s);
				if (pp->oom) {
					err = reason_fail(why, whylen, -ENOMEM, "out of memory");
					goto out_free;
				}
			}
			err = push_building__add_stack(&bd, &bd.t[t], pp->keys, pp->values,
						       (size_t)nl, pp->frames, nframes, v, why,
						       whylen);
			if (err)
				goto out_free;
		}
	}
	err = push_building__finish(&bd, out, why, whylen);
out_free:
	if (err)
		push_result__clear(out);
	push_building__free(&bd);
	if (pp) {
		free(pp->fi);
		free(pp->text);
		free(pp);
	}
	push_unpacked__release(&u);
	return err;
}
