#!/usr/bin/env bash
# `smolder up` memory over time: runs smolder on this host beside about ten
# processes a new user would have (two Python services, a C program, gzip started
# every 3 s), samples the smolder process's memory every 10 s from /proc, and prints
# a table and the RSS slope over the second half of the run.
#
#   bash bench/up_rss.sh [SECONDS] [MODE]      (defaults: 540 up)
#
# MODE: up         `smolder up --db DIR/up.db` (collector and agent in one process)
#       agent      `smolder agent -o DIR/agent.folded` alone (no collector)
#       split      `smolder collector` and `smolder agent --collector`, both measured
# UP_QUERIES=1: every 10 s also ask for the last 15 minutes' flame graph (html) and
# folded profile, as a user looking at the profiler would (modes up and split).
# The environment passes through, so MALLOC_ARENA_MAX=2 bash bench/up_rss.sh ... and
# SMOLDER=path/to/smolder compare builds and allocator settings. Needs root (BPF).
set -euo pipefail

secs=${1:-540}
mode=${2:-up}
here=$(cd "$(dirname "$0")/.." && pwd)
smolder=${SMOLDER:-$here/build/smolder}
shapes=$here/build/workloads/shapes
pyshapes=$here/tests/workloads/pyshapes.py
python=${PYTHON:-python3}
dir=$(mktemp -d /tmp/smolder-uprss.XXXXXX)
pids=() # workloads and smolder processes, killed by pid at the end

cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null && kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	[[ -n ${SMOLDER_KEEP:-} ]] || rm -rf "$dir"
}
trap cleanup EXIT

[[ -x $smolder && -x $shapes ]] || { echo "up_rss: build first: make build/smolder build/workloads/shapes" >&2; exit 1; }

# The host: niced, so that the profiler, not the workload, is what competes with
# whatever else this machine runs.
nice -n 19 "$shapes" 1 >/dev/null & pids+=($!)
nice -n 19 "$python" "$pyshapes" mixed >/dev/null & pids+=($!)
nice -n 19 "$python" -c '
import hashlib, json, time
# a small "service": bursts of json and hashing, then idle
while True:
    d = [{"k": i, "v": str(i) * 10} for i in range(20000)]
    hashlib.sha256(json.dumps(d).encode()).hexdigest()
    time.sleep(0.2)
' & pids+=($!)
bash -c 'while :; do head -c 50M /dev/urandom | nice -n 19 gzip -1 > /dev/null; sleep 3; done' &
pids+=($!)

port=$((17000 + RANDOM % 20000))
case $mode in
up)
	"$smolder" up --db "$dir/up.db" --listen "127.0.0.1:$port" --spool-dir "$dir/spool" \
		2>"$dir/smolder.err" & watch=($!) ;;
agent)
	"$smolder" agent -o "$dir/agent.folded" 2>"$dir/smolder.err" & watch=($!) ;;
split)
	"$smolder" collector --db "$dir/split.db" --listen "127.0.0.1:$port" \
		2>"$dir/collector.err" & watch=($!)
	sleep 1
	"$smolder" agent --collector "http://127.0.0.1:$port" --spool-dir "$dir/spool" \
		2>"$dir/smolder.err" & watch+=($!) ;;
*) echo "up_rss: unknown mode $mode" >&2; exit 2 ;;
esac
pids+=("${watch[@]}")

kb() { awk -v k="$1:" '$1 == k { print $2 }' "$2" 2>/dev/null || echo 0; }

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, mode $mode, queries ${UP_QUERIES:-off}, MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-unset}"
printf '%6s' t
for p in "${watch[@]}"; do printf ' | %8s %8s %8s %8s %4s' "rss$p" anon file hwm thr; done
echo
log=$dir/rss.log
start=$(date +%s)
while :; do
	now=$(($(date +%s) - start))
	line=$(printf '%6d' "$now")
	for p in "${watch[@]}"; do
		if ! kill -0 "$p" 2>/dev/null; then
			echo "up_rss: smolder ($p) died; its log:" >&2
			cat "$dir"/*.err >&2
			exit 1
		fi
		s=/proc/$p/status
		rss=$(kb VmRSS "$s")
		line+=$(printf ' | %8d %8d %8d %8d %4d' "$rss" "$(kb RssAnon "$s")" \
			"$(kb RssFile "$s")" "$(kb VmHWM "$s")" "$(kb Threads "$s")")
		echo "$now $p $rss" >>"$log.data"
	done
	echo "$line"
	if [[ -n ${UP_QUERIES:-} && $mode != agent ]]; then
		t=$(date +%s)
		curl -sf -o /dev/null "http://127.0.0.1:$port/api/v1/flamegraph?from=$((t - 900))&to=$t&format=html" || true
		curl -sf -o /dev/null "http://127.0.0.1:$port/api/v1/folded?from=$((t - 900))&to=$t" || true
	fi
	((now >= secs)) && break
	sleep 10
done

# Least-squares slope of RSS (MB per minute) over the second half, per process.
for p in "${watch[@]}"; do
	awk -v p="$p" -v half=$((secs / 2)) '
	$2 == p { if (!first) first = $3; last = $3 }
	$2 == p && $1 >= half { n++; x = $1 / 60; y = $3 / 1024; sx += x; sy += y; sxx += x * x; sxy += x * y }
	END {
		slope = n > 1 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0
		printf "pid %s: RSS %.1f MB at start, %.1f MB at the end; slope over the second half %.2f MB/min (%d samples)\n",
			p, first / 1024, last / 1024, slope, n
	}' "$log.data"
done
grep -h "total:\|losses:" "$dir"/smolder.err 2>/dev/null || true
