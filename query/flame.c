/* Flame trees (see flame.h): stacks merged frame by frame into a tree whose nodes
 * carry self and total sample counts for two sides. A day of a busy host is two
 * and a half million frames merged into some 650 k nodes (of 4 k distinct texts and
 * 800 k line entries), so the tree is built small and flat, and the public node
 * tree (struct flame_node) is made only for the readers that ask for it
 * (flame__finish), not for JSON and folded (flame__view):
 * - texts are interned per tree: each distinct (kind, text) key is one entry
 *   (struct text: the text once, a frame of it, its rank in text order), and a node
 *   holds the entry's 32-bit id, not a copy;
 * - a node is 40 bytes in one array: ids, not pointers (text, parent, first child,
 *   next sibling, line block), its repeat or line count, and side 0's counts;
 *   side 1's counts are an array of their own, made when a diff adds to it;
 * - a frame is matched by its fields: an only child directly against its text's
 *   frame; else the frame's fields are looked up (struct fent, a table of the
 *   distinct fields seen, each with its text id: the text is made once per
 *   distinct fields, and equal texts from unequal fields share the id) and the
 *   children of nodes with two or more are found through one open-addressing
 *   table for the whole tree, keyed by (parent, text id);
 * - flame__add_frames first tries the last add's node at the same depth (stacks of
 *   a process share their outer frames), and keeps that node's line entry when the
 *   line is the same;
 * - flame__add_frames_ids knows a frame by its id (a store's dictionary id): the
 *   frames a stack shares with the last one (equal ids from the root) are not
 *   looked at (the last add's path, runs and line entries up to there stand), and
 *   an id's key (text id, placeholder or not) is made once, found again in a flat
 *   array (ids below ID_DIRECT) or a table; stacks handed out sorted by their
 *   frames (store/sqlite/read.c) then cost about one lookup per node of the tree.
 * At function granularity a Python frame's key is its text without the line
 * ("q (f.py)"), and the line goes to the node's breakdown: a block of a pool,
 * sorted by line, found by binary search (see LINE_CLASSES). A run of equal
 * placeholder frames ("[unknown]" x 128) takes one node, whose repeat remembers
 * the longest run. flame__add_frames resolves the whole path (nodes and line
 * entries) first and only then adds the counts, so a failed add (-ENOMEM) never
 * leaves partial totals behind (at worst a few nodes or line entries with zero
 * counts). Finishing ranks the texts (strcmp, then kind) and sorts the children of
 * the nodes that have two or more by rank; flame__finish then makes the public
 * tree in one pass (nodes are created after their parents, so index order is a
 * parent-first order). flame__top walks that tree once with a per-name "on the
 * current path" counter so recursive functions count their total once.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A failed table allocation leaves the element out instead of exiting (flame__top
 * notices by looking the element up again). */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "common/array.h"
#include "query/flame.h"

#define NONE FLAME_NONE

struct cnt {
	uint64_t total, self;
};

/* One node of the flat tree, with its side 0 counts (side 1's: f->cnt1[id]): the
 * adds that pass through it touch one cache line for both. */
struct cnode {
	uint32_t text;	 /* its key: an entry of f->texts */
	uint32_t parent; /* NONE for the root */
	uint32_t child;	 /* first child, NONE; sorted by rank after finishing */
	uint32_t next;	 /* next sibling, NONE */
	uint32_t lines;	 /* its line breakdown: the first entry of its block, NONE */
	uint32_t rn;	 /* by_function(): entries in its block; else the longest run
			  * of the placeholder it stands for (1 otherwise): no frame is both */
	struct cnt c0;	 /* side 0 */
};

/* Line breakdowns (function granularity, Python): a node's entries are a block of
 * the pool, sorted by line and found by binary search; a block holds a power of
 * two entries (the smallest not below the node's count), and a full one moves to
 * a block twice its size, leaving the old one to a free list of its size. An
 * entry is its line (lline) and its counts (lcnt, per side). */
#define LINE_CLASSES 32

/* One distinct key: kind and folded text. */
struct text {
	uint64_t hash;	    /* bytes_hash() of text, with the kind */
	const char *text;   /* NUL-terminated, in the arena */
	uint32_t len;	    /* strlen(text) */
	uint32_t rank;	    /* position in (text, kind) order, set by finishing */
	struct frame frame; /* the first frame of this key, strings into text */
};

/* One distinct frame as the adds see it (its fields), and its text: equal texts
 * may come from unequal fields ("f (a (b.py)" is name "f" file "a (b.py" and name
 * "f (a" file "b.py"), so a frame is found by its fields and a node by its text. */
struct fent {
	uint64_t hash;	    /* field_hash() of frame */
	struct frame frame; /* its own copies of the strings, in the arena */
	uint32_t text;	    /* its text's id */
};

/* Arena chunk sizes (texts and the public tree's pieces): the first is small so
 * that a one-stack tree stays cheap, each next one twice the last up to the
 * largest. */
#define ARENA_FIRST (16 * 1024)
#define ARENA_MAX   (1024 * 1024)

struct chunk {
	struct chunk *next;
	size_t used, size;
	_Alignas(16) char data[];
};

/* The tables start at this many slots and double at half full. */
#define TABLE_MIN 1024

/* One slot of the child table: a node (NONE: empty) and 32 bits of the hash of
 * (its parent, its text). */
struct slot {
	uint32_t hash;
	uint32_t node;
};

/* One frame of the last flame__add_frames_ids(): its id, the path depth it led
 * to and the run there after it, its key's text id, whether a placeholder. */
struct pframe {
	uint64_t id;
	uint32_t depth, run, text;
	bool ph;
};

/* Ids below this are looked up in a flat array (flame__add_frames_ids), the rest
 * in a hash table: a store's frame ids are dense from 1, and a day's hundred
 * thousand frames take 400 KB of array, where the table (16-byte slots, at most
 * half full) took 4 MB and missed the cache at nearly every new frame. 2^22 ids,
 * 16 MB of address space, of which only the pages of the ids seen are touched. */
#define ID_DIRECT (1u << 22)

/* One slot of the id table (flame__add_frames_ids): what an id's frame keys. */
struct islot {
	uint64_t id;
	uint32_t text; /* its key's text id (line dropped at function granularity) */
	bool used, ph; /* ph: a placeholder frame */
};

