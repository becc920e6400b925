/* pprof export (see render_pprof.h for the mapping): interns strings, functions and
 * locations in uthash tables while walking the stacks in sorted order (so the
 * output is a pure function of the input), builds the protobuf-c message tree
 * around those tables, packs it and gzips it with zlib. */
#include "query/render_pprof.h"
#include "common/array.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "profile.pb-c.h"

/* One interned key (string bytes, or name '\0' file for functions). */
struct intern {
	UT_hash_handle hh;
	uint64_t idx; /* string index, or function/location id */
	size_t klen;  /* bytes of key, without the trailing NUL */
	char key[];   /* NUL-terminated */
};

/* A Location with its single Line, allocated together. */
struct loc_box {
	Perftools__Profiles__Location loc;
	Perftools__Profiles__Line line;
	Perftools__Profiles__Line *lines[1];
};

/* A Sample with its values and "comm" label, allocated together. */
struct sample_box {
	Perftools__Profiles__Sample s;
	Perftools__Profiles__Label label;
	Perftools__Profiles__Label *labels[1];
	int64_t values[2];
};

struct pp {
	struct intern *strs, *funcs, *locs; /* hash heads */
	char **strtab;			    /* string_table, owned by the interns */
	size_t nstr, capstr;
	Perftools__Profiles__Function **fns;
	size_t nfn, capfn;
	Perftools__Profiles__Location **lcs; /* really struct loc_box * */
	size_t nloc, caploc;
	Perftools__Profiles__Sample **smp; /* really struct sample_box * */
	size_t nsmp, capsmp;
	struct flame_stack *stacks; /* side 0's stacks, in text order */
	size_t nstacks;
};

/* Finds key in *head or adds it (with idx from *next, then incremented). */
static int intern(struct intern **head, const char *key, size_t klen, uint64_t next,
		  struct intern **out, bool *added)
{
	struct intern *e;
	unsigned before;

	HASH_FIND(hh, *head, key, klen, e);
	*added = false;
	if (!e) {
		e = malloc(sizeof(*e) + klen + 1);
		if (!e)
			return -ENOMEM;
		memcpy(e->key, key, klen);
		e->key[klen] = '\0';
		e->klen = klen;
		e->idx = next;
		before = HASH_COUNT(*head);
		HASH_ADD(hh, *head, key, klen, e);
		if (HASH_COUNT(*head) == before) {
			free(e);
			return -ENOMEM;
		}
		*added = true;
	}
	*out = e;
	return 0;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;

	return utf8_decode(s, n, &cp);
}

/* Interns a string-table entry. Protobuf strings must be UTF-8 (protoc and other
 * decoders reject the message otherwise), so each invalid byte becomes U+FFFD. */
static int str_idx(struct pp *p, const char *s, size_t len, int64_t *idx)
{
	const unsigned char *u = (const unsigned char *)s;
	char *fixed = NULL;
	size_t i, n, flen = 0;
	struct intern *e;
	bool added;
	int err;

	err = array_grow((void **)&p->strtab, &p->capstr, p->nstr + 1, sizeof(*p->strtab));
	if (err)
		return err;
	for (i = 0; i < len; i += n) {
		n = utf8_len(u + i, len - i);
		if (!n)
			break;
	}
	if (i < len) {
		fixed = malloc(len * 3);
		if (!fixed)
			return -ENOMEM;
		for (i = 0; i < len; i += n) {
			n = utf8_len(u + i, len - i);
			if (n) {
				memcpy(fixed + flen, s + i, n);
				flen += n;
			} else {
				memcpy(fixed + flen, "\xef\xbf\xbd", 3);
				flen += 3;
				n = 1;
			}
		}
		s = fixed;
		len = flen;
	}
	err = intern(&p->strs, s, len, p->nstr, &e, &added);
	free(fixed);
	if (err)
		return err;
	if (added)
		p->strtab[p->nstr++] = e->key;
	*idx = (int64_t)e->idx;
	return 0;
}

