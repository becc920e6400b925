/* CPython offsets: the 3.9-3.13 table and the _Py_DebugOffsets parser; see
 * pyoffsets.h. All numbers are for x86-64, default (GIL) builds. */
#include "agent/python/pyoffsets.h"

#include <errno.h>
#include <string.h>

/* Fields every supported version shares. */
static void common_objects(struct py_offsets *o, unsigned minor)
{
	o->ob_type = 8;
	o->var_size = 16;
	o->bytes_data = 32;
	o->tuple_items = 24;
	o->type_name = 24;
	o->unicode_length = 16;
	o->unicode_state = 32;
	/* 3.12 removed PyASCIIObject.wstr (and PyCompactUnicodeObject.wstr_length) */
	o->unicode_ascii_data = minor >= 12 ? 40 : 48;
	o->unicode_compact_data = minor >= 12 ? 56 : 72;
	o->code_filename = 112;
	o->code_name = 120;
	o->code_qualname = 128;
	o->code_linetable = 136;
	o->linetable_kind = PY_LINETABLE_LOCATIONS;
}

int py_offsets__from_table(unsigned version, struct py_offsets *out)
{
	struct py_offsets o = { .version = version };
	struct py_proc *w = &o.walk;
	unsigned minor = (version >> 8) & 0xff;

	if ((version >> 16) != 3 || minor < 9 || minor > 13)
		return -ENOTSUP;
	common_objects(&o, minor);
	w->version = version;
	w->tstate_next = 8;
	switch (minor) {
	case 9:
	case 10:
		w->runtime_interp_head = 32;
		w->interp_next = 0;
		w->interp_threads_head = 8; /* tstate_head */
		w->tstate_thread_id = 176;
		w->tstate_top = 24; /* PyThreadState.frame */
		w->top_kind = PY_TOP_DIRECT;
		w->frame_code = 32;	/* PyFrameObject.f_code */
		w->frame_previous = 24; /* f_back */
		w->frame_lasti = minor == 9 ? 104 : 96;
		w->lasti_kind = minor == 9 ? PY_LASTI_BYTES : PY_LASTI_UNITS;
		w->entry_kind = PY_ENTRY_NONE;
		w->frame_self = minor == 9 ? 360 : 352; /* f_localsplus[0] */
		o.code_filename = 104;
		o.code_name = 112;
		o.code_qualname = 0;
		o.code_linetable = 120; /* co_lnotab / co_linetable */
		o.code_firstlineno = 40;
		o.code_varnames = 72;
		o.linetable_kind = minor == 9 ? PY_LINETABLE_LNOTAB : PY_LINETABLE_310;
		break;
	case 11:
		w->runtime_interp_head = 40;
		w->interp_next = 0;
		w->interp_threads_head = 16;
		w->tstate_thread_id = 152;
		w->tstate_top = 56;    /* cframe */
		w->cframe_current = 8; /* _PyCFrame.current_frame */
		w->top_kind = PY_TOP_CFRAME;
		w->frame_code = 32;
		w->frame_previous = 48;
		w->frame_lasti = 56; /* prev_instr */
		w->lasti_kind = PY_LASTI_POINTER;
		w->frame_entry = 68; /* is_entry */
		w->entry_kind = PY_ENTRY_IS_ENTRY;
		w->code_adaptive = 184;
		o.code_firstlineno = 72;
		break;
	case 12:
		w->runtime_interp_head = 40;
		w->interp_next = 0;
		w->interp_threads_head = 72;
		w->tstate_thread_id = 136;
		w->tstate_top = 56; /* cframe */
		w->cframe_current = 0;
		w->top_kind = PY_TOP_CFRAME;
		w->frame_code = 0;
		w->frame_previous = 8;
		w->frame_lasti = 56; /* prev_instr */
		w->lasti_kind = PY_LASTI_POINTER;
		w->frame_entry = 70; /* owner */
		w->entry_kind = PY_ENTRY_OWNER;
		w->code_adaptive = 192;
		o.code_firstlineno = 68;
		break;
	case 13:
		w->runtime_interp_head = 632;
		w->interp_next = 7264;
		w->interp_threads_head = 7344;
		w->tstate_thread_id = 152;
		w->tstate_top = 72; /* current_frame */
		w->top_kind = PY_TOP_DIRECT;
		w->frame_code = 0; /* f_executable */
		w->frame_previous = 8;
		w->frame_lasti = 56; /* instr_ptr */
		w->lasti_kind = PY_LASTI_POINTER;
		w->frame_entry = 70; /* owner */
		w->entry_kind = PY_ENTRY_OWNER;
		w->code_adaptive = 200;
		o.code_firstlineno = 68;
		break;
	}
	*out = o;
	return 0;
}

