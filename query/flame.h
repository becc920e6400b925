/* Flame trees: folded stacks merged into a tree of frames, the shape every
 * rendering of a profile starts from (flame graph SVG/HTML, JSON, top functions).
 * A tree has two sides so that one structure also serves differential profiles:
 * side 0 is "the profile" (or "before" in a diff), side 1 is "after".
 *
 * Node names are frame texts as in the folded format (README "Reading the
 * output"); the kind of a frame is read off its text: the root's children are
 * processes, "name_[k]" is kernel, "qualname (file:line)" Python, anything else
 * native. Children are kept sorted by name (flamegraph.pl's alphabetical merge
 * order), so a rendering is a pure function of the tree.
 *
 * Ownership: the tree owns every node and name; nodes are valid until
 * flame__free(). Not thread-safe.
 */
#ifndef SMOLDER_FLAME_H
#define SMOLDER_FLAME_H

#include <stddef.h>
#include <stdint.h>

enum flame_kind {
	FLAME_ROOT = 0,    /* the synthetic root, named "all" */
	FLAME_PROCESS = 1, /* first frame of a stack: the process name */
	FLAME_NATIVE = 2,
	FLAME_KERNEL = 3,  /* "name_[k]" */
	FLAME_PYTHON = 4,
};

struct flame_node {
	const char *name;          /* the frame text as folded ("f_[k]", "q (f.py:3)") */
	uint8_t kind;              /* enum flame_kind */
	uint64_t self[2];          /* samples whose stack ends here, per side */
	uint64_t total[2];         /* samples at or below this node, per side */
	struct flame_node **children; /* sorted by name after flame__finish */
	uint32_t nchildren;
	struct flame_node *parent; /* NULL for the root */
};

struct flame;

int flame__new(struct flame **out);
void flame__free(struct flame *f);

/* Adds count samples of a folded stack ("comm;f1;f2") to side 0 or 1. Returns 0,
 * -EINVAL (empty stack, side > 1, a stack deeper than 2048 frames) or -ENOMEM. */
int flame__add(struct flame *f, const char *stack, uint64_t count, unsigned side);

/* Sorts children by name. Call once after the last add, before reading. */
void flame__finish(struct flame *f);

const struct flame_node *flame__root(const struct flame *f);

/* Total samples of a side (the root's total). */
uint64_t flame__total(const struct flame *f, unsigned side);

/* Number of nodes, root included. */
size_t flame__size(const struct flame *f);

/* The kind of a frame text at depth (0: the first frame of a stack, a process), as
 * flame__add classifies it. */
enum flame_kind flame_kind_of(const char *frame, int depth);

/* One function's share of a side: self = samples where it is the leaf; total =
 * samples whose stack holds it at least once (recursion counted once). */
struct flame_function {
	const char *name;
	uint8_t kind;
	uint64_t self;
	uint64_t total;
};

/* Functions of side `side`, sorted by self descending, then total, then name.
 * *out is malloc'd (caller frees the array; names belong to the tree). Process
 * frames are not functions and are left out, as are functions with no samples on
 * that side. Returns 0, -EINVAL (side > 1) or -ENOMEM. */
int flame__top(const struct flame *f, unsigned side, struct flame_function **out, size_t *n);

#endif
