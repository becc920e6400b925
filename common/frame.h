/* A frame: one entry of a call stack, and its text in the folded format. This is
 * the one owner of the frame grammar (README "Reading the output"), the contract
 * users and scripts read:
 *
 *   kind      text                     fields
 *   PROCESS   "comm"                   name; always and only a stack's first frame
 *   KERNEL    "NAME_[k]"               name
 *   JIT       "NAME_[j]"               name: code a JIT generated, named by the
 *                                      process's perf map (perf's convention)
 *   PYTHON    "QUALNAME (FILE:LINE)"   name, file, line; QUALNAME and FILE non-empty,
 *                                      LINE canonical decimal (no sign, no leading
 *                                      zero but "0") at most 2^32-2. Split at the
 *                                      last " (" and then the last ':', so a
 *                                      qualname may hold " (" and a file ':'.
 *   PYTHON    "QUALNAME (FILE)"        name, file, line FRAME_NO_LINE: a frame at
 *                                      function granularity (query/flame.h), the
 *                                      line left out. Read so when the text after
 *                                      FILE's last ':' (if any) is not all digits
 *                                      and signs: "f (a:b.py)" is f in "a:b.py",
 *                                      while a malformed LINE ("f (a.py:012)",
 *                                      "f (a.py:-1)", "f (a.py:)") keeps the text
 *                                      native. To keep C++ names native too, FILE
 *                                      must look like a file: no '(' or ')', and a
 *                                      '/' or '.', or the form "<...>" ("<string>");
 *                                      "operator() (int)" and "f(void (*)(int))"
 *                                      stay native.
 *   NATIVE    anything else            name ("main", "libz.so.1+0x1f2", "[unknown]")
 *
 * frame_format() prints each kind by concatenation and frame_parse() reads it back;
 * text -> frame -> text is the identity for every string without ';' or a newline
 * (those separate frames and stacks). frame_sanitize() is the one rule that keeps
 * them out: ';' becomes ':' and every control character (newline included) '?';
 * the agent's folded text and the store's ingest apply it, so no stored or printed
 * frame can split into two frames or two lines. frame -> text -> frame keeps the
 * kind except for names that look like another kind's text (a native "f (a.py:1)"
 * or "f (a.py)"), and a Python frame without a line whose FILE ends in ":LINE" or
 * does not look like a file (above) comes back as another frame; which is why the
 * wire, the store and the query layer carry frames, and text is made only at the
 * edges.
 *
 * The kind numbers are the wire format's (schema/smolder.proto FrameKind) and the
 * store's (frames.kind): never renumber them.
 */
#ifndef SMOLDER_FRAME_H
#define SMOLDER_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum frame_kind {
	FRAME_NATIVE = 0,  /* user-space native function, or module+0xOFF */
	FRAME_KERNEL = 1,  /* kernel function */
	FRAME_PYTHON = 2,  /* Python function: name is the qualname */
	FRAME_PROCESS = 3, /* a stack's root: the process name */
	FRAME_JIT = 4,	   /* JIT-generated code, named by the process's perf map */
	FRAME_KIND_NR,
};

/* The line of a Python frame that has none: a frame at function granularity. Its
 * text is "QUALNAME (FILE)"; no LINE in text reads as this value. */
#define FRAME_NO_LINE UINT32_MAX

#define FRAME_KERNEL_SUFFIX "_[k]"
#define FRAME_JIT_SUFFIX    "_[j]"

/* Longest name or file a stored frame keeps, in bytes: longer ones are cut (at a
 * UTF-8 character boundary) when stored. Real symbols are far shorter (the agent
 * reads at most 511 bytes of a native name); long mangled C++/Rust names lose
 * their tail rather than the batch its samples. */
#define FRAME_MAX_NAME_LEN 1024

/* A frame whose strings are borrowed (from a batch, a store row or folded text):
 * name_len and file_len bytes, not necessarily NUL-terminated. */
struct frame {
	uint32_t kind; /* enum frame_kind */
	uint32_t line; /* PYTHON: line number or FRAME_NO_LINE; else 0 */
	const char *name;
	size_t name_len;
	const char *file; /* PYTHON: source file; else "" */
	size_t file_len;
};

/* Reads the text of one frame (len bytes, no ';'). first: it is a stack's first
 * frame, always a PROCESS. *out borrows from text. */
void frame_parse(const char *text, size_t len, bool first, struct frame *out);

/* Prints f's text into buf, truncated at len and NUL-terminated when len > 0
 * (snprintf-like). Returns the full length, so a caller can size a buffer. */
size_t frame_format(const struct frame *f, char *buf, size_t len);

/* The byte that stands for c in a frame's name or file: ':' for ';', '?' for a
 * control character (below 0x20, and 0x7f), c itself otherwise. */
char frame_sanitize_char(unsigned char c);

/* True when the n bytes at s need no change: at most FRAME_MAX_NAME_LEN bytes and
 * no byte that frame_sanitize_char() changes. */
bool frame_is_clean(const char *s, size_t n);

/* Writes the sanitized text of s (n bytes) to buf (FRAME_MAX_NAME_LEN + 1 bytes):
 * every byte through frame_sanitize_char(), cut to FRAME_MAX_NAME_LEN bytes without
 * splitting a UTF-8 sequence, NUL-terminated. Returns the length written. */
size_t frame_sanitize(const char *s, size_t n, char *buf);

/* True for a placeholder frame: a native frame whose name is a bracketed word the
 * agent writes where it has no name ("[unknown]", "[truncated]", "[incomplete]",
 * "[no unwind table]", "[python]", "[python: truncated]", "[python: unreadable]",
 * "[vdso]"): a native name that starts with '[' and ends with ']'. A flame tree
 * merges a run of equal ones into one node (query/flame.h). */
bool frame_is_placeholder(const struct frame *f);

/* A frame from NUL-terminated strings (file may be NULL). */
struct frame frame_make(enum frame_kind kind, const char *name, const char *file, uint32_t line);

#endif