/* Field positions inside the 3.13 _Py_DebugOffsets (all uint64_t). */
enum {
	DO_VERSION = 8,
	DO_FREE_THREADED = 16,
	DO_RUNTIME_SIZE = 24,
	DO_RUNTIME_INTERP_HEAD = 40,
	DO_INTERP_SIZE = 48,
	DO_INTERP_NEXT = 64,
	DO_INTERP_THREADS_HEAD = 72,
	DO_TSTATE_SIZE = 152,
	DO_TSTATE_NEXT = 168,
	DO_TSTATE_CURRENT_FRAME = 184,
	DO_TSTATE_THREAD_ID = 192,
	DO_FRAME_SIZE = 224,
	DO_FRAME_PREVIOUS = 232,
	DO_FRAME_EXECUTABLE = 240,
	DO_FRAME_INSTR_PTR = 248,
	DO_FRAME_OWNER = 264,
	DO_CODE_SIZE = 272,
	DO_CODE_FILENAME = 280,
	DO_CODE_NAME = 288,
	DO_CODE_QUALNAME = 296,
	DO_CODE_LINETABLE = 304,
	DO_CODE_FIRSTLINENO = 312,
	DO_CODE_ADAPTIVE = 344,
	DO_OBJECT_SIZE = 352,
	DO_OBJECT_OB_TYPE = 360,
	DO_TYPE_SIZE = 368,
	DO_TYPE_TP_NAME = 376,
	DO_TUPLE_SIZE = 400,
	DO_TUPLE_ITEMS = 408,
	DO_BYTES_SIZE = 512,
	DO_BYTES_OB_SIZE = 520,
	DO_BYTES_SVAL = 528,
	DO_UNICODE_SIZE = 536,
	DO_UNICODE_STATE = 544,
	DO_UNICODE_LENGTH = 552,
	DO_UNICODE_ASCII_SIZE = 560,
};

static uint64_t field(const unsigned char *buf, unsigned pos)
{
	uint64_t v;

	memcpy(&v, buf + pos, sizeof(v));
	return v;
}

/* Reads the offset at pos, checks it lies inside the struct whose size is at
 * size_pos, and that it fits 16 bits. */
static int member(const unsigned char *buf, unsigned pos, unsigned size_pos, uint64_t *out)
{
	uint64_t off = field(buf, pos), size = field(buf, size_pos);

	if (off >= size)
		return -EINVAL;
	if (off > 0xffff)
		return -E2BIG;
	*out = off;
	return 0;
}

