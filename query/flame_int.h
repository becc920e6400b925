/* The flame tree's insides, shared by its files: flame.c (making a tree and
 * adding stacks to it), flame_intern.c (its memory: the arena, the tables, the
 * big arrays, the interned texts and frames), flame_finish.c (ranking, the
 * public tree and the views of a node) and flame_top.c (the walks of a finished
 * tree: flame__top, flame__stacks). Private to query/; see flame.h for the
 * contract and flame.c's head for the design. */
#ifndef SMOLDER_QUERY_FLAME_INT_H
#define SMOLDER_QUERY_FLAME_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

#define HASH_M 0x9e3779b97f4a7c15ULL

extern const struct cnt flame_zero; /* side 1's counts before any add to it */

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

/* The child-table hash of a child of text id text below parent. */
static inline uint32_t child_hash(uint32_t parent, uint32_t text)
{
	uint64_t x = (((uint64_t)parent << 32 | text) ^ 0x5bd1e9955bd1e995ULL) * HASH_M;

	x ^= x >> 29;
	return (uint32_t)((x * HASH_M) >> 32);
}

static inline void table_put(struct flame *f, uint32_t node)
{
	const struct cnode *nd = &f->nodes[node];
	uint32_t h = child_hash(nd->parent, nd->text);
	size_t i;

	for (i = h & (f->tcap - 1); f->table[i].node != NONE; i = (i + 1) & (f->tcap - 1))
		;
	f->table[i] = (struct slot){ .hash = h, .node = node };
	f->tused++;
}

/* Whether frames of this kind keep their line out of their node's identity. */
static inline bool by_function(const struct flame *f, const struct frame *fr)
{
	return f->gran == FLAME_BY_FUNCTION && fr->kind == FRAME_PYTHON;
}

/* a + b, saturated at INT64_MAX like the store's sums: a tree's totals must
 * never wrap (a wrapped parent is smaller than its child, and a renderer then
 * draws a box wider than the graph), whatever counts a folded file holds. */
static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_add_overflow(a, b, &r) || r > (uint64_t)INT64_MAX)
		return (uint64_t)INT64_MAX;
	return r;
}

/* ---- flame_intern.c ---- */

/* size bytes, 16-aligned, from f's arena; NULL when out of memory. */
void *flame_arena_alloc(struct flame *f, size_t size);

/* Double the table of texts (ttable), of frames (ftable) and of children
 * (table), rehashing their entries. Return 0 or -ENOMEM (the table unchanged). */
int flame_ttable_grow(struct flame *f);
int flame_ftable_grow(struct flame *f);
int flame_table_grow(struct flame *f);

/* Grows array *p of *cap elements of elem bytes to at least need, doubling; the
 * new elements are zero. Returns 0 or -ENOMEM (*p and *cap unchanged). */
int flame_big_grow(void **p, size_t *cap, size_t need, size_t elem);

/* Frees an array flame_big_grow() made (NULL with cap 0: nothing). */
void flame_big_free(void *p, size_t cap, size_t elem);

/* Room for one more node (all its arrays). Returns 0 or -ENOMEM. */
int flame_nodes_room(struct flame *f);

/* The text id of frame fr (line already dropped at function granularity): its
 * fields looked up, and its text made only for fields not seen before.
 * Returns 0 or -ENOMEM. */
int flame_frame_text(struct flame *f, const struct frame *fr, uint32_t *out);

#endif
