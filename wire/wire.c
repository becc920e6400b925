/* The wire codec (see wire.h; the format itself is described in
 * schema/smolder.proto). Encoding maps struct batch onto the generated protobuf-c
 * structs without copying strings (versions 2 and 3: frames, stacks and samples
 * copied into columns, version 3's stack ids and refs borrowed as bytes; version
 * 1: as messages, stacks not copied), packs, and compresses in one call.
 * Decoding is defensive in layers, each bounded before it allocates: the body
 * size; the zstd frame's declared content size (one-shot decompression into a
 * buffer of exactly that size) or, when the frame omits it, streaming decompression
 * into a buffer that grows only up to the cap; a scan of the top-level protobuf
 * fields that counts list entries against the BATCH_MAX_* caps; protobuf-c
 * unpacking into one arena of exactly the prescan's bound plus a little slack, a
 * bump allocator that refuses to go past it (nested lists and empty sub-messages
 * can expand a few bytes of input into many allocated ones; one block instead of
 * a malloc and a free per string and list was a third of decoding); then the
 * conversion to struct batch (any version, its strings and stack frames in two
 * pools) and batch__validate().
 */
#include "wire/wire.h"
#include "common/reason.h"
#include "common/varint.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "smolder.pb-c.h"

#define STREAM_WINDOW_LOG_MAX 24	  /* 16 MiB zstd window for frames without a size */
#define STREAM_FIRST_BUF      (64u << 10) /* first output buffer of streaming decompression */
/* protobuf-c's ScannedMember (32 bytes on LP64) per field occurrence: the first 16
 * on the stack, the rest in at most 30 slabs that double, at most twice that per
 * occurrence. */
#define PRESCAN_SCANNED_COST	 64
#define PRESCAN_SCANNED_ON_STACK 16
#define PRESCAN_SCANNED_SLABS	 30
/* Headroom of the arena over the prescan's bound, which should be exact or above;
 * the fuzzer checks that what unpacking takes never passes the bound. */
#define UNPACK_SLACK	 (4u << 10)
#define FRAME_HEADER_MAX 18 /* ZSTD_FRAMEHEADERSIZE_MAX, a static-only symbol */

/* ---- encode ----------------------------------------------------------------- */

/* The protobuf-c view of a batch: arrays of structs and of pointers to them. */
struct pb_view {
	Smolder__V1__Frame *frames, **framep;
	Smolder__V1__Stack *stacks, **stackp;
	Smolder__V1__LabelSet *labelsets, **labelsetp;
	Smolder__V1__Label *labels, **labelp;
	Smolder__V1__Sample *samples, **samplep;
	Smolder__V1__Counter *counters, **counterp;
	uint32_t *cols; /* version 2: every uint32 column, in one allocation */
	uint64_t *counts;
};

static void pb_view_free(struct pb_view *v)
{
	free(v->frames);
	free(v->framep);
	free(v->stacks);
	free(v->stackp);
	free(v->labelsets);
	free(v->labelsetp);
	free(v->labels);
	free(v->labelp);
	free(v->samples);
	free(v->samplep);
	free(v->counters);
	free(v->counterp);
	free(v->cols);
	free(v->counts);
}

/* Allocates n structs and n pointers to them (at least one of each). */
static int alloc_view(void *structs, void *ptrs, size_t n, size_t sz)
{
	void **s = structs, **p = ptrs;

	*s = calloc(n ? n : 1, sz);
	*p = calloc(n ? n : 1, sizeof(void *));
	return *s && *p ? 0 : -ENOMEM;
}

/* Version 2: frames, stacks and samples as columns (schema/smolder.proto). */
static int to_columns(const struct batch *b, Smolder__V1__Batch *m, struct pb_view *v)
{
	size_t i, nf = b->nframes, nst = b->nstacks, ns = b->nsamples, depth = 0;
	uint32_t *c;

	for (i = 0; i < nst; i++)
		depth += b->stacks[i].nframes;
	v->cols = malloc((4 * nf + nst + depth + 2 * ns + 1) * sizeof(*v->cols));
	v->counts = malloc((ns ? ns : 1) * sizeof(*v->counts));
	if (!v->cols || !v->counts)
		return -ENOMEM;
	c = v->cols;
	m->n_frame_kinds = m->n_frame_names = m->n_frame_files = m->n_frame_lines = nf;
	m->frame_kinds = c;
	m->frame_names = c + nf;
	m->frame_files = c + 2 * nf;
	m->frame_lines = c + 3 * nf;
	for (i = 0; i < nf; i++) {
		m->frame_kinds[i] = b->frames[i].kind;
		m->frame_names[i] = b->frames[i].name;
		m->frame_files[i] = b->frames[i].file;
		m->frame_lines[i] = b->frames[i].line;
	}
	c += 4 * nf;
	m->n_stack_depths = nst;
	m->stack_depths = c;
	m->n_stack_frames = depth;
	m->stack_frames = c + nst;
	for (i = 0, depth = 0; i < nst; i++) {
		m->stack_depths[i] = b->stacks[i].nframes;
		memcpy(m->stack_frames + depth, b->stacks[i].frames,
		       b->stacks[i].nframes * sizeof(uint32_t));
		depth += b->stacks[i].nframes;
	}
	c += nst + depth;
	m->n_sample_labelsets = m->n_sample_stacks = m->n_sample_counts = ns;
	m->sample_labelsets = c;
	m->sample_stacks = c + ns;
	m->sample_counts = v->counts;
	for (i = 0; i < ns; i++) {
		m->sample_labelsets[i] = b->samples[i].labelset;
		m->sample_stacks[i] = b->samples[i].stack;
		m->sample_counts[i] = b->samples[i].count;
	}
	return 0;
}

