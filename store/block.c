/* Profile blocks: encoders (a label set's block, version 1; a window's block of
 * label set sections, version 2), a defensive decoder and reader, and the hash
 * merge (formats and contracts in store/block.h). The decoder is the only code that reads a block's
 * bytes; every read is bounded by the buffer's end and every count by a cap. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "store/block.h"
#include "common/varint.h"

#define HEADER_MAX (2 + 4 + 9) /* version, flags, count varint, total varint */

/* ---- varints ------------------------------------------------------------ */

/* Reads a varint of at most max_bytes bytes whose value is at most max, in its
 * shortest form. Returns 0 or -EINVAL. */
static inline int get_canonical_varint(const uint8_t **pp, const uint8_t *end, unsigned max_bytes,
				       uint64_t max, uint64_t *v)
{
	const uint8_t *p = *pp;
	uint64_t x = 0;
	unsigned i;

	for (i = 0; i < max_bytes; i++) {
		uint8_t b;

		if (p >= end)
			return -EINVAL; /* truncated */
		b = *p++;
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (b == 0 && i > 0)
				return -EINVAL; /* not the shortest form */
			if (x > max)
				return -EINVAL;
			*pp = p;
			*v = x;
			return 0;
		}
	}
	return -EINVAL; /* too long */
}

static inline int64_t sat_add(int64_t a, int64_t b)
{
	return b > INT64_MAX - a ? INT64_MAX : a + b;
}

/* ---- encoder ------------------------------------------------------------ */

static int cmp_entry(const void *a, const void *b)
{
	uint32_t x = ((const struct block_entry *)a)->id, y = ((const struct block_entry *)b)->id;

	return (x > y) - (x < y);
}

int block__encode(const struct block_entry *entries, size_t n, unsigned flags, uint8_t **out,
		  size_t *len)
{
	unsigned level = flags & BLOCK_ENC_LEVEL_MASK;
	struct block_entry *sorted = NULL;
	const struct block_entry *e = entries;
	uint8_t *buf = NULL, *z = NULL;
	size_t i, m = 0, hlen, plen = 0, zcap, zlen;
	int64_t total = 0;
	bool is_sorted = true;
	uint32_t prev = 0;
	int err = -EINVAL;

	if (n > BLOCK_MAX_ENTRIES || (flags & ~(BLOCK_ENC_LEVEL_MASK | BLOCK_ENC_FORCE_ZSTD)) ||
	    level > 19 || (n && !entries))
		goto out;
	for (i = 0; i < n; i++) {
		if (entries[i].value < 0)
			goto out;
		if (i && entries[i].id <= entries[i - 1].id)
			is_sorted = false;
	}
	if (!is_sorted) {
		err = -ENOMEM;
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted)
			goto out;
		memcpy(sorted, entries, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_entry);
		/* sum duplicates in place */
		for (i = 0; i < n; i++) {
			if (m && sorted[m - 1].id == sorted[i].id)
				sorted[m - 1].value = sat_add(sorted[m - 1].value, sorted[i].value);
			else
				sorted[m++] = sorted[i];
		}
		e = sorted;
		n = m;
	}
	err = -ENOMEM;
	buf = malloc(HEADER_MAX + n * BLOCK_MAX_PAIR_BYTES);
	if (!buf)
		goto out_free_sorted;
	for (i = 0; i < n; i++)
		total = sat_add(total, e[i].value);
	/* the payload first, after room for the longest header; moved down below */
	for (i = 0; i < n; i++) {
		plen += put_varint(buf + HEADER_MAX + plen, (uint64_t)(e[i].id - prev));
		plen += put_varint(buf + HEADER_MAX + plen, (uint64_t)e[i].value);
		prev = e[i].id;
	}
	buf[0] = BLOCK_VERSION;
	buf[1] = 0;
	hlen = 2;
	hlen += put_varint(buf + hlen, n);
	hlen += put_varint(buf + hlen, (uint64_t)total);
	if (level && (plen >= BLOCK_ZSTD_MIN_PAYLOAD || (flags & BLOCK_ENC_FORCE_ZSTD))) {
		zcap = ZSTD_compressBound(plen);
		z = malloc(zcap);
		if (!z)
			goto out_free_buf;
		zlen = ZSTD_compress(z, zcap, buf + HEADER_MAX, plen, (int)level);
		err = -EIO;
		if (ZSTD_isError(zlen))
			goto out_free_z;
		if (zlen < plen || (flags & BLOCK_ENC_FORCE_ZSTD)) {
			buf[1] = BLOCK_FLAG_ZSTD;
			if (zlen > plen) { /* forced and larger: grow */
				uint8_t *nb = realloc(buf, HEADER_MAX + zlen);

				err = -ENOMEM;
				if (!nb)
					goto out_free_z;
				buf = nb;
			}
			memcpy(buf + hlen, z, zlen);
			plen = zlen;
		}
	}
	if (!(buf[1] & BLOCK_FLAG_ZSTD))
		memmove(buf + hlen, buf + HEADER_MAX, plen);
	*out = buf;
	*len = hlen + plen;
	buf = NULL;
	err = 0;
