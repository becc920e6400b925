#!/usr/bin/env bash
# Whole-host agent CPU in steady state, process + BPF, with CFI unwinding and with
# frame pointers only, beside bpftrace counting the same stacks, all three in the
# same run on a busy host.
#
#   bash bench/unwind_overhead.sh [SECONDS] [WARMUP]   (defaults 60 and 25; root;
#                                                       after `make`; KEEP=1 keeps
#                                                       the outputs in a temp dir)
#
# Load (started first, all until the end): build/workloads/shapes with one thread
# per CPU; tests/workloads/pyshapes.py mixed on Debian's /usr/bin/python3 and, if pyenv has
# one, on a CPython 3.12 with a shared libpython; Debian's sqlite3 running a long
# recursive query. Then side by side, each sampling the whole host at 99 Hz:
#   smolder agent -F 99 -w 10 --bpf-stats -o -                 (default: --unwind cfi)
#   smolder agent -F 99 -w 10 --bpf-stats --unwind fp -o -
#   bpftrace -e 'profile:hz:99 { @[kstack, ustack, comm] = count(); }
#                interval:s:10 { print(@); clear(@); }'
# Debian's bpftrace 0.17 sometimes fails to print a window ("failed to look up stack
# id -17": a stack map collision), then closes its perf events and sits idle; the
# script says so when bpftrace printed that error, or a sampler holds fewer BPF
# programs at the end than at the start (its figure is then void: run again).
# The agents' --bpf-stats turn the kernel's BPF run-time counters on for every
# program, bpftrace's too. After WARMUP seconds (start-up: BPF loading, bpftrace's
# compile, the agents' first tables) the script reads, for each of the three, the
# process's utime+stime (/proc/PID/stat) and the run_time_ns of every BPF program
# it holds (prog_id in /proc/PID/fdinfo/*, then `bpftool prog show`), and again
# SECONDS later: cost = the two differences. Then it stops the agents with SIGINT
# and keeps their "unwinding:"/"unwind tables:" summaries, and kills bpftrace
# (interrupted, it resolves and prints every stack it holds: minutes of CPU here). While the load still
# runs it also prints build/bench/unwind_tables host: the tables of every file
# mapped on the busy host.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
warm=${2:-25}
build=build
[[ -x $build/smolder && -x $build/workloads/shapes && -x $build/bench/unwind_tables ]] ||
	make -s all $build/workloads/shapes $build/bench/unwind_tables >/dev/null