/* Fills m from b (valid) in wire format version; v holds what m points to. */
static int to_message(const struct batch *b, unsigned version, Smolder__V1__Batch *m,
		      struct pb_view *v)
{
	size_t i, j, k, nlabels = 0;
	bool v1 = version == WIRE_FORMAT_V1;

	for (i = 0; i < b->nlabelsets; i++)
		nlabels += b->labelsets[i].nlabels;
	if (alloc_view(&v->frames, &v->framep, v1 ? b->nframes : 0, sizeof(*v->frames)) ||
	    alloc_view(&v->stacks, &v->stackp, v1 ? b->nstacks : 0, sizeof(*v->stacks)) ||
	    alloc_view(&v->labelsets, &v->labelsetp, b->nlabelsets, sizeof(*v->labelsets)) ||
	    alloc_view(&v->labels, &v->labelp, nlabels, sizeof(*v->labels)) ||
	    alloc_view(&v->samples, &v->samplep, v1 ? b->nsamples : 0, sizeof(*v->samples)) ||
	    alloc_view(&v->counters, &v->counterp, b->ncounters, sizeof(*v->counters)))
		return -ENOMEM;

	m->format_version = version;
	m->agent_id = b->agent_id;
	m->host = b->host;
	m->profile_type = b->profile_type;
	m->seq = b->seq;
	m->window_start = b->window_start;
	m->window_seconds = b->window_seconds;
	m->period_ns = b->period_ns;
	m->n_strings = b->nstrings;
	m->strings = b->strings;
	if (!v1 && to_columns(b, m, v))
		return -ENOMEM;
	for (i = 0; v1 && i < b->nframes; i++) {
		Smolder__V1__Frame *f = &v->frames[i];

		smolder__v1__frame__init(f);
		f->kind = (Smolder__V1__FrameKind)b->frames[i].kind;
		f->name = b->frames[i].name;
		f->file = b->frames[i].file;
		f->line = b->frames[i].line;
		v->framep[i] = f;
	}
	m->n_frames = v1 ? b->nframes : 0;
	m->frames = v->framep;
	for (i = 0; v1 && i < b->nstacks; i++) {
		smolder__v1__stack__init(&v->stacks[i]);
		v->stacks[i].n_frames = b->stacks[i].nframes;
		v->stacks[i].frames = b->stacks[i].frames;
		v->stackp[i] = &v->stacks[i];
	}
	m->n_stacks = v1 ? b->nstacks : 0;
	m->stacks = v->stackp;
	for (i = 0, k = 0; i < b->nlabelsets; i++) {
		const struct batch_labelset *ls = &b->labelsets[i];

		smolder__v1__label_set__init(&v->labelsets[i]);
		v->labelsets[i].n_labels = ls->nlabels;
		v->labelsets[i].labels = &v->labelp[k];
		for (j = 0; j < ls->nlabels; j++, k++) {
			smolder__v1__label__init(&v->labels[k]);
			v->labels[k].key = ls->labels[j].key;
			v->labels[k].value = ls->labels[j].value;
			v->labelp[k] = &v->labels[k];
		}
		v->labelsetp[i] = &v->labelsets[i];
	}
	m->n_labelsets = b->nlabelsets;
	m->labelsets = v->labelsetp;
	for (i = 0; v1 && i < b->nsamples; i++) {
		smolder__v1__sample__init(&v->samples[i]);
		v->samples[i].labelset = b->samples[i].labelset;
		v->samples[i].stack = b->samples[i].stack;
		v->samples[i].count = b->samples[i].count;
		v->samplep[i] = &v->samples[i];
	}
	m->n_samples = v1 ? b->nsamples : 0;
	m->samples = v->samplep;
	for (i = 0; i < b->ncounters; i++) {
		smolder__v1__counter__init(&v->counters[i]);
		v->counters[i].name = b->counters[i].name;
		v->counters[i].value = b->counters[i].value;
		v->counterp[i] = &v->counters[i];
	}
	m->n_counters = b->ncounters;
	m->counters = v->counterp;
	if (version == WIRE_FORMAT_V3) {
		/* borrowed from b, as the strings */
		m->stack_ids.len = b->stack_ids ? (size_t)b->nstacks * BATCH_STACK_ID_LEN : 0;
		m->stack_ids.data = m->stack_ids.len ? (uint8_t *)b->stack_ids : NULL;
		m->stack_refs.len = (size_t)b->nrefs * BATCH_STACK_ID_LEN;
		m->stack_refs.data = b->nrefs ? (uint8_t *)b->refs : NULL;
	}
	return 0;
}

int wire_encode(const struct batch *b, int zstd_level, void **out, size_t *out_len)
{
	return wire_encode_version(b, zstd_level, WIRE_FORMAT_VERSION, out, out_len);
}

