"""Writes seeds for fuzz_python: the first byte is the CPython minor version - 9
(the harness's version selector), the rest a real line table of this
interpreter: co_lnotab on 3.9, co_linetable on 3.10+. Run by `make fuzz` with
every interpreter at hand: python seeds_python.py OUTDIR"""
import os
import sys


def sample(n):
    total = 0
    for i in range(n):
        if i % 3:
            total += i
        else:
            total -= 1
    return total


minor = sys.version_info[1]
out = sys.argv[1]
if sys.version_info[0] != 3 or not 9 <= minor <= 13:
    sys.exit(0)  # a version smolder does not read: no seeds from it
os.makedirs(out, exist_ok=True)
for fn in (sample, os.path.join, os.makedirs):
    code = fn.__code__
    table = code.co_lnotab if minor == 9 else code.co_linetable
    with open(os.path.join(out, "3.%d-%s" % (minor, fn.__name__)), "wb") as f:
        f.write(bytes([minor - 9]) + table)