out_free_z:
	free(z);
out_free_buf:
	free(buf);
out_free_sorted:
	free(sorted);
out:
	return err;
}

/* ---- decoder ------------------------------------------------------------ */

struct header {
	int version;
	size_t nsec; /* version 2: sections */
	size_t count;
	int64_t total;
	bool zstd;
	const uint8_t *payload;
	size_t plen;
};

static int read_header(const uint8_t *buf, size_t len, struct header *h)
{
	const uint8_t *p, *end;
	uint64_t v;

	if (!buf || len < 4 || (buf[0] != BLOCK_VERSION && buf[0] != BLOCK_VERSION_SECTIONS) ||
	    (buf[1] & ~BLOCK_FLAG_ZSTD))
		return -EINVAL;
	h->version = buf[0];
	p = buf + 2;
	end = buf + len;
	h->zstd = buf[1] & BLOCK_FLAG_ZSTD;
	h->nsec = 0;
	if (h->version == BLOCK_VERSION_SECTIONS) {
		if (get_canonical_varint(&p, end, 3, BLOCK_MAX_SECTIONS, &v))
			return -EINVAL;
		h->nsec = (size_t)v;
	}
	if (get_canonical_varint(&p, end, 4, BLOCK_MAX_ENTRIES, &v))
		return -EINVAL;
	h->count = (size_t)v;
	if (get_canonical_varint(&p, end, 9, INT64_MAX, &v))
		return -EINVAL;
	h->total = (int64_t)v;
	h->payload = p;
	h->plen = (size_t)(end - p);
	/* every pair takes at least 2 bytes and a directory entry 4: a count the
	 * bytes cannot hold is a lie (a compressed payload is checked against its
	 * frame's size instead); every section holds an entry */
	if (h->nsec > h->count || (!h->zstd && (h->plen - 4 * h->nsec) / 2 < h->count) ||
	    (!h->zstd && h->plen < 4 * h->nsec))
		return -EINVAL;
	return 0;
}

int block__header(const uint8_t *buf, size_t len, size_t *count, int64_t *total)
{
	struct header h;
	int err = read_header(buf, len, &h);

	if (err)
		return err;
	if (count)
		*count = h.count;
	if (total)
		*total = h.total;
	return 0;
}

int64_t block__total(const uint8_t *buf, size_t len)
{
	int64_t total;
	int err = block__header(buf, len, NULL, &total);

	return err ? err : total;
}

/* Decodes the plain pairs in [p, end) into out[0..count): all bytes used, ids
 * ascending within 32 bits, the sum equal to total. */
static int decode_pairs(const uint8_t *p, const uint8_t *end, size_t count, int64_t total,
			struct block_entry *out)
{
	uint64_t id = 0, d, v;
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < count; i++) {
		if (get_canonical_varint(&p, end, 5, UINT32_MAX, &d) ||
		    get_canonical_varint(&p, end, 9, INT64_MAX, &v))
			return -EINVAL;
		if (i && d == 0)
			return -EINVAL; /* a repeated id */
		id += d;
		if (id > UINT32_MAX)
			return -EINVAL;
		out[i].id = (uint32_t)id;
		out[i].value = (int64_t)v;
		sum = sat_add(sum, (int64_t)v);
	}
	if (p != end || sum != total)
		return -EINVAL;
	return 0;
}