int wire_encode_version(const struct batch *b, int zstd_level, unsigned version, void **out,
			size_t *out_len)
{
	Smolder__V1__Batch m = SMOLDER__V1__BATCH__INIT;
	struct pb_view v = { 0 };
	uint8_t *packed = NULL;
	size_t packed_len, bound, n;
	ZSTD_CCtx *cctx = NULL;
	void *body = NULL;
	int err;

	if (!b || !out || !out_len || zstd_level < ZSTD_minCLevel() ||
	    zstd_level > ZSTD_maxCLevel() ||
	    (version != WIRE_FORMAT_V1 && version != WIRE_FORMAT_V2 && version != WIRE_FORMAT_V3) ||
	    (version != WIRE_FORMAT_V3 && (b->nrefs || b->stack_ids)) ||
	    batch__validate(b, NULL, 0))
		return -EINVAL;
	err = to_message(b, version, &m, &v);
	if (err)
		goto out_free_view;
	packed_len = smolder__v1__batch__get_packed_size(&m);
	packed = malloc(packed_len ? packed_len : 1);
	if (!packed) {
		err = -ENOMEM;
		goto out_free_view;
	}
	smolder__v1__batch__pack(&m, packed);

	cctx = ZSTD_createCCtx();
	bound = ZSTD_compressBound(packed_len);
	body = malloc(bound);
	if (!cctx || !body) {
		err = -ENOMEM;
		goto out_free_body;
	}
	/* The content size in the frame header lets the decoder allocate exactly once;
	 * the checksum catches a body corrupted in the agent's spool. */
	if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, zstd_level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1))) {
		err = -EINVAL;
		goto out_free_body;
	}
	n = ZSTD_compress2(cctx, body, bound, packed, packed_len);
	if (ZSTD_isError(n)) {
		err = ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? -ENOMEM : -EINVAL;
		goto out_free_body;
	}
	*out = body;
	*out_len = n;
	body = NULL;
	err = 0;

out_free_body:
	free(body);
	ZSTD_freeCCtx(cctx);
	free(packed);
out_free_view:
	pb_view_free(&v);
	return err;
}

/* ---- decode: zstd ----------------------------------------------------------- */

/* Streaming decompression of one frame of unknown size: the buffer grows by
 * doubling up to cap + 1 bytes, and producing byte cap + 1 is the failure. */
static int decompress_stream(const void *src, size_t len, size_t cap, void **out, size_t *out_len,
			     char *why, size_t whylen)
{
	ZSTD_inBuffer in = { src, len, 0 };
	ZSTD_outBuffer o = { NULL, 0, 0 };
	ZSTD_DCtx *dctx;
	size_t ret, size;
	int err;

	dctx = ZSTD_createDCtx();
	size = len < STREAM_FIRST_BUF / 8 ? STREAM_FIRST_BUF : len * 8;
	if (size > cap)
		size = cap + 1;
	o.dst = malloc(size);
	o.size = size;
	if (!dctx || !o.dst) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	ret = ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, STREAM_WINDOW_LOG_MAX);
	if (ZSTD_isError(ret)) {
		err = reason_fail(why, whylen, -EINVAL, "zstd: %s", ZSTD_getErrorName(ret));
		goto out_free;
	}
	for (;;) {
		ret = ZSTD_decompressStream(dctx, &o, &in);
		if (ZSTD_isError(ret)) {
			if (ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge)
				err = reason_fail(why, whylen, -E2BIG, "zstd window over %u bytes",
						  1u << STREAM_WINDOW_LOG_MAX);
			else
				err = reason_fail(why, whylen, -EINVAL, "corrupt zstd frame: %s",
						  ZSTD_getErrorName(ret));
			goto out_free;
		}
		if (o.pos > cap) {
			err = reason_fail(why, whylen, -E2BIG, "decompressed body over %zu bytes",
					  cap);
			goto out_free;
		}
		if (ret == 0)
			break;
		if (o.pos == o.size) {
			void *nd;

			size = o.size > cap / 2 ? cap + 1 : o.size * 2;
			nd = realloc(o.dst, size);
			if (!nd) {
				err = reason_fail(why, whylen, -ENOMEM, "out of memory");
				goto out_free;
			}
			o.dst = nd;
			o.size = size;
		} else if (in.pos == in.size) {
			err = reason_fail(why, whylen, -EINVAL, "truncated zstd frame");
			goto out_free;
		}
	}
	*out = o.dst;
	*out_len = o.pos;
	o.dst = NULL;
	err = 0;

out_free:
	free(o.dst);
	ZSTD_freeDCtx(dctx);
	return err;
}

