/* Python frame naming: the (pid, code address) cache, the readers of CPython
 * objects (code header, str, bytes, tuple, type name) and the three line table
 * decoders; see pycode.h for the contract.
 *
 * The cache is a uthash table keyed by (address, pid, kind) where kind is a code
 * object or (3.9/3.10) a type object whose short name is kept, plus an LRU list
 * (oldest first). Entries are never evicted in the middle of a call, only when it
 * ends, so a call may briefly hold max_entries + 2 entries. Reads stay within the
 * object (its known minimum size) or within the page of its first byte, which is
 * mapped if the object is: that lets a short string or line table come in the same
 * read as its header.
 */
#include "agent/python/pycode.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/python/procmem.h"
#include "common/frame.h"
#include "common/utf8.h"

/* An allocation failure in HASH_ADD leaves the table unchanged (checked with
 * HASH_COUNT) instead of exiting the agent. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#define MIN_PAGE	 4096u /* smallest page size: bytes up to its end share addr's mapping */
#define HDR_MAX		 256u  /* largest code object header window accepted */
#define STR_WANT	 256u  /* bytes of a str object read with its header when in one page */
#define BYTES_WANT	 512u  /* same for a bytes object */
#define STATE_KIND(s)	 (((s) >> 2) & 7u)
#define STATE_COMPACT(s) (((s) >> 5) & 1u)
#define STATE_ASCII(s)	 (((s) >> 6) & 1u)

enum entry_kind {
	KIND_CODE = 0,
	KIND_TYPE = 1,
};

struct entry_key {
	uint64_t addr; /* object address in the process */
	int32_t pid;
	uint32_t kind; /* enum entry_kind */
};

/* What the header window of a code object says; also the fingerprint. */
struct code_hdr {
	uint64_t ob_type;
	uint64_t filename;  /* co_filename */
	uint64_t name;	    /* co_name; for a type entry: tp_name */
	uint64_t qualname;  /* co_qualname (3.11+) */
	uint64_t linetable; /* co_lnotab / co_linetable */
	uint64_t varnames;  /* co_varnames (3.9/3.10) */
	int32_t firstlineno;
};

struct entry {
	struct entry_key key;
	UT_hash_handle hh;
	struct entry *older, *newer; /* LRU list */
	uint64_t gen;		     /* generation of the last read or check */
	unsigned version;	     /* py_offsets.version it was read with */
	struct code_hdr hdr;	     /* as read */
	char *name;		     /* qualname or co_name; type entry: short tp_name */
	char *filename;		     /* NULL for a type entry */
	uint8_t *table;		     /* line table bytes */
	uint32_t table_len;
	uint8_t table_kind; /* enum py_linetable_kind */
	bool self_method;   /* co_varnames[0] == "self" (3.9/3.10) */
};

struct pycode_cache {
	struct entry *table; /* uthash head */
	struct entry *oldest, *newest;
	size_t max_entries;
	uint64_t gen;
	struct pycode_stats stats;
};

/* ---- line tables -------------------------------------------------------- */

static int clamp_line(int64_t line)
{
	return line < 0 || line > INT32_MAX ? -1 : (int)line;
}

/* 3.9 co_lnotab: (addr_incr u8, line_incr s8) pairs; the line of the last pair
 * whose address is <= q. */
static int addr2line_lnotab(const uint8_t *t, size_t len, int64_t line, int64_t q)
{
	int64_t addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > q)
			break;
		line += (int8_t)t[i + 1];
	}
	return clamp_line(line);
}

/* 3.10 co_linetable (PEP 626): (byte_delta u8, line_delta s8) ranges; -128: no line. */
static int addr2line_310(const uint8_t *t, size_t len, int64_t computed, int64_t q)
{
	int64_t end = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t ld = (int8_t)t[i + 1];
		int64_t line = -1;

		end += t[i];
		if (ld != -128) {
			computed += ld;
			line = computed;
		}
		if (q < end) /* and q >= the previous end, or we would have returned */
			return clamp_line(line);
	}
	return -1;
}

/* A 3.11+ varint in [p, lim): 6-bit chunks, least significant first, 0x40 =
 * more. Returns false when the table ends inside it, or after 6 chunks (36 bits,
 * far beyond any real line delta; this keeps the line sums within int64_t). */
