/* Flame trees: stacks of frames merged into a tree, the shape every rendering of a
 * profile starts from (flame graph SVG/HTML, JSON, folded, pprof, speedscope, top
 * functions). A tree has two sides so that one structure also serves differential
 * profiles: side 0 is "the profile" (or "before" in a diff), side 1 is "after".
 *
 * A node is one frame (common/frame.h): children are merged when their kind and
 * folded text are equal. Each node has its text (frame_format's) and a frame of
 * that text, whose strings point into the text. Children are kept sorted by text
 * (flamegraph.pl's alphabetical merge order), so a rendering is a pure function of
 * the tree.
 *
 * Granularity: FLAME_BY_LINE (flame__new) tells frames apart by their full text,
 * so a Python function is one node per line ("f (a.py:3)", "f (a.py:4)").
 * FLAME_BY_FUNCTION (the query default) merges Python frames by kind, name and file:
 * the node's frame has line FRAME_NO_LINE and its text is "QUALNAME (FILE)", and
 * the lines seen go to the node's breakdown (lines/nlines): for each line L,
 * total = the samples that passed through this node while the frame was at L, and
 * self = those of them whose stack ended at this node. The entries' totals sum to
 * the node's total and their selfs to its self (frames that came with no line,
 * FRAME_NO_LINE, as from function-level folded text, are in no entry). Other kinds
 * have no line, so both granularities treat them alike.
 *
 * Placeholders: in both granularities a run of equal consecutive placeholder
 * frames (frame_is_placeholder(): a native frame named "[...]", such as
 * "[unknown]", "[truncated]", "[incomplete]", "[no unwind table]", "[python]",
 * "[python: truncated]", "[python: unreadable]") is one node, whose repeat is the
 * longest run any stack had there (a frame-pointer walk through code without frame
 * pointers gives up to 128 "[unknown]" in a row). The tree, hence every export
 * made from it (folded, speedscope, pprof), has the frame once; JSON says "repeat".
 * A run of two different placeholders is not merged.
 *
 * Two ways to read a finished tree: flame__finish() makes the public node tree
 * (struct flame_node, flame__root(), flame__stacks(), flame__top()), about 130
 * bytes a node more; flame__finish_lean() only orders the tree for flame__view(),
 * the compact reading that the JSON and folded renderers use (a day's 650 k nodes
 * take some 60 MB that way, line breakdowns included). flame__view() works after either.
 *
 * Ownership: the tree owns every node and name (a name is the tree's one copy of
 * that text, shared by every node of that key); nodes are valid until
 * flame__free() or the next add. Not thread-safe.
 */
#ifndef SMOLDER_FLAME_H
#define SMOLDER_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/frame.h"

#define FLAME_ROOT	FRAME_KIND_NR /* the kind of the synthetic root, which is no frame */
#define FLAME_MAX_DEPTH 2048	      /* frames per stack, the root not counted */
#define FLAME_NONE	UINT32_MAX    /* flame_view: no such node or line entry */

/* How a tree tells frames apart. */
enum flame_granularity {
	FLAME_BY_LINE,	   /* kind and folded text: "q (f.py:3)" and "q (f.py:4)" differ */
	FLAME_BY_FUNCTION, /* kind, name and file: a Python frame's line goes to the node's
			    * per-line breakdown (lines), its text has no line */
};

/* One source line's share of a node (FLAME_BY_FUNCTION, Python frames): the
 * samples that passed through the node while the frame was at that line. */
struct flame_line {
	uint32_t line;
	uint64_t self[2]; /* per side, as the node's */
	uint64_t total[2];
};

struct flame_node {
	const char *name;   /* the frame's folded text ("f_[k]", "q (f.py:3)", "q (f.py)"); "all" */
	struct frame frame; /* kind (FLAME_ROOT for the root) and parts, into name */
	uint64_t self[2];   /* samples whose stack ends here, per side */
	uint64_t total[2];  /* samples at or below this node, per side */
	struct flame_node **children; /* sorted by name after flame__finish */
	uint32_t nchildren;
	uint32_t depth;		   /* 0 for the root, 1 for a process, ... */
	struct flame_node *parent; /* NULL for the root */
	struct flame_line *lines;  /* FLAME_BY_FUNCTION, Python: per-line breakdown, sorted by
				    * line (see above); NULL or unused otherwise */
	uint32_t nlines;	   /* entries of lines (0 at FLAME_BY_LINE and for other kinds) */
	uint32_t repeat;	   /* a placeholder frame ("[unknown]") that stood for a run of this
				    * many identical frames in some stack (the longest run); 1 otherwise */
};

struct flame;

/* A tree of granularity FLAME_BY_LINE (flame__new) or g. */
int flame__new(struct flame **out);
int flame__new_granular(struct flame **out, enum flame_granularity g);
void flame__free(struct flame *f);

/* Adds count samples of a stack of n frames (root first; frames[0] is the process)
 * to side 0 or 1. Returns 0, -EINVAL (no frames, side > 1, more than
 * FLAME_MAX_DEPTH frames) or -ENOMEM; a failed add leaves no partial counts (at
 * worst nodes or line entries with zero counts). O(n) lookups: one per frame, and
 * a binary search of the node's lines for a Python frame at function granularity. */
int flame__add_frames(struct flame *f, const struct frame *frames, size_t n, uint64_t count,
		      unsigned side);

/* The same, with ids[i] an id of frames[i] (NULL: flame__add_frames): equal ids
 * must be equal frames, every field, over all the adds with ids to one tree (a
 * store's frame ids: store_stack_ids in store/store.h). A frame is then known by
 * its id: the frames a stack shares with the last one added (equal ids from the
 * root) are not looked at again, and a frame's key is made once per id. Same
 * results and errors as flame__add_frames; fastest when consecutive stacks share
 * their outer frames. */
