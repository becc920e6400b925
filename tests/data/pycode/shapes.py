"""Code objects of known shapes for tests/unit/test_pycode.c (CPython 3.9-3.13).

Defines functions of known shapes (module level, methods, a nested function, a
lambda, a generator and its genexpr, non-ASCII names of every str kind, a long
function whose line table has big jumps, the module itself), then prints, for
each code object, what agent/pycode must say about it, as computed by CPython:

    code LABEL ADDR CODE_TYPE SELF_TYPE FIRSTLINENO NBYTES
    name EXPECTED NAME            (co_qualname; 3.9/3.10: pycode's self rule)
    file CO_FILENAME
    lines L0 L2 L4 ...            line of each even byte offset, from co_lines()
                                  (3.10+) or dis.findlinestarts (3.9)
    positions L0 L2 ...           3.11+ only: the line of co_positions()
    addr2line L0 L2 ...           PyCode_Addr2Line through ctypes, -1 kept
    table FIRSTLINENO HEX         the raw co_lnotab (3.9) / co_linetable
    end

"No line" (None, or -1 from PyCode_Addr2Line in the first two lists) is printed
as co_firstlineno, pycode's documented choice. Then "ready", and it serves
commands on stdin, one per line, until EOF:

    replace   frees the code object labelled "victim" and makes code objects of the
              same size until one lands at its address; prints
              "replaced ADDR hit|miss TRIES" and, on a hit, its record as
              "replacement"; then "ready".
"""
import collections
import ctypes
import dis
import gc
import sys

V = sys.version_info[:2]

addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int


def module_func(a, b):
    c = a + b
    return c * 2


class Shape:
    def area(self, k):
        return k * 3

    class Inner:
        def method(self):
            return 1


class Base:
    def base_method(self):
        return 2


class Derived(Base):
    pass


def outer():
    def inner(x):
        return x + 1

    return inner


square = lambda v: v * v


def größe(n):
    return n + 1


def 函数(n):
    return n + 2


def 𠀀(n):
    return n + 3


def gen(n):
    yield from (i * 2 for i in range(n))


def not_self(this):
    return this


def make_long():
    """long_func: a +201-line jump, a -202-line jump back to the loop head
    (3.10+), one line spanning far more than 255 bytes of bytecode, and a call
    whose last argument is 152 lines below its first line (a -152 jump back to
    the call, on every version)."""
    lines = ["def long_func(x):", "    total = 0", "    for i in range(3):",
             "        total += i"]
    lines += ["        # filler"] * 200
    lines += ["        total += x"]
    lines += ["    y = (" + " + ".join(["x"] * 200) + ")"]
    lines += ["    # filler"] * 300
    lines += ["    z = max(", "        x,"] + ["        # filler"] * 150 + ["        x)"]
    lines += ["    return total + y + z"]
    ns = {}
    exec(compile("\n".join(lines) + "\n", "long_generated.py", "exec"), ns)
    return ns["long_func"]


VICTIM_SRC = "def victim(a):\n    b = a * 7\n    return b - 1\n"


def compile_victim(filename):
    ns = {}
    exec(compile(VICTIM_SRC, filename, "exec"), ns)
    return ns


def find_const(code, name):
    for c in code.co_consts:
        if hasattr(c, "co_name") and c.co_name == name:
            return c
    raise LookupError(name)


def expected_name(code, self_type):
    if V >= (3, 11):
        return code.co_qualname
    if self_type is not None and code.co_varnames and code.co_varnames[0] == "self":
        return self_type.__name__.rsplit(".", 1)[-1] + "." + code.co_name
    return code.co_name


def expected_lines(code):
    n = len(code.co_code)
    first = code.co_firstlineno
    out = [first] * (n // 2)
    if V >= (3, 10):
        for start, end, line in code.co_lines():
            for off in range(start, min(end, n), 2):
                out[off // 2] = first if line is None else line
    else:
        starts = sorted(dis.findlinestarts(code))
        for off in range(0, n, 2):
            line = first
            for s, l in starts:
                if s <= off:
                    line = l
            out[off // 2] = line
    return out


def emit(label, code, self_type=None):
    first = code.co_firstlineno
    n = len(code.co_code)
    out = ["code %s %d %d %d %d %d" % (label, id(code), id(type(code)),
                                       id(self_type) if self_type else 0, first, n),
           "name " + expected_name(code, self_type),
           "file " + code.co_filename,
           "lines " + " ".join(map(str, expected_lines(code)))]
    if V >= (3, 11):
        pos = [first if p[0] is None else p[0] for p in code.co_positions()]
        out.append("positions " + " ".join(map(str, pos)))
    out.append("addr2line " + " ".join(str(addr2line(code, off)) for off in range(0, n, 2)))
    table = code.co_lnotab if V < (3, 10) else code.co_linetable
    out.append("table %d %s" % (first, table.hex()))
    out.append("end")
    sys.stdout.write("\n".join(out) + "\n")


long_func = make_long()
template = compile_victim("replacement.py")["victim"].__code__
victim_ns = compile_victim("victim.py")
# Same-size neighbours fill the victim's allocator pool, so that the pool neither
# becomes empty (and goes to another size class) when the victim is freed, nor
# hides behind other partly used pools: the freed block is then the next one the
# allocator hands out for that size.
pins = [template.replace(co_name="pin_%d" % i) for i in range(256)]

emit("module_func", module_func.__code__)
emit("method_self", Shape.area.__code__, Shape)
emit("method_noself", Shape.area.__code__)
emit("nested_class_method", Shape.Inner.method.__code__, Shape.Inner)
emit("inherited", Base.base_method.__code__, Derived)
emit("dotted_tp_name", Shape.area.__code__, collections.OrderedDict)
emit("first_arg_not_self", not_self.__code__, Shape)
emit("nested", outer().__code__)
emit("lambda", square.__code__)
emit("latin1", größe.__code__)
emit("ucs2", 函数.__code__)
emit("ucs4", 𠀀.__code__)
emit("generator", gen.__code__)
emit("genexpr", find_const(gen.__code__, "<genexpr>"))
emit("long", long_func.__code__)
emit("module", sys._getframe().f_code)
emit("victim", victim_ns["victim"].__code__)
print("ready", flush=True)


def replace():
    global victim_ns
    if victim_ns is None:
        print("replaced 0 miss 0")
        return []
    old = id(victim_ns["victim"].__code__)
    victim_ns = None
    gc.collect()
    keep = []
    for i in range(200000):
        kw = {"co_name": "repl_%d" % i, "co_firstlineno": 1000 + i}
        if V >= (3, 11):
            kw["co_qualname"] = "repl_%d" % i
        c = template.replace(**kw)
        if id(c) == old:
            print("replaced %d hit %d" % (old, i + 1))
            emit("replacement", c)
            keep.append(c)
            return keep
        keep.append(c)
    print("replaced %d miss %d" % (old, len(keep)))
    return keep


kept = []
for cmd in sys.stdin:
    if cmd.strip() == "replace":
        kept.append(replace())
    print("ready", flush=True)
