#!/usr/bin/env bash
# `make run`: the main job. `smolder up`: the collector on 127.0.0.1:$SMOLDER_PORT
# (default 7171) with the embedded SQLite store ./smolder.db, and the agent
# sampling every process of this host at 99 Hz, shipping a batch every 10 s to it,
# until Ctrl-C. The web UI's URL is printed first. smolder up prints the exact query command for its port
# ("smolder: query with: SMOLDER_URL=... smolder flame --since 5m").
# `make run ARGS="--off-cpu on --label env=dev"` passes ARGS on to smolder up (any of its
# options: `smolder up --help`).
set -euo pipefail
bin=${1:-build/smolder}
shift || true
port=${SMOLDER_PORT:-7171}
cat >&2 <<MSG
run: web UI: http://127.0.0.1:$port/
run: smolder up: collector on 127.0.0.1:$port, database ./smolder.db, agent at 99 Hz.
run: query what is stored with the command smolder up prints below, e.g. in
run: another terminal:  SMOLDER_URL=http://127.0.0.1:$port $bin top --since 5m
run: Ctrl-C stops both.
MSG
exec "$bin" up --db smolder.db --listen "127.0.0.1:$port" --spool-dir smolder-spool "$@"
