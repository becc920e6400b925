#!/usr/bin/env bash
# Runs every test binary under BUILD/asan/tests (unit tests and the integration
# tests that need root and a real kernel), counts cmocka's per-test results and ends
# with one summary line: "tests: N passed, N failed, N skipped".
set -uo pipefail
build=${1:-build}
export SMOLDER_BUILD=$build
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

passed=0 failed=0 skipped=0
broken=()
for t in "$build"/asan/tests/test_*; do
	[[ -x "$t" ]] || continue
	name=$(basename "$t")
	echo "== $name"
	out=$("$t" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	# Per-test lines come before cmocka's "[==========] N test(s) run." summary.
	read -r p f s < <(awk '/^\[==========\] [0-9]+ test\(s\) run/ { done = 1 }
		!done && /^\[       OK \]/ { p++ }
		!done && /^\[  FAILED  \]/ { f++ }
		!done && /^\[  SKIPPED \]/ { s++ }
		END { print p + 0, f + 0, s + 0 }' <<<"$out")
	passed=$((passed + p)) skipped=$((skipped + s)) failed=$((failed + f))
	# A crash or sanitizer report that cmocka could not count is a failure too.
	if ((rc != 0 && f == 0)); then
		failed=$((failed + 1))
		broken+=("$name (exit $rc)")
	elif ((f > 0)); then
		broken+=("$name")
	fi
done

if ((${#broken[@]})); then
	echo "failing: ${broken[*]}"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
((failed == 0 && passed > 0))
