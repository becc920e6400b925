#!/usr/bin/env bash
# The web UI's figures (docs/benchmarks.md "The web UI"): the release collector
# serves a stored day of the busy host (build/bench/ui_day) and
# tests/browser/ui_bench.js, in headless Chromium, times the navigation to the
# first painted flame graph of the last 24 h, the flame graph's draw, and a zoom's
# redraw. Needs build/smolder, build/bench/ui_day and the browser tests' Node
# packages (build/browser/node_modules).
#
#   bash bench/ui_bench.sh [DIR [RANGES [FRAGMENT]]]
#     DIR holds the day's store (default /tmp); RANGES, FRAGMENT: ui_bench.js's
#     (default 1h,24h; e.g. "&nodes=2000" to time another first max_nodes)
set -euo pipefail
dir=${1:-/tmp}
db=$dir/ui_day.db
port=${SMOLDER_UI_BENCH_PORT:-7391}
# the day ends when it was made and the page's ranges end now: an older day would
# leave the last hour empty, so it is made again (about 6 minutes)
if [[ ! -s $db || -n $(find "$db" -mmin +15) ]]; then build/bench/ui_day "$db"; fi
# a day's json tree (85 MB for 128k... nodes) is above the default answer cap of 64 MiB
build/smolder collector --db "$db" --listen "127.0.0.1:$port" --max-response-mb 256 2>"$dir/ui_bench.err" &
coll=$!
trap 'kill "$coll" 2>/dev/null; wait "$coll" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
	sleep 0.1 # polling interval of a bounded wait for start-up
done
NODE_PATH=build/browser/node_modules node tests/browser/ui_bench.js "http://127.0.0.1:$port/" "${2:-1h,24h}" "${3:-}"