static bool scan_varint(const uint8_t *p, const uint8_t *lim, uint64_t *out)
{
	uint64_t val = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (p >= lim || shift > 30)
			return false;
		b = *p++;
		val |= (uint64_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*out = val;
	return true;
}

/* 3.11+ location table (Objects/locations.md). Each entry starts with a byte with
 * bit 7 set: code = bits 3-6, length = (bits 0-2) + 1 code units. */
static int addr2line_locations(const uint8_t *t, size_t len, int64_t computed, int64_t q)
{
	const uint8_t *p = t, *lim = t + len;
	int64_t end = 0;

	while (p < lim && !(*p & 0x80)) /* malformed start: resync on an entry byte */
		p++;
	while (p < lim) {
		uint8_t first = *p;
		unsigned code = (first >> 3) & 15;
		int64_t line = -1;
		uint64_t u;

		switch (code) {
		case 13: /* no columns */
		case 14: /* long form */
			if (!scan_varint(p + 1, lim, &u))
				return -1;
			/* a signed varint: the sign in bit 0 */
			computed += (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
			break;
		case 11: /* one line, +1 */
			computed += 1;
			break;
		case 12: /* one line, +2 */
			computed += 2;
			break;
		default: /* 0-9 short forms, 10 one line +0, 15 no location: same line */
			break;
		}
		if (code != 15)
			line = computed;
		end += 2 * ((first & 7) + 1);
		if (q < end)
			return clamp_line(line);
		do
			p++;
		while (p < lim && !(*p & 0x80));
	}
	return -1;
}

int pyline_addr2line(enum py_linetable_kind kind, const uint8_t *table, size_t len, int firstlineno,
		     int byte_off)
{
	if (byte_off < 0)
		return firstlineno;
	if (!table)
		len = 0;
	switch (kind) {
	case PY_LINETABLE_LNOTAB:
		return addr2line_lnotab(table, len, firstlineno, byte_off);
	case PY_LINETABLE_310:
		return addr2line_310(table, len, firstlineno, byte_off);
	case PY_LINETABLE_LOCATIONS:
		return addr2line_locations(table, len, firstlineno, byte_off);
	}
	return -1;
}

/* ---- reading objects ---------------------------------------------------- */

static uint64_t get_u64(const uint8_t *buf, uint32_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static int64_t get_i64(const uint8_t *buf, uint32_t off)
{
	int64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* Reads `need` bytes at addr, and up to `want` (<= cap of buf) when they lie in the
 * page of addr. Returns the number of bytes read, or -errno. */
static long read_some(pid_t pid, uint64_t addr, void *buf, size_t need, size_t want)
{
	size_t in_page = MIN_PAGE - (addr & (MIN_PAGE - 1));
	size_t n = want < in_page ? want : in_page;
	int err;

	if (n < need)
		n = need;
	err = procmem_read(pid, addr, buf, n);
	return err ? err : (long)n;
}

/* Appends code point cp as UTF-8; lone surrogates become U+FFFD and NUL '?', so
 * the result is valid UTF-8 and a C string. */
static char *put_utf8(char *p, uint32_t cp)
{
	if (cp == 0) {
		*p++ = '?';
	} else if (cp < 0x80) {
		*p++ = (char)cp;
	} else if (cp < 0x800) {
		*p++ = (char)(0xc0 | (cp >> 6));
		*p++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		if (cp >= 0xd800 && cp <= 0xdfff)
			cp = 0xfffd;
		*p++ = (char)(0xe0 | (cp >> 12));
		*p++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*p++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*p++ = (char)(0xf0 | (cp >> 18));
		*p++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*p++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*p++ = (char)(0x80 | (cp & 0x3f));
	}
	return p;
}

/* Encodes n characters of `kind` bytes each as a malloc'd UTF-8 C string. */
static int encode_utf8(const uint8_t *data, size_t n, unsigned kind, bool ascii, char **out)
{
	char *s = malloc(n * 4 + 1), *p = s;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = data[i];
		} else if (kind == 2) {
			uint16_t v;
			memcpy(&v, data + 2 * i, 2);
			cp = v;
		} else {
			memcpy(&cp, data + 4 * i, 4);
		}
		if ((ascii && cp >= 0x80) || cp > 0x10ffff) {
			free(s);
			return -EINVAL;
		}
		p = put_utf8(p, cp);
	}
	*p = '\0';
	*out = s;
	return 0;
}

/* Reads the str object at addr as a malloc'd UTF-8 string. Only compact strings
 * (the only kind code objects hold) are supported. */
static int read_str(pid_t pid, const struct py_offsets *o, uint64_t addr, char **out)
{
	uint8_t buf[STR_WANT];
	uint32_t need = max_u32(o->unicode_length + 8, o->unicode_state + 4);
	uint32_t state, kind, data_off;
	uint8_t *data = NULL;
	int64_t length;
	size_t nbytes;
	long got;
	int err;

	if (need > sizeof(buf))
		return -EINVAL;
	got = read_some(pid, addr, buf, need, sizeof(buf));
	if (got < 0)
		return (int)got;
	memcpy(&state, buf + o->unicode_state, sizeof(state));
	length = get_i64(buf, o->unicode_length);
	kind = STATE_KIND(state);
	if (!STATE_COMPACT(state) || length < 0)
		return -EINVAL;
	if (STATE_ASCII(state)) {
		if (kind != 1)
			return -EINVAL;
		data_off = o->unicode_ascii_data;
	} else {
		if (kind != 1 && kind != 2 && kind != 4)
			return -EINVAL;
		data_off = o->unicode_compact_data;
	}
	if (length > PYCODE_MAX_STR)
		return -E2BIG;
	nbytes = (size_t)length * kind;
	if (data_off + nbytes <= (size_t)got)
		return encode_utf8(buf + data_off, (size_t)length, kind, STATE_ASCII(state), out);
	data = malloc(nbytes ? nbytes : 1);
	if (!data)
		return -ENOMEM;
	err = procmem_read(pid, addr + data_off, data, nbytes);
	if (!err)
		err = encode_utf8(data, (size_t)length, kind, STATE_ASCII(state), out);
	free(data);
	return err;
}

/* Reads the bytes object at addr into a malloc'd buffer of at most max bytes. */
static int read_bytes(pid_t pid, const struct py_offsets *o, uint64_t addr, size_t max,
		      uint8_t **out, uint32_t *out_len)
{
	uint8_t buf[BYTES_WANT];
	uint32_t need = max_u32(o->var_size + 8, o->bytes_data);
	uint8_t *data;
	int64_t size;
	long got;
	int err = 0;

	if (need > sizeof(buf))
		return -EINVAL;
	got = read_some(pid, addr, buf, need, sizeof(buf));
	if (got < 0)
		return (int)got;
	size = get_i64(buf, o->var_size);
	if (size < 0)
		return -EINVAL;
	if ((uint64_t)size > max)
		return -E2BIG;
	data = malloc(size ? (size_t)size : 1);
	if (!data)
		return -ENOMEM;
	if (o->bytes_data + (size_t)size <= (size_t)got)
		memcpy(data, buf + o->bytes_data, (size_t)size);
	else
		err = procmem_read(pid, addr + o->bytes_data, data, (size_t)size);
	if (err) {
		free(data);
		return err;
	}
	*out = data;
	*out_len = (uint32_t)size;
	return 0;
}

/* Whether the tuple at addr (co_varnames) starts with the name "self". */
static int first_is_self(pid_t pid, const struct py_offsets *o, uint64_t addr, bool *out)
{
	uint8_t buf[64];
	uint32_t need = o->var_size + 8, item_end = o->tuple_items + 8;
	uint64_t item;
	char *name = NULL;
	int64_t size;
	long got;
	int err;

	*out = false;
	if (need > sizeof(buf) || item_end > sizeof(buf))
		return -EINVAL;
	got = read_some(pid, addr, buf, need, sizeof(buf)); /* an empty tuple has no item */
	if (got < 0)
		return (int)got;
	size = get_i64(buf, o->var_size);
	if (size < 0)
		return -EINVAL;
	if (size == 0)
		return 0;
	if ((size_t)got >= item_end)
		item = get_u64(buf, o->tuple_items);
	else if ((err = procmem_read_u64(pid, addr + o->tuple_items, &item)))
		return err;
	err = read_str(pid, o, item, &name);
	if (err)
		return err;
	*out = !strcmp(name, "self");
	free(name);
	return 0;
}

/* Reads a NUL-terminated string (tp_name) of at most PYCODE_MAX_STR bytes, page by
 * page, and keeps what follows its last dot; an empty result is -EINVAL. */
static int read_type_name(pid_t pid, uint64_t addr, char **out)
{
	char chunk[STR_WANT], *s = NULL, *dot;
	size_t len = 0;
	int err = 0;

	for (;;) {
		long got = read_some(pid, addr + len, chunk, 1, sizeof(chunk));
		char *nul, *ns;
		size_t n;

		if (got < 0) {
			err = (int)got;
			goto out_free;
		}
		nul = memchr(chunk, '\0', (size_t)got);
		n = nul ? (size_t)(nul - chunk) : (size_t)got;
		if (len + n > PYCODE_MAX_STR) {
			err = -E2BIG;
			goto out_free;
		}
		ns = realloc(s, len + n + 1);
		if (!ns) {
			err = -ENOMEM;
			goto out_free;
		}
		s = ns;
		memcpy(s + len, chunk, n);
		len += n;
		s[len] = '\0';
		if (nul)
			break;
	}
	dot = strrchr(s, '.');
	if (dot && dot[1])
		memmove(s, dot + 1, strlen(dot + 1) + 1);
	if (!*s) {
		err = -EINVAL;
		goto out_free;
	}
	*out = s;
	return 0;
out_free:
	free(s);
	return err;
}

/* Reads the code object header window (every field pycode needs, in one read). */
static int read_code_hdr(pid_t pid, const struct py_offsets *o, uint64_t addr, struct code_hdr *h)
{
	uint8_t buf[HDR_MAX];
	uint32_t need = 0;
	int err;

	need = max_u32(need, o->ob_type + 8);
	need = max_u32(need, o->code_filename + 8);
	need = max_u32(need, o->code_name + 8);
	need = max_u32(need, o->code_qualname + 8);
	need = max_u32(need, o->code_linetable + 8);
	need = max_u32(need, o->code_varnames + 8);
	need = max_u32(need, o->code_firstlineno + 4);
	if (need > sizeof(buf) || o->code_filename == 0 || o->code_name == 0 ||
	    o->code_linetable == 0)
		return -EINVAL;
	err = procmem_read(pid, addr, buf, need);
	if (err)
		return err;
	memset(h, 0, sizeof(*h));
	h->ob_type = get_u64(buf, o->ob_type);
	h->filename = get_u64(buf, o->code_filename);
	h->name = get_u64(buf, o->code_name);
	if (o->code_qualname)
		h->qualname = get_u64(buf, o->code_qualname);
	h->linetable = get_u64(buf, o->code_linetable);
	if (o->code_varnames)
		h->varnames = get_u64(buf, o->code_varnames);
	memcpy(&h->firstlineno, buf + o->code_firstlineno, sizeof(h->firstlineno));
	return 0;
}

static bool hdr_equal(const struct code_hdr *a, const struct code_hdr *b)
{
	return a->ob_type == b->ob_type && a->filename == b->filename && a->name == b->name &&
	       a->qualname == b->qualname && a->linetable == b->linetable &&
	       a->varnames == b->varnames && a->firstlineno == b->firstlineno;
}

/* Reads everything a code entry holds into e (whose old contents the caller
 * frees); on failure e holds nothing to free. */
static int load_code(pid_t pid, const struct py_offsets *o, const struct code_hdr *h,
		     struct entry *e)
{
	int err;

	e->name = e->filename = NULL;
	e->table = NULL;
	e->table_len = 0;
	e->self_method = false;
	err = read_str(pid, o, o->code_qualname ? h->qualname : h->name, &e->name);
	if (err)
		goto out_free;
	err = read_str(pid, o, h->filename, &e->filename);
	if (err)
		goto out_free;
	err = read_bytes(pid, o, h->linetable, PYCODE_MAX_LINETABLE, &e->table, &e->table_len);
	if (err)
		goto out_free;
	if (o->code_varnames && h->varnames) {
		err = first_is_self(pid, o, h->varnames, &e->self_method);
		if (err)
			goto out_free;
	}
	e->hdr = *h;
	e->version = o->version;
	e->table_kind = o->linetable_kind;
	return 0;
out_free:
	free(e->name);
	free(e->filename);
	free(e->table);
	e->name = e->filename = NULL;
	e->table = NULL;
	return err;
}

/* ---- the cache ---------------------------------------------------------- */

static void lru_unlink(struct pycode_cache *c, struct entry *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	e->older = e->newer = NULL;
}

static void lru_append(struct pycode_cache *c, struct entry *e)
{
	e->older = c->newest;
	e->newer = NULL;
	if (c->newest)
		c->newest->newer = e;
	else
		c->oldest = e;
	c->newest = e;
}

static void lru_touch(struct pycode_cache *c, struct entry *e)
{
	if (c->newest != e) {
		lru_unlink(c, e);
		lru_append(c, e);
	}
}

static void entry_free(struct entry *e)
{
	if (!e)
		return;
	free(e->name);
	free(e->filename);
	free(e->table);
	free(e);
}

static void drop(struct pycode_cache *c, struct entry *e)
{
	HASH_DELETE(hh, c->table, e);
	lru_unlink(c, e);
	entry_free(e);
}

/* Evicts least recently used entries down to max_entries; only between calls. */
static void trim(struct pycode_cache *c)
{
	while (HASH_COUNT(c->table) > c->max_entries && c->oldest) {
		drop(c, c->oldest);
		c->stats.evicted++;
	}
}

/* Adds the filled entry e; frees it on failure. */
static int insert(struct pycode_cache *c, struct entry *e)
{
	unsigned before = HASH_COUNT(c->table);

	HASH_ADD(hh, c->table, key, sizeof(e->key), e);
	if (HASH_COUNT(c->table) == before) {
		entry_free(e);
		return -ENOMEM;
	}
	lru_append(c, e);
	return 0;
}

static struct entry *find(struct pycode_cache *c, pid_t pid, uint64_t addr, enum entry_kind kind)
{
	struct entry_key key;
	struct entry *e = NULL;

	memset(&key, 0, sizeof(key));
	key.addr = addr;
	key.pid = pid;
	key.kind = kind;
	HASH_FIND(hh, c->table, &key, sizeof(key), e);
	return e;
}

static struct entry *entry_new(pid_t pid, uint64_t addr, enum entry_kind kind)
{
	struct entry *e = calloc(1, sizeof(*e));

	if (e) {
		e->key.addr = addr;
		e->key.pid = pid;
		e->key.kind = kind;
	}
	return e;
}

/* Moves the contents read into `from` to e, freeing e's old ones. */
static void take_contents(struct entry *e, struct entry *from)
{
	free(e->name);
	free(e->filename);
	free(e->table);
	e->name = from->name;
	e->filename = from->filename;
	e->table = from->table;
	e->table_len = from->table_len;
	e->table_kind = from->table_kind;
	e->self_method = from->self_method;
	e->hdr = from->hdr;
	e->version = from->version;
}

/* The valid code entry for addr, read or checked as needed. */
static int get_code(struct pycode_cache *c, pid_t pid, const struct py_offsets *o,
		    uint64_t code_type, uint64_t addr, struct entry **out)
{
	struct entry *e = find(c, pid, addr, KIND_CODE), fresh;
	struct code_hdr h;
	int err;

	if (e && e->gen == c->gen && e->version == o->version && e->hdr.ob_type == code_type) {
		c->stats.hits++;
		goto out_found;
	}
	err = read_code_hdr(pid, o, addr, &h);
	if (!err && h.ob_type != code_type)
		err = -EINVAL;
	if (err)
		goto out_drop;
	if (e) {
		c->stats.revalidated++;
		if (e->version == o->version && hdr_equal(&e->hdr, &h)) {
			e->gen = c->gen;
			goto out_found;
		}
		c->stats.reloaded++;
	} else {
		c->stats.misses++;
	}
	err = load_code(pid, o, &h, &fresh);
	if (err)
		goto out_drop;
	if (!e) {
		e = entry_new(pid, addr, KIND_CODE);
		err = e ? insert(c, e) : -ENOMEM; /* insert frees e on failure */
		if (err)
			goto out_free_fresh;
	}
	take_contents(e, &fresh);
	e->gen = c->gen;
out_found:
	lru_touch(c, e);
	*out = e;
	return 0;
out_free_fresh:
	free(fresh.name);
	free(fresh.filename);
	free(fresh.table);
	return err;
out_drop:
	if (e)
		drop(c, e);
	return err;
}

/* The short type name of the type object at addr (3.9/3.10 self). */
static int get_type(struct pycode_cache *c, pid_t pid, const struct py_offsets *o, uint64_t addr,
		    const char **out)
{
	struct entry *e = find(c, pid, addr, KIND_TYPE);
	uint64_t tp_name;
	char *name = NULL;
	int err;

	if (e && e->gen == c->gen && e->version == o->version) {
		c->stats.hits++;
		goto out_found;
	}
	err = procmem_read_u64(pid, addr + o->type_name, &tp_name);
	if (!err && !tp_name)
		err = -EINVAL;
	if (err)
		goto out_drop;
	if (e) {
		c->stats.revalidated++;
		if (e->version == o->version && e->hdr.name == tp_name) {
			e->gen = c->gen;
			goto out_found;
		}
		c->stats.reloaded++;
	} else {
		c->stats.misses++;
	}
	err = read_type_name(pid, tp_name, &name);
	if (err)
		goto out_drop;
	if (!e) {
		e = entry_new(pid, addr, KIND_TYPE);
		if (!e) {
			free(name);
			return -ENOMEM;
		}
		err = insert(c, e);
		if (err) {
			free(name);
			return err;
		}
	}
	free(e->name);
	e->name = name;
	e->hdr.name = tp_name;
	e->version = o->version;
	e->gen = c->gen;
out_found:
	lru_touch(c, e);
	*out = e->name;
	return 0;
out_drop:
	if (e)
		drop(c, e);
	return err;
}

int pycode_cache__new(size_t max_entries, struct pycode_cache **out)
{
	struct pycode_cache *c;

	if (!max_entries || !out)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->max_entries = max_entries;
	*out = c;
	return 0;
}

void pycode_cache__free(struct pycode_cache *c)
{
	struct entry *e, *tmp;

	if (!c)
		return;
	HASH_ITER (hh, c->table, e, tmp) {
		HASH_DELETE(hh, c->table, e);
		entry_free(e);
	}
	free(c);
}

void pycode_cache__forget(struct pycode_cache *c, pid_t pid)
{
	struct entry *e, *tmp;

	HASH_ITER (hh, c->table, e, tmp) {
		if (e->key.pid == pid)
			drop(c, e);
	}
}

void pycode_cache__end_window(struct pycode_cache *c)
{
	c->gen++;
}

void pycode_cache__stats(const struct pycode_cache *c, struct pycode_stats *out)
{
	*out = c->stats;
	out->entries = HASH_COUNT(c->table);
}

/* s[0..n) is a prefix of valid UTF-8: cuts a trailing incomplete sequence by
 * keeping the longest prefix that utf8_decode() reads whole. */
static void utf8_cut(char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, step;
	uint32_t cp;

	while (i < n && (step = utf8_decode(u + i, n - i, &cp)))
		i += step;
	if (i < n)
		s[i] = '\0';
}

int pycode_cache__frame(struct pycode_cache *c, pid_t pid, const struct py_offsets *o,
			uint64_t code_type, uint64_t code_addr, int byte_off, uint64_t self_type,
			char *buf, size_t len, struct frame *out)
{
	const char *type_name = NULL;
	struct entry *e = NULL;
	size_t qmax, room;
	int err, line, n;

	if (!buf || len < 2 || !out)
		return -EINVAL;
	if (!c || !o) {
		err = -EINVAL;
		goto out_placeholder;
	}
	err = get_code(c, pid, o, code_type, code_addr, &e);
	if (err)
		goto out_trim;
	line = pyline_addr2line(e->table_kind, e->table, e->table_len, e->hdr.firstlineno,
				byte_off);
	if (line < 0)
		line = e->hdr.firstlineno;
	/* A type name that cannot be read leaves co_name, which is still right. */
	if (!o->code_qualname && self_type && e->self_method &&
	    get_type(c, pid, o, self_type, &type_name))
		type_name = NULL;
	/* buf: the qualname ("Type.name", or co_qualname or co_name), then the file
	 * name, copied because trim() may drop e; each cut at a UTF-8 boundary so that
	 * both fit, the qualname first */
	qmax = len - 2; /* the file needs at least its NUL */
	n = type_name ? snprintf(buf, qmax + 1, "%s.%s", type_name, e->name)
		      : snprintf(buf, qmax + 1, "%s", e->name);
	if (n > 0 && (size_t)n > qmax)
		utf8_cut(buf, qmax);
	*out = (struct frame){ .kind = FRAME_PYTHON, .line = (uint32_t)line, .name = buf };
	out->name_len = strlen(buf);
	out->file = buf + out->name_len + 1;
	room = len - out->name_len - 1;
	if ((size_t)snprintf((char *)out->file, room, "%s", e->filename) >= room)
		utf8_cut((char *)out->file, room - 1);
	out->file_len = strlen(out->file);
	trim(c);
	return 0;
out_trim:
	trim(c);
out_placeholder:
	snprintf(buf, len, "%s", PYCODE_PLACEHOLDER);
	utf8_cut(buf, strlen(buf));
	*out = frame_make(FRAME_NATIVE, buf, NULL, 0);
	return err;
}
