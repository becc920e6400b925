#!/bin/bash
# Ingest of pprof pushes (the Pyroscope SDKs' POST /ingest) against the agent's
# wire, in one run (docs/benchmarks.md "Pushed pprof against the wire"): two
# collectors of the smolder binary given, each on a fresh SQLite file with an
# ingest token, and build/bench/ingest_pprof posting the same WINDOWS windows of
# the busy host to one as wire batches and to the other as one gzipped pprof per
# process and window, from CONNS connections. Everything it started is stopped and
# removed at the end.
#
#   bench/ingest_pprof.sh SMOLDER WINDOWS CONNS [BENCH]
#
# e.g. bench/ingest_pprof.sh build/smolder 90 4
set -euo pipefail
bin=$1 windows=$2 conns=$3 bench=${4:-build/bench/ingest_pprof}
dir=$(mktemp -d /tmp/smolder-ingest-pprof.XXXXXX)
token=bench-ingest-token
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$dir"
}
trap cleanup EXIT

# start NAME: a collector on DIR/NAME.db; sets url and pid
start() {
	"$bin" collector --db "$dir/$1.db" --listen 127.0.0.1:0 --ingest-token "$token" \
		2>"$dir/$1.log" &
	pid=$!
	pids+=("$pid")
	local port=
	for _ in $(seq 300); do
		port=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$dir/$1.log" | head -1)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || { cat "$dir/$1.log" >&2; exit 1; }
	url=http://127.0.0.1:$port
}
start wire
wurl=$url wpid=$pid
start pprof
purl=$url ppid=$pid
start host
"$bench" "$windows" "$conns" "$token" "$wurl" "$wpid" "$purl" "$ppid" "$url" "$pid"
