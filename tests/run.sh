#!/usr/bin/env bash
# Runs the test binaries it is given, in order: the Makefile passes its UNIT_TESTS
# and INTEG_TESTS lists (unit tests, and integration tests that need root and a real
# kernel), so a renamed test's old binary in BUILD/asan/tests is never run.
#
#   tests/run.sh BUILD [--workload FILE]... TEST_BINARY...
#
# Before running anything it checks that every workload and every test binary
# exists and that no binary is older than its source (a stale build): any of these
# missing fails the run at once. Each binary runs under coreutils `timeout`
# ($SMOLDER_TEST_TIMEOUT seconds, default 600; SIGKILL 10 s after the SIGTERM),
# with its output shown as it comes. From cmocka's per-test lines it counts passes,
# failures (FAILED, ERROR from a failed teardown, and a failed group setup or
# teardown, which cmocka 1.1 does not reflect in its exit status) and skips, and
# prints each skip with the "skipping ..." reason the test printed. A binary that exits
# non-zero without a counted failure (a crash, a sanitizer report, a failed group
# fixture, a timeout) or that reports no test at all counts as one failure, and so
# does one after which /dev/null or another standard device node is no longer a
# character device.
#
# A binary whose results fall short of the count cmocka announced ("Running N
# test(s)": it exited in the middle) or whose every test skipped counts as one
# failure too. With CI=true every skip not listed in tests/skips.allow (BINARY/TEST
# and the reason it is right on every CI machine) counts as a failure.
#
# The last line is exactly "tests: N passed, N failed, N skipped" (CI parses it);
# the exit status is 0 only with no failure and at least one pass.
set -uo pipefail

usage() {
	echo "usage: tests/run.sh BUILD [--workload FILE]... TEST_BINARY..." >&2
	exit 2
}

