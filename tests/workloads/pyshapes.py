"""A Python workload of known shape for the Python sampling tests.

    python pyshapes.py shares [SECONDS]   one thread: Burner.burn_a/b/c take 50/30/20 %
    python pyshapes.py mixed              threads with generators, asyncio, sorted(key=),
                                          deep recursion, zlib, and 200 idle threads;
                                          prints "ready" once every thread runs
    python pyshapes.py chunks SECONDS     recursion 1500 deep, over and over: on 3.11+
                                          every descent runs into data-stack chunks
                                          freshly mapped, whose pages past the newest
                                          frame the process has not touched yet

With PYSHAPES_CPU=N in the environment the process keeps to CPU N (mod the CPU
count). Runs until SIGTERM (or SECONDS of CPU for `shares`), then prints what it measured:
per function, the thread CPU seconds spent in it ("burn_a 1.234"), and "total".
Lines marked "# HOT_<NAME>" are where each burner spends its time; the tests read
the line numbers from this file, not from the code under test.
Works unchanged on CPython 3.9 to 3.13.
"""
import asyncio
import os
import signal
import sys
import threading
import time
import zlib

stop = threading.Event()
spent = {}


def spin(seconds):
    end = time.thread_time() + seconds
    x = 1
    while time.thread_time() < end: x = (x * 31 + 7) % 1000003  # HOT_SPIN
    return x


class Burner:
    def burn_a(self):
        t = time.thread_time()
        spin(0.005)  # CALL_A
        spent["burn_a"] = spent.get("burn_a", 0) + time.thread_time() - t

    def burn_b(self):
        t = time.thread_time()
        spin(0.003)
        spent["burn_b"] = spent.get("burn_b", 0) + time.thread_time() - t

    def burn_c(self):
        t = time.thread_time()
        spin(0.002)
        spent["burn_c"] = spent.get("burn_c", 0) + time.thread_time() - t

    def run(self, limit):
        start = time.thread_time()
        while not stop.is_set() and time.thread_time() - start < limit:
            self.burn_a()
            self.burn_b()
            self.burn_c()
        spent["total"] = time.thread_time() - start


def gen_inner():
    while not stop.is_set():
        spin(0.002)  # HOT_GEN
        yield 1


def gen_outer():
    yield from gen_inner()


def gen_driver():
    for _ in gen_outer():
        pass


async def coro_c():
    spin(0.002)  # HOT_CORO
    await asyncio.sleep(0)


async def coro_b():
    while not stop.is_set():
        await coro_c()


async def coro_a():
    await coro_b()


def coro_driver():
    asyncio.run(coro_a())


def key_func(v):
    spin(0.0005)  # HOT_KEY
    return -v


def sort_driver():
    while not stop.is_set():
        sorted(range(50), key=key_func)


def recurse(n):
    if n == 0:
        while not stop.is_set():
            spin(0.002)  # HOT_DEEP
        return 0
    return recurse(n - 1) + 1


def zlib_worker():
    data = os.urandom(1 << 20)
    while not stop.is_set():
        zlib.compress(data, 9)  # HOT_ZLIB


def idle_worker():
    stop.wait()


def mixed():
    sys.setrecursionlimit(10000)
    workers = [gen_driver, coro_driver, sort_driver, lambda: recurse(200), zlib_worker]
    threads = [threading.Thread(target=idle_worker) for _ in range(200)]
    threads += [threading.Thread(target=w) for w in workers]
    for t in threads:
        t.start()
    print("ready", flush=True)
    signal.sigwait([signal.SIGTERM, signal.SIGINT])
    stop.set()
    for t in threads:
        t.join()


def descend(n):
    if n:
        return descend(n - 1)
    return 0  # HOT_DESCEND


def chunks(seconds):
    sys.setrecursionlimit(10000)
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        descend(1500)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "shares"
    cpu = os.environ.get("PYSHAPES_CPU")
    if cpu is not None:  # keep two workloads measured side by side off each other's CPU
        os.sched_setaffinity(0, {int(cpu) % os.cpu_count()})
    if mode == "mixed":
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
        mixed()
        return
    if mode == "chunks":
        chunks(float(sys.argv[2]))
        return
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else 1e9
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    Burner().run(limit)
    for name in ("burn_a", "burn_b", "burn_c", "total"):
        print(name, "%.6f" % spent.get(name, 0.0))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