int flame__add_frames_ids(struct flame *f, const struct frame *frames, const uint64_t *ids,
			  size_t n, uint64_t count, unsigned side);

/* The same for a folded stack ("comm;f1;f2"), read with frame_parse(). */
int flame__add(struct flame *f, const char *stack, uint64_t count, unsigned side);

/* Sorts children by name and makes the public node tree. Call after the last
 * add, before reading. Returns 0, -EINVAL (f NULL) or -ENOMEM (then only
 * flame__view() may read the tree). */
int flame__finish(struct flame *f);

/* Sorts children by name, for flame__view() only (flame__root() is then NULL
 * until flame__finish()). Returns 0, -EINVAL or -ENOMEM. */
int flame__finish_lean(struct flame *f);

/* The root of the public tree (after flame__finish, else NULL). */
const struct flame_node *flame__root(const struct flame *f);

/* Total samples of a side (the root's total). */
uint64_t flame__total(const struct flame *f, unsigned side);

/* Number of nodes, root included. */
size_t flame__size(const struct flame *f);

/* What the tree holds, in bytes, about (the tables' and arrays' capacities, the
 * arena's chunks, the pages of the id array in use, the public tree once made):
 * what a caller counts against a memory budget after each add. O(1). */
size_t flame__bytes(const struct flame *f);

/* What flame__finish() would add for the public tree, in bytes: known before it
 * allocates, so a budget can refuse it first. */
size_t flame__public_bytes(const struct flame *f);

/* ---- the compact reading (after flame__finish or flame__finish_lean) ---------- */

/* Node id 0 is the root; a node's children are a list (child, then next) in the
 * public tree's order (name, then kind). */
struct flame_view {
	const char *name;  /* the node's text, NUL-terminated, as flame_node's */
	size_t name_len;   /* strlen(name) */
	uint32_t kind;	   /* as flame_node's frame.kind */
	uint32_t text;	   /* the id of the text: < flame__ntexts(), equal for equal keys */
	uint32_t repeat;   /* as flame_node's */
	uint32_t child;	   /* first child's id, FLAME_NONE */
	uint32_t next;	   /* next sibling's id, FLAME_NONE */
	uint32_t lines;	   /* first line entry (flame__view_line), FLAME_NONE */
	uint32_t nlines;   /* line entries: lines, lines + 1, ... (as flame_node's) */
	uint64_t self[2];  /* as flame_node's */
	uint64_t total[2]; /* as flame_node's */
};

/* Fills *v with node id (0 or an id a view handed out). */
void flame__view(const struct flame *f, uint32_t id, struct flame_view *v);

/* Line entry id (a view's lines + i, i < nlines) into *out, as flame_node's
 * lines[i]. */
void flame__view_line(const struct flame *f, uint32_t id, struct flame_line *out);

/* Number of distinct texts, bound of flame_view's text (for per-text caches). */
size_t flame__ntexts(const struct flame *f);

/* Text id's text (NUL-terminated, *len bytes) and kind, as a view of a node of that
 * text gives them. */
const char *flame__text(const struct flame *f, uint32_t id, size_t *len, uint32_t *kind);

/* Whether two nodes' texts are equal with different kinds somewhere in the tree
 * (a native "f_[k]" and a kernel "f"): then the order of stacks by folded text is
 * not the tree's walk order, and render_folded sorts them (flame__stacks). */
bool flame__has_twins(const struct flame *f);

/* One stack of the tree: a node where samples end on either side, and the path
 * to it, root excluded (frames[0] is the process, frames[nframes - 1] the leaf). */
struct flame_stack {
	const struct flame_node *const *frames;
	uint32_t nframes;
	uint64_t count[2]; /* the leaf's self, per side */
};

/* Every stack of the tree in the order of their folded text (strcmp of
 * "comm;f1;f2", the order of a sorted folded file), so each renderer that lists
 * stacks writes the same order. *out is one malloc'd block (caller frees; NULL
 * when there are none); nodes belong to the tree. Call after flame__finish (which
 * succeeded).
 * Returns 0 or -ENOMEM. */
int flame__stacks(const struct flame *f, struct flame_stack **out, size_t *n);

/* One line of a function in a top table (one side). self: the samples whose leaf
 * was the function at this line; total: the samples counted in the function's
 * total whose outermost frame of the function was at this line (so a recursive
 * call's samples go to the line of the outermost call, once). The lines' selfs
 * sum to the function's self and their totals to its total (less the samples of
 * frames that had no line). */
struct flame_function_line {
	uint32_t line;
	uint64_t self;
	uint64_t total;
};

/* One function's share of a side: self = samples where it is the leaf; total =
 * samples whose stack holds it at least once (recursion counted once). Its name is
 * a node's text: at FLAME_BY_FUNCTION one row per Python function, with the lines
 * breakdown; at FLAME_BY_LINE one row per line, and no breakdown. */
struct flame_function {
	const char *name;
	uint8_t kind; /* enum frame_kind */
	uint64_t self;
	uint64_t total;
	const struct flame_function_line *lines; /* sorted by line; NULL when nlines is 0 */
	uint32_t nlines;
};

/* Functions of side `side`, sorted by self descending, then total, then name.
 * *out is one malloc'd block holding the functions and their lines (caller frees
 * *out; names belong to the tree). Process frames are not functions and are left
 * out, as are functions with no samples on that side (and lines with none). Returns
 * 0, -EINVAL (side > 1) or -ENOMEM. */
int flame__top(const struct flame *f, unsigned side, struct flame_function **out, size_t *n);

#endif
