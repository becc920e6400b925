#!/usr/bin/env bash
# What walking Python stacks costs: the BPF program's mean run time per sample
# with and without the Python walker, at Python stack depths of 10 and 100, and
# the agent's CPU time profiling a busy Python process at 99 Hz.
#
#   bash bench/python_overhead.sh [SECONDS] [PYTHON]   (default 20, python3; root)
#
# For each depth D a Python process burns CPU in a function D frames deep, on
# every CPU (one process per CPU, so every sample lands in Python). The agent runs
# with --bpf-stats twice: --python off (native stacks only) and --python on.
# "ns/run" is bpf_prog_info.run_time_ns / run_cnt over that run.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
py=${2:-python3}
build=build
[[ -x $build/smolder ]] || make -s all >/dev/null
tmp=$(mktemp -d)
ncpu=$(nproc)
pids=()
cleanup() {
	((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/deep.py" <<'EOF'
import sys
def nest(n):
    if n <= 1:
        x = 0
        while True:
            x = (x * 31 + 7) % 1000003
    return nest(n - 1)
nest(int(sys.argv[1]))
EOF

# Seconds of user+sys of a command, from bash's `times` (children line).
cpu_of() {
	bash -c '"$@" >/dev/null 2>>'"$tmp"'/stderr; times' _ "$@" | tail -1 |
		awk '{ split($1,u,"m"); split($2,s,"m"); sub("s","",u[2]); sub("s","",s[2]);
		       printf "%.3f\n", u[1]*60+u[2]+s[1]*60+s[2] }'
}

run() { # depth python(on|off) -> "ns_per_run agent_cpu samples"
	: >"$tmp/stderr"
	local cpu
	cpu=$(cpu_of $build/smolder agent -F 99 -w 10 -d "$secs" --bpf-stats --python "$2" -o "$tmp/out.folded")
	local line ns samples
	line=$(grep -o 'bpf: .*' "$tmp/stderr" | tail -1)
	ns=$(sed -E 's/.*runs, ([0-9.]+) ns mean.*/\1/' <<<"$line")
	samples=$(grep -o 'total: .*' "$tmp/stderr" | sed -E 's/.*s, ([0-9]+) samples.*/\1/')
	echo "$ns $cpu $samples"
}

echo "python stack walking cost, ${secs} s per run, ${ncpu} CPUs busy in Python, 99 Hz, $($py --version 2>&1), $(uname -r)"
printf '  %-6s %-14s %-14s %-8s %-18s %-18s\n' depth "ns/run off" "ns/run on" ratio "agent cpu off" "agent cpu on"
for depth in 10 100; do
	pids=()
	for _ in $(seq "$ncpu"); do
		$py "$tmp/deep.py" "$depth" &
		pids+=($!)
	done
	read -r off_ns off_cpu off_n < <(run "$depth" off)
	read -r on_ns on_cpu on_n < <(run "$depth" on)
	kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true; pids=()
	ratio=$(awk -v a="$on_ns" -v b="$off_ns" 'BEGIN { printf "%.2f", a / b }')
	printf '  %-6s %-14s %-14s %-8s %-18s %-18s\n' "$depth" "$off_ns" "$on_ns" "$ratio" \
		"${off_cpu} s" "${on_cpu} s (${on_n} samples)"
done
