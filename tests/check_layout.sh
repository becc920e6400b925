#!/usr/bin/env bash
# The layout rules that `ls` promises (docs/architecture.md "Folder map"), checked on the sources:
#   - the includes between folders form no cycle;
#   - agent/ and collector/ are included by cli/ alone (tests/ and bench/ aside);
#   - only store/ includes <sqlite3.h>, and the rest reach it through store/store.h;
#   - only cli/ parses argv;
#   - the folded frame grammar has one parser and one printer (common/frame.c).
# Prints each violation and exits 1 if there is any.
set -uo pipefail
cd "$(dirname "$0")/.."

dirs=(bpf common store query collector agent cli)
bad=0
fail() {
	echo "layout: $*"
	bad=1
}

# folder -> folders it includes ("a/b.h" and "a/sub/b.h" both count as a)
declare -A edges
for d in "${dirs[@]}"; do
	deps=$(grep -rhoE '^#include "[a-z_]+/' --include='*.c' --include='*.h' "$d" 2>/dev/null |
		sed -E 's/#include "([a-z_]+)\//\1/' | sort -u | grep -vx "$d")
	edges[$d]=$(echo $deps)
done

# a cycle: a depth-first walk that meets a folder still on its path
declare -A state
visit() {
	local d=$1 n
	state[$d]=on
	for n in ${edges[$d]:-}; do
		if [[ ${state[$n]:-} == on ]]; then
			fail "include cycle through $d -> $n"
		elif [[ -z ${state[$n]:-} ]]; then
			visit "$n"
		fi
	done
	state[$d]=done
}
for d in "${dirs[@]}"; do
	[[ -z ${state[$d]:-} ]] && visit "$d"
done

for d in "${dirs[@]}"; do
	for n in ${edges[$d]:-}; do
		case $n in
		agent | collector)
			[[ $d == cli ]] || fail "$d/ includes $n/ (only cli/ may)"
			;;
		esac
	done
done

while read -r f; do
	[[ $f == store/* ]] || fail "$f includes sqlite3.h (only store/ may)"
done < <(grep -rl '#include <sqlite3.h>' "${dirs[@]}" 2>/dev/null)

while read -r hit; do
	fail "$hit: only store/store.h is the store's contract"
done < <(grep -rnE '#include "store/' "${dirs[@]}" 2>/dev/null | grep -v '^store/' |
	grep -v '#include "store/store.h"')

while read -r f; do
	[[ $f == cli/* ]] || fail "$f parses argv (only cli/ may)"
done < <(grep -rlE 'getopt|char \*\*argv|char \*argv\[\]' "${dirs[@]}" 2>/dev/null)

# The grammar's marks: the kernel suffix and the Python location "(file:line)".
while read -r hit; do
	fail "frame text made or read outside common/frame.c: $hit"
done < <(grep -rnE '"_\[k\]"|"_\[j\]"|" \(%s:%|" \("|:%u\)"|:%d\)"' --include='*.c' --include='*.h' \
	"${dirs[@]}" 2>/dev/null | grep -v '^common/frame\.[ch]:' | grep -v '^\S*:[0-9]*:\s*/\?\*')

if ((bad)); then
	exit 1
fi
echo "layout: ok (${dirs[*]})"
