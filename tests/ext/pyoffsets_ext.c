/* A CPython extension module, _smolder_offsets, that tests/unit/test_pyproc.c compiles
 * at run time against each installed interpreter's own headers (internal ones
 * included, -DPy_BUILD_CORE_MODULE) and imports into that interpreter. Its one
 * function, offsets(), returns {name: offsetof() or sizeof()} for every struct field
 * the agent's offset table (agent/python/pyoffsets.c) claims to know, under the
 * names of struct py_offsets, so the table is compared with what the compiler says
 * of the interpreter's real structs rather than with itself. A field that version
 * does not have is left out of the dict. "code_basicsize" (the size the headers give
 * a code object's fixed part) and "headers_version" (their PY_VERSION_HEX) let the
 * caller check that these headers describe the running interpreter: they must equal
 * types.CodeType.__basicsize__ and sys.hexversion.
 *
 * Not built by the Makefile and not linked with smolder; one source for 3.9 to 3.13.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#include <frameobject.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#endif

#if PY_VERSION_HEX < 0x03090000 || PY_VERSION_HEX >= 0x030e0000
#error "this reference covers CPython 3.9 to 3.13"
#endif

static int put(PyObject *d, const char *name, size_t value)
{
	PyObject *v = PyLong_FromSize_t(value);
	int rc;

	if (!v)
		return -1;
	rc = PyDict_SetItemString(d, name, v);
	Py_DECREF(v);
	return rc;
}

#define PUT(name, value)                                                                           \
	do {                                                                                       \
		if (put(d, (name), (value)) < 0)                                                   \
			goto fail;                                                                 \
	} while (0)

static PyObject *offsets(PyObject *self, PyObject *unused)
{
	PyObject *d = PyDict_New();

	(void)self;
	(void)unused;
	if (!d)
		return NULL;
	PUT("headers_version", PY_VERSION_HEX);

	/* the thread list: _PyRuntime -> interpreters -> thread states */
	PUT("runtime_interp_head", offsetof(_PyRuntimeState, interpreters.head));
	PUT("interp_next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX < 0x030b0000
	PUT("interp_threads_head", offsetof(PyInterpreterState, tstate_head));
#else
	PUT("interp_threads_head", offsetof(PyInterpreterState, threads.head));
#endif
	PUT("tstate_next", offsetof(PyThreadState, next));
	PUT("tstate_thread_id", offsetof(PyThreadState, thread_id));

	/* the top frame and the frame chain */
#if PY_VERSION_HEX < 0x030b0000
	PUT("tstate_top", offsetof(PyThreadState, frame));
	PUT("frame_code", offsetof(PyFrameObject, f_code));
	PUT("frame_previous", offsetof(PyFrameObject, f_back));
	PUT("frame_lasti", offsetof(PyFrameObject, f_lasti));
	PUT("frame_self", offsetof(PyFrameObject, f_localsplus));
#else
#if PY_VERSION_HEX < 0x030d0000
	PUT("tstate_top", offsetof(PyThreadState, cframe));
	PUT("cframe_current", offsetof(_PyCFrame, current_frame));
	PUT("frame_code", offsetof(struct _PyInterpreterFrame, f_code));
	PUT("frame_lasti", offsetof(struct _PyInterpreterFrame, prev_instr));
#else
	PUT("tstate_top", offsetof(PyThreadState, current_frame));
	PUT("frame_code", offsetof(struct _PyInterpreterFrame, f_executable));
	PUT("frame_lasti", offsetof(struct _PyInterpreterFrame, instr_ptr));
#endif
	PUT("frame_previous", offsetof(struct _PyInterpreterFrame, previous));
#if PY_VERSION_HEX < 0x030c0000
	PUT("frame_entry", offsetof(struct _PyInterpreterFrame, is_entry));
#else
	PUT("frame_entry", offsetof(struct _PyInterpreterFrame, owner));
#endif
	PUT("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#endif

	/* code objects */
	PUT("code_filename", offsetof(PyCodeObject, co_filename));
	PUT("code_name", offsetof(PyCodeObject, co_name));
	PUT("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX < 0x030a0000
	PUT("code_linetable", offsetof(PyCodeObject, co_lnotab));
#else
	PUT("code_linetable", offsetof(PyCodeObject, co_linetable));
#endif
#if PY_VERSION_HEX < 0x030b0000
	PUT("code_varnames", offsetof(PyCodeObject, co_varnames));
	PUT("code_basicsize", sizeof(PyCodeObject));
#else
	PUT("code_qualname", offsetof(PyCodeObject, co_qualname));
	/* a variable-size object from 3.11: the fixed part ends at the bytecode */
	PUT("code_basicsize", offsetof(PyCodeObject, co_code_adaptive));
#endif

	/* objects */
	PUT("ob_type", offsetof(PyObject, ob_type));
	PUT("var_size", offsetof(PyVarObject, ob_size));
	PUT("bytes_data", offsetof(PyBytesObject, ob_sval));
	PUT("tuple_items", offsetof(PyTupleObject, ob_item));
	PUT("type_name", offsetof(PyTypeObject, tp_name));
	PUT("unicode_length", offsetof(PyASCIIObject, length));
	PUT("unicode_state", offsetof(PyASCIIObject, state));
	PUT("unicode_ascii_data", sizeof(PyASCIIObject));
	PUT("unicode_compact_data", sizeof(PyCompactUnicodeObject));
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}

static PyMethodDef methods[] = {
	{ "offsets", offsets, METH_NOARGS, "offsetof() of the fields smolder reads" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_smolder_offsets", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__smolder_offsets(void);

PyMODINIT_FUNC PyInit__smolder_offsets(void)
{
	return PyModule_Create(&module);
}