(($# >= 1)) || usage
build=$1
shift
workloads=() tests=()
while (($#)); do
	case $1 in
	--workload)
		(($# >= 2)) || usage
		workloads+=("$2")
		shift 2
		;;
	*)
		tests+=("$1")
		shift
		;;
	esac
done
((${#tests[@]})) || usage

export SMOLDER_BUILD=$build
# a run is every test of every binary: a filter left in the environment (see
# tests/testutil.h) would pass on a subset
unset SMOLDER_TEST_FILTER
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
limit=${SMOLDER_TEST_TIMEOUT:-600}
if ! [[ $limit =~ ^[1-9][0-9]*$ ]]; then
	echo "run.sh: SMOLDER_TEST_TIMEOUT wants whole seconds, got '$limit'" >&2
	exit 2
fi

# ---- prerequisites: all present and current, or nothing runs --------------------
problems=()
for w in "${workloads[@]}"; do
	[[ -f $w ]] || problems+=("missing workload $w (make $w)")
done
for t in "${tests[@]}"; do
	name=$(basename "$t")
	src=
	for d in tests/unit tests/integration; do
		[[ -f $d/$name.c ]] && src=$d/$name.c
	done
	if [[ ! -x $t ]]; then
		problems+=("missing test binary $t (make $t)")
	elif [[ -z $src ]]; then
		problems+=("$t has no source tests/{unit,integration}/$name.c: a stale binary")
	else
		deps=("$src" tests/testutil.h "$build/asan/libsmolder.a")
		[[ $src == tests/integration/* ]] && deps+=(tests/integration/agenttest.h)
		for dep in "${deps[@]}"; do
			[[ $dep -nt $t ]] && problems+=("$t is older than $dep: rebuild it (make $t)")
		done
	fi
done
if ((${#problems[@]})); then
	for p in "${problems[@]}"; do
		echo "run.sh: $p" >&2
	done
	echo "tests: 0 passed, ${#problems[@]} failed, 0 skipped"
	exit 1
fi

# ---- run ------------------------------------------------------------------------
passed=0 failed=0 skipped=0
broken=() skips=() times=() reports=()
nl=$'\n'
sanitizer='ERROR: (Address|Leak)Sanitizer|runtime error:' # the first line of a report
log=$(mktemp /tmp/smolder-run-XXXXXX)
trap 'rm -f "$log"' EXIT

for t in "${tests[@]}"; do
	name=$(basename "$t")
	echo "== $name"
	start=$(date +%s)
	timeout -k 10 "$limit" "$t" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	times+=("$name $(($(date +%s) - start))s")

	# Results are the lines that close a "[ RUN      ] name" with the same name,
	# before cmocka's "[==========] N test(s) run." (its summary repeats them).
	# A "skipping ..." line inside a test is that test's reason; one printed
	# before the first test (a group setup) is the reason of skips without one.
	summary=$(awk -v bin="$name" '
		function close_test(kind) {
			if (kind == "S")
				printf "SKIP\t%s/%s: %s\n", bin, cur,
					reason != "" ? reason : (pre != "" ? pre : "(no reason printed)")
			count[kind]++
			cur = ""
		}
		/^\[==========\] Running [0-9]+ test\(s\)/ { announced += $3; next }
		/^\[==========\] [0-9]+ test\(s\) run/ { done = 1 }
		done { next }
		/^\[ RUN      \] / { cur = substr($0, 14); reason = ""; next }
		# cmocka 1.1 exits 0 when only the group teardown failed
		cur == "" && /^\[  FAILED  \] GROUP (SETUP|TEARDOWN)$/ {
			count["F"]++
			printf "GROUP\t%s\n", tolower(substr($0, 14))
			next
		}
		/^[[:space:]]*[Ss]kipping/ {
			sub(/^[[:space:]]+/, "")
			if (cur == "") pre = $0; else reason = $0
			next
		}
		cur != "" && substr($0, 14) == cur {
			if (/^\[       OK \] /) close_test("P")
			else if (/^\[  FAILED  \] / || /^\[  ERROR   \] /) close_test("F")
			else if (/^\[  SKIPPED \] /) close_test("S")
		}
		END {
			if (cur != "")
				printf "NORESULT\t%s\n", cur
			printf "COUNTS\t%d\t%d\t%d\t%d\n", count["P"], count["F"], count["S"], announced
		}' "$log")
	IFS=$'\t' read -r _ p f s announced < <(grep '^COUNTS' <<<"$summary")
	while IFS=$'\t' read -r _ what; do
		skips+=("$what")
	done < <(grep '^SKIP' <<<"$summary")
	unfinished=$(grep '^NORESULT' <<<"$summary" | cut -f2)
	group=$(grep '^GROUP' <<<"$summary" | cut -f2)
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))

	why=
	if ((rc == 124)); then
		why="timed out after ${limit}s${unfinished:+ in $unfinished}"
	elif ((rc == 137)); then
		why="killed (timeout ${limit}s, or out of memory)${unfinished:+ in $unfinished}"
	elif ((rc != 0)) && grep -qE "$sanitizer" "$log"; then
		why="sanitizer report, exit $rc${unfinished:+, in $unfinished}"
		# The report's first line and its SUMMARY go to the end of the output too:
		# a CI that keeps only the tail still says what the sanitizer saw.
		reports+=("$name: $(grep -m1 -E "$sanitizer" "$log" | cut -c1-300)${nl}    $(
			grep -m1 '^SUMMARY: ' "$log" | cut -c1-300)")
	elif ((rc != 0)); then
		why="exit $rc${unfinished:+, no result for $unfinished}"
	elif ((p + f + s == 0)); then
		why="no test ran"
	elif ((p + f + s < announced)); then
		why="counted $((p + f + s)) results of the $announced tests cmocka announced"
	elif ((p == 0 && f == 0)); then
		why="every test skipped"
	fi
	# No test may write over, rename onto or remove a device node: the binary that
	# did is named here (a root agent once renamed its -o file over /dev/null)
	for node in /dev/null /dev/zero /dev/full /dev/random /dev/urandom; do
		if [[ ! -c $node ]]; then
			why="${why:+$why; }$node is no longer a character device after it"
			break
		fi
	done
	if [[ -n $why ]] && ((f == 0)); then
		failed=$((failed + 1)) # nothing counted it yet
	fi
	if [[ -n $why ]]; then
		broken+=("$name ($why)")
	elif ((f > 0)); then
		broken+=("$name${group:+ (failed $group)}")
	fi
done

echo "run times: ${times[*]}"
# In CI (CI=true) a skip must be on tests/skips.allow: a machine missing a package
# or a privilege fails the run, naming what each skipped test said it lacked.
allowed=()
if [[ ${CI:-} == true && -f tests/skips.allow ]]; then
	mapfile -t allowed < <(sed -e 's/#.*//' -e 's/[[:space:]].*//' -e '/^$/d' tests/skips.allow)
fi
for s in "${skips[@]}"; do
	echo "skipped: $s"
	[[ ${CI:-} == true ]] || continue
	ok=
	for a in "${allowed[@]}"; do
		[[ ${s%%: *} == "$a" ]] && ok=1
	done
	if [[ -z $ok ]]; then
		failed=$((failed + 1))
		broken+=("${s%%: *} (skipped in CI and not on tests/skips.allow)")
	fi
done
for r in "${reports[@]}"; do
	echo "sanitizer: $r"
done
if ((${#broken[@]})); then
	echo "failing: ${broken[*]}"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
((failed == 0 && passed > 0))
