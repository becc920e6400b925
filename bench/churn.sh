#!/usr/bin/env bash
# The agent under process churn against bpftrace counting the same stacks, both
# measured over the same period.
#
#   bash bench/churn.sh [SECONDS] [RATE]      (defaults 20 and 200; root; after `make`)
#
# Load: build/workloads/churn RATE SECONDS: RATE fork+execs per second, every 10th
# child burning CPU in churn_burn() for 30 ms under the name "churnkid". Side by
# side, started before the load and stopped after it:
#   smolder agent -F 99 -w 10 -o -
#   bpftrace -e 'profile:hz:99 { @[kstack, ustack, comm] = count(); }
#                interval:s:10 { print(@); clear(@); }'
# Cost of each = utime+stime from the moment the load starts until both have printed
# the windows that cover it (11 s after the load ends), so start-up (BPF load,
# kallsyms; bpftrace's LLVM compile) is out of both figures: /proc/PID/stat at both
# ends for the agent; for bpftrace, which this Debian build (0.17) sometimes quits
# on its own after "failed to look up stack id" errors, its whole-life utime+stime
# (bash `times` of a wrapper) minus the ticks it had used when the load started.
# The script says so when bpftrace quit before the end. Neither
# figure holds the BPF programs' run time, which the kernel charges to the sampled
# tasks. The script also counts, in each tool's output, the samples of "churnkid"
# whose stack names churn_burn: names kept for short-lived processes.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
rate=${2:-200}
build=build
[[ -x $build/smolder && -x $build/workloads/churn ]] || make -s all $build/workloads/churn >/dev/null
command -v bpftrace >/dev/null || { echo "churn.sh: bpftrace is missing (apt-get install bpftrace)" >&2; exit 1; }
tmp=$(mktemp -d)
cleanup() {
	for p in ${agent:-} ${bt:-}; do kill -INT "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# utime+stime of PID in clock ticks (fields 14 and 15, counted after the ')' of comm).
ticks() { sed -E 's/.*\) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
hz=$(getconf CLK_TCK)

# Waits up to 60 s for a line matching $2 in file $1.
await() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "churn.sh: timed out waiting for '$2' in $1" >&2
	return 1
}

$build/smolder agent -F 99 -w 10 -o - >"$tmp/agent.folded" 2>"$tmp/agent.err" &
agent=$!
bash -c 'bpftrace -e "profile:hz:99 { @[kstack, ustack, comm] = count(); }
	interval:s:10 { print(@); clear(@); }" >"$1/bt.out" 2>"$1/bt.err"; times >"$1/bt.times"' \
	_ "$tmp" &
wrapper=$!
await "$tmp/agent.err" "sampling"
await "$tmp/bt.out" "Attaching"
bt=$(pgrep -P $wrapper -x bpftrace)

a0=$(ticks $agent)
b0=$(ticks $bt)
$build/workloads/churn "$rate" "$secs" 10 30 >"$tmp/churn.out"
sleep 11
a1=$(ticks $agent)
early=""
kill -0 $bt 2>/dev/null || early=" (bpftrace quit before the end)"
kill -INT $agent
kill -INT $bt 2>/dev/null || true
wait $agent $wrapper 2>/dev/null || true
agent=
bt=

agent_cpu=$(awk -v a="$a0" -v b="$a1" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz }')
# the children line of `times`: "XmY.YYYs XmZ.ZZZs"
bt_cpu=$(tail -1 "$tmp/bt.times" | awk -v a="$b0" -v hz="$hz" '{ split($1,u,"m"); split($2,s,"m");
	sub("s","",u[2]); sub("s","",s[2]); printf "%.2f", u[1]*60+u[2]+s[1]*60+s[2] - a / hz }')
ratio=$(awk -v a="$agent_cpu" -v b="$bt_cpu" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')

# Samples of churnkid, and those whose stack names churn_burn.
agent_kid=$(awk '$0 ~ /^churnkid;/ { n += $NF } END { print n + 0 }' "$tmp/agent.folded")
agent_named=$(awk '$0 ~ /^churnkid;.*;churn_burn(;|$| )/ { n += $NF } END { print n + 0 }' \
	"$tmp/agent.folded")
# bpftrace: one map entry per stack, "@[\n kstack \n ustack \n, comm]: count".
read -r bt_kid bt_named < <(awk '
	/^@\[/ { named = 0; next }
	/churn_burn/ { named = 1 }
	/^, churnkid\]: / { kid += $NF; if (named) nm += $NF }
	END { print kid + 0, nm + 0 }' "$tmp/bt.out")

cat <<EOF
agent under churn, $(cat "$tmp/churn.out") in ${secs} s ($rate/s), $(nproc) CPUs, 99 Hz, $(uname -r)
  smolder agent  utime+stime ${agent_cpu} s   churnkid samples ${agent_kid}, naming churn_burn ${agent_named}
  bpftrace       utime+stime ${bt_cpu} s   churnkid samples ${bt_kid}, naming churn_burn ${bt_named}${early}
  ratio agent / bpftrace  ${ratio}
EOF
