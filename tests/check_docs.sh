#!/usr/bin/env bash
# Keeps the docs' sample outputs true: a fenced block right after a marker
#
#   <!-- golden: top.table 1-8 -->
#
# must equal those lines (all of them when no range is given) of
# tests/data/golden/top.table, the answer the real CLI printed for the golden
# fixture (tests/integration/test_golden.c writes and checks those files). A change
# to an answer then fails here until the docs show it. Exits 1 on any mismatch.
set -uo pipefail
cd "$(dirname "$0")/.."

bad=0
for doc in README.md docs/*.md; do
	while IFS=: read -r lineno rest; do
		spec=$(sed -E 's/.*<!-- golden: ([^ ]+)( ([0-9]+)-([0-9]+))? -->.*/\1 \3 \4/' <<<"$rest")
		read -r file first last <<<"$spec"
		golden=tests/data/golden/$file
		if [[ ! -f $golden ]]; then
			echo "docs: $doc:$lineno: no golden file $file"
			bad=1
			continue
		fi
		# the fenced block that follows the marker
		shown=$(awk -v start="$lineno" 'NR > start && /^```/ { if (in_block) exit; in_block = 1; next }
			in_block { print }' "$doc")
		if [[ -n $first ]]; then
			want=$(sed -n "${first},${last}p" "$golden")
		else
			want=$(cat "$golden")
		fi
		if [[ "$shown" != "$want" ]]; then
			echo "docs: $doc:$lineno: the block differs from $golden${first:+ lines $first-$last}:"
			diff <(echo "$want") <(echo "$shown") | head -20
			bad=1
		fi
	done < <(grep -n '^<!-- golden: [^ ]* *[0-9-]* *-->$' "$doc")
done
exit $bad