static int function_id(struct pp *p, const char *name, size_t nlen, const char *file, size_t flen,
		       uint64_t *id)
{
	Perftools__Profiles__Function *fn;
	struct intern *e;
	char *key;
	bool added;
	int err;

	key = malloc(nlen + 1 + flen);
	if (!key)
		return -ENOMEM;
	memcpy(key, name, nlen);
	key[nlen] = '\0';
	memcpy(key + nlen + 1, file, flen);
	err = array_grow((void **)&p->fns, &p->capfn, p->nfn + 1, sizeof(*p->fns));
	if (!err)
		err = intern(&p->funcs, key, nlen + 1 + flen, p->nfn + 1, &e, &added);
	free(key);
	if (err)
		return err;
	if (added) {
		fn = malloc(sizeof(*fn));
		if (!fn) {
			HASH_DEL(p->funcs, e);
			free(e);
			return -ENOMEM;
		}
		perftools__profiles__function__init(fn);
		fn->id = e->idx;
		p->fns[p->nfn++] = fn;
		err = str_idx(p, name, nlen, &fn->name);
		if (!err)
			fn->system_name = fn->name;
		if (!err)
			err = str_idx(p, file, flen, &fn->filename);
		if (err)
			return err;
	}
	*id = e->idx;
	return 0;
}

/* The location of a frame: one Line whose function is the Python function (name,
 * file) at its line, or for any other kind the whole frame text. */
static int location_id(struct pp *p, const struct flame_node *node, uint64_t *id)
{
	const struct frame *fr = &node->frame;
	bool py = fr->kind == FRAME_PYTHON;
	size_t len = strlen(node->name);
	struct loc_box *b;
	struct intern *e;
	bool added;
	int err;

	err = array_grow((void **)&p->lcs, &p->caploc, p->nloc + 1, sizeof(*p->lcs));
	if (err)
		return err;
	err = intern(&p->locs, node->name, len, p->nloc + 1, &e, &added);
	if (err)
		return err;
	if (added) {
		b = malloc(sizeof(*b));
		if (!b) {
			HASH_DEL(p->locs, e);
			free(e);
			return -ENOMEM;
		}
		perftools__profiles__location__init(&b->loc);
		perftools__profiles__line__init(&b->line);
		b->lines[0] = &b->line;
		b->loc.id = e->idx;
		b->loc.n_line = 1;
		b->loc.line = b->lines;
		p->lcs[p->nloc++] = &b->loc;
		b->line.line = py && fr->line != FRAME_NO_LINE ? fr->line : 0;
		err = function_id(p, node->name, py ? fr->name_len : len, fr->file,
				  py ? fr->file_len : 0, &b->line.function_id);
		if (err)
			return err;
	}
	*id = e->idx;
	return 0;
}

static int add_sample(struct pp *p, const struct flame_stack *st, uint64_t period, int64_t comm_key,
		      bool one_value)
{
	uint64_t count = st->count[0];
	struct sample_box *b;
	uint32_t i;
	int64_t ns;
	int err;

	/* Saturate, never fail: a count is at most INT64_MAX (the store's sums
	 * saturate there), and count x period may pass it. */
	if (count > INT64_MAX)
		count = INT64_MAX;
	if (period > INT64_MAX || __builtin_mul_overflow((int64_t)count, (int64_t)period, &ns))
		ns = INT64_MAX;
	if (st->nframes > RENDER_PPROF_MAX_FRAMES)
		return -EINVAL;
	err = array_grow((void **)&p->smp, &p->capsmp, p->nsmp + 1, sizeof(*p->smp));
	if (err)
		return err;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	perftools__profiles__sample__init(&b->s);
	perftools__profiles__label__init(&b->label);
	b->values[0] = (int64_t)count;
	b->values[1] = ns;
	b->s.n_value = one_value ? 1 : 2;
	b->s.value = b->values;
	b->labels[0] = &b->label;
	b->s.n_label = 1;
	b->s.label = b->labels;
	b->label.key = comm_key;
	if (st->nframes > 1) {
		b->s.location_id = calloc(st->nframes - 1, sizeof(uint64_t));
		if (!b->s.location_id) {
			free(b);
			return -ENOMEM;
		}
	}
	p->smp[p->nsmp++] = &b->s;

	/* the process is a label; frames 1..n-1 are root first, stored leaf first */
	err = str_idx(p, st->frames[0]->name, strlen(st->frames[0]->name), &b->label.str);
	for (i = 1; i < st->nframes && !err; i++) {
		err = location_id(p, st->frames[i], &b->s.location_id[st->nframes - 1 - i]);
		b->s.n_location_id += !err;
	}
	return err;
}