struct flame {
	enum flame_granularity gran;
	struct cnode *nodes;	    /* [0] is the root */
	struct cnt *cnt1;	    /* side 1, parallel to nodes; NULL until used */
	size_t nnodes, nodecap;	    /* nodecap: room in nodes and cnt1 both */
	size_t nodes_cap, cnt1_cap; /* each one's own (big_grow) */
	struct text *texts;	    /* [0] is the root's "all" */
	size_t ntexts, textcap;
	uint32_t *ttable; /* texts by hash: id + 1, 0 empty */
	size_t ttcap;
	struct fent *fents; /* distinct frames */
	size_t nfents, fentcap;
	uint32_t *ftable; /* fents by hash: id + 1, 0 empty */
	size_t ftcap;
	struct slot *table; /* children of nodes with two or more */
	size_t tcap, tused;
	uint32_t *lline;	      /* the pool: entries' lines */
	struct cnt *lcnt[2];	      /* and counts per side (lcnt[1] NULL until used) */
	size_t lused, lcap;	      /* entries of the pool handed out, allocated */
	size_t llcap, lccap[2];	      /* lline's, lcnt's own (lcap: their least) */
	size_t nlines;		      /* entries in use in the nodes' blocks */
	uint32_t lfree[LINE_CLASSES]; /* free blocks of 1 << k entries, NONE-ended;
				       * a free block's first lline links the next */
	uint32_t *wide;		      /* nodes with two or more children: the ones to sort */
	size_t nwide, widecap;
	struct chunk *arena; /* newest chunk first */
	size_t nextchunk;
	size_t arena_bytes; /* the chunks' sizes added up (flame__bytes) */
	uint64_t idmax;	    /* the largest id below ID_DIRECT seen (flame__bytes) */
	bool finished;	    /* ranked and sorted */
	bool twins;	    /* two texts are equal but for their kind */
	/* the public tree, made by flame__finish */
	struct flame_node *pub;
	struct flame_node **pubkids;
	struct flame_line *publines;
	size_t nends;	 /* nodes with samples ending there (either side): stacks */
	size_t endslots; /* the sum of their depths */
	/* flame__add_frames */
	uint32_t *path;	    /* the last add's path, FLAME_MAX_DEPTH + 1 */
	size_t pdepth;	    /* entries of path the last add filled (root excluded) */
	uint32_t *runs;	    /* scratch: path[d] stands for runs[d] equal frames */
	uint32_t *lineidx;  /* path[d]'s line entry in the last add, NONE for none */
	uint32_t *plines;   /* the line lineidx[d] is of */
	struct pframe *pf;  /* flame__add_frames_ids: the last add's frames */
	size_t npf;	    /* entries of pf (0: none to share) */
	struct islot *imap; /* ids seen, ID_DIRECT and above: open addressing */
	size_t imcap, imused;
	uint32_t *idirect;    /* ids seen below ID_DIRECT: text << 1 | placeholder, plus
			       * 1 (0: not seen); NULL until the first */
	struct frame *frames; /* scratch for flame__add: FLAME_MAX_DEPTH entries */
	char *key;	      /* scratch: a frame's text */
	size_t keycap;
};

/* size bytes, 16-aligned, from f's arena; NULL when out of memory. */
static void *arena_alloc(struct flame *f, size_t size)
{
	struct chunk *c = f->arena;
	size_t want;

	size = (size + 15) & ~(size_t)15;
	if (!c || c->size - c->used < size) {
		if (!f->nextchunk)
			f->nextchunk = ARENA_FIRST;
		want = size > f->nextchunk ? size : f->nextchunk;
		if (want > SIZE_MAX - sizeof(*c))
			return NULL;
		c = malloc(sizeof(*c) + want);
		if (!c)
			return NULL;
		c->size = want;
		c->used = 0;
		f->arena_bytes += sizeof(*c) + want;
		if (f->nextchunk < ARENA_MAX && want == f->nextchunk)
			f->nextchunk *= 2;
		/* a big one-off block goes behind the current chunk, which keeps its room */
		if (f->arena && want > f->nextchunk) {
			c->next = f->arena->next;
			f->arena->next = c;
		} else {
			c->next = f->arena;
			f->arena = c;
		}
	}
	c->used += size;
	return c->data + c->used - size;
}

/* ---- hashing ------------------------------------------------------------------- */

#define HASH_M 0x9e3779b97f4a7c15ULL

static inline uint64_t mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * HASH_M;
	return h ^ (h >> 29);
}

/* A 64-bit multiply-xorshift over the 8-byte words of len bytes, from seed h. */
static uint64_t bytes_hash(uint64_t h, const char *p, size_t len)
{
	uint64_t w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = mix(h, w);
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		h = mix(h, w);
	}
	return h;
}

static inline uint64_t finish_hash(uint64_t h, uint64_t len)
{
	h = (h ^ len) * HASH_M;
	return h ^ (h >> 32);
}

/* The hash of the fields that make fr's text: kind and name, and for a Python
 * frame its file and line (same_fields' fields). */
static uint64_t field_hash(const struct frame *fr)
{
	uint64_t h = bytes_hash((uint64_t)(fr->kind + 1) * HASH_M, fr->name, fr->name_len);

	if (fr->kind == FRAME_PYTHON) {
		h = mix(h, fr->name_len);
		h = bytes_hash(h, fr->file, fr->file_len);
		h = mix(h, ((uint64_t)fr->line << 32) | (uint32_t)fr->file_len);
	}
	return finish_hash(h, fr->name_len);
}

/* Whether frames a and b have equal fields as far as their text goes (equal
 * fields make equal texts; the converse needs the texts). */
static inline bool same_fields(const struct frame *a, const struct frame *b)
{
	if (a->kind != b->kind || a->name_len != b->name_len)
		return false;
	if (a->kind == FRAME_PYTHON && (a->line != b->line || a->file_len != b->file_len ||
					memcmp(a->file, b->file, a->file_len) != 0))
		return false;
	return memcmp(a->name, b->name, a->name_len) == 0;
}

/* fr's text in f->key (NUL-terminated); its length, or SIZE_MAX out of memory. */
static size_t key_text(struct flame *f, const struct frame *fr)
{
	size_t len = frame_format(fr, f->key, f->keycap);

	if (len < f->keycap)
		return len;
	if (array_grow((void **)&f->key, &f->keycap, len + 1, 1))
		return SIZE_MAX;
	frame_format(fr, f->key, len + 1);
	return len;
}

/* ---- growing the arrays ------------------------------------------------------ */

/* Doubles an open-addressing table of cap slots of size bytes, each with its
 * hash at the slot's start (uint32_t) or computed by rehash. */
static int ttable_grow(struct flame *f)
{
	size_t cap = f->ttcap ? f->ttcap * 2 : TABLE_MIN, i, j;
	uint32_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; i < f->ttcap; i++) {
		if (!f->ttable[i])
			continue;
		for (j = f->texts[f->ttable[i] - 1].hash & (cap - 1); t[j]; j = (j + 1) & (cap - 1))
			;
		t[j] = f->ttable[i];
	}
	free(f->ttable);
	f->ttable = t;
	f->ttcap = cap;
	return 0;
}

static int ftable_grow(struct flame *f)
{
	size_t cap = f->ftcap ? f->ftcap * 2 : TABLE_MIN, i, j;
	uint32_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; i < f->ftcap; i++) {
		if (!f->ftable[i])
			continue;
		for (j = f->fents[f->ftable[i] - 1].hash & (cap - 1); t[j]; j = (j + 1) & (cap - 1))
			;
		t[j] = f->ftable[i];
	}
	free(f->ftable);
	f->ftable = t;
	f->ftcap = cap;
	return 0;
}

static int table_grow(struct flame *f)
{
	size_t cap = f->tcap ? f->tcap * 2 : TABLE_MIN, i, j;
	struct slot *t;

	if (cap > SIZE_MAX / sizeof(*t))
		return -ENOMEM;
	t = malloc(cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t, 0xff, cap * sizeof(*t)); /* node NONE: empty */
	for (i = 0; i < f->tcap; i++) {
		if (f->table[i].node == NONE)
			continue;
		for (j = f->table[i].hash & (cap - 1); t[j].node != NONE; j = (j + 1) & (cap - 1))
			;
		t[j] = f->table[i];
	}
	free(f->table);
	f->table = t;
	f->tcap = cap;
	return 0;
}