/* Decompresses the one zstd frame that body must be, into at most cap bytes. */
static int decompress(const void *body, size_t len, size_t cap, void **out, size_t *out_len,
		      char *why, size_t whylen)
{
	unsigned long long size;
	ZSTD_DCtx *dctx;
	size_t frame_len, ret;
	uint32_t magic;
	void *buf;
	int err;

	if (len == 0)
		return reason_fail(why, whylen, -EINVAL, "empty body");
	if (len < sizeof(magic))
		return reason_fail(why, whylen, -EINVAL, "not zstd (%zu bytes)", len);
	memcpy(&magic, body, sizeof(magic));
	if (magic != ZSTD_MAGICNUMBER)
		return reason_fail(why, whylen, -EINVAL, "not zstd (bad magic number)");
	size = ZSTD_getFrameContentSize(body, len);
	if (size == ZSTD_CONTENTSIZE_ERROR)
		return reason_fail(why, whylen, -EINVAL,
				   len < FRAME_HEADER_MAX ? "truncated zstd frame"
							  : "not zstd (bad frame header)");
	if (size != ZSTD_CONTENTSIZE_UNKNOWN && size > cap)
		return reason_fail(why, whylen, -E2BIG,
				   "decompressed size %llu over the cap of %zu", size, cap);
	frame_len = ZSTD_findFrameCompressedSize(body, len);
	if (ZSTD_isError(frame_len) && ZSTD_getErrorCode(frame_len) == ZSTD_error_srcSize_wrong)
		return reason_fail(why, whylen, -EINVAL, "truncated zstd frame");
	if (ZSTD_isError(frame_len))
		return reason_fail(why, whylen, -EINVAL, "corrupt zstd frame: %s",
				   ZSTD_getErrorName(frame_len));
	if (frame_len != len)
		return reason_fail(why, whylen, -EINVAL, "%zu bytes after the zstd frame",
				   len - frame_len);
	if (size == ZSTD_CONTENTSIZE_UNKNOWN)
		return decompress_stream(body, len, cap, out, out_len, why, whylen);

	/* One shot into exactly the declared size: no window, nothing beyond it. */
	dctx = ZSTD_createDCtx();
	buf = malloc(size ? (size_t)size : 1);
	if (!dctx || !buf) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	ret = ZSTD_decompressDCtx(dctx, buf, (size_t)size, body, len);
	if (ZSTD_isError(ret)) {
		if (ZSTD_getErrorCode(ret) == ZSTD_error_dstSize_tooSmall)
			err = reason_fail(why, whylen, -E2BIG,
					  "zstd frame larger than its declared size %llu", size);
		else
			err = reason_fail(why, whylen, -EINVAL, "corrupt zstd frame: %s",
					  ZSTD_getErrorName(ret));
		goto out_free;
	}
	if (ret != size) {
		err = reason_fail(why, whylen, -EINVAL, "zstd frame of %zu bytes, declared %llu",
				  ret, size);
		goto out_free;
	}
	*out = buf;
	*out_len = ret;
	buf = NULL;
	err = 0;

out_free:
	free(buf);
	ZSTD_freeDCtx(dctx);
	return err;
}

/* ---- decode: protobuf ------------------------------------------------------- */

/* One varint from the n bytes at *p, both moved past it. */
static bool read_varint(const uint8_t **p, size_t *n, uint64_t *v)
{
	const uint8_t *start = *p;
	bool ok = get_varint(p, start + *n, v);

	*n -= (size_t)(*p - start);
	return ok;
}

/* protobuf-c's allocator: a bump arena of cap bytes, freed whole after the
 * conversion (protobuf-c's own frees are no-ops), so the bound that matters is
 * the total it hands out, which the prescan bounds. */
struct arena {
	uint8_t *base;
	size_t used, cap;
	bool over; /* an allocation did not fit */
};

/* The prescan's cost of one allocation beyond its size: the arena rounds each one
 * up to this alignment (the prescan counts a whole one per block, as it did for a
 * malloc'd block's header). */
union alloc_head {
	size_t size;
	max_align_t align;
};

/* The messages of schema/smolder.proto, for the prescan. */
enum pb_kind { PB_BATCH, PB_FRAME, PB_STACK, PB_LABELSET, PB_LABEL, PB_SAMPLE, PB_COUNTER };

static const size_t pb_sizeof[] = {
	[PB_BATCH] = sizeof(Smolder__V1__Batch),     [PB_FRAME] = sizeof(Smolder__V1__Frame),
	[PB_STACK] = sizeof(Smolder__V1__Stack),     [PB_LABELSET] = sizeof(Smolder__V1__LabelSet),
	[PB_LABEL] = sizeof(Smolder__V1__Label),     [PB_SAMPLE] = sizeof(Smolder__V1__Sample),
	[PB_COUNTER] = sizeof(Smolder__V1__Counter),
};

/* What one prescan of a packed Batch found: the list sizes, and an upper bound of
 * the bytes protobuf-c will take from the allocator to unpack it. */
#define PB_FIELD_MAX 26 /* the Batch's largest field number */
#define PB_COL_FIRST 16 /* version 2's columns are fields 16..24 */
#define PB_COL_LAST  24
#define PB_COL_U64   24 /* sample_counts, the one uint64 column */
#define PB_IDS	     25 /* version 3's stack_ids and stack_refs: bytes, 16 per stack */
#define PB_REFS	     26

struct prescan {
	/* top-level entries by Batch field number: 9..14 are lists, counted by
	 * occurrence; 16..24 columns, counted by element */
	size_t count[PB_FIELD_MAX + 1];
	size_t need; /* bytes, including our allocator's per-block header */
};

/* The varints that end in n bytes of a packed field: the bytes with the high bit
 * clear, counted eight at a time (a batch's columns are a few hundred KB). */
static size_t count_varints(const uint8_t *p, size_t n)
{
	const uint64_t high = 0x8080808080808080ull;
	size_t e = 0, i = 0;
	uint64_t w;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		/* a 1 in each such byte's low bit, summed by the multiply into the top byte */
		e += (size_t)((((~w & high) >> 7) * 0x0101010101010101ull) >> 56);
	}
	for (; i < n; i++)
		e += !(p[i] & 0x80);
	return e;
}

/* Scans one message of kind k (n bytes at p) without allocating: checks the
 * nested caps (frames per stack, labels per label set) and adds to ps->need what
 * protobuf-c 1.4 allocates for it (protobuf-c.c, protobuf_c_message_unpack): the
 * struct; an array per repeated field (pointers for messages, uint32_t per packed
 * element, a byte with its high bit clear ending each varint); len + 1 per string;
 * per unknown field (or a known field in an unexpected wire type) an entry of
 * unknown_fields and a copy of its bytes; and, while the message is parsed, a
 * 32-byte ScannedMember per field occurrence: the first 16 on the stack, the rest
 * in slabs that double (so at most 2 x). Every block also pays our allocator's
 * header. Only Batch and LabelSet nest. */