static int gzip(const uint8_t *in, size_t in_len, void **out, size_t *out_len)
{
	z_stream zs = { 0 };
	uint8_t *buf;
	uLong bound;
	int err = -EIO;

	if (in_len > UINT32_MAX)
		return -EOVERFLOW;
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	bound = deflateBound(&zs, (uLong)in_len) + 64;
	buf = malloc(bound);
	if (!buf) {
		err = -ENOMEM;
		goto out_end;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)in_len;
	zs.next_out = buf;
	zs.avail_out = (uInt)bound;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		free(buf);
		goto out_end;
	}
	*out = buf;
	*out_len = zs.total_out;
	err = 0;
out_end:
	deflateEnd(&zs);
	return err;
}

static void pp_free(struct pp *p)
{
	struct intern *e, *tmp;
	size_t i;

	for (i = 0; i < p->nsmp; i++) {
		free(p->smp[i]->location_id);
		free(p->smp[i]); /* first member of its sample_box */
	}
	for (i = 0; i < p->nloc; i++)
		free(p->lcs[i]); /* first member of its loc_box */
	for (i = 0; i < p->nfn; i++)
		free(p->fns[i]);
	HASH_ITER (hh, p->strs, e, tmp) {
		HASH_DEL(p->strs, e);
		free(e);
	}
	HASH_ITER (hh, p->funcs, e, tmp) {
		HASH_DEL(p->funcs, e);
		free(e);
	}
	HASH_ITER (hh, p->locs, e, tmp) {
		HASH_DEL(p->locs, e);
		free(e);
	}
	free(p->smp);
	free(p->lcs);
	free(p->fns);
	free(p->strtab);
	free(p->stacks);
}

/* render_pprof_commented(), or with type (not NULL) the profile of one sample
 * type type/unit (the values as they are), period 1 of it. */
