#!/usr/bin/env bash
# Whole-host agent CPU in steady state, process + BPF, with CFI unwinding and with
# frame pointers only, beside bpftrace counting the same stacks, all in the same
# run on a busy host.
#
#   bash bench/unwind_overhead.sh [SECONDS] [WARMUP]   (defaults 60 and 25; root;
#                                                       after `make`; KEEP=1 keeps
#                                                       the outputs in a temp dir)
#
# Load (started first, all until the end): build/workloads/shapes with one thread
# per CPU; tests/workloads/pyshapes.py mixed on Debian's /usr/bin/python3 and, if pyenv has
# one, on a CPython 3.12 with a shared libpython; Debian's sqlite3 running a long
# recursive query. Then side by side, each sampling the whole host at 99 Hz:
#   smolder agent -F 99 -w 10 --bpf-stats $AGENT_ARGS -o -     (default: --unwind cfi)
#   smolder agent -F 99 -w 10 --bpf-stats --unwind fp $AGENT_ARGS -o -
#   (AGENT_ARGS: more options for both agents, e.g. "--python off")
#   BPFTRACE_CACHE_USER_SYMBOLS=1 bpftrace -e 'profile:hz:99 {
#       @[kstack, ustack, comm] = count(); } interval:s:10 { print(@); clear(@); }'
# (BT_STOCK=1: without the variable.) bpftrace as shipped keeps a symbol cache
# per process; the variable makes it one per executable. It is needed: as
# shipped, Debian's bpftrace 0.17 (through its bcc) breaks within a window or two
# beside the agents. Its per-process cache keeps descriptor numbers it
# has already closed and later uses and closes them again, when they are its own
# maps and perf events (seen under strace: openat(3, "tmp/perf-PID.map") with 3
# its map, then close(4), its stack map); it prints "failed to look up stack id
# N (pid P): -9" for every stack and quits. The script says so, and that bpftrace's
# figure is void (run again), when it printed such errors, or when a sampler holds
# fewer BPF programs at the end than at the start. "failed to look up stack id
# -17" alone is a collision in bpftrace's stack map (bpf_get_stackid's -EEXIST):
# that stack prints empty. From bpftrace's start to the second reading the script
# starts no process (bash builtins only: /proc reads, read -t on a FIFO to sleep),
# so that the host's processes are the load's and the samplers'.
# The agents' --bpf-stats turn the kernel's BPF run-time counters on for every
# program, bpftrace's too. After WARMUP seconds (start-up: BPF loading, bpftrace's
# compile, the agents' first tables) the script reads, for each sampler, the
# process's utime+stime (/proc/PID/stat) and the run_time_ns of every BPF program
# it holds (/proc/PID/fdinfo/*), and again SECONDS later: cost = the two
# differences. Then it stops the agents with SIGINT and keeps their
# "unwinding:"/"unwind tables:" summaries, and kills bpftrace (interrupted, it
# resolves and prints every stack it holds: minutes of CPU here). While the
# load still runs it also prints build/bench/unwind_tables host: the tables of
# every file mapped on the busy host.
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

# Sleeps $1 seconds without starting a process (see above).
mkfifo "$tmp/never"
exec {never}<>"$tmp/never"
nap() { read -r -t "$1" -u "$never" _ || true; }

# Waits up to 120 s for a line matching the pattern $2 in file $1 (builtins only).
await() {
	local i line
	for ((i = 0; i < 1200; i++)); do
		if [[ -r $1 ]]; then
			while IFS= read -r line; do
				[[ $line == *$2* ]] && return 0
			done <"$1"
		fi
		nap 0.1
	done
	echo "unwind_overhead.sh: timed out waiting for '$2' in $1" >&2
	return 1
}

