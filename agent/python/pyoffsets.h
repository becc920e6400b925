/* CPython struct offsets, per minor version: a table for 3.9 to 3.12 (measured
 * against DWARF, the headers and live processes; see shared notes in
 * docs/python.md), and a parser for the _Py_DebugOffsets that CPython 3.13+ keeps
 * at the start of _PyRuntime, so newer versions need no table.
 *
 * A library: no I/O, no logging.
 */
#ifndef SMOLDER_PYOFFSETS_H
#define SMOLDER_PYOFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/python.h"

#define PY_VERSION_CODE(major, minor) (((major) << 16) | ((minor) << 8))
#define PY_DEBUG_OFFSETS_COOKIE	      "xdebugpy"
#define PY_DEBUG_OFFSETS_313_SIZE     584

/* Line table formats, by version. */
enum py_linetable_kind {
	PY_LINETABLE_LNOTAB = 0,    /* 3.9 co_lnotab */
	PY_LINETABLE_310 = 1,	    /* 3.10 co_linetable (PEP 626) */
	PY_LINETABLE_LOCATIONS = 2, /* 3.11+ location table */
};

struct py_offsets {
	unsigned version;    /* PY_VERSION_CODE(3, minor) */
	struct py_proc walk; /* for the BPF walker; runtime/none_addr per process */
	/* code objects */
	uint32_t code_filename;
	uint32_t code_name;
	uint32_t code_qualname;	   /* 0: none before 3.11 */
	uint32_t code_linetable;   /* co_lnotab (3.9) or co_linetable */
	uint32_t code_firstlineno; /* int */
	uint32_t code_varnames;	   /* 3.9/3.10 co_varnames tuple (for Class.method), else 0 */
	uint8_t linetable_kind;	   /* enum py_linetable_kind */
	/* objects */
	uint32_t ob_type;	       /* PyObject.ob_type */
	uint32_t var_size;	       /* PyVarObject.ob_size (bytes length, tuple size) */
	uint32_t bytes_data;	       /* PyBytesObject.ob_sval */
	uint32_t tuple_items;	       /* PyTupleObject.ob_item */
	uint32_t type_name;	       /* PyTypeObject.tp_name (const char *) */
	uint32_t unicode_length;       /* PyASCIIObject.length */
	uint32_t unicode_state;	       /* PyASCIIObject.state bitfield */
	uint32_t unicode_ascii_data;   /* compact ASCII: data at sizeof(PyASCIIObject) */
	uint32_t unicode_compact_data; /* compact non-ASCII: sizeof(PyCompactUnicodeObject) */
};

/* Fills *out from the built-in table for version (PY_VERSION_CODE). Returns 0, or
 * -ENOTSUP for a version the table does not cover. The table includes 3.13, for
 * cross-checking what the debug offsets say. */
int py_offsets__from_table(unsigned version, struct py_offsets *out);

/* Parses a copy of _Py_DebugOffsets (the first len bytes at &_PyRuntime). Returns 0,
 * -EINVAL when the cookie is wrong or an offset lies outside its struct, -ENOTSUP
 * for a layout this parser does not know (free-threaded builds, unknown minor
 * versions), -E2BIG when an offset does not fit the walker's 16-bit fields. */
int py_offsets__from_debug(const void *buf, size_t len, struct py_offsets *out);

#endif