int py_offsets__from_debug(const void *data, size_t len, struct py_offsets *out)
{
	const unsigned char *buf = data;
	struct py_offsets o = { 0 };
	struct py_proc *w = &o.walk;
	uint64_t v[32], version;
	unsigned minor;
	int err = 0, i = 0;

	if (len < PY_DEBUG_OFFSETS_313_SIZE || memcmp(buf, PY_DEBUG_OFFSETS_COOKIE, 8))
		return -EINVAL;
	version = field(buf, DO_VERSION);
	minor = (version >> 16) & 0xff;
	if ((version >> 24) != 3 || minor < 13)
		return -EINVAL;
	/* The layout is stable only within a minor version; 3.14 appends fields
	 * inside the sub-structs, which moves everything after them. */
	if (minor != 13 || field(buf, DO_FREE_THREADED))
		return -ENOTSUP;

	err = err ?: member(buf, DO_RUNTIME_INTERP_HEAD, DO_RUNTIME_SIZE, &v[i++]); /* 0 */
	err = err ?: member(buf, DO_INTERP_NEXT, DO_INTERP_SIZE, &v[i++]);	    /* 1 */
	err = err ?: member(buf, DO_INTERP_THREADS_HEAD, DO_INTERP_SIZE, &v[i++]);  /* 2 */
	err = err ?: member(buf, DO_TSTATE_NEXT, DO_TSTATE_SIZE, &v[i++]);	    /* 3 */
	err = err ?: member(buf, DO_TSTATE_THREAD_ID, DO_TSTATE_SIZE, &v[i++]);	    /* 4 */
	err = err ?: member(buf, DO_TSTATE_CURRENT_FRAME, DO_TSTATE_SIZE, &v[i++]); /* 5 */
	err = err ?: member(buf, DO_FRAME_EXECUTABLE, DO_FRAME_SIZE, &v[i++]);	    /* 6 */
	err = err ?: member(buf, DO_FRAME_PREVIOUS, DO_FRAME_SIZE, &v[i++]);	    /* 7 */
	err = err ?: member(buf, DO_FRAME_INSTR_PTR, DO_FRAME_SIZE, &v[i++]);	    /* 8 */
	err = err ?: member(buf, DO_FRAME_OWNER, DO_FRAME_SIZE, &v[i++]);	    /* 9 */
	err = err ?: member(buf, DO_CODE_ADAPTIVE, DO_CODE_SIZE, &v[i++]);	    /* 10 */
	err = err ?: member(buf, DO_CODE_FILENAME, DO_CODE_SIZE, &v[i++]);	    /* 11 */
	err = err ?: member(buf, DO_CODE_NAME, DO_CODE_SIZE, &v[i++]);		    /* 12 */
	err = err ?: member(buf, DO_CODE_QUALNAME, DO_CODE_SIZE, &v[i++]);	    /* 13 */
	err = err ?: member(buf, DO_CODE_LINETABLE, DO_CODE_SIZE, &v[i++]);	    /* 14 */
	err = err ?: member(buf, DO_CODE_FIRSTLINENO, DO_CODE_SIZE, &v[i++]);	    /* 15 */
	err = err ?: member(buf, DO_OBJECT_OB_TYPE, DO_OBJECT_SIZE, &v[i++]);	    /* 16 */
	err = err ?: member(buf, DO_TYPE_TP_NAME, DO_TYPE_SIZE, &v[i++]);	    /* 17 */
	err = err ?: member(buf, DO_TUPLE_ITEMS, DO_TUPLE_SIZE, &v[i++]);	    /* 18 */
	err = err ?: member(buf, DO_BYTES_OB_SIZE, DO_BYTES_SIZE, &v[i++]);	    /* 19 */
	err = err ?: member(buf, DO_BYTES_SVAL, DO_BYTES_SIZE, &v[i++]);	    /* 20 */
	err = err ?: member(buf, DO_UNICODE_STATE, DO_UNICODE_SIZE, &v[i++]);	    /* 21 */
	err = err ?: member(buf, DO_UNICODE_LENGTH, DO_UNICODE_SIZE, &v[i++]);	    /* 22 */
	if (err)
		return err;
	v[23] = field(buf, DO_UNICODE_ASCII_SIZE);
	if (v[23] == 0 || v[23] > 0xff)
		return -EINVAL;

	o.version = PY_VERSION_CODE(3, minor);
	w->version = o.version;
	w->runtime_interp_head = (uint16_t)v[0];
	w->interp_next = (uint16_t)v[1];
	w->interp_threads_head = (uint16_t)v[2];
	w->tstate_next = (uint16_t)v[3];
	w->tstate_thread_id = (uint16_t)v[4];
	w->tstate_top = (uint16_t)v[5];
	w->top_kind = PY_TOP_DIRECT;
	w->frame_code = (uint16_t)v[6];
	w->frame_previous = (uint16_t)v[7];
	w->frame_lasti = (uint16_t)v[8];
	w->lasti_kind = PY_LASTI_POINTER;
	w->frame_entry = (uint16_t)v[9];
	w->entry_kind = PY_ENTRY_OWNER;
	w->code_adaptive = (uint16_t)v[10];
	o.code_filename = (uint32_t)v[11];
	o.code_name = (uint32_t)v[12];
	o.code_qualname = (uint32_t)v[13];
	o.code_linetable = (uint32_t)v[14];
	o.code_firstlineno = (uint32_t)v[15];
	o.linetable_kind = PY_LINETABLE_LOCATIONS;
	o.ob_type = (uint32_t)v[16];
	o.type_name = (uint32_t)v[17];
	o.tuple_items = (uint32_t)v[18];
	o.var_size = (uint32_t)v[19];
	o.bytes_data = (uint32_t)v[20];
	o.unicode_state = (uint32_t)v[21];
	o.unicode_length = (uint32_t)v[22];
	o.unicode_ascii_data = (uint32_t)v[23];
	/* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject. */
	o.unicode_compact_data = (uint32_t)v[23] + 16;
	*out = o;
	return 0;
}