/* Decompresses a zstd payload into *scratch (grown as needed; capacity *cap) after
 * checking its stated size against the count. */
static int inflate(const struct header *h, ZSTD_DCtx *dctx, uint8_t **scratch, size_t *cap,
		   size_t *out_len)
{
	unsigned long long size = ZSTD_getFrameContentSize(h->payload, h->plen);
	size_t got;

	if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
		return -EINVAL;
	/* a bound before any allocation: at most the largest pairs, at least the
	 * smallest (this also refuses any frame claiming gigabytes) */
	if (size > (unsigned long long)h->count * BLOCK_MAX_PAIR_BYTES +
			    (unsigned long long)h->nsec * BLOCK_MAX_DIR_BYTES ||
	    size < 2ull * h->count + 4ull * h->nsec)
		return -EINVAL;
	if (ZSTD_findFrameCompressedSize(h->payload, h->plen) != h->plen)
		return -EINVAL; /* not exactly one frame */
	if (size > *cap) {
		uint8_t *nb = realloc(*scratch, (size_t)size);

		if (!nb)
			return -ENOMEM;
		*scratch = nb;
		*cap = (size_t)size;
	}
	if (size == 0) {
		*out_len = 0;
		return 0;
	}
	got = dctx ? ZSTD_decompressDCtx(dctx, *scratch, (size_t)size, h->payload, h->plen)
		   : ZSTD_decompress(*scratch, (size_t)size, h->payload, h->plen);
	if (ZSTD_isError(got) || got != size)
		return -EINVAL;
	*out_len = got;
	return 0;
}

/* Validates the header and makes the plain payload available in [*p, *end)
 * (inflated into *scratch when compressed), with the count checked against the
 * bytes that hold it, before the caller allocates for the entries. */
static int open_payload(const uint8_t *buf, size_t len, ZSTD_DCtx *dctx, uint8_t **scratch,
			size_t *scap, struct header *h, const uint8_t **p, const uint8_t **end)
{
	size_t plen;
	int err = read_header(buf, len, h);

	if (err)
		return err;
	*p = h->payload;
	*end = h->payload + h->plen;
	if (!h->zstd)
		return 0;
	err = inflate(h, dctx, scratch, scap, &plen);
	if (err)
		return err;
	if (plen) { /* an empty frame leaves no scratch to point into */
		*p = *scratch;
		*end = *scratch + plen;
	} else {
		*end = *p;
	}
	return 0;
}

int block__decode(const uint8_t *buf, size_t len, struct block_entry *out, size_t cap, size_t *n)
{
	const uint8_t *p, *end;
	uint8_t *scratch = NULL;
	struct header h;
	size_t scap = 0;
	int err = open_payload(buf, len, NULL, &scratch, &scap, &h, &p, &end);

	if (err)
		goto out;
	err = -EINVAL;
	if (h.version != BLOCK_VERSION)
		goto out;
	err = -E2BIG;
	if (h.count > cap)
		goto out;
	*n = h.count;
	err = decode_pairs(p, end, h.count, h.total, out);
out:
	free(scratch);
	return err;
}

/* ---- merge -------------------------------------------------------------- */

struct slot {
	int64_t value;
	uint32_t id;
	uint32_t full;
};

struct block_merge {
	struct slot *slots;
	size_t mask; /* slots - 1, a power of two minus one */
	size_t count;
	unsigned shift;		  /* 64 - log2(slots) */
	struct block_entry *ents; /* one decoded block */
	size_t ecap;
	uint8_t *zbuf; /* one inflated payload */
	size_t zcap;
	ZSTD_DCtx *dctx;
	struct block_reader *rd; /* version 2 blocks, made on first use */
};

