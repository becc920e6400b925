#!/usr/bin/env bash
# Refreshes the vendored uPlot (the UI's timeline) from the npm registry: installs
# exactly what package-lock.json names (versions and hashes) into a temporary
# directory, no install scripts, and copies the minified build, its CSS and its
# license here. The files are checked in: building the collector never reaches the
# network. To move to another version, change package.json, run
# `npm install --package-lock-only` here, then this script, and read the diff.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
cp "$tmp/node_modules/uplot/dist/uPlot.iife.min.js" "$tmp/node_modules/uplot/dist/uPlot.min.css" "$here/"
cp "$tmp/node_modules/uplot/LICENSE" "$here/uPlot.LICENSE"
