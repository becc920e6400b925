#!/usr/bin/env bash
# What the BPF program costs per sample when it walks user stacks by CFI tables,
# against today's frame-pointer walk (bpf_get_stack), at stack depths 10, 30 and
# 100, all in one run.
#
#   bash bench/unwind_cost.sh [SECONDS] [ROUNDS] [DEPTHS]
#                             (defaults 20, 2, "10 30 100"; root; after `make`)
#
# Workload: bench/deep.c, built here twice, -O2 -fomit-frame-pointer (deep-nofp)
# and -O2 -fno-omit-frame-pointer (deep-fp): one thread spinning under DEPTH frames
# (spin, descend x DEPTH-2, main; then libc's start frames), started at nice -10 so
# that it keeps a CPU on a shared host. For each round, each depth, in turn:
#   cfi/nofp  smolder agent --unwind cfi on deep-nofp
#   fp/fp     smolder agent --unwind fp  on deep-fp    (bpf_get_stack)
#   cfi/fp    smolder agent --unwind cfi on deep-fp
#   idle      smolder agent --unwind cfi on a sleeping process (no sample at all)
# each as `smolder agent -F 999 -w 10 -d SECONDS --python off --bpf-stats --pid PID`.
#
# ns per sample: the perf event fires on every CPU and the program returns early
# for other processes (and the idle task), so its mean run time mixes samples
# with early returns. The idle run measures an early return (f ns); then
#   ns/sample = (run_time_ns - (run_cnt - samples) * f) / samples.
# The script also prints the mean user frames per sample in the folded output and
# the share of samples whose stack reaches main, so a cheap walk that stops early
# would show.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
rounds=${2:-2}
depths=${3:-10 30 100}
build=build
[[ -x $build/smolder ]] || make -s all >/dev/null
tmp=$(mktemp -d)
work=
cleanup() {
	[[ -n $work ]] && kill "$work" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

mkdir -p $build/bench
for v in nofp:-fomit-frame-pointer fp:-fno-omit-frame-pointer; do
	out=$build/bench/deep-${v%%:*}
	[[ $out -nt bench/deep.c ]] ||
		gcc -std=c17 -O2 -g "${v#*:}" -Wall -Wextra -Werror -o "$out" bench/deep.c
done

# Runs the agent on pid $2 with --unwind $1; prints
# "samples runs run_ns frames_per_sample pct_main".
agent_on() {
	rm -f "$tmp/out.folded"
	$build/smolder agent -F 999 -w 10 -d "$secs" --python off --bpf-stats --unwind "$1" \
		--pid "$2" -o "$tmp/out.folded" 2>"$tmp/err"
	local samples runs mean
	samples=$(sed -nE 's/.*total: .* s, ([0-9]+) samples.*/\1/p' "$tmp/err")
	runs=$(sed -nE 's/.*bpf: ([0-9]+) program runs.*/\1/p' "$tmp/err")
	mean=$(sed -nE 's/.*bpf: .* runs, ([0-9.]+) ns mean.*/\1/p' "$tmp/err")
	touch "$tmp/out.folded" # none written when nothing was sampled
	# user frames: not the comm, not kernel ([k]), not markers such as [no unwind table]
	awk -v s="${samples:-0}" -v r="${runs:-0}" -v t="${mean:-0}" '
		{ n = $NF; k = split($0, f, ";"); sub(/ [0-9]+$/, "", f[k]); u = 0; m = 0
		  for (i = 2; i <= k; i++) {
			if (f[i] ~ /_\[k\]$/ || f[i] ~ /^\[/) continue
			u++; if (f[i] == "main") m = 1 }
		  frames += u * n; mains += m * n; cnt += n }
		END { printf "%d %d %.0f %.1f %.1f\n", s, r, t * r,
			     cnt ? frames / cnt : 0, cnt ? 100 * mains / cnt : 0 }' "$tmp/out.folded"
	cp "$tmp/err" "$tmp/last.err"
}

start() { # binary depth -> $work
	nice -n -10 "$build/bench/deep-$1" "$2" &
	work=$!
}
stop() {
	kill "$work"
	wait "$work" 2>/dev/null || true
	work=
}

echo "unwinding cost per sample, ${secs} s per run at 999 Hz, $(nproc) CPUs, $(uname -r)," \
	"load $(cut -d' ' -f1-3 /proc/loadavg) at start"
printf '  %-5s %-5s %-9s %-8s %-9s %-9s %-10s %-7s %-7s\n' round depth config samples \
	runs "f ns" "ns/sample" frames "% main"
for ((r = 1; r <= rounds; r++)); do
	for d in $depths; do
		declare -A res=()
		for cfg in cfi/nofp fp/fp cfi/fp idle; do
			case $cfg in
			idle)
				sleep 100000 &
				work=$!
				;;
			*) start "${cfg#*/}" "$d" ;;
			esac
			res[$cfg]=$(agent_on "$([[ $cfg == idle ]] && echo cfi || echo "${cfg%/*}")" "$work")
			stop
		done
		read -r _ f_runs f_ns _ _ <<<"${res[idle]}"
		f=$(awk -v a="$f_ns" -v b="$f_runs" 'BEGIN { printf "%.0f", b ? a / b : 0 }')
		for cfg in cfi/nofp fp/fp cfi/fp; do
			read -r s n ns fr pm <<<"${res[$cfg]}"
			per=$(awk -v s="$s" -v n="$n" -v ns="$ns" -v f="$f" \
				'BEGIN { printf "%.0f", s ? (ns - (n - s) * f) / s : 0 }')
			res[$cfg.per]=$per
			printf '  %-5s %-5s %-9s %-8s %-9s %-9s %-10s %-7s %-7s\n' "$r" "$d" "$cfg" \
				"$s" "$n" "$f" "$per" "$fr" "$pm"
		done
		printf '  %-5s %-5s ratio cfi/nofp : fp/fp %s, cfi/fp : fp/fp %s\n' "$r" "$d" \
			"$(awk -v a="${res[cfi/nofp.per]}" -v b="${res[fp/fp.per]}" 'BEGIN { printf "%.2f", a / b }')" \
			"$(awk -v a="${res[cfi/fp.per]}" -v b="${res[fp/fp.per]}" 'BEGIN { printf "%.2f", a / b }')"
		unset res
	done
done
echo "  load $(cut -d' ' -f1-3 /proc/loadavg) at end"
