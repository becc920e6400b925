#!/usr/bin/env bash
# The layout rules that `ls` promises (docs/architecture.md "Folder map"), checked on the sources:
#   - the includes between folders form no cycle;
#   - agent/ and collector/ are included by cli/ alone (tests/ and bench/ aside);
#   - wire/ (the wire codec, batches, content ids) includes common/ alone, and
#     common/ does not include wire/;
#   - only store/ includes <sqlite3.h>, and the rest reach it through store/store.h;
#   - store/'s backends (store/sqlite/, store/clickhouse/) include nothing of each
#     other, store/'s shared files include neither, and the pieces of store/ form no
#     include cycle (a piece is X.c with its header X.h; store.h and backend.h,
#     the contracts, are pieces of their own);
#   - only cli/ parses argv;
#   - the folded frame grammar has one parser and one printer (common/frame.c).
#   - a pprof (profile.pb-c.h) is read by wire/push_unpack.[ch] and
#     wire/push_pprof.c alone and written by query/render_pprof.c alone, and the
#     push conversion's shared internals (wire/push_int.h, wire/push_unpack.h) are
#     included by wire/push*.c alone.
# Prints each violation and exits 1 if there is any.
set -uo pipefail
cd "$(dirname "$0")/.."

dirs=(bpf common wire store query collector agent cli)
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

for n in ${edges[wire]:-}; do
	[[ $n == common ]] || fail "wire/ includes $n/ (it may include common/ alone)"
done
for n in ${edges[common]:-}; do
	[[ $n == wire ]] && fail "common/ includes wire/ (wire/ builds on common/, not the reverse)"
done

while read -r f; do
	[[ $f == store/* ]] || fail "$f includes sqlite3.h (only store/ may)"
done < <(grep -rl '#include <sqlite3.h>' "${dirs[@]}" 2>/dev/null)

while read -r hit; do
	fail "$hit: only store/store.h is the store's contract"
done < <(grep -rnE '#include "store/' "${dirs[@]}" 2>/dev/null | grep -v '^store/' |
	grep -v '#include "store/store.h"')

# store/'s backend folders and its shared files
backends=(sqlite clickhouse)
while IFS=: read -r f _ inc; do
	inc=${inc#*\"}
	inc=${inc%\"*}
	case $f in
	store/*/*)
		from=${f#store/}
		from=${from%%/*}
		for b in "${backends[@]}"; do
			[[ $b != "$from" && $inc == store/$b/* ]] &&
				fail "$f includes $inc (a backend includes nothing of another)"
		done
		;;
	store/*)
		[[ $inc == store/*/* ]] && fail "$f includes $inc (store/'s shared files include no backend)"
		;;
	esac
done < <(grep -rnE '^#include "store/' --include='*.c' --include='*.h' store 2>/dev/null)

# the pieces of store/ (X.c and X.h are the piece X; store/store.h and
# store/backend.h are contracts, pieces of their own): piece -> pieces it includes
piece() {
	case $1 in
	store/store.h | store/backend.h) p=$1 ;;
	*) p=${1%.*} ;;
	esac
}
declare -A pedges pstate
while IFS=: read -r f _ inc; do
	inc=${inc#*\"}
	inc=${inc%\"*}
	piece "$f"
	a=$p
	piece "$inc"
	[[ $a == "$p" ]] || pedges[$a]+=" $p"
done < <(grep -rnE '^#include "store/' --include='*.c' --include='*.h' store 2>/dev/null)
pvisit() {
	local d=$1 n
	pstate[$d]=on
	for n in ${pedges[$d]:-}; do
		if [[ ${pstate[$n]:-} == on ]]; then
			fail "include cycle in store/ through $d -> $n"
		elif [[ -z ${pstate[$n]:-} ]]; then
			pvisit "$n"
		fi
	done
	pstate[$d]=done
}
for d in "${!pedges[@]}"; do
	[[ -z ${pstate[$d]:-} ]] && pvisit "$d"
done

while read -r f; do
	[[ $f == cli/* ]] || fail "$f parses argv (only cli/ may)"
done < <(grep -rlE 'getopt|char \*\*argv|char \*argv\[\]' "${dirs[@]}" 2>/dev/null)

# The grammar's marks: the kernel suffix and the Python location "(file:line)".
while read -r hit; do
	fail "frame text made or read outside common/frame.c: $hit"
done < <(grep -rnE '"_\[k\]"|"_\[j\]"|" \(%s:%|" \("|:%u\)"|:%d\)"' --include='*.c' --include='*.h' \
	"${dirs[@]}" 2>/dev/null | grep -v '^common/frame\.[ch]:' | grep -v '^\S*:[0-9]*:\s*/\?\*')

while read -r f; do
	case $f in
	wire/push_unpack.[ch] | wire/push_pprof.c | query/render_pprof.c) ;;
	*) fail "$f includes profile.pb-c.h (a pprof is read in wire/push_unpack.c and wire/push_pprof.c, written in query/render_pprof.c)" ;;
	esac
done < <(grep -rlE '^#include "profile\.pb-c\.h"' --include='*.c' --include='*.h' "${dirs[@]}" 2>/dev/null)
while read -r f; do
	[[ $f == wire/push*.[ch] ]] || fail "$f includes the push conversion's internals (only wire/push*.c may)"
done < <(grep -rlE '^#include "wire/push_(int|unpack)\.h"' --include='*.c' --include='*.h' "${dirs[@]}" \
	fuzz tests bench 2>/dev/null)

if ((bad)); then
	exit 1
fi
echo "layout: ok (${dirs[*]})"