/* The child-table hash of a child of text id text below parent. */
static inline uint32_t child_hash(uint32_t parent, uint32_t text)
{
	uint64_t x = (((uint64_t)parent << 32 | text) ^ 0x5bd1e9955bd1e995ULL) * HASH_M;

	x ^= x >> 29;
	return (uint32_t)((x * HASH_M) >> 32);
}

static void table_put(struct flame *f, uint32_t node)
{
	const struct cnode *nd = &f->nodes[node];
	uint32_t h = child_hash(nd->parent, nd->text);
	size_t i;

	for (i = h & (f->tcap - 1); f->table[i].node != NONE; i = (i + 1) & (f->tcap - 1))
		;
	f->table[i] = (struct slot){ .hash = h, .node = node };
	f->tused++;
}

/* Arrays that reach BIG_BYTES are anonymous mappings of their own, grown by
 * mremap(): no copy, and never an old and a new block resident at once. A day's
 * node array is 26 MB and its line pool 20 MB: realloc copied them into fresh
 * pages at every doubling (its page faults and copies were a tenth of the query,
 * and the last doubling's two blocks a peak of their own). */
#define BIG_BYTES ((size_t)1 << 20)

/* Grows array *p of *cap elements of elem bytes to at least need, doubling; the
 * new elements are zero. Returns 0 or -ENOMEM (*p and *cap unchanged). */
static int big_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 64, old = *cap * elem, size;
	void *q;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 4 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	size = ncap * elem;
	if (size < BIG_BYTES) {
		q = realloc(*p, size);
		if (!q)
			return -ENOMEM;
		memset((char *)q + old, 0, size - old);
	} else if (old < BIG_BYTES) {
		q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q == MAP_FAILED)
			return -ENOMEM;
		if (old)
			memcpy(q, *p, old);
		free(*p);
	} else {
		q = mremap(*p, old, size, MREMAP_MAYMOVE); /* the new pages are zero */
		if (q == MAP_FAILED)
			return -ENOMEM;
	}
	*p = q;
	*cap = ncap;
	return 0;
}

static void big_free(void *p, size_t cap, size_t elem)
{
	if (cap * elem >= BIG_BYTES)
		munmap(p, cap * elem);
	else
		free(p);
}

/* Room for one more node (all its arrays). */
static int nodes_room(struct flame *f)
{
	size_t need = f->nnodes + 1;
	int err;

	if (need <= f->nodecap)
		return 0;
	if (need >= NONE)
		return -ENOMEM; /* ids are 32 bits */
	err = big_grow((void **)&f->nodes, &f->nodes_cap, need, sizeof(*f->nodes));
	if (!err && f->cnt1)
		err = big_grow((void **)&f->cnt1, &f->cnt1_cap, need, sizeof(*f->cnt1));
	if (err)
		return err; /* nodecap unchanged: a bigger array is only room */
	f->nodecap = f->cnt1 && f->cnt1_cap < f->nodes_cap ? f->cnt1_cap : f->nodes_cap;
	return 0;
}

/* The text entry of frame fr, made if new. */
static int text_get(struct flame *f, const struct frame *fr, uint32_t *out)
{
	size_t i, len = key_text(f, fr);
	uint64_t h;
	struct text *t;
	char *copy;
	int err;

	if (len == SIZE_MAX || len >= UINT32_MAX)
		return -ENOMEM;
	h = finish_hash(bytes_hash((uint64_t)(fr->kind + 1) * HASH_M, f->key, len), len);
	for (i = h & (f->ttcap - 1); f->ttable[i]; i = (i + 1) & (f->ttcap - 1)) {
		t = &f->texts[f->ttable[i] - 1];
		if (t->hash == h && t->frame.kind == fr->kind && t->len == len &&
		    memcmp(t->text, f->key, len) == 0) {
			*out = f->ttable[i] - 1;
			return 0;
		}
	}
	if ((f->ntexts + 1) * 2 > f->ttcap) {
		err = ttable_grow(f);
		if (err)
			return err;
	}
	err = array_grow((void **)&f->texts, &f->textcap, f->ntexts + 1, sizeof(*f->texts));
	if (err)
		return err;
	copy = arena_alloc(f, len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, f->key, len + 1);
	t = &f->texts[f->ntexts];
	*t = (struct text){ .hash = h, .text = copy, .len = (uint32_t)len, .frame = *fr };
	t->frame.name = copy; /* the frame's parts are in its text: name first */
	if (fr->kind == FRAME_PYTHON) {
		t->frame.file = copy + fr->name_len + 2;
	} else {
		t->frame.file = "";
		t->frame.file_len = 0;
	}
	for (i = h & (f->ttcap - 1); f->ttable[i]; i = (i + 1) & (f->ttcap - 1))
		;
	f->ttable[i] = (uint32_t)++f->ntexts;
	*out = (uint32_t)(f->ntexts - 1);
	return 0;
}

/* The text id of frame fr (line already dropped at function granularity): its
 * fields looked up, and its text made only for fields not seen before. */
static int frame_text(struct flame *f, const struct frame *fr, uint32_t *out)
{
	uint64_t h = field_hash(fr);
	struct fent *e;
	char *copy;
	size_t i;
	int err;

	for (i = h & (f->ftcap - 1); f->ftable[i]; i = (i + 1) & (f->ftcap - 1)) {
		e = &f->fents[f->ftable[i] - 1];
		if (e->hash == h && same_fields(&e->frame, fr)) {
			*out = e->text;
			return 0;
		}
	}
	if ((f->nfents + 1) * 2 > f->ftcap) {
		err = ftable_grow(f);
		if (err)
			return err;
	}
	err = array_grow((void **)&f->fents, &f->fentcap, f->nfents + 1, sizeof(*f->fents));
	if (err)
		return err;
	copy = arena_alloc(f, fr->name_len + fr->file_len + 1);
	if (!copy)
		return -ENOMEM;
	e = &f->fents[f->nfents];
	*e = (struct fent){ .hash = h, .frame = *fr };
	memcpy(copy, fr->name, fr->name_len);
	e->frame.name = copy;
	if (fr->kind == FRAME_PYTHON) {
		memcpy(copy + fr->name_len, fr->file, fr->file_len);
		e->frame.file = copy + fr->name_len;
	} else {
		e->frame.file = "";
		e->frame.file_len = 0;
	}
	err = text_get(f, fr, &e->text);
	if (err)
		return err;
	for (i = h & (f->ftcap - 1); f->ftable[i]; i = (i + 1) & (f->ftcap - 1))
		;
	f->ftable[i] = (uint32_t)++f->nfents;
	*out = e->text;
	return 0;
}

int flame__new(struct flame **out)
{
	return flame__new_granular(out, FLAME_BY_LINE);
}

