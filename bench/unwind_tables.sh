#!/usr/bin/env bash
# Unwind table memory and build times, with build/bench/unwind_tables:
#   - the rows of every distinct executable file mapped on this host now;
#   - the time to build the tables of libc and of the libpythons here (pyenv's
#     3.11 and 3.12 shared libpython, Debian's /usr/bin/python3.11, which has
#     libpython linked in), each in a fresh process: first as the page cache has
#     it, then with the file's unmapped pages dropped from the cache first.
#
#   bash bench/unwind_tables.sh [ROUNDS]     (default 2; root; after `make`)
#
# "cold" is the first build in a fresh process (libdw's first use included);
# "warm" the median of 5 more builds in the same process. Wall and CPU time are
# both printed: on a loaded host the wall time is mostly waiting for a CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
build=build
[[ -x $build/bench/unwind_tables ]] || make -s $build/bench/unwind_tables >/dev/null
pyroot=$(pyenv root 2>/dev/null || echo /root/.pyenv)/versions
files=(/usr/lib/x86_64-linux-gnu/libc.so.6 /usr/bin/python3.11)
for v in 3.11 3.12; do
	f=$(ls -d "$pyroot"/$v*/lib/libpython$v.so.1.0 2>/dev/null | head -1 || true)
	[[ -n $f ]] && files+=("$f")
done

echo "unwind tables on $(hostname), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
$build/bench/unwind_tables host 12
for ((r = 1; r <= rounds; r++)); do
	echo "round $r:"
	for f in "${files[@]}"; do
		$build/bench/unwind_tables time "$f" 5 | sed 's/^/  as cached: /'
		$build/bench/unwind_tables time "$f" 5 drop | sed 's/^/  dropped:   /'
	done
done