command -v bpftrace >/dev/null || { echo "unwind_overhead.sh: bpftrace is missing" >&2; exit 1; }
tmp=$(mktemp -d)
ncpu=$(nproc)
hz=$(getconf CLK_TCK)
loads=()
tools=()
cleanup() {
	for p in "${tools[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	for p in "${loads[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ -n ${KEEP:-} ]]; then echo "unwind_overhead.sh: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# Waits up to 120 s for a line matching $2 in file $1.
await() {
	local i
	for ((i = 0; i < 1200; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "unwind_overhead.sh: timed out waiting for '$2' in $1" >&2
	return 1
}

ticks() { sed -E 's/.*\) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }

# Sum of run_time_ns over the BPF programs whose fds pid $1 holds, and their count.
bpf_ns() {
	local ids
	ids=$(grep -hs '^prog_id:' /proc/"$1"/fdinfo/* | awk '{ print $2 }' | sort -u)
	[[ -z $ids ]] && { echo "0 0"; return; }
	bpftool prog show -j | /usr/bin/python3 -c '
import json, sys
ids = set(int(x) for x in sys.argv[2:])
progs = [p for p in json.load(sys.stdin) if p["id"] in ids]
with open(sys.argv[1], "a") as log:
    for p in progs:
        print(p["id"], p["name"], p.get("run_time_ns", 0), p.get("run_cnt", 0), file=log)
print(sum(p.get("run_time_ns", 0) for p in progs), len(progs))' "$tmp/bpf.$1.log" $ids
}

# The load.
$build/workloads/shapes "$ncpu" >/dev/null &
loads+=($!)
/usr/bin/python3 tests/workloads/pyshapes.py mixed >"$tmp/py1.out" 2>&1 &
loads+=($!)
py312=$( (pyenv root 2>/dev/null || echo /root/.pyenv) | sed 's|$|/versions|')
py312=$(ls -d "$py312"/3.12*/bin/python3.12 2>/dev/null | head -1 || true)
if [[ -n $py312 ]]; then
	"$py312" tests/workloads/pyshapes.py mixed >"$tmp/py2.out" 2>&1 &
	loads+=($!)
fi
sqlite3 :memory: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
	SELECT sum(x % 7) FROM (SELECT x FROM c LIMIT 100000000000);' >/dev/null &
loads+=($!)
await "$tmp/py1.out" ready

# The three samplers.
$build/smolder agent -F 99 -w 10 --bpf-stats -o - >"$tmp/cfi.out" 2>"$tmp/cfi.err" &
cfi=$!
tools+=($cfi)
$build/smolder agent -F 99 -w 10 --bpf-stats --unwind fp -o - >"$tmp/fp.out" 2>"$tmp/fp.err" &
fp=$!
tools+=($fp)
bpftrace -e 'profile:hz:99 { @[kstack, ustack, comm] = count(); }
	interval:s:10 { print(@); clear(@); }' >"$tmp/bt.out" 2>"$tmp/bt.err" &
bt=$!
tools+=($bt)
await "$tmp/cfi.err" sampling
await "$tmp/fp.err" sampling
await "$tmp/bt.out" Attaching
sleep "$warm"

declare -A t0 b0 t1 b1
for p in $cfi $fp $bt; do
	t0[$p]=$(ticks "$p")
	b0[$p]=$(bpf_ns "$p")
done
load0=$(cut -d' ' -f1 /proc/loadavg)
sleep "$secs"
for p in $cfi $fp $bt; do
	if ! kill -0 "$p" 2>/dev/null; then
		n=$([[ $p == "$cfi" ]] && echo cfi || { [[ $p == "$fp" ]] && echo fp || echo bt; })
		echo "unwind_overhead.sh: $n (pid $p) quit early; its stderr ends:" >&2
		tail -5 "$tmp/$n.err" >&2
		exit 1
	fi
	t1[$p]=$(ticks "$p")
	b1[$p]=$(bpf_ns "$p")
	if ((${b1[$p]#* } < ${b0[$p]#* })); then
		echo "WARNING: $(cat /proc/"$p"/comm) (pid $p) dropped BPF programs during the" \
			"interval (${b0[$p]#* } -> ${b1[$p]#* }): its figures are void"
	fi
	b0[$p]=${b0[$p]% *}
	b1[$p]=${b1[$p]% *}
done
load1=$(cut -d' ' -f1 /proc/loadavg)
if grep -q 'failed to look up stack id' "$tmp/bt.err"; then
	echo "WARNING: bpftrace failed to print a window (failed to look up stack id) and tore" \
		"down probes or maps: its figures are void (run again)"
fi

echo "tables of every file mapped on the busy host:"
$build/bench/unwind_tables host 8 | sed 's/^/  /'

# bpftrace prints its maps when interrupted, resolving every stack: minutes here.
kill -INT $cfi $fp
kill -KILL $bt
wait $cfi $fp $bt 2>/dev/null || true
tools=()

echo "unwinding overhead, steady state: ${secs} s after ${warm} s of warm-up, ${ncpu} CPUs," \
	"99 Hz, load ${load0} -> ${load1}, $(uname -r)"
printf '  %-22s %-10s %-10s %-10s %-8s\n' sampler "user+sys" BPF total "/ bpftrace"
bt_total=$(awk -v t="$((t1[$bt] - t0[$bt]))" -v b="$((b1[$bt] - b0[$bt]))" -v hz="$hz" \
	'BEGIN { printf "%.3f", t / hz + b / 1e9 }')
for row in "smolder --unwind cfi:$cfi" "smolder --unwind fp:$fp" "bpftrace:$bt"; do
	p=${row##*:}
	awk -v name="${row%:*}" -v t="$((t1[$p] - t0[$p]))" -v b="$((b1[$p] - b0[$p]))" \
		-v hz="$hz" -v bt="$bt_total" 'BEGIN { u = t / hz; k = b / 1e9;
		printf "  %-22s %-10.2f %-10.3f %-10.3f %-8.3f\n", name, u, k, u + k, (u + k) / bt }'
done
echo "  BPF programs (id name run_time_ns run_cnt), at start and end of the interval:"
for p in $cfi $fp $bt; do
	sed "s/^/    pid $p: /" "$tmp/bpf.$p.log"
done
for m in cfi fp; do
	echo "  agent --unwind $m:"
	grep -E 'total:|unwinding:|unwind tables:|bpf:' "$tmp/$m.err" | sed 's/^smolder: /    /'
done