static inline size_t slot_of(const struct block_merge *m, uint32_t id)
{
	return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> m->shift);
}

static int grow(struct block_merge *m, size_t nslots)
{
	struct slot *ns = calloc(nslots, sizeof(*ns)), *old = m->slots;
	size_t i, oldn = m->slots ? m->mask + 1 : 0;
	unsigned bits = 0;

	if (!ns)
		return -ENOMEM;
	while (((size_t)1 << bits) < nslots)
		bits++;
	m->slots = ns;
	m->mask = nslots - 1;
	m->shift = 64 - bits;
	for (i = 0; i < oldn; i++)
		if (old[i].full) {
			size_t j = slot_of(m, old[i].id);

			while (ns[j].full)
				j = (j + 1) & m->mask;
			ns[j] = old[i];
		}
	free(old);
	return 0;
}

int block_merge__new(size_t hint, struct block_merge **out)
{
	struct block_merge *m = calloc(1, sizeof(*m));
	size_t nslots = 1024;

	if (!m)
		return -ENOMEM;
	if (hint > BLOCK_MERGE_MAX_IDS)
		hint = BLOCK_MERGE_MAX_IDS;
	while (nslots < 2 * hint)
		nslots *= 2;
	if (grow(m, nslots)) {
		free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

static inline int add_one(struct block_merge *m, uint32_t id, int64_t v)
{
	size_t j = slot_of(m, id);
	int err;

	for (;;) {
		struct slot *s = &m->slots[j];

		if (!s->full)
			break;
		if (s->id == id) {
			s->value = sat_add(s->value, v);
			return 0;
		}
		j = (j + 1) & m->mask;
	}
	if (m->count >= BLOCK_MERGE_MAX_IDS)
		return -E2BIG;
	/* load at most 1/2 */
	if (2 * (m->count + 1) > m->mask + 1) {
		err = grow(m, 2 * (m->mask + 1));
		if (err)
			return err;
		j = slot_of(m, id);
		while (m->slots[j].full)
			j = (j + 1) & m->mask;
	}
	m->slots[j] = (struct slot){ .value = v, .id = id, .full = 1 };
	m->count++;
	return 0;
}

int block_merge__add_entries(struct block_merge *m, const struct block_entry *e, size_t n)
{
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		if (e[i].value < 0)
			return -EINVAL;
		err = add_one(m, e[i].id, e[i].value);
		if (err)
			return err;
	}
	return 0;
}

int block_merge__add(struct block_merge *m, const uint8_t *buf, size_t len)
{
	const uint8_t *p, *end;
	struct header h;
	int err;

	if (len && buf && buf[0] == BLOCK_VERSION_SECTIONS)
		return block_merge__add_sections(m, buf, len, NULL, NULL);
	if (!m->dctx) {
		m->dctx = ZSTD_createDCtx();
		if (!m->dctx)
			return -ENOMEM;
	}
	err = open_payload(buf, len, m->dctx, &m->zbuf, &m->zcap, &h, &p, &end);
	if (err)
		return err;
	if (h.count > m->ecap) {
		struct block_entry *ne = realloc(m->ents, h.count * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		m->ents = ne;
		m->ecap = h.count;
	}
	err = decode_pairs(p, end, h.count, h.total, m->ents);
	if (err)
		return err;
	return block_merge__add_entries(m, m->ents, h.count);
}

size_t block_merge__count(const struct block_merge *m)
{
	return m->count;
}

int block_merge__entries(const struct block_merge *m, struct block_entry **out, size_t *n)
{
	struct block_entry *e = NULL;
	size_t i, k = 0;

	if (m->count) {
		e = malloc(m->count * sizeof(*e));
		if (!e)
			return -ENOMEM;
		for (i = 0; i <= m->mask; i++)
			if (m->slots[i].full)
				e[k++] = (struct block_entry){ m->slots[i].id, m->slots[i].value };
		qsort(e, k, sizeof(*e), cmp_entry);
	}
	*out = e;
	*n = k;
	return 0;
}

void block_merge__free(struct block_merge *m)
{
	if (!m)
		return;
	ZSTD_freeDCtx(m->dctx);
	block_reader__free(m->rd);
	free(m->zbuf);
	free(m->ents);
	free(m->slots);
	free(m);
}

/* ---- version 2: a window's block of sections ------------------------------- */

int block__cmp_lentry(const void *a, const void *b)
{
	const struct block_lentry *x = a, *y = b;

	if (x->labelset_id != y->labelset_id)
		return (x->labelset_id > y->labelset_id) - (x->labelset_id < y->labelset_id);
	return (x->id > y->id) - (x->id < y->id);
}

static bool lentry_before(const struct block_lentry *x, const struct block_lentry *y)
{
	return x->labelset_id < y->labelset_id ||
	       (x->labelset_id == y->labelset_id && x->id < y->id);
}

int block__encode_sections(const struct block_lentry *entries, size_t n, unsigned flags,
			   uint8_t **out, size_t *len)
{
	unsigned level = flags & BLOCK_ENC_LEVEL_MASK;
	struct block_lentry *sorted = NULL;
	const struct block_lentry *e = entries;
	uint8_t *buf = NULL, *pairs = NULL, *z = NULL;
	size_t i, j, m = 0, nsec = 0, hlen, dlen = 0, plen = 0, zcap, zlen, cap;
	int64_t total = 0;
	bool is_sorted = true;
	int err = -EINVAL;

	if (n > BLOCK_MAX_ENTRIES || (flags & ~(BLOCK_ENC_LEVEL_MASK | BLOCK_ENC_FORCE_ZSTD)) ||
	    level > 19 || (n && !entries))
		goto out;
	for (i = 0; i < n; i++) {
		if (entries[i].value < 0 || entries[i].labelset_id < 1)
			goto out;
		if (i && !lentry_before(&entries[i - 1], &entries[i]))
			is_sorted = false;
	}
	if (!is_sorted) {
		err = -ENOMEM;
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted)
			goto out;
		memcpy(sorted, entries, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), block__cmp_lentry);
		for (i = 0; i < n; i++) {
			if (m && sorted[m - 1].labelset_id == sorted[i].labelset_id &&
			    sorted[m - 1].id == sorted[i].id)
				sorted[m - 1].value = sat_add(sorted[m - 1].value, sorted[i].value);
			else
				sorted[m++] = sorted[i];
		}
		e = sorted;
		n = m;
	}
	for (i = 0; i < n; i++)
		nsec += !i || e[i].labelset_id != e[i - 1].labelset_id;
	err = -EINVAL;
	if (nsec > BLOCK_MAX_SECTIONS)
		goto out_free_sorted;
	/* the directory, then the pairs, in one buffer after room for the header */
	err = -ENOMEM;
	cap = HEADER_MAX + 4 + nsec * BLOCK_MAX_DIR_BYTES + n * BLOCK_MAX_PAIR_BYTES;
	buf = malloc(cap);
	pairs = malloc(n * BLOCK_MAX_PAIR_BYTES + 1);
	if (!buf || !pairs)
		goto out_free_buf;
	{
		uint8_t *dir = buf + HEADER_MAX + 4;
		int64_t prev_ls = 0;

		for (i = 0; i < n; i = j) {
			int64_t stotal = 0;
			size_t start = plen;
			uint32_t prev = 0;

			for (j = i; j < n && e[j].labelset_id == e[i].labelset_id; j++) {
				plen += put_varint(pairs + plen, (uint64_t)(e[j].id - prev));
				plen += put_varint(pairs + plen, (uint64_t)e[j].value);
				prev = e[j].id;
				stotal = sat_add(stotal, e[j].value);
			}
			total = sat_add(total, stotal);
			dlen += put_varint(dir + dlen, (uint64_t)(e[i].labelset_id - prev_ls));
			dlen += put_varint(dir + dlen, j - i);
			dlen += put_varint(dir + dlen, (uint64_t)stotal);
			dlen += put_varint(dir + dlen, plen - start);
			prev_ls = e[i].labelset_id;
		}
		memcpy(dir + dlen, pairs, plen);
		plen += dlen;
	}
	buf[0] = BLOCK_VERSION_SECTIONS;
	buf[1] = 0;
	hlen = 2;
	hlen += put_varint(buf + hlen, nsec);
	hlen += put_varint(buf + hlen, n);
	hlen += put_varint(buf + hlen, (uint64_t)total);
	if (level && (plen >= BLOCK_ZSTD_MIN_PAYLOAD || (flags & BLOCK_ENC_FORCE_ZSTD))) {
		zcap = ZSTD_compressBound(plen);
		z = malloc(zcap);
		if (!z)
			goto out_free_buf;
		zlen = ZSTD_compress(z, zcap, buf + HEADER_MAX + 4, plen, (int)level);
		err = -EIO;
		if (ZSTD_isError(zlen))
			goto out_free_z;
		if (zlen < plen || (flags & BLOCK_ENC_FORCE_ZSTD)) {
			buf[1] = BLOCK_FLAG_ZSTD;
			if (hlen + zlen > cap) { /* forced and larger: grow */
				uint8_t *nb = realloc(buf, hlen + zlen);

				err = -ENOMEM;
				if (!nb)
					goto out_free_z;
				buf = nb;
			}
			memcpy(buf + hlen, z, zlen);
			plen = zlen;
		}
	}
	if (!(buf[1] & BLOCK_FLAG_ZSTD))
		memmove(buf + hlen, buf + HEADER_MAX + 4, plen);
	*out = buf;
	*len = hlen + plen;
	buf = NULL;
	err = 0;
out_free_z:
	free(z);
out_free_buf:
	free(pairs);
	free(buf);
out_free_sorted:
	free(sorted);
out:
	return err;
}