int flame__new_granular(struct flame **out, enum flame_granularity g)
{
	struct flame *f = calloc(1, sizeof(*f));
	char *all;

	if (!f)
		return -ENOMEM;
	f->gran = g == FLAME_BY_FUNCTION ? FLAME_BY_FUNCTION : FLAME_BY_LINE;
	memset(f->lfree, 0xff, sizeof(f->lfree)); /* NONE */
	f->path = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->path));
	f->runs = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->runs));
	f->lineidx = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->lineidx));
	f->plines = calloc(FLAME_MAX_DEPTH + 1, sizeof(*f->plines));
	f->pf = calloc(FLAME_MAX_DEPTH, sizeof(*f->pf));
	f->frames = calloc(FLAME_MAX_DEPTH, sizeof(*f->frames));
	f->texts = malloc(64 * sizeof(*f->texts));
	f->textcap = 64;
	all = arena_alloc(f, 4);
	if (!f->path || !f->runs || !f->lineidx || !f->plines || !f->pf || !f->frames ||
	    !f->texts || !all || table_grow(f) || ttable_grow(f) || ftable_grow(f) || nodes_room(f))
		goto out_free;
	memcpy(all, "all", 4);
	/* the root's text is in no table: no frame is the root */
	f->texts[0] = (struct text){ .text = all,
				     .len = 3,
				     .frame = frame_make(FRAME_NATIVE, all, NULL, 0) };
	f->texts[0].frame.kind = FLAME_ROOT;
	f->ntexts = 1;
	f->nodes[0] = (struct cnode){
		.text = 0, .parent = NONE, .child = NONE, .next = NONE, .lines = NONE, .rn = 1
	};
	f->nnodes = 1;
	*out = f;
	return 0;

out_free:
	flame__free(f);
	return -ENOMEM;
}

void flame__free(struct flame *f)
{
	struct chunk *c, *next;

	if (!f)
		return;
	for (c = f->arena; c; c = next) {
		next = c->next;
		free(c);
	}
	big_free(f->nodes, f->nodes_cap, sizeof(*f->nodes));
	big_free(f->cnt1, f->cnt1_cap, sizeof(*f->cnt1));
	free(f->texts);
	free(f->ttable);
	free(f->fents);
	free(f->ftable);
	free(f->table);
	big_free(f->lline, f->llcap, sizeof(*f->lline));
	big_free(f->lcnt[0], f->lccap[0], sizeof(*f->lcnt[0]));
	big_free(f->lcnt[1], f->lccap[1], sizeof(*f->lcnt[1]));
	free(f->wide);
	free(f->pub);
	free(f->pubkids);
	free(f->publines);
	free(f->path);
	free(f->runs);
	free(f->lineidx);
	free(f->plines);
	free(f->pf);
	free(f->imap);
	free(f->idirect);
	free(f->frames);
	free(f->key);
	free(f);
}

/* Whether frames of this kind keep their line out of their node's identity. */
static bool by_function(const struct flame *f, const struct frame *fr)
{
	return f->gran == FLAME_BY_FUNCTION && fr->kind == FRAME_PYTHON;
}

/* The child of parent of text id t, created if new. */
static int child_of(struct flame *f, uint32_t parent, uint32_t t, uint32_t *out)
{
	uint32_t first = f->nodes[parent].child, kid, ch;
	bool only = first != NONE && f->nodes[first].next == NONE;
	size_t i;
	int err;

	if (only && f->nodes[first].text == t) {
		*out = first;
		return 0;
	}
	if (first != NONE && !only) {
		ch = child_hash(parent, t);
		for (i = ch & (f->tcap - 1); f->table[i].node != NONE;
		     i = (i + 1) & (f->tcap - 1)) {
			kid = f->table[i].node;
			if (f->table[i].hash == ch && f->nodes[kid].parent == parent &&
			    f->nodes[kid].text == t) {
				*out = kid;
				return 0;
			}
		}
	}
	err = nodes_room(f);
	if (!err && only)
		err = array_grow((void **)&f->wide, &f->widecap, f->nwide + 1, sizeof(*f->wide));
	if (!err && first != NONE && (f->tused + 2) * 2 > f->tcap)
		err = table_grow(f);
	if (err)
		return err;
	kid = (uint32_t)f->nnodes++;
	f->nodes[kid] = (struct cnode){ .text = t,
					.parent = parent,
					.child = NONE,
					.next = first,
					.lines = NONE,
					.rn = by_function(f, &f->texts[t].frame) ? 0 : 1 };
	if (f->cnt1)
		f->cnt1[kid] = (struct cnt){ 0, 0 };
	if (only) { /* a second child: both go into the table */
		table_put(f, first);
		f->wide[f->nwide++] = parent;
	}
	if (first != NONE)
		table_put(f, kid);
	f->nodes[parent].child = kid; /* newest first; finishing sorts */
	f->finished = false;
	*out = kid;
	return 0;
}

/* The child of parent for frame fr (line already dropped at function
 * granularity), created if new. */
static int child_get(struct flame *f, uint32_t parent, const struct frame *fr, uint32_t *out)
{
	uint32_t first = f->nodes[parent].child, t;
	int err;

	if (first != NONE && f->nodes[first].next == NONE &&
	    same_fields(&f->texts[f->nodes[first].text].frame, fr)) {
		*out = first;
		return 0;
	}
	err = frame_text(f, fr, &t);
	return err ? err : child_of(f, parent, t, out);
}

static const struct cnt zero; /* side 1's counts before any add to it */

/* a + b, saturated at INT64_MAX like the store's sums: a tree's totals must
 * never wrap (a wrapped parent is smaller than its child, and a renderer then
 * draws a box wider than the graph), whatever counts a folded file holds. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_add_overflow(a, b, &r) || r > (uint64_t)INT64_MAX)
		return (uint64_t)INT64_MAX;
	return r;
}

/* A block of 1 << k line entries: its first entry's index. */
static int line_block(struct flame *f, unsigned k, uint32_t *out)
{
	size_t n = (size_t)1 << k;
	unsigned s;
	int err = 0;

	if (f->lfree[k] != NONE) {
		*out = f->lfree[k];
		f->lfree[k] = f->lline[*out];
		return 0;
	}
	if (f->lused + n >= NONE)
		return -ENOMEM;
	if (f->lused + n > f->lcap) {
		err = big_grow((void **)&f->lline, &f->llcap, f->lused + n, sizeof(*f->lline));
		for (s = 0; s < 2 && !err; s++) {
			if (s && !f->cnt1)
				continue; /* no side 1 yet */
			err = big_grow((void **)&f->lcnt[s], &f->lccap[s], f->lused + n,
				       sizeof(*f->lcnt[s]));
		}
		if (err)
			return err;
		f->lcap = f->llcap < f->lccap[0] ? f->llcap : f->lccap[0];
		if (f->lcnt[1] && f->lccap[1] < f->lcap)
			f->lcap = f->lccap[1];
	}
	*out = (uint32_t)f->lused;
	f->lused += n;
	return 0;
}

/* The smallest k with 1 << k >= n (n >= 1). */
static unsigned line_class(uint32_t n)
{
	return n <= 1 ? 0 : 32 - (unsigned)__builtin_clz(n - 1);
}

