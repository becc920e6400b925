#!/usr/bin/env bash
# `make run`: the main job. `smolder up`: the collector on 127.0.0.1:7171 with the
# embedded SQLite store ./smolder.db, and the agent sampling every process of this
# host at 99 Hz, shipping a batch every 10 s to it, until Ctrl-C.
set -euo pipefail
bin=${1:-build/smolder}
cat >&2 <<'MSG'
run: smolder up: collector on 127.0.0.1:7171, database ./smolder.db, agent at 99 Hz.
run: query what is stored, e.g. the last 15 minutes as folded stacks:
run:   curl "http://127.0.0.1:7171/api/v1/folded?from=$(($(date +%s)-900))&to=$(date +%s)"
run: Ctrl-C stops both.
MSG
exec "$bin" up --db smolder.db --listen 127.0.0.1:7171 --spool-dir smolder-spool