# Into the arrays named $2 and $3 at key $1: pid $1's utime+stime in ticks, and the
# run_time_ns summed over the BPF programs whose fds it holds (each program once);
# the programs go to $tmp/bpf.PID.log, and their number to nprogs[$1].
declare -A nprogs
declare -A void
read_costs() {
	local -n ticks_out=$2 ns_out=$3
	local stat f key val id ns cnt sum=0 n=0
	local -A seen=()
	: >>"$tmp/bpf.$1.log"
	if ! read -r stat 2>/dev/null <"/proc/$1/stat"; then
		void[$1]=1 ticks_out[$1]=0 ns_out[$1]=0
		echo "WARNING: pid $1 is gone: its figures are void"
		return
	fi
	read -r -a stat <<<"${stat##*) }"
	ticks_out[$1]=$((stat[11] + stat[12]))
	for f in /proc/"$1"/fdinfo/*; do
		id='' ns=0 cnt=0
		while read -r key val; do
			case $key in
			prog_id:) id=$val ;;
			run_time_ns:) ns=$val ;;
			run_cnt:) cnt=$val ;;
			esac
		done <"$f" 2>/dev/null || continue
		[[ -z $id || -n ${seen[$id]:-} ]] && continue
		seen[$id]=1
		echo "$id $ns $cnt" >>"$tmp/bpf.$1.log"
		sum=$((sum + ns))
		n=$((n + 1))
	done
	ns_out[$1]=$sum
	if ((n == 0)) || { [[ -n ${nprogs[$1]:-} ]] && ((n < nprogs[$1])); }; then
		void[$1]=1
		echo "WARNING: pid $1 holds $n BPF programs (${nprogs[$1]:-none} at the" \
			"interval's start): its figures are void"
	fi
	nprogs[$1]=$n
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

# The samplers.
$build/smolder agent -F 99 -w 10 --bpf-stats ${AGENT_ARGS:-} -o - >"$tmp/cfi.out" 2>"$tmp/cfi.err" &
cfi=$!
tools+=($cfi)
$build/smolder agent -F 99 -w 10 --bpf-stats --unwind fp ${AGENT_ARGS:-} -o - >"$tmp/fp.out" 2>"$tmp/fp.err" &
fp=$!
tools+=($fp)
await "$tmp/cfi.err" sampling
await "$tmp/fp.err" sampling
bt_env=(BPFTRACE_CACHE_USER_SYMBOLS=1)
[[ -n ${BT_STOCK:-} ]] && bt_env=()
env "${bt_env[@]}" bpftrace -e 'profile:hz:99 { @[kstack, ustack, comm] = count(); }
	interval:s:10 { print(@); clear(@); }' >"$tmp/bt.out" 2>"$tmp/bt.err" &
bt=$!
tools+=($bt)
await "$tmp/bt.out" Attaching
nap "$warm"

declare -A t0 b0 t1 b1
for p in $cfi $fp $bt; do
	read_costs "$p" t0 b0
done
read -r load0 _ </proc/loadavg
nap "$secs"
for p in $cfi $fp $bt; do
	if ! kill -0 "$p" 2>/dev/null; then
		n=$([[ $p == "$cfi" ]] && echo cfi || { [[ $p == "$fp" ]] && echo fp || echo bt; })
		echo "unwind_overhead.sh: $n (pid $p) quit early (run again); its stderr ends:" >&2
		tail -n 5 "$tmp/$n.err" >&2
		exit 1
	fi
	read_costs "$p" t1 b1
done
read -r load1 _ </proc/loadavg
if grep -q 'failed to look up stack id .*: -9$' "$tmp/bt.err"; then
	void[$bt]=1
	echo "WARNING: bpftrace lost its maps (failed to look up stack id ...: -9):" \
		"its figures are void (run again)"
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
cost() { # the seconds of process CPU, of BPF, and their sum of pid $1
	awk -v t="$((t1[$1] - t0[$1]))" -v b="$((b1[$1] - b0[$1]))" -v hz="$hz" \
		'BEGIN { printf "%.2f %.3f %.3f", t / hz, b / 1e9, t / hz + b / 1e9 }'
}
read -r _ _ bt_total <<<"$(cost "$bt")"
printf '  %-22s %-9s %-9s %-9s %s\n' sampler "user+sys" BPF total "/ bpftrace"
for row in "smolder --unwind cfi:$cfi" "smolder --unwind fp:$fp" "bpftrace:$bt"; do
	read -r u k tot <<<"$(cost "${row##*:}")"
	awk -v name="${row%:*}" -v u="$u" -v k="$k" -v tot="$tot" -v bt="$bt_total" \
		-v void="${void[$bt]:-}" 'BEGIN { printf "  %-22s %-9s %-9s %-9s %s\n",
		name, u, k, tot, void ? "void" : sprintf("%.3f", tot / bt) }'
done
echo "  BPF programs (id run_time_ns run_cnt), at start and end of the interval:"
for p in $cfi $fp $bt; do
	sed "s/^/    pid $p: /" "$tmp/bpf.$p.log"
done
for m in cfi fp; do
	echo "  agent --unwind $m:"
	grep -E 'total:|unwinding:|unwind tables:|bpf:' "$tmp/$m.err" | sed 's/^smolder: /    /'
done
