#!/usr/bin/env bash
# Agent overhead against `perf record -F 99 -a -g`, both measured in the same run
# over the same interval while both CPUs are busy.
#
#   bash bench/agent_overhead.sh [SECONDS]      (default 60; root; after `make`)
#
# Busy load: build/workloads/shapes with one thread per CPU. Then, side by side:
#   smolder agent -F 99 -w 10 -d SECONDS --bpf-stats -o FILE
#   perf record -F 99 -a -g -o FILE -- sleep SECONDS
# Cost of smolder = user+sys of the agent process + the BPF program's run time
# (bpf_prog_info.run_time_ns, which the kernel attributes to the interrupted tasks,
# not to the agent). Cost of perf = user+sys of perf record; in-kernel sampling and
# frame-pointer unwinding in the NMI handler is not in that figure (perf has no
# run-time counter for it), which favours perf. To compare like with like, the
# script also times `perf script` turning perf.data into stacks, the step perf
# needs to produce what the agent already emits (folded stacks).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
build=build
[[ -x $build/smolder && -x $build/workloads/shapes ]] || make -s all $build/workloads/shapes >/dev/null
tmp=$(mktemp -d)
ncpu=$(nproc)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	[[ -n ${load:-} ]] && kill "$load" 2>/dev/null || true
	sysctl -q kernel.bpf_stats_enabled="$old_stats"
	rm -rf "$tmp"
}
trap cleanup EXIT

# Seconds of user+sys of a command, from bash's `times` (children line).
cpu_of() {
	bash -c '"$@" >/dev/null 2>>'"$tmp"'/stderr; times' _ "$@" | tail -1 |
		awk '{ split($1,u,"m"); split($2,s,"m"); sub("s","",u[2]); sub("s","",s[2]);
		       printf "%.3f\n", u[1]*60+u[2]+s[1]*60+s[2] }'
}

sysctl -q kernel.bpf_stats_enabled=1
$build/workloads/shapes "$ncpu" >/dev/null &
load=$!

cpu_of $build/smolder agent -F 99 -w 10 -d "$secs" --bpf-stats -o "$tmp/agent.folded" \
	>"$tmp/agent.cpu" 2>&1 &
agent_job=$!
cpu_of perf record -q -F 99 -a -g -o "$tmp/perf.data" -- sleep "$secs" >"$tmp/perf.cpu" 2>&1 &
perf_job=$!
wait $agent_job $perf_job
kill "$load"; wait "$load" 2>/dev/null || true; load=

agent_cpu=$(tail -1 "$tmp/agent.cpu")
perf_cpu=$(tail -1 "$tmp/perf.cpu")
script_cpu=$(cpu_of perf script -i "$tmp/perf.data")
bpf_line=$(grep -o 'bpf: .*' "$tmp/stderr" | tail -1)
bpf_total=$(sed -E 's/.* ([0-9.]+) s total/\1/' <<<"$bpf_line")
bpf_mean=$(sed -E 's/.*runs, ([0-9.]+) ns mean.*/\1/' <<<"$bpf_line")
samples=$(grep -o 'total: .*' "$tmp/stderr" | sed -E 's/.*s, ([0-9]+) samples.*/\1/')

smolder_total=$(awk -v a="$agent_cpu" -v b="$bpf_total" 'BEGIN { printf "%.3f", a + b }')
perf_total=$(awk -v a="$perf_cpu" -v b="$script_cpu" 'BEGIN { printf "%.3f", a + b }')
ratio1=$(awk -v s="$smolder_total" -v p="$perf_cpu" 'BEGIN { printf "%.2f", s / p }')
ratio2=$(awk -v s="$smolder_total" -v p="$perf_total" 'BEGIN { printf "%.2f", s / p }')

cat <<EOF
agent overhead, ${secs} s, ${ncpu} CPUs busy, 99 Hz, $(uname -r)
  smolder agent        user+sys ${agent_cpu} s + BPF ${bpf_total} s (${bpf_mean} ns x run) = ${smolder_total} s, ${samples} samples
  perf record -a -g    user+sys ${perf_cpu} s
  perf script          user+sys ${script_cpu} s (perf.data -> stacks)
  ratio smolder / perf record                 ${ratio1}
  ratio smolder / (perf record + perf script) ${ratio2}
EOF