static int prescan_msg(enum pb_kind k, const uint8_t *p, size_t n, struct prescan *ps, char *why,
		       size_t whylen)
{
	const size_t head = sizeof(union alloc_head);
	size_t elems = 0, fields = 0, unknown = 0;
	uint64_t tag, v;
	int err;

	ps->need += pb_sizeof[k] + head;
	while (n) {
		const uint8_t *payload;
		unsigned field, wt;
		bool known = false;

		if (!read_varint(&p, &n, &tag))
			return reason_fail(why, whylen, -EINVAL, "malformed protobuf");
		field = tag >> 3 > UINT32_MAX ? 0 : (unsigned)(tag >> 3);
		wt = tag & 7;
		v = 0;
		switch (wt) {
		case 0:
			if (!read_varint(&p, &n, &v))
				return reason_fail(why, whylen, -EINVAL, "malformed protobuf");
			payload = NULL;
			v = 0;
			break;
		case 1:
		case 5:
			v = wt == 1 ? 8 : 4;
			if (v > n)
				return reason_fail(why, whylen, -EINVAL, "malformed protobuf");
			payload = p;
			p += v;
			n -= v;
			break;
		case 2:
			if (!read_varint(&p, &n, &v) || v > n)
				return reason_fail(why, whylen, -EINVAL, "malformed protobuf");
			payload = p;
			p += v;
			n -= v;
			break;
		default:
			return reason_fail(why, whylen, -EINVAL, "malformed protobuf");
		}
		fields++;
		if (k == PB_BATCH && field >= 1 && field <= 8 && (wt == 0 || wt == 1 || wt == 5)) {
			known = true; /* a scalar: no allocation */
		} else if (k == PB_BATCH && field >= 9 && field <= 14 && wt == 2) {
			static const enum pb_kind sub[] = { [10] = PB_FRAME,
							    [11] = PB_STACK,
							    [12] = PB_LABELSET,
							    [13] = PB_SAMPLE,
							    [14] = PB_COUNTER };

			known = true;
			ps->count[field]++;
			ps->need += sizeof(void *); /* the list's array of pointers */
			if (field == 9)
				ps->need += (size_t)v + 1 + head; /* a string */
			else if ((err = prescan_msg(sub[field], payload, (size_t)v, ps, why,
						    whylen)))
				return err;
		} else if (k == PB_BATCH && (field == PB_IDS || field == PB_REFS) && wt == 2) {
			/* one bytes field: protobuf-c copies it (the last occurrence
			 * wins, each one allocated first) */
			known = true;
			if (v > (uint64_t)BATCH_STACK_ID_LEN * BATCH_MAX_STACKS)
				return reason_fail(why, whylen, -EINVAL,
						   "%s of %llu bytes over the cap of %u stacks",
						   field == PB_IDS ? "stack ids" : "stack refs",
						   (unsigned long long)v, BATCH_MAX_STACKS);
			ps->count[field] = (size_t)v / BATCH_STACK_ID_LEN;
			ps->need += (size_t)v + head;
		} else if (k == PB_BATCH && field >= PB_COL_FIRST && field <= PB_COL_LAST &&
			   (wt == 0 || wt == 2)) {
			/* a column: one array of every element, packed or not */
			size_t e = wt == 0;

			known = true;
			if (wt == 2)
				e = count_varints(payload, (size_t)v);
			ps->count[field] += e;
			ps->need += e * (field == PB_COL_U64 ? sizeof(uint64_t) : sizeof(uint32_t));
		} else if (k == PB_STACK && field == 1 && (wt == 0 || wt == 2)) {
			known = true;
			elems += wt == 0 ? 1 : count_varints(payload, (size_t)v);
		} else if (k == PB_LABELSET && field == 1 && wt == 2) {
			known = true;
			if (++elems > BATCH_MAX_LABELS)
				return reason_fail(why, whylen, -EINVAL,
						   "label set %zu: over %u labels",
						   ps->count[12] - 1, BATCH_MAX_LABELS);
			ps->need += sizeof(void *);
			if ((err = prescan_msg(PB_LABEL, payload, (size_t)v, ps, why, whylen)))
				return err;
		} else if ((k == PB_FRAME && field >= 1 && field <= 4 && wt == 0) ||
			   (k == PB_LABEL && field >= 1 && field <= 2 && wt == 0) ||
			   (k == PB_SAMPLE && field >= 1 && field <= 3 && wt == 0) ||
			   (k == PB_COUNTER && field >= 1 && field <= 2 && wt == 0)) {
			known = true;
		}
		if (!known) { /* kept by protobuf-c as an unknown field */
			ps->need += sizeof(ProtobufCMessageUnknownField) + (size_t)v +
				    (wt == 0 ? 10 : 0) + head;
			unknown++;
		}
	}
	if (k == PB_STACK && elems > BATCH_MAX_STACK_DEPTH)
		return reason_fail(why, whylen, -EINVAL, "stack %zu: %zu frames over the cap of %u",
				   ps->count[11] - 1, elems, BATCH_MAX_STACK_DEPTH);
	if (k == PB_STACK)
		ps->need += elems * sizeof(uint32_t);
	/* the arrays of the repeated fields (6 lists and 9 columns in a Batch, one in
	 * a Stack or a LabelSet) and of the unknown fields: one header each */
	ps->need += (k == PB_BATCH			 ? 15
		     : k == PB_STACK || k == PB_LABELSET ? 1
							 : 0) *
			    head +
		    (unknown ? head : 0);
	/* the ScannedMember slabs past the first 16, and their headers */
	if (fields > PRESCAN_SCANNED_ON_STACK)
		ps->need += fields * PRESCAN_SCANNED_COST + PRESCAN_SCANNED_SLABS * head;
	return 0;
}

