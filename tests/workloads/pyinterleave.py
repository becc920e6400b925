"""Python calling C calling back into Python, for the interleaving tests of
tests/integration/test_agent_pyinterleave.c (CPython 3.9 to 3.13, none built with
frame pointers):

  py_outer_qsort -> ctypes -> libffi -> libc qsort (qsort_r, msort_with_tmp, ...)
      -> the ctypes closure -> py_callback_qsort
  py_outer_sorted -> sorted (builtin_sorted, list_sort_impl, ...) -> py_callback_sorted

The two alternate, about half the time each, until SIGTERM/SIGINT; each callback
burns a little CPU itself, so most samples under it are in its own Python frame
with the C frames of qsort or sorted between it and its py_outer_* caller. Prints
"ready" to stdout (flushed) after the first round, so a profiler started then
finds the interpreter up and both shapes running.
"""
import ctypes
import signal
import sys

stop = False


def on_signal(signum, frame):
    global stop
    stop = True


LIBC = ctypes.CDLL("libc.so.6")
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
LIBC.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, CMP]
LIBC.qsort.restype = None
N = 512


def py_callback_qsort(a, b):
    x = ctypes.c_int.from_address(a).value
    y = ctypes.c_int.from_address(b).value
    s = 0
    for i in range(60):
        s += i * x
    return (x > y) - (x < y)


CALLBACK = CMP(py_callback_qsort)


def py_outer_qsort(seed):
    arr = (ctypes.c_int * N)(*[(seed * 7919 + i * 104729) % 100003 for i in range(N)])
    LIBC.qsort(arr, N, ctypes.sizeof(ctypes.c_int), CALLBACK)
    return arr[0]


def py_callback_sorted(v):
    s = 0
    for i in range(60):
        s += i * v
    return s % 100003


def py_outer_sorted(seed):
    data = [(seed * 7919 + i * 104729) % 100003 for i in range(N * 4)]
    return sorted(data, key=py_callback_sorted)[0]


def main():
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    seed = 0
    while not stop:
        seed += 1
        py_outer_qsort(seed)
        py_outer_sorted(seed)
        if seed == 1:
            print("ready", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