/* The entry of line in node nd's breakdown, a zeroed one inserted when new. */
static int line_slot(struct flame *f, uint32_t nd, uint32_t line, uint32_t *idx)
{
	struct cnode *cn = &f->nodes[nd];
	uint32_t start = cn->lines, n = cn->rn, lo = 0, hi = n, mid, to;
	unsigned s, k;
	int err;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (f->lline[start + mid] == line) {
			*idx = start + mid;
			return 0;
		}
		if (f->lline[start + mid] < line)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (n >= (1u << (LINE_CLASSES - 2)))
		return -ENOMEM;
	k = line_class(n + 1);
	to = start;
	if (!n || line_class(n) != k) { /* full (or none): a block twice the size */
		err = line_block(f, k, &to);
		if (err)
			return err;
		cn = &f->nodes[nd];
	}
	if (n) { /* [0, lo) to the new block, [lo, n) one up */
		if (to != start) {
			memcpy(f->lline + to, f->lline + start, lo * sizeof(*f->lline));
			for (s = 0; s < 2; s++)
				if (f->lcnt[s])
					memcpy(f->lcnt[s] + to, f->lcnt[s] + start,
					       lo * sizeof(struct cnt));
		}
		memmove(f->lline + to + lo + 1, f->lline + start + lo,
			(n - lo) * sizeof(*f->lline));
		for (s = 0; s < 2; s++)
			if (f->lcnt[s])
				memmove(f->lcnt[s] + to + lo + 1, f->lcnt[s] + start + lo,
					(n - lo) * sizeof(struct cnt));
	}
	if (to != start && n) { /* the old block to its free list */
		f->lline[start] = f->lfree[line_class(n)];
		f->lfree[line_class(n)] = start;
	}
	f->lline[to + lo] = line;
	for (s = 0; s < 2; s++)
		if (f->lcnt[s])
			f->lcnt[s][to + lo] = (struct cnt){ 0, 0 };
	cn->lines = to;
	cn->rn = n + 1;
	f->nlines++;
	*idx = to + lo;
	return 0;
}

/* Equal placeholder frames, which merge into one node. */
static bool same_placeholder(const struct frame *a, const struct frame *b)
{
	return frame_is_placeholder(a) && frame_is_placeholder(b) && a->name_len == b->name_len &&
	       memcmp(a->name, b->name, a->name_len) == 0;
}

/* Side 1's arrays, made by its first add. */
static int side_room(struct flame *f, unsigned side)
{
	int err = 0;

	if (side && !f->cnt1)
		err = big_grow((void **)&f->cnt1, &f->cnt1_cap, f->nodecap, sizeof(*f->cnt1));
	if (!err && side && f->lcap && !f->lcnt[1])
		err = big_grow((void **)&f->lcnt[1], &f->lccap[1], f->lcap, sizeof(*f->lcnt[1]));
	return err;
}

/* Adds count to the nodes and line entries of the path of depth levels (below the
 * root) that an add resolved. */
static void add_counts(struct flame *f, size_t depth, uint64_t count, unsigned side)
{
	struct cnt *cn = side ? f->cnt1 : NULL; /* side 0: in the nodes */
	size_t i;

	for (i = 0; i <= depth; i++) { /* path[0] is the root */
		struct cnode *nd = &f->nodes[f->path[i]];
		struct cnt *c = cn ? &cn[f->path[i]] : &nd->c0;

		c->total = sat_add(c->total, count);
		if (i == depth)
			c->self = sat_add(c->self, count);
		if (i && f->runs[i] > 1 && f->runs[i] > nd->rn) /* placeholders only */
			nd->rn = f->runs[i];
		if (i && f->lineidx[i] != NONE) {
			struct cnt *l = &f->lcnt[side][f->lineidx[i]];

			l->total = sat_add(l->total, count);
			if (i == depth)
				l->self = sat_add(l->self, count);
		}
	}
}

/* path[depth]'s line entry for line (a Python frame at function granularity):
 * the last add's when it had this node here at this line (same), else looked
 * up. Only a line_slot() of this node, which is at this depth of any path,
 * moves its block, so the last add's entry is still good. */
static int path_line(struct flame *f, size_t depth, bool same, uint32_t line)
{
	int err;

	if (same && f->lineidx[depth] != NONE && f->plines[depth] == line)
		return 0;
	err = line_slot(f, f->path[depth], line, &f->lineidx[depth]);
	if (!err)
		f->plines[depth] = line;
	return err;
}

int flame__add_frames(struct flame *f, const struct frame *frames, size_t n, uint64_t count,
		      unsigned side)
{
	uint32_t cur = 0, next;
	size_t i, depth = 0;
	struct frame fn;
	bool same;
	int err;

	if (!f || !frames || n == 0 || n > FLAME_MAX_DEPTH || side > 1)
		return -EINVAL;
	err = side_room(f, side);
	if (err)
		return err;
	f->npf = 0; /* no ids: the next add with ids starts from the root */
	f->path[0] = 0;
	for (i = 0; i < n; i++) {
		const struct frame *fr = &frames[i];

		if (i > 1 && same_placeholder(fr, &frames[i - 1])) {
			f->runs[depth]++; /* frames[0] is the process, never merged */
			continue;
		}
		if (by_function(f, fr)) {
			fn = *fr;
			fn.line = FRAME_NO_LINE;
			fr = &fn;
		}
		/* Stacks of a process share their outer frames: the last add's node at
		 * this depth, still in cache, is most often the one. */
		next = depth < f->pdepth ? f->path[depth + 1] : NONE;
		same = next != NONE && f->nodes[next].parent == cur &&
		       same_fields(&f->texts[f->nodes[next].text].frame, fr);
		if (same) {
			cur = next;
		} else {
			f->pdepth = depth; /* path beyond is being replaced */
			err = child_get(f, cur, fr, &cur);
			if (err)
				goto out_forget;
		}
		f->path[++depth] = cur;
		f->runs[depth] = 1;
		if (fr != &fn || frames[i].line == FRAME_NO_LINE)
			f->lineidx[depth] = NONE;
		else if ((err = path_line(f, depth, same, frames[i].line)))
			goto out_forget;
	}
	f->pdepth = depth;
	add_counts(f, depth, count, side);
	return 0;

out_forget:
	f->pdepth = 0; /* the next add trusts nothing of this one's path */
	return err;
}

/* The id's entry in f->imap: its key's text id and whether it is a placeholder,
 * made from fr (the frame of that id) when new. */