/* Scans a packed Batch: the nested caps, the top-level list sizes against the
 * BATCH_MAX_* caps, and ps->need, before protobuf-c allocates anything. */
static int prescan(const uint8_t *p, size_t n, struct prescan *ps, char *why, size_t whylen)
{
	static const struct {
		const char *what;
		size_t cap;
	} lists[] = {
		[9] = { "strings", BATCH_MAX_STRINGS },
		[10] = { "frames", BATCH_MAX_FRAMES },
		[11] = { "stacks", BATCH_MAX_STACKS },
		[12] = { "label sets", BATCH_MAX_LABELSETS },
		[13] = { "samples", BATCH_MAX_SAMPLES },
		[14] = { "counters", BATCH_MAX_COUNTERS },
		[16] = { "frame kinds", BATCH_MAX_FRAMES },
		[17] = { "frame names", BATCH_MAX_FRAMES },
		[18] = { "frame files", BATCH_MAX_FRAMES },
		[19] = { "frame lines", BATCH_MAX_FRAMES },
		[20] = { "stack depths", BATCH_MAX_STACKS },
		[21] = { "stack frames", (size_t)BATCH_MAX_STACKS * BATCH_MAX_STACK_DEPTH },
		[22] = { "sample label sets", BATCH_MAX_SAMPLES },
		[23] = { "sample stacks", BATCH_MAX_SAMPLES },
		[24] = { "sample counts", BATCH_MAX_SAMPLES },
		[25] = { "stack ids", BATCH_MAX_STACKS },
		[26] = { "stack refs", BATCH_MAX_STACKS },
	};
	size_t i;
	int err;

	memset(ps, 0, sizeof(*ps));
	err = prescan_msg(PB_BATCH, p, n, ps, why, whylen);
	if (err)
		return err;
	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (lists[i].what && ps->count[i] > lists[i].cap)
			return reason_fail(why, whylen, -EINVAL, "%zu %s over the cap of %zu",
					   ps->count[i], lists[i].what, lists[i].cap);
	return 0;
}

static void *arena_alloc(void *data, size_t size)
{
	struct arena *a = data;
	const size_t align = sizeof(union alloc_head);
	void *p;

	if (size > a->cap - a->used || (size + align - 1) / align * align > a->cap - a->used) {
		a->over = true;
		return NULL;
	}
	p = a->base + a->used;
	a->used += (size + align - 1) / align * align;
	return p;
}

static void arena_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr; /* the arena is freed whole */
}

/* The form of m's frames, stacks and samples: messages (version 1) or columns
 * (version 2), never both, and columns of one dictionary of one length. Sets the
 * counts of the three dictionaries. */
static int check_form(const Smolder__V1__Batch *m, size_t *nframes, size_t *nstacks,
		      size_t *nsamples, char *why, size_t whylen)
{
	size_t cols = m->n_frame_kinds + m->n_frame_names + m->n_frame_files + m->n_frame_lines +
		      m->n_stack_depths + m->n_stack_frames + m->n_sample_labelsets +
		      m->n_sample_stacks + m->n_sample_counts;

	if (m->format_version != WIRE_FORMAT_V3 && (m->stack_ids.len || m->stack_refs.len))
		return reason_fail(why, whylen, -EINVAL,
				   "format version %u with version 3's stack ids or refs",
				   m->format_version);
	if (m->format_version == WIRE_FORMAT_V1) {
		if (cols)
			return reason_fail(why, whylen, -EINVAL,
					   "format version 1 with version 2's columns");
		*nframes = m->n_frames;
		*nstacks = m->n_stacks;
		*nsamples = m->n_samples;
		return 0;
	}
	if (m->n_frames || m->n_stacks || m->n_samples)
		return reason_fail(why, whylen, -EINVAL,
				   "format version %u with frame, stack or sample messages",
				   m->format_version);
	if (m->n_frame_names != m->n_frame_kinds || m->n_frame_files != m->n_frame_kinds ||
	    m->n_frame_lines != m->n_frame_kinds)
		return reason_fail(why, whylen, -EINVAL,
				   "frame columns of unequal lengths (%zu, %zu, %zu, %zu)",
				   m->n_frame_kinds, m->n_frame_names, m->n_frame_files,
				   m->n_frame_lines);
	if (m->n_sample_stacks != m->n_sample_labelsets ||
	    m->n_sample_counts != m->n_sample_labelsets)
		return reason_fail(why, whylen, -EINVAL,
				   "sample columns of unequal lengths (%zu, %zu, %zu)",
				   m->n_sample_labelsets, m->n_sample_stacks, m->n_sample_counts);
	*nframes = m->n_frame_kinds;
	*nstacks = m->n_stack_depths;
	*nsamples = m->n_sample_labelsets;
	if (m->stack_ids.len % BATCH_STACK_ID_LEN || m->stack_refs.len % BATCH_STACK_ID_LEN)
		return reason_fail(why, whylen, -EINVAL,
				   "stack ids or refs of %zu and %zu bytes: not 16 per stack",
				   m->stack_ids.len, m->stack_refs.len);
	if (m->stack_ids.len && m->stack_ids.len / BATCH_STACK_ID_LEN != *nstacks)
		return reason_fail(why, whylen, -EINVAL, "%zu stack ids for %zu stacks",
				   m->stack_ids.len / BATCH_STACK_ID_LEN, *nstacks);
	return 0;
}

