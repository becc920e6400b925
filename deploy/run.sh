#!/usr/bin/env bash
# `make run`: the main job. For now the agent sampling every process of this host at
# 99 Hz and printing each 10 s window as folded stacks, until Ctrl-C.
set -euo pipefail
bin=${1:-build/smolder}
echo "run: sampling every process at 99 Hz; folded stacks every 10 s; Ctrl-C stops" >&2
exec "$bin" agent --frequency 99 --window 10 --output -