static int id_slot(struct flame *f, const struct frame *fr, uint64_t id, const struct islot **out)
{
	uint64_t h = id * HASH_M;
	struct islot *e;
	struct frame fn;
	size_t i;
	int err;

	h ^= h >> 29;
	for (i = h & (f->imcap - 1); f->imcap && f->imap[i].used; i = (i + 1) & (f->imcap - 1)) {
		if (f->imap[i].id == id) {
			*out = &f->imap[i];
			return 0;
		}
	}
	if ((f->imused + 1) * 2 > f->imcap) {
		size_t cap = f->imcap ? f->imcap * 2 : TABLE_MIN, j;
		struct islot *t = calloc(cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (j = 0; j < f->imcap; j++) {
			uint64_t g = f->imap[j].id * HASH_M;

			if (!f->imap[j].used)
				continue;
			g ^= g >> 29;
			for (i = g & (cap - 1); t[i].used; i = (i + 1) & (cap - 1))
				;
			t[i] = f->imap[j];
		}
		free(f->imap);
		f->imap = t;
		f->imcap = cap;
		for (i = h & (cap - 1); t[i].used; i = (i + 1) & (cap - 1))
			;
	}
	fn = *fr;
	if (by_function(f, fr))
		fn.line = FRAME_NO_LINE;
	e = &f->imap[i];
	err = frame_text(f, &fn, &e->text);
	if (err)
		return err;
	e->id = id;
	e->used = true;
	e->ph = frame_is_placeholder(fr);
	f->imused++;
	*out = e;
	return 0;
}

/* The text id of the key of id's frame fr, and whether it is a placeholder. */
static inline int id_info(struct flame *f, const struct frame *fr, uint64_t id, uint32_t *text,
			  bool *ph)
{
	const struct islot *e;
	struct frame fn;
	uint32_t v;
	int err;

	if (id < ID_DIRECT && !f->idirect) {
		f->idirect = calloc(ID_DIRECT, sizeof(*f->idirect));
		if (!f->idirect)
			return -ENOMEM;
	}
	if (id < ID_DIRECT && (v = f->idirect[id])) {
		*text = (v - 1) >> 1;
		*ph = (v - 1) & 1;
		return 0;
	}
	if (id < ID_DIRECT) { /* new: its key, kept in the array alone */
		fn = *fr;
		if (by_function(f, fr))
			fn.line = FRAME_NO_LINE;
		err = frame_text(f, &fn, text);
		if (err)
			return err;
		if (*text >= (1u << 30))
			return -ENOMEM; /* a billion texts: not to be packed with the flag */
		*ph = frame_is_placeholder(fr);
		f->idirect[id] = ((*text << 1) | *ph) + 1;
		if (id > f->idmax)
			f->idmax = id;
		return 0;
	}
	err = id_slot(f, fr, id, &e);
	if (err)
		return err;
	*text = e->text;
	*ph = e->ph;
	return 0;
}

int flame__add_frames_ids(struct flame *f, const struct frame *frames, const uint64_t *ids,
			  size_t n, uint64_t count, unsigned side)
{
	uint32_t cur = 0, next, t, pt = NONE;
	size_t i = 0, depth = 0;
	bool same, ph = false;
	int err;

	if (!ids)
		return flame__add_frames(f, frames, n, count, side);
	if (!f || !frames || n == 0 || n > FLAME_MAX_DEPTH || side > 1)
		return -EINVAL;
	err = side_room(f, side);
	if (err)
		return err;
	/* The frames this stack shares with the last one (equal ids) lead where they
	 * led it: path, runs and line entries up to there are as it left them. */
	while (i < n && i < f->npf && ids[i] == f->pf[i].id)
		i++;
	f->path[0] = 0;
	if (i) {
		depth = f->pf[i - 1].depth;
		cur = f->path[depth];
		f->runs[depth] = f->pf[i - 1].run;
		pt = f->pf[i - 1].text;
		ph = f->pf[i - 1].ph;
	}
	for (; i < n; i++) {
		const struct frame *fr = &frames[i];
		bool was_ph = ph;

		err = id_info(f, fr, ids[i], &t, &ph);
		if (err)
			goto out_forget;
		if (i > 1 && ph && was_ph && t == pt) { /* placeholders: equal texts, equal names */
			f->runs[depth]++;
			f->pf[i] =
				(struct pframe){ ids[i], (uint32_t)depth, f->runs[depth], t, ph };
			continue;
		}
		pt = t;
		next = depth < f->pdepth ? f->path[depth + 1] : NONE;
		same = next != NONE && f->nodes[next].parent == cur && f->nodes[next].text == t;
		if (same) {
			cur = next;
		} else {
			f->pdepth = depth; /* path beyond is being replaced */
			err = child_of(f, cur, t, &cur);
			if (err)
				goto out_forget;
		}
		f->path[++depth] = cur;
		f->runs[depth] = 1;
		if (!by_function(f, fr) || fr->line == FRAME_NO_LINE)
			f->lineidx[depth] = NONE;
		else if ((err = path_line(f, depth, same, fr->line)))
			goto out_forget;
		f->pf[i] = (struct pframe){ ids[i], (uint32_t)depth, 1, t, ph };
	}
	f->pdepth = depth;
	f->npf = n;
	add_counts(f, depth, count, side);
	return 0;

out_forget:
	f->pdepth = 0; /* the next add trusts nothing of this one's path */
	f->npf = 0;
	return err;
}

int flame__add(struct flame *f, const char *stack, uint64_t count, unsigned side)
{
	const char *p, *semi;
	size_t n = 0;

	if (!f || !stack || !*stack)
		return -EINVAL;
	for (p = stack;; p = semi + 1) {
		semi = strchrnul(p, ';');
		if (n == FLAME_MAX_DEPTH)
			return -EINVAL;
		frame_parse(p, (size_t)(semi - p), n == 0, &f->frames[n]);
		n++;
		if (!*semi)
			break;
	}
	return flame__add_frames(f, f->frames, n, count, side);
}

/* ---- finishing ---------------------------------------------------------------- */

static int cmp_text(const void *a, const void *b, void *ctx)
{
	const struct text *t = ctx;
	const struct text *x = &t[*(const uint32_t *)a], *y = &t[*(const uint32_t *)b];
	int c = strcmp(x->text, y->text);

	/* equal texts of two kinds (a native "f_[k]" and a kernel "f"): kind decides */
	return c ? c : (int)x->frame.kind - (int)y->frame.kind;
}

static int cmp_rank(const void *a, const void *b, void *ctx)
{
	const struct flame *f = ctx;
	uint32_t x = f->texts[f->nodes[*(const uint32_t *)a].text].rank;
	uint32_t y = f->texts[f->nodes[*(const uint32_t *)b].text].rank;

	return x < y ? -1 : x > y;
}

/* Ranks the texts and sorts every children list by rank: the order of names
 * (strcmp), then kinds. */
static int finish_order(struct flame *f)
{
	uint32_t *ids, *kids = NULL, k, c;
	size_t i, n, cap = 0;

	if (f->finished)
		return 0;
	ids = malloc(f->ntexts * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (i = 0; i < f->ntexts; i++)
		ids[i] = (uint32_t)i;
	qsort_r(ids, f->ntexts, sizeof(*ids), cmp_text, f->texts);
	f->twins = false;
	for (i = 0; i < f->ntexts; i++) {
		f->texts[ids[i]].rank = (uint32_t)i;
		if (i && strcmp(f->texts[ids[i]].text, f->texts[ids[i - 1]].text) == 0)
			f->twins = true;
	}
	free(ids);
	for (i = 0; i < f->nwide; i++) {
		uint32_t p = f->wide[i];

		for (n = 0, c = f->nodes[p].child; c != NONE; c = f->nodes[c].next)
			n++;
		if (array_grow((void **)&kids, &cap, n, sizeof(*kids))) {
			free(kids);
			return -ENOMEM;
		}
		for (n = 0, c = f->nodes[p].child; c != NONE; c = f->nodes[c].next)
			kids[n++] = c;
		qsort_r(kids, n, sizeof(*kids), cmp_rank, f);
		f->nodes[p].child = kids[0];
		for (k = 0; k + 1 < n; k++)
			f->nodes[kids[k]].next = kids[k + 1];
		f->nodes[kids[n - 1]].next = NONE;
	}
	free(kids);
	f->finished = true;
	return 0;
}

int flame__finish_lean(struct flame *f)
{
	return f ? finish_order(f) : -EINVAL;
}

/* The public tree: one flame_node per node, children and line arrays in one
 * block each, names pointing into the interned texts. */
static int make_public(struct flame *f)
{
	size_t i, nk = 0, nl = 0, j;
	uint32_t c, l;

	free(f->pub);
	free(f->pubkids);
	free(f->publines);
	f->pubkids = NULL;
	f->publines = NULL;
	f->pub = calloc(f->nnodes, sizeof(*f->pub));
	f->pubkids = malloc((f->nnodes > 1 ? f->nnodes - 1 : 1) * sizeof(*f->pubkids));
	f->publines = calloc(f->nlines ? f->nlines : 1, sizeof(*f->publines));
	if (!f->pub || !f->pubkids || !f->publines)
		return -ENOMEM;
	f->nends = 0;
	f->endslots = 0;
	for (i = 0; i < f->nnodes; i++) {
		const struct cnode *cn = &f->nodes[i];
		struct flame_node *pn = &f->pub[i];
		const struct text *t = &f->texts[cn->text];

		pn->name = t->text;
		pn->frame = t->frame;
		for (j = 0; j < 2; j++) {
			const struct cnt *k = j ? (f->cnt1 ? &f->cnt1[i] : &zero) : &cn->c0;

			pn->self[j] = k->self;
			pn->total[j] = k->total;
		}
		pn->parent = cn->parent == NONE ? NULL : &f->pub[cn->parent];
		pn->depth = pn->parent ? pn->parent->depth + 1 : 0; /* parents come first */
		pn->repeat = by_function(f, &t->frame) ? 1 : cn->rn;
		pn->children = f->pubkids + nk;
		for (c = cn->child; c != NONE; c = f->nodes[c].next)
			f->pubkids[nk++] = &f->pub[c];
		pn->nchildren = (uint32_t)(f->pubkids + nk - pn->children);
		if (!pn->nchildren)
			pn->children = NULL;
		pn->lines = NULL;
		if (by_function(f, &t->frame) && cn->rn) {
			pn->lines = f->publines + nl;
			pn->nlines = cn->rn;
			for (l = cn->lines; l < cn->lines + cn->rn; l++, nl++)
				flame__view_line(f, l, &f->publines[nl]);
		}
		if (i && (pn->self[0] || pn->self[1])) {
			f->nends++;
			f->endslots += pn->depth;
		}
	}
	return 0;
}

int flame__finish(struct flame *f)
{
	if (!f)
		return -EINVAL;
	return finish_order(f) ?: make_public(f);
}

const struct flame_node *flame__root(const struct flame *f)
{
	return f->pub;
}

uint64_t flame__total(const struct flame *f, unsigned side)
{
	if (side > 1 || (side && !f->cnt1))
		return 0;
	return side ? f->cnt1[0].total : f->nodes[0].c0.total;
}

size_t flame__size(const struct flame *f)
{
	return f->nnodes;
}

size_t flame__bytes(const struct flame *f)
{
	size_t b;

	if (!f)
		return 0;
	b = sizeof(*f) + f->nodes_cap * sizeof(*f->nodes) + f->cnt1_cap * sizeof(*f->cnt1) +
	    f->textcap * sizeof(*f->texts) + f->ttcap * sizeof(*f->ttable) +
	    f->fentcap * sizeof(*f->fents) + f->ftcap * sizeof(*f->ftable) +
	    f->tcap * sizeof(*f->table) + f->llcap * sizeof(*f->lline) +
	    (f->lccap[0] + f->lccap[1]) * sizeof(*f->lcnt[0]) + f->widecap * sizeof(*f->wide) +
	    f->imcap * sizeof(*f->imap) + f->keycap + f->arena_bytes;
	/* the id array's pages touched: store ids are dense from 1 */
	if (f->idirect)
		b += (size_t)f->idmax * sizeof(*f->idirect);
	if (f->pub)
		b += flame__public_bytes(f);
	return b;
}

size_t flame__public_bytes(const struct flame *f)
{
	return f ? f->nnodes * (sizeof(*f->pub) + sizeof(*f->pubkids)) +
			       f->nlines * sizeof(*f->publines)
		 : 0;
}

bool flame__has_twins(const struct flame *f)
{
	return f->twins;
}

size_t flame__ntexts(const struct flame *f)
{
	return f->ntexts;
}

const char *flame__text(const struct flame *f, uint32_t id, size_t *len, uint32_t *kind)
{
	*len = f->texts[id].len;
	*kind = f->texts[id].frame.kind;
	return f->texts[id].text;
}

void flame__view(const struct flame *f, uint32_t id, struct flame_view *v)
{
	const struct cnode *cn = &f->nodes[id];
	const struct text *t = &f->texts[cn->text];
	unsigned s;

	v->name = t->text;
	v->name_len = t->len;
	v->kind = t->frame.kind;
	v->text = cn->text;
	v->repeat = by_function(f, &t->frame) ? 1 : cn->rn;
	v->nlines = by_function(f, &t->frame) ? cn->rn : 0;
	v->child = cn->child;
	v->next = cn->next;
	v->lines = v->nlines ? cn->lines : NONE;
	for (s = 0; s < 2; s++) {
		const struct cnt *k = s ? (f->cnt1 ? &f->cnt1[id] : &zero) : &cn->c0;

		v->self[s] = k->self;
		v->total[s] = k->total;
	}
}

void flame__view_line(const struct flame *f, uint32_t id, struct flame_line *out)
{
	unsigned s;

	out->line = f->lline[id];
	for (s = 0; s < 2; s++) {
		out->self[s] = f->lcnt[s] ? f->lcnt[s][id].self : 0;
		out->total[s] = f->lcnt[s] ? f->lcnt[s][id].total : 0;
	}
}

/* One function being summed by flame__top. */
struct fn_acc {
	const char *name; /* borrowed from the tree; the hash key */
	uint8_t kind;
	uint64_t self;
	uint64_t total;
	uint32_t on_path; /* nodes of this name on the path from the root to here */
	struct flame_function_line *lines; /* sorted by line */
	uint32_t nlines, linecap;
	UT_hash_handle hh;
};

struct top_walk {
	struct fn_acc *fns; /* uthash head */
	size_t n;
	size_t nlines; /* sum of the functions' nlines */
	unsigned side;
};

/* Adds a node's line breakdown to its function's: self always, total only from
 * the outermost node of the function on the path (recursion counted once, and
 * its samples go to the line of the outermost call). */
static int top_lines(struct top_walk *w, struct fn_acc *acc, const struct flame_node *n,
		     bool outermost)
{
	uint32_t i, lo, hi, mid;

	for (i = 0; i < n->nlines; i++) {
		const struct flame_line *l = &n->lines[i];
		struct flame_function_line *fl;

		if (!l->total[w->side])
			continue;
		lo = 0;
		hi = acc->nlines;
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (acc->lines[mid].line < l->line)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == acc->nlines || acc->lines[lo].line != l->line) {
			if (acc->nlines == acc->linecap) {
				size_t cap = acc->linecap ? (size_t)acc->linecap * 2 : 2;
				void *p;

				if (cap >= UINT32_MAX / 2)
					return -ENOMEM;
				p = reallocarray(acc->lines, cap, sizeof(*acc->lines));
				if (!p)
					return -ENOMEM;
				acc->lines = p;
				acc->linecap = (uint32_t)cap;
			}
			memmove(acc->lines + lo + 1, acc->lines + lo,
				(acc->nlines - lo) * sizeof(*acc->lines));
			acc->lines[lo] = (struct flame_function_line){ .line = l->line };
			acc->nlines++;
			w->nlines++;
		}
		fl = &acc->lines[lo];
		fl->self = sat_add(fl->self, l->self[w->side]);
		if (outermost)
			fl->total = sat_add(fl->total, l->total[w->side]);
	}
	return 0;
}

/* Depth is bounded by FLAME_MAX_DEPTH, so recursion is safe. */
static int top_visit(struct top_walk *w, const struct flame_node *n)
{
	struct fn_acc *acc = NULL, *found;
	uint32_t i;
	int err = 0;

	if (n->total[w->side] == 0)
		return 0; /* nothing below on this side */
	if (n->frame.kind != FLAME_ROOT && n->frame.kind != FRAME_PROCESS) {
		HASH_FIND_STR(w->fns, n->name, acc);
		if (!acc) {
			acc = calloc(1, sizeof(*acc));
			if (!acc)
				return -ENOMEM;
			acc->name = n->name;
			acc->kind = (uint8_t)n->frame.kind;
			HASH_ADD_KEYPTR(hh, w->fns, acc->name, strlen(acc->name), acc);
			HASH_FIND_STR(w->fns, n->name, found);
			if (found != acc) {
				free(acc);
				return -ENOMEM;
			}
			w->n++;
		}
		acc->self = sat_add(acc->self, n->self[w->side]);
		if (acc->on_path == 0)
			acc->total = sat_add(acc->total, n->total[w->side]);
		err = top_lines(w, acc, n, acc->on_path == 0);
		if (err)
			return err;
		acc->on_path++;
	}
	for (i = 0; i < n->nchildren && !err; i++)
		err = top_visit(w, n->children[i]);
	if (acc)
		acc->on_path--;
	return err;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct flame_function *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

int flame__top(const struct flame *f, unsigned side, struct flame_function **out, size_t *n)
{
	struct top_walk w = { .side = side };
	struct flame_function *arr = NULL;
	struct flame_function_line *lines;
	struct fn_acc *acc, *tmp;
	size_t i = 0, nfn;
	int err;

	if (side > 1 || !f->pub)
		return -EINVAL;
	err = top_visit(&w, f->pub);
	if (err)
		goto out_free;
	/* One block: the functions, then every function's lines. calloc(0) may
	 * return NULL; always hand back a freeable pointer. */
	nfn = w.n ? w.n : 1;
	arr = calloc(1, nfn * sizeof(*arr) + w.nlines * sizeof(*lines));
	if (!arr) {
		err = -ENOMEM;
		goto out_free;
	}
	lines = (struct flame_function_line *)(arr + nfn);
	HASH_ITER (hh, w.fns, acc, tmp) {
		arr[i].name = acc->name;
		arr[i].kind = acc->kind;
		arr[i].self = acc->self;
		arr[i].total = acc->total;
		if (acc->nlines) {
			memcpy(lines, acc->lines, acc->nlines * sizeof(*lines));
			arr[i].lines = lines;
			arr[i].nlines = acc->nlines;
			lines += acc->nlines;
		}
		i++;
	}
	qsort(arr, i, sizeof(*arr), cmp_fn);
	*out = arr;
	*n = i;
out_free:
	HASH_ITER (hh, w.fns, acc, tmp) {
		HASH_DEL(w.fns, acc);
		free(acc->lines);
		free(acc);
	}
	return err;
}

/* ---- stacks in text order -------------------------------------------------- */

struct stack_walk {
	struct flame_stack *stacks;
	const struct flame_node **pool; /* every stack's path, one after another */
	size_t n, used;
};

static void collect_stacks(const struct flame_node *n, struct stack_walk *w)
{
	const struct flame_node *p;
	uint32_t i;

	if (n->depth > 0 && (n->self[0] || n->self[1])) {
		struct flame_stack *st = &w->stacks[w->n++];
		const struct flame_node **path = w->pool + w->used;

		for (p = n; p->depth > 0; p = p->parent)
			path[p->depth - 1] = p;
		st->frames = path;
		st->nframes = n->depth;
		st->count[0] = n->self[0];
		st->count[1] = n->self[1];
		w->used += n->depth;
	}
	for (i = 0; i < n->nchildren; i++)
		collect_stacks(n->children[i], w);
}

/* The next byte of a stack's folded text at cursor (frame *fi, byte *off), 0 at the
 * end: frame names joined by ';'. */
static unsigned char text_next(const struct flame_stack *s, uint32_t *fi, size_t *off)
{
	const char *name;

	if (*fi >= s->nframes)
		return 0;
	name = s->frames[*fi]->name;
	if (name[*off])
		return (unsigned char)name[(*off)++];
	*off = 0;
	return ++*fi < s->nframes ? ';' : 0;
}

/* strcmp of two stacks' folded texts, without making them: equal path nodes are
 * equal text, so the comparison starts where the paths part. */
static int cmp_stack_text(const void *a, const void *b)
{
	const struct flame_stack *x = a, *y = b;
	uint32_t i = 0, fx, fy;
	size_t ox = 0, oy = 0;
	unsigned char cx, cy;

	while (i < x->nframes && i < y->nframes && x->frames[i] == y->frames[i])
		i++;
	if (i > 0 && (i == x->nframes || i == y->nframes)) /* one is a prefix: it ends */
		return x->nframes < y->nframes ? -1 : x->nframes > y->nframes;
	fx = fy = i;
	do {
		cx = text_next(x, &fx, &ox);
		cy = text_next(y, &fy, &oy);
	} while (cx && cx == cy);
	if (cx != cy)
		return cx < cy ? -1 : 1;
	/* equal texts on distinct paths (frames of two kinds with one text) */
	return x->frames[i]->frame.kind < y->frames[i]->frame.kind ? -1 : 1;
}

int flame__stacks(const struct flame *f, struct flame_stack **out, size_t *n)
{
	struct stack_walk w = { 0 };
	size_t nstacks = f->nends, slots = f->endslots; /* counted by the adds */

	*out = NULL;
	*n = 0;
	if (!f->pub)
		return -EINVAL;
	if (!nstacks)
		return 0;
	w.stacks = malloc(nstacks * sizeof(*w.stacks) + slots * sizeof(*w.pool));
	if (!w.stacks)
		return -ENOMEM;
	w.pool = (const struct flame_node **)(w.stacks + nstacks);
	collect_stacks(f->pub, &w);
	qsort(w.stacks, w.n, sizeof(*w.stacks), cmp_stack_text);
	*out = w.stacks;
	*n = w.n;
	return 0;
}