/* Converts the unpacked message into a new batch, checking each size before
 * allocating for it. The strings and the stacks' frames go into one pool each
 * (struct batch), sized from the message: two allocations instead of one per
 * string and per stack. */
static int from_message(const Smolder__V1__Batch *m, struct batch **out, char *why, size_t whylen)
{
	bool v1 = m->format_version == WIRE_FORMAT_V1;
	size_t i, j, n, nframes = 0, nstacks = 0, nsamples = 0, nrefs, pool = 0;
	struct batch *b;
	int err;

	err = check_form(m, &nframes, &nstacks, &nsamples, why, whylen);
	if (err)
		return err;
	nrefs = m->stack_refs.len / BATCH_STACK_ID_LEN;
	if (m->n_strings > BATCH_MAX_STRINGS || nframes > BATCH_MAX_FRAMES ||
	    nstacks > BATCH_MAX_STACKS || nrefs > BATCH_MAX_STACKS - nstacks ||
	    m->n_labelsets > BATCH_MAX_LABELSETS || nsamples > BATCH_MAX_SAMPLES ||
	    m->n_counters > BATCH_MAX_COUNTERS)
		return reason_fail(why, whylen, -EINVAL, "batch over a size cap");
	b = calloc(1, sizeof(*b));
	if (!b)
		return reason_fail(why, whylen, -ENOMEM, "out of memory");
	b->format_version = BATCH_FORMAT_VERSION;
	b->seq = m->seq;
	b->window_start = m->window_start;
	b->window_seconds = m->window_seconds;
	b->period_ns = m->period_ns;
	b->agent_id = m->agent_id;
	b->host = m->host;
	b->profile_type = m->profile_type;

#define ALLOC_ARRAY(field, nfield, count)                                                          \
	do {                                                                                       \
		if ((count) && !(b->field = calloc((count), sizeof(*b->field)))) {                 \
			err = reason_fail(why, whylen, -ENOMEM, "out of memory");                  \
			goto out_free_batch;                                                       \
		}                                                                                  \
		b->nfield = (uint32_t)(count);                                                     \
	} while (0)

	/* strings: each at most BATCH_MAX_STRING_LEN (so the pool is at most
	 * BATCH_MAX_STRINGS x 4 KiB, and never more than what protobuf-c holds) */
	for (i = 0; i < m->n_strings; i++) {
		n = strnlen(m->strings[i], BATCH_MAX_STRING_LEN + 1);
		if (n > BATCH_MAX_STRING_LEN) {
			err = reason_fail(why, whylen, -EINVAL, "string %zu longer than %u bytes",
					  i, BATCH_MAX_STRING_LEN);
			goto out_free_batch_only;
		}
		pool += n + 1;
	}
	b->string_pool = malloc(pool ? pool : 1);
	if (!b->string_pool) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free_batch_only;
	}
	ALLOC_ARRAY(strings, nstrings, m->n_strings);
	for (i = 0, pool = 0; i < m->n_strings; i++) {
		n = strlen(m->strings[i]); /* bounded above */
		b->strings[i] = memcpy(b->string_pool + pool, m->strings[i], n + 1);
		pool += n + 1;
	}
	ALLOC_ARRAY(frames, nframes, nframes);
	for (i = 0; i < nframes; i++) {
		b->frames[i].kind = v1 ? (uint32_t)m->frames[i]->kind : m->frame_kinds[i];
		b->frames[i].name = v1 ? m->frames[i]->name : m->frame_names[i];
		b->frames[i].file = v1 ? m->frames[i]->file : m->frame_files[i];
		b->frames[i].line = v1 ? m->frames[i]->line : m->frame_lines[i];
	}
	/* stacks: every depth checked, and the sum against the column, before the
	 * pool is sized by it */
	for (i = 0, pool = 0; i < nstacks; i++) {
		n = v1 ? m->stacks[i]->n_frames : m->stack_depths[i];
		if (n > BATCH_MAX_STACK_DEPTH) {
			err = reason_fail(why, whylen, -EINVAL,
					  "stack %zu: %zu frames over the cap of %u", i, n,
					  BATCH_MAX_STACK_DEPTH);
			goto out_free_batch;
		}
		pool += n;
	}
	if (!v1 && pool != m->n_stack_frames) {
		err = reason_fail(why, whylen, -EINVAL,
				  "stack depths add up to %zu frames, stack_frames holds %zu", pool,
				  m->n_stack_frames);
		goto out_free_batch;
	}
	b->frame_pool = malloc((pool ? pool : 1) * sizeof(uint32_t));
	if (!b->frame_pool) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free_batch;
	}
	if (!v1 && pool)
		memcpy(b->frame_pool, m->stack_frames, pool * sizeof(uint32_t));
	ALLOC_ARRAY(stacks, nstacks, nstacks);
	for (i = 0, pool = 0; i < nstacks; i++) {
		n = v1 ? m->stacks[i]->n_frames : m->stack_depths[i];
		if (v1 && n)
			memcpy(b->frame_pool + pool, m->stacks[i]->frames, n * sizeof(uint32_t));
		/* an empty stack keeps frames NULL: batch__validate says so */
		b->stacks[i].frames = n ? b->frame_pool + pool : NULL;
		b->stacks[i].nframes = (uint32_t)n;
		pool += n;
	}
	ALLOC_ARRAY(labelsets, nlabelsets, m->n_labelsets);
	for (i = 0; i < m->n_labelsets; i++) {
		const Smolder__V1__LabelSet *ls = m->labelsets[i];

		if (ls->n_labels > BATCH_MAX_LABELS) {
			err = reason_fail(why, whylen, -EINVAL,
					  "label set %zu: %zu labels over the cap of %u", i,
					  ls->n_labels, BATCH_MAX_LABELS);
			goto out_free_batch;
		}
		if (ls->n_labels) {
			b->labelsets[i].labels = calloc(ls->n_labels, sizeof(struct batch_label));
			if (!b->labelsets[i].labels) {
				err = reason_fail(why, whylen, -ENOMEM, "out of memory");
				goto out_free_batch;
			}
		}
		for (j = 0; j < ls->n_labels; j++) {
			b->labelsets[i].labels[j].key = ls->labels[j]->key;
			b->labelsets[i].labels[j].value = ls->labels[j]->value;
		}
		b->labelsets[i].nlabels = (uint32_t)ls->n_labels;
	}
	ALLOC_ARRAY(samples, nsamples, nsamples);
	for (i = 0; i < nsamples; i++) {
		b->samples[i].labelset = v1 ? m->samples[i]->labelset : m->sample_labelsets[i];
		b->samples[i].stack = v1 ? m->samples[i]->stack : m->sample_stacks[i];
		b->samples[i].count = v1 ? m->samples[i]->count : m->sample_counts[i];
	}
	ALLOC_ARRAY(counters, ncounters, m->n_counters);
	for (i = 0; i < m->n_counters; i++) {
		b->counters[i].name = m->counters[i]->name;
		b->counters[i].value = m->counters[i]->value;
	}
	ALLOC_ARRAY(refs, nrefs, nrefs);
	if (nrefs)
		memcpy(b->refs, m->stack_refs.data, m->stack_refs.len);
	if (m->stack_ids.len) {
		b->stack_ids = malloc(m->stack_ids.len);
		if (!b->stack_ids) {
			err = reason_fail(why, whylen, -ENOMEM, "out of memory");
			goto out_free_batch;
		}
		memcpy(b->stack_ids, m->stack_ids.data, m->stack_ids.len);
	}