static int encode(const struct flame *tree, const char *type, const char *unit, uint64_t period_ns,
		  int64_t time_nanos, int64_t duration_nanos, const char *const *comments,
		  size_t ncomments, void **out, size_t *len)
{
	bool typed = type != NULL;
	Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[2], period_type, *vts[2];
	int64_t empty, samples, count, cpu, ns, comm, comment[RENDER_PPROF_MAX_COMMENTS];
	struct pp p = { 0 };
	uint8_t *raw = NULL;
	size_t raw_len, i;
	int err;

	if (!tree || !out || !len || (ncomments && !comments) ||
	    ncomments > RENDER_PPROF_MAX_COMMENTS)
		return -EINVAL;
	for (i = 0; i < ncomments; i++)
		if (!comments[i])
			return -EINVAL;
	if (period_ns > INT64_MAX)
		return -EOVERFLOW;
	err = flame__stacks(tree, &p.stacks, &p.nstacks);
	if (err)
		goto out_free;

	if ((err = str_idx(&p, "", 0, &empty)) || (err = str_idx(&p, "samples", 7, &samples)) ||
	    (err = str_idx(&p, "count", 5, &count)) ||
	    (err = typed ? str_idx(&p, type, strlen(type), &cpu) : str_idx(&p, "cpu", 3, &cpu)) ||
	    (err = typed ? str_idx(&p, unit, strlen(unit), &ns)
			 : str_idx(&p, "nanoseconds", 11, &ns)) ||
	    (err = str_idx(&p, "comm", 4, &comm)))
		goto out_free;
	(void)empty;
	for (i = 0; i < ncomments; i++) {
		err = str_idx(&p, comments[i], strnlen(comments[i], RENDER_PPROF_MAX_COMMENT),
			      &comment[i]);
		if (err)
			goto out_free;
	}
	for (i = 0; i < p.nstacks; i++) {
		if (!p.stacks[i].count[0])
			continue; /* only on the other side */
		err = add_sample(&p, &p.stacks[i], period_ns, comm, typed);
		if (err)
			goto out_free;
	}

	for (i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vts[i] = &vt[i];
	}
	vt[0].type = typed ? cpu : samples; /* typed: the type's name and unit */
	vt[0].unit = typed ? ns : count;
	vt[1].type = cpu;
	vt[1].unit = ns;
	perftools__profiles__value_type__init(&period_type);
	period_type.type = cpu;
	period_type.unit = ns;
	prof.n_sample_type = typed ? 1 : 2;
	prof.sample_type = vts;
	prof.n_sample = p.nsmp;
	prof.sample = p.smp;
	prof.n_location = p.nloc;
	prof.location = p.lcs;
	prof.n_function = p.nfn;
	prof.function = p.fns;
	prof.n_string_table = p.nstr;
	prof.string_table = p.strtab;
	prof.time_nanos = time_nanos;
	prof.duration_nanos = duration_nanos;
	prof.period_type = &period_type;
	prof.period = (int64_t)period_ns;
	prof.default_sample_type = cpu;
	prof.n_comment = ncomments;
	prof.comment = comment;

	raw_len = perftools__profiles__profile__get_packed_size(&prof);
	raw = malloc(raw_len ? raw_len : 1);
	if (!raw) {
		err = -ENOMEM;
		goto out_free;
	}
	if (perftools__profiles__profile__pack(&prof, raw) != raw_len) {
		err = -EIO;
		goto out_free;
	}
	err = gzip(raw, raw_len, out, len);
out_free:
	free(raw);
	pp_free(&p);
	return err;
}

int64_t render_pprof_seconds_to_ns(int64_t seconds)
{
	int64_t ns;

	if (__builtin_mul_overflow(seconds, INT64_C(1000000000), &ns))
		return seconds < 0 ? INT64_MIN : INT64_MAX;
	return ns;
}

int64_t render_pprof_duration_ns(int64_t from, int64_t to)
{
	int64_t d;

	if (__builtin_sub_overflow(to, from, &d))
		d = to < from ? INT64_MIN : INT64_MAX;
	return render_pprof_seconds_to_ns(d);
}

int render_pprof(const struct flame *tree, uint64_t period_ns, int64_t time_nanos,
		 int64_t duration_nanos, void **out, size_t *len)
{
	return encode(tree, NULL, NULL, period_ns, time_nanos, duration_nanos, NULL, 0, out, len);
}

int render_pprof_commented(const struct flame *tree, uint64_t period_ns, int64_t time_nanos,
			   int64_t duration_nanos, const char *const *comments, size_t ncomments,
			   void **out, size_t *len)
{
	return encode(tree, NULL, NULL, period_ns, time_nanos, duration_nanos, comments, ncomments,
		      out, len);
}

int render_pprof_typed(const struct flame *tree, const char *type, const char *unit,
		       int64_t time_nanos, int64_t duration_nanos, const char *const *comments,
		       size_t ncomments, void **out, size_t *len)
{
	if (!type || !*type || !unit || !*unit)
		return -EINVAL;
	return encode(tree, type, unit, 1, time_nanos, duration_nanos, comments, ncomments, out,
		      len);
}

int render_pprof_offcpu(const struct flame *tree, int64_t time_nanos, int64_t duration_nanos,
			const char *const *comments, size_t ncomments, void **out, size_t *len)
{
	return render_pprof_typed(tree, "offcpu", "nanoseconds", time_nanos, duration_nanos,
				  comments, ncomments, out, len);
}