int block__version(const uint8_t *buf, size_t len)
{
	struct header h;
	int err = read_header(buf, len, &h);

	return err ? err : h.version;
}

struct block_reader {
	struct block_section *sec;
	size_t nsec, seccap;
	const uint8_t *p, *end; /* the plain payload after the directory */
	uint8_t *zbuf;		/* one inflated payload */
	size_t zcap;
	ZSTD_DCtx *dctx;
	struct block_entry *ents; /* block_reader__decode_all()'s section */
	size_t ecap;
};

int block_reader__new(struct block_reader **out)
{
	struct block_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->dctx = ZSTD_createDCtx();
	if (!r->dctx) {
		free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void block_reader__free(struct block_reader *r)
{
	if (!r)
		return;
	ZSTD_freeDCtx(r->dctx);
	free(r->zbuf);
	free(r->sec);
	free(r->ents);
	free(r);
}

int block_reader__open(struct block_reader *r, const uint8_t *buf, size_t len)
{
	const uint8_t *p, *end;
	struct header h;
	uint64_t lsd, cnt, tot, bytes;
	int64_t ls = 0, sum = 0;
	size_t i, off = 0, nent = 0;
	int err;

	r->nsec = 0;
	err = open_payload(buf, len, r->dctx, &r->zbuf, &r->zcap, &h, &p, &end);
	if (err)
		return err;
	if (h.version == BLOCK_VERSION) {
		/* one section of label set 0: the whole payload */
		if (!r->seccap) {
			r->sec = malloc(sizeof(*r->sec));
			if (!r->sec)
				return -ENOMEM;
			r->seccap = 1;
		}
		r->sec[0] = (struct block_section){ 0, h.count, h.total, 0, (size_t)(end - p) };
		r->nsec = 1;
		r->p = p;
		r->end = end;
		return 0;
	}
	if (h.nsec > r->seccap) {
		struct block_section *ns = realloc(r->sec, h.nsec * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		r->sec = ns;
		r->seccap = h.nsec;
	}
	for (i = 0; i < h.nsec; i++) {
		if (get_canonical_varint(&p, end, 9, INT64_MAX, &lsd) || lsd == 0 ||
		    lsd > (uint64_t)(INT64_MAX - ls) ||
		    get_canonical_varint(&p, end, 4, BLOCK_MAX_ENTRIES, &cnt) || cnt == 0 ||
		    get_canonical_varint(&p, end, 9, INT64_MAX, &tot) ||
		    get_canonical_varint(&p, end, 5, (uint64_t)h.count * BLOCK_MAX_PAIR_BYTES,
					 &bytes) ||
		    bytes < 2 * cnt || bytes > cnt * BLOCK_MAX_PAIR_BYTES)
			return -EINVAL;
		ls += (int64_t)lsd;
		r->sec[i] =
			(struct block_section){ ls, (size_t)cnt, (int64_t)tot, off, (size_t)bytes };
		off += (size_t)bytes;
		nent += (size_t)cnt;
		sum = sat_add(sum, (int64_t)tot);
		if (off > (size_t)(end - p) || nent > h.count)
			return -EINVAL;
	}
	/* the sections take exactly the rest, and add up to the header */
	if (off != (size_t)(end - p) || nent != h.count || sum != h.total)
		return -EINVAL;
	r->nsec = h.nsec;
	r->p = p;
	r->end = end;
	return 0;
}

const struct block_section *block_reader__sections(const struct block_reader *r, size_t *n)
{
	*n = r->nsec;
	return r->sec;
}

int block_reader__decode(struct block_reader *r, size_t i, struct block_entry *out, size_t cap,
			 size_t *n)
{
	const struct block_section *sc;

	if (i >= r->nsec)
		return -ERANGE;
	sc = &r->sec[i];
	if (sc->count > cap)
		return -E2BIG;
	*n = sc->count;
	return decode_pairs(r->p + sc->off, r->p + sc->off + sc->len, sc->count, sc->total, out);
}

int block_reader__decode_all(struct block_reader *r, int64_t v1_labelset, struct block_lentry **out,
			     size_t *n, size_t *cap)
{
	const struct block_section *sc;
	size_t i, k, got;
	int err;

	for (i = 0; i < r->nsec; i++) {
		sc = &r->sec[i];
		if (sc->count > r->ecap) {
			struct block_entry *ne = realloc(r->ents, sc->count * sizeof(*ne));

			if (!ne)
				return -ENOMEM;
			r->ents = ne;
			r->ecap = sc->count;
		}
		err = block_reader__decode(r, i, r->ents, r->ecap, &got);
		if (err)
			return err;
		if (got > *cap - *n) {
			size_t ncap = *cap ? *cap : 64;
			struct block_lentry *nl;

			while (ncap - *n < got)
				ncap *= 2;
			nl = realloc(*out, ncap * sizeof(*nl));
			if (!nl)
				return -ENOMEM;
			*out = nl;
			*cap = ncap;
		}
		for (k = 0; k < got; k++)
			(*out)[*n + k] = (struct block_lentry){ sc->labelset_id ? sc->labelset_id
										: v1_labelset,
								r->ents[k].id, r->ents[k].value };
		*n += got;
	}
	return 0;
}

int block_merge__add_sections(struct block_merge *m, const uint8_t *buf, size_t len,
			      bool (*keep)(int64_t labelset_id, void *ctx), void *ctx)
{
	const struct block_section *sec;
	size_t nsec, i, n;
	int err;

	if (!m->rd) {
		err = block_reader__new(&m->rd);
		if (err)
			return err;
	}
	err = block_reader__open(m->rd, buf, len);
	if (err)
		return err;
	sec = block_reader__sections(m->rd, &nsec);
	for (i = 0; i < nsec; i++) {
		if (keep && !keep(sec[i].labelset_id, ctx))
			continue;
		if (sec[i].count > m->ecap) {
			struct block_entry *ne = realloc(m->ents, sec[i].count * sizeof(*ne));

			if (!ne)
				return -ENOMEM;
			m->ents = ne;
			m->ecap = sec[i].count;
		}
		err = block_reader__decode(m->rd, i, m->ents, m->ecap, &n);
		if (!err)
			err = block_merge__add_entries(m, m->ents, n);
		if (err)
			return err;
	}
	return 0;
}