#undef ALLOC_ARRAY

	err = batch__validate(b, why, whylen);
	if (err)
		goto out_free_batch;
	*out = b;
	return 0;

out_free_batch:
	batch__free(b);
	return err;
out_free_batch_only:
	free(b);
	return err;
}

int wire_decode_stats(const void *body, size_t len, const struct wire_limits *lim,
		      struct batch **out, struct wire_stats *stats, char *why, size_t whylen)
{
	size_t max_compressed = WIRE_DEFAULT_MAX_COMPRESSED;
	size_t max_decompressed = WIRE_DEFAULT_MAX_DECOMPRESSED;
	size_t max_unpacked = WIRE_DEFAULT_MAX_UNPACKED;
	ProtobufCAllocator alloc = { arena_alloc, arena_free, NULL };
	Smolder__V1__Batch *m;
	struct arena ar = { 0 };
	struct prescan ps;
	size_t plen = 0;
	void *plain = NULL;
	int err;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (why && whylen)
		why[0] = '\0';
	if ((!body && len) || !out)
		return reason_fail(why, whylen, -EINVAL, "bad arguments");
	if (lim && lim->max_compressed)
		max_compressed = lim->max_compressed;
	if (lim && lim->max_decompressed)
		max_decompressed = lim->max_decompressed;
	if (lim && lim->max_unpacked)
		max_unpacked = lim->max_unpacked;
	if (len > max_compressed)
		return reason_fail(why, whylen, -E2BIG, "body too large (%zu bytes, cap %zu)", len,
				   max_compressed);
	err = decompress(body, len, max_decompressed, &plain, &plen, why, whylen);
	if (err)
		return err;
	if (stats)
		stats->decompressed = plen;
	err = prescan(plain, plen, &ps, why, whylen);
	if (err)
		goto out_free_plain;
	if (stats)
		stats->unpack_need = ps.need;
	if (ps.need > max_unpacked) {
		err = reason_fail(why, whylen, -E2BIG,
				  "unpacking would take %zu bytes, over the cap of %zu", ps.need,
				  max_unpacked);
		goto out_free_plain;
	}

	ar.cap = ps.need + UNPACK_SLACK;
	ar.base = malloc(ar.cap);
	if (!ar.base) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free_plain;
	}
	alloc.allocator_data = &ar;
	m = smolder__v1__batch__unpack(&alloc, plen, plain);
	/* protobuf-c copied what it keeps: the plain body is no longer needed, and
	 * freeing it now keeps it out of the peak of the conversion below. */
	free(plain);
	plain = NULL;
	if (stats)
		stats->unpack_peak = ar.used;
	if (!m) {
		if (ar.over)
			err = reason_fail(why, whylen, -E2BIG, "unpacked message over %zu bytes",
					  ar.cap);
		else
			err = reason_fail(why, whylen, -EINVAL, "malformed protobuf");
		goto out_free_arena;
	}
	if (m->format_version != WIRE_FORMAT_V1 && m->format_version != WIRE_FORMAT_V2 &&
	    m->format_version != WIRE_FORMAT_V3)
		err = reason_fail(why, whylen, -EINVAL, "unsupported format version %u",
				  m->format_version);
	else
		err = from_message(m, out, why, whylen);
	/* no smolder__v1__batch__free_unpacked(): every byte of m is in the arena */

out_free_arena:
	free(ar.base);
out_free_plain:
	free(plain);
	return err;
}

int wire_decode(const void *body, size_t len, const struct wire_limits *lim, struct batch **out,
		char *why, size_t whylen)
{
	return wire_decode_stats(body, len, lim, out, NULL, why, whylen);
}
