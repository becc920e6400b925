#!/usr/bin/env bash
# What the agent's BPF program costs per sample, beside bpftrace counting the same
# stacks in the same run; what the agent's start costs (CPU, peak RSS, the
# verifier's work per program); and, with PARTS=1, where a sample's time goes.
#
#   bash bench/bpf_cost.sh [SECONDS] [ROUNDS] [DEPTHS]
#                          (defaults 10, 3, "5 30 100"; root; after `make`)
#   BASE=FILE    another smolder binary (e.g. one built from main), measured beside
#                this tree's as cfi0 and fp0 in every cell and in the start table
#   PARTS=1      the breakdown instead (below)
#   TIME=1       the breakdown by timing each part inside the program instead
#                (below)
#   KEEP=1       keeps the outputs in a temp dir
#
# Samplers, all attached at once to the same workload (so each cell compares them
# over the same interval, on the same stacks and the same load):
#   cfi     smolder agent -F HZ -w 10 --bpf-stats [--pid PID] -o FILE  (--unwind cfi)
#   fp      the same with --unwind fp                                 (bpf_get_stack)
#   bt      bpftrace 'profile:hz:HZ [/pid == PID/] { @[kstack, ustack, comm] = count(); }'
#   btcomm  bpftrace 'profile:hz:HZ [/pid == PID/] { @[comm] = count(); }': the
#           host's floor for a sampling program that records anything
# (bpftrace sometimes ignores SIGINT on a loaded host; killed, it prints no counts,
# and its cell of that round has no figure: "-" when no round has one)
# Cells: for each round (rounds interleave, so a burst of load on this shared host
# lands on one round of every cell, not on all rounds of one), each depth of
# bench/deep.c (built -fno-omit-frame-pointer: fp, and -fomit-frame-pointer: nofp;
# one thread spinning under DEPTH frames at nice -10), the samplers filtered to
# its pid at 999 Hz; then "host": the samplers on the whole host at 99 Hz (the
# agent's default rate) with deep-fp 30 and deep-nofp 30 running beside whatever
# else runs.
#
# ns per sample: kernel.bpf_stats_enabled=1 for the run; after a second of
# warm-up, run_time_ns and run_cnt of each sampler's perf_event programs
# (prog_id in /proc/PID/fdinfo, then `bpftool prog show`) over SECONDS. The perf
# event fires on every CPU and the program returns early for other pids, so a
# filtered cell mixes samples with early returns; an "idle" cell per round (all
# filtered to a sleeping pid: no sample at all) gives each sampler's early return
# f, and ns/sample = (run_time_ns - (run_cnt - samples) * f) / samples. samples:
# the agent's count (its summary) or the sum of bpftrace's counts, both over the
# sampler's life, scaled to the SECONDS measured (from when it said it was
# attached to when it was stopped). "host" is run_time_ns / run_cnt: every sample
# of every process, and the idle task's early returns. Each figure is the median
# of the rounds, [min-max]. frames: mean user frames per sample in the agent's
# folded output (a cheap walk that stops early would show there).
#
# Start: ROUNDS interleaved runs of `smolder agent -d 1 -o /dev/null` per --unwind
# under /usr/bin/time (user, sys, peak RSS), then one run each with -vv, whose
# debug log gives, per program, the instructions the verifier processed and its
# verification time, and the whole object's load time.
#
# PARTS=1: the same cells, with the agent under --unwind cfi
# eleven times at once: whole, and once per part left out (SMOLDER_BPF_SKIP, see
# enum profile_skip in bpf/profile.h; the verifier removes the part, nothing else
# changes): comm, kstack, ustack, store (hashing and storing the kernel and user
# stacks), tables (the CFI walk without process, mapping and table lookups:
# frame pointers only, so on deep-fp the same frames), python, announce, count,
# and all of those at once (the fixed cost of a sample), plus --unwind fp whole.
# A part's cost = whole - without it; the rest = whole - the parts.
#
# TIME=1: cfi and fp once each (and BASE's cfi as cfi0) with
# SMOLDER_BPF_SKIP=time: the program reads bpf_ktime_get_ns() around each part of
# a sample and adds its time to the bench_ns map (enum profile_part), which the
# bench reads at the start and end of each cell: per part, ns per sample it took,
# in the same samples. The CFI walk's frames are timed in two parts, the row
# lookup and the step: four clock reads a frame. The clock reads themselves are
# in the whole (and the walk's in the user stack), not in the parts.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rounds=${2:-3}
depths=${3:-5 30 100}
build=build
[[ -x $build/smolder ]] || make -s all >/dev/null
command -v bpftrace >/dev/null || { echo "bpf_cost.sh: bpftrace is missing" >&2; exit 1; }
tmp=$(mktemp -d)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
pids=()
declare -A bin=() unw=() skip=()
if [[ -n ${PARTS:-} ]]; then
	parts=(comm kstack ustack store tables python announce count)
	agents=(cfi fp)
	for p in "${parts[@]}"; do agents+=("-$p"); done
	agents+=(-all)
	for s in "${agents[@]}"; do
		bin[$s]=$build/smolder
		unw[$s]=cfi
	done
	unw[fp]=fp
	for p in "${parts[@]}"; do skip[-$p]=$p; done
	skip[-all]=$(
		IFS=,
		echo "${parts[*]}"
	)
	bts=()
elif [[ -n ${TIME:-} ]]; then
	agents=(cfi fp)
	bin=([cfi]=$build/smolder [fp]=$build/smolder)
	unw=([cfi]=cfi [fp]=fp)
	skip=([cfi]=time [fp]=time)
	if [[ -n ${BASE:-} ]]; then
		agents+=(cfi0)
		bin[cfi0]=$BASE
		unw[cfi0]=cfi
		skip[cfi0]=time
	fi
	bts=()
else
	agents=(cfi fp)
	bin=([cfi]=$build/smolder [fp]=$build/smolder)
	unw=([cfi]=cfi [fp]=fp)
	if [[ -n ${BASE:-} ]]; then
		agents+=(cfi0 fp0)
		bin[cfi0]=$BASE
		bin[fp0]=$BASE
		unw[cfi0]=cfi
		unw[fp0]=fp
	fi
	bts=(bt btcomm)
fi
samplers=("${agents[@]}" "${bts[@]}")
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	sysctl -q kernel.bpf_stats_enabled="$old_stats"
	if [[ -n ${KEEP:-} ]]; then echo "bpf_cost.sh: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

mkdir -p $build/bench
for v in nofp:-fomit-frame-pointer fp:-fno-omit-frame-pointer; do
	out=$build/bench/deep-${v%%:*}
	[[ $out -nt bench/deep.c ]] ||
		gcc -std=c17 -O2 -g "${v#*:}" -Wall -Wextra -Werror -o "$out" bench/deep.c
done
sysctl -q kernel.bpf_stats_enabled=1

# Waits up to 120 s for a line matching $2 in file $1.
await() {
	local i
	for ((i = 0; i < 1200; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "bpf_cost.sh: timed out waiting for '$2' in $1" >&2
	return 1
}

# "run_time_ns run_cnt" summed over the perf_event programs pid $1 holds.
bpf_stats() {
	local ids
	# || true: grep says 2 when a descriptor closed between the glob and its read
	ids=$(grep -hs '^prog_id:' /proc/"$1"/fdinfo/* | awk '{ print $2 }' | sort -u || true)
	[[ -z $ids ]] && { echo "0 0"; return; }
	bpftool prog show -j | /usr/bin/python3 -c '
import json, sys
ids = set(int(x) for x in sys.argv[1:])
p = [p for p in json.load(sys.stdin) if p["id"] in ids and p["type"] == "perf_event"]
print(sum(x.get("run_time_ns", 0) for x in p), sum(x.get("run_cnt", 0) for x in p))' $ids
}

# The bench_ns map of pid $1 (TIME=1), summed over CPUs: one line of
# enum profile_part's entries.
bench_parts() {
	local ids
	ids=$(grep -hs '^map_id:' /proc/"$1"/fdinfo/* | awk '{ print $2 }' | sort -u || true)
	/usr/bin/python3 -c '
import json, subprocess, sys
def num(x):
    if isinstance(x, int):
        return x
    return int.from_bytes(bytes(int(y, 16) for y in x), "little")
for i in sys.argv[1:]:
    m = json.loads(subprocess.run(["bpftool", "map", "show", "id", i, "-j"],
                                  capture_output=True, text=True).stdout or "{}")
    if m.get("name") != "bench_ns":
        continue
    d = json.loads(subprocess.run(["bpftool", "map", "dump", "id", i, "-j"],
                                  capture_output=True, text=True).stdout)
    v = [0] * len(d)
    for e in d:
        f = e.get("formatted", e)
        for c in f["values"]:
            v[num(f["key"])] += num(c["value"])
    print(*v)
    break
else:
    print("0")' $ids
}

now() { date +%s.%N; }

# Waits up to 30 s for pid $1 (signalled) to exit, then kills it: bpftrace
# sometimes ignores a SIGINT on a loaded host (its counts are then missing: 0).
stop_wait() {
	local i
	for ((i = 0; i < 300; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# Runs the samplers for SECONDS on pid $1 ("" for the whole host) at $2 Hz;
# writes $tmp/<sampler>.res: "run_ns run_cnt samples frames", samples scaled to
# the interval of run_ns and run_cnt.
sample_all() {
	local target=$1 hz=$2 filt="" popt=() s f t0 t1 tend
	if [[ -n $target ]]; then
		filt="/pid == $target/"
		popt=(--pid "$target")
	fi
	rm -f "$tmp"/*.out "$tmp"/*.err "$tmp"/*.folded
	declare -A sp=() b0=() life=()
	for s in "${agents[@]}"; do
		SMOLDER_BPF_SKIP=${skip[$s]:-} ${bin[$s]} agent -F "$hz" -w 10 --bpf-stats \
			--unwind "${unw[$s]}" "${popt[@]}" -o "$tmp/$s.folded" >"$tmp/$s.out" \
			2>"$tmp/$s.err" &
		sp[$s]=$!
		pids+=($!)
	done
	for s in "${bts[@]}"; do
		case $s in
		bt) f='@[kstack, ustack, comm] = count();' ;;
		btcomm) f='@[comm] = count();' ;;
		esac
		bpftrace -e "profile:hz:$hz $filt { $f }" >"$tmp/$s.out" 2>"$tmp/$s.err" &
		sp[$s]=$!
		pids+=($!)
	done
	for s in "${agents[@]}"; do await "$tmp/$s.err" sampling; done
	for s in "${bts[@]}"; do await "$tmp/$s.out" Attaching; done
	sleep 1
	t0=$(now)
	for s in "${samplers[@]}"; do b0[$s]=$(bpf_stats "${sp[$s]}"); done
	if [[ -n ${TIME:-} ]]; then
		for s in "${agents[@]}"; do bench_parts "${sp[$s]}" >"$tmp/$s.parts0"; done
	fi
	sleep "$secs"
	for s in "${samplers[@]}"; do
		read -r n1 c1 <<<"$(bpf_stats "${sp[$s]}")"
		read -r n0 c0 <<<"${b0[$s]}"
		echo "$((n1 - n0)) $((c1 - c0))" >"$tmp/$s.res"
	done
	if [[ -n ${TIME:-} ]]; then
		for s in "${agents[@]}"; do bench_parts "${sp[$s]}" >"$tmp/$s.parts1"; done
	fi
	t1=$(now)
	# the file's time: when the sampler wrote that it was attached (nothing since)
	for s in "${agents[@]}"; do life[$s]=$(stat -c %.Y "$tmp/$s.err"); done
	for s in "${bts[@]}"; do life[$s]=$(stat -c %.Y "$tmp/$s.out"); done
	tend=$(now)
	for s in "${agents[@]}"; do kill -INT "${sp[$s]}"; done
	if [[ -n $target ]]; then
		for s in "${bts[@]}"; do kill -INT "${sp[$s]}"; done
	else
		# whole host: bpftrace would resolve every stack it holds (minutes)
		for s in "${bts[@]}"; do kill -KILL "${sp[$s]}"; done
	fi
	for s in "${samplers[@]}"; do stop_wait "${sp[$s]}"; done
	pids=()
	for s in "${samplers[@]}"; do
		local tot=0 frames=-
		if [[ -n ${bin[$s]:-} ]]; then
			tot=$(sed -nE 's/.*total: .* s, ([0-9]+) samples.*/\1/p' "$tmp/$s.err")
			touch "$tmp/$s.folded"
			frames=$(awk '
				{ n = $NF; k = split($0, f, ";"); sub(/ [0-9]+$/, "", f[k]); u = 0
				  for (i = 2; i <= k; i++) {
					if (f[i] ~ /_\[k\]$/ || f[i] ~ /^\[/) continue
					u++ }
				  frames += u * n; cnt += n }
				END { printf "%.1f", cnt ? frames / cnt : 0 }' "$tmp/$s.folded")
		else
			tot=$(awk '/\]: [0-9]+$/ { sub(/.*\]: /, ""); t += $0 } END { print t + 0 }' \
				"$tmp/$s.out")
		fi
		awk -v r="$(cat "$tmp/$s.res")" -v tot="${tot:-0}" -v w="$(echo "$t1 - $t0" | bc)" \
			-v l="$(echo "$tend - ${life[$s]}" | bc)" -v fr="$frames" \
			'BEGIN { printf "%s %.0f %s\n", r, (l > 0 ? tot * w / l : 0), fr }' >"$tmp/$s.res2"
	done
	for s in "${samplers[@]}"; do mv "$tmp/$s.res2" "$tmp/$s.res"; done
}

# Appends each sampler's figures of the cell $1 (round $2) to $tmp/table, given
# the early-return costs in $tmp/f.<sampler> (host cells: the mean per run).
record() {
	local cell=$1 round=$2 s run_ns run_cnt samples frames f per
	for s in "${samplers[@]}"; do
		read -r run_ns run_cnt samples frames <"$tmp/$s.res"
		if [[ $cell == host* ]]; then
			per=$(awk -v a="$run_ns" -v b="$run_cnt" 'BEGIN { printf "%.0f", b ? a / b : 0 }')
		else
			f=$(cat "$tmp/f.$s")
			# no sample counted (a bpftrace killed before it printed): no figure
			per=$(awk -v a="$run_ns" -v b="$run_cnt" -v s="$samples" -v f="$f" '
				BEGIN { if (s > b) s = b
					if (s) printf "%.0f", (a - (b - s) * f) / s; else print "nan" }')
		fi
		echo "$cell $s $round $per $frames" >>"$tmp/table"
		if [[ -n ${TIME:-} ]]; then
			echo "$cell $s $round $(cat "$tmp/$s.parts0") / $(cat "$tmp/$s.parts1")" \
				>>"$tmp/parts"
		fi
	done
}

echo "BPF cost per sample, ${secs} s per cell, ${rounds} rounds, $(nproc) CPUs, $(uname -r)," \
	"load $(cut -d' ' -f1-3 /proc/loadavg) at start"
for ((r = 1; r <= rounds; r++)); do
	# early return: all filtered to a sleeping pid
	sleep 100000 &
	w=$!
	pids+=($w)
	sample_all "$w" 999
	kill "$w"
	for s in "${samplers[@]}"; do
		read -r run_ns run_cnt _ <"$tmp/$s.res"
		awk -v a="$run_ns" -v b="$run_cnt" 'BEGIN { printf "%.0f\n", b ? a / b : 0 }' >"$tmp/f.$s"
		echo "idle $s $r $(cat "$tmp/f.$s") -" >>"$tmp/table"
	done
	for d in $depths; do
		for b in fp nofp; do
			nice -n -10 "$build/bench/deep-$b" "$d" &
			w=$!
			sample_all "$w" 999
			kill "$w"
			wait "$w" 2>/dev/null || true
			record "$b/$d" "$r"
		done
	done
	nice -n -10 "$build/bench/deep-fp" 30 &
	w1=$!
	nice -n -10 "$build/bench/deep-nofp" 30 &
	w2=$!
	pids+=($w1 $w2)
	sample_all "" 99
	kill "$w1" "$w2"
	wait "$w1" "$w2" 2>/dev/null || true
	record host "$r"
	echo "  round $r done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done

if [[ -n ${PARTS:-} ]]; then
	/usr/bin/python3 - "$tmp/table" <<'EOF'
import collections, statistics, sys
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    cell, s, _, per, fr = line.split()
    v = rows.setdefault(cell, {}).setdefault(s, [])
    if per != "nan":
        v.append(float(per))
parts = ["comm", "kstack", "ustack", "store", "tables", "python", "announce", "count"]
med = lambda v: statistics.median(v) if v else float("nan")
print("where a sample's time goes, --unwind cfi, ns per sample (median of the rounds of")
print("whole - without the part; fixed: with all of them left out; rest: whole - fixed - parts)")
print("| cell | whole cfi | whole fp | " + " | ".join(parts) + " | fixed | rest |")
print("| --- |" + " --: |" * (len(parts) + 4))
for cell, d in rows.items():
    if cell == "idle":
        continue
    whole = med(d["cfi"])
    cost = {p: whole - med(d["-" + p]) for p in parts}
    fixed = med(d["-all"])
    # tables is part of ustack: not summed twice
    rest = whole - fixed - sum(v for p, v in cost.items() if p != "tables")
    print(f"| {cell} | {whole:,.0f} | {med(d['fp']):,.0f} | "
          + " | ".join(f"{cost[p]:,.0f}" for p in parts) + f" | {fixed:,.0f} | {rest:,.0f} |")
print("idle (early return), ns: " + ", ".join(f"{s} {med(v):,.0f}" for s, v in rows["idle"].items()))
EOF
	exit 0
fi

if [[ -n ${TIME:-} ]]; then
	/usr/bin/python3 - "$tmp/parts" <<'EOF'
import collections, statistics, sys
names = ["whole", "comm", "kstack", "ustack", "ustore", "python", "announce", "count",
         "ulookup", "ustep"]
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    a, b = line.split(" / ")
    cell, s, _, *v0 = a.split()
    v1 = [int(x) for x in b.split()]
    v0 = [int(x) for x in v0] + [0] * len(v1)
    d = [y - x for x, y in zip(v0, v1)]
    if len(d) < len(names) + 1 or d[0] <= 0:
        continue
    rows.setdefault((cell, s), []).append([x / d[0] for x in d[1:]] + [d[0]])
print("ns per sample by part, timed inside the program (median of the rounds); ustack")
print("includes ustore; samples: samples timed per round")
print("| cell | agent | " + " | ".join(names) + " | samples |")
print("| --- | --- |" + " --: |" * (len(names) + 1))
for (cell, s), v in rows.items():
    med = [statistics.median(x[i] for x in v) for i in range(len(names) + 1)]
    print(f"| {cell} | {s} | " + " | ".join(f"{x:,.0f}" for x in med) + " |")
EOF
	exit 0
fi

# The table: median [min-max] of the rounds per cell and sampler.
/usr/bin/python3 - "$tmp/table" <<'EOF'
import collections, statistics, sys
rows = collections.OrderedDict()
frames = {}
for line in open(sys.argv[1]):
    cell, s, _, per, fr = line.split()
    v = rows.setdefault(cell, {}).setdefault(s, [])
    if per != "nan":
        v.append(float(per))
    if fr != "-":
        frames.setdefault((cell, s), []).append(float(fr))
def fmt(v):
    if not v:
        return "-"
    return "%s [%s-%s]" % (f"{statistics.median(v):,.0f}", f"{min(v):,.0f}", f"{max(v):,.0f}")
names = {"bt": "bt kstack+ustack+comm", "btcomm": "bt comm"}
cols = [s for s in ("cfi", "fp", "cfi0", "fp0", "bt", "btcomm") if s in next(iter(rows.values()))]
ag = [s for s in cols if not s.startswith("bt")]
print("ns per sample (median [min-max] of the rounds; idle: the early return of a filtered run;")
print("host: run_time_ns / run_cnt over the whole host at 99 Hz); ratio: of medians, to bt")
print("| cell (build/depth) | " + " | ".join(names.get(s, s) for s in cols) + " | "
      + " | ".join(s + "/bt" for s in ag) + " | frames " + "/".join(ag) + " |")
print("| --- |" + " --: |" * (len(cols) + len(ag) + 1))
for cell, d in rows.items():
    bt = statistics.median(d["bt"]) if d["bt"] else 0
    r = lambda s: "%.2f" % (statistics.median(d[s]) / bt) if bt and cell != "idle" else ""
    fr = "/".join("%.1f" % statistics.median(frames[(cell, s)]) if (cell, s) in frames else "-"
                  for s in ag)
    print(f"| {cell} | " + " | ".join(fmt(d[s]) for s in cols) + " | "
          + " | ".join(r(s) for s in ag) + f" | {fr} |")
EOF

echo
echo "agent start: smolder agent -d 1 -o /dev/null, ${rounds} interleaved runs each"
for ((r = 1; r <= rounds; r++)); do
	for m in "${agents[@]}"; do
		/usr/bin/time -f "$m %U %S %M" -o "$tmp/time" ${bin[$m]} agent -d 1 \
			--unwind "${unw[$m]}" -o /dev/null 2>/dev/null
		cat "$tmp/time" >>"$tmp/start"
	done
done
/usr/bin/python3 - "$tmp/start" <<'EOF'
import statistics, sys
d = {}
for line in open(sys.argv[1]):
    m, u, s, rss = line.split()
    d.setdefault(m, []).append((float(u), float(s), int(rss) / 1024))
print("| agent | CPU s (user+sys) | user s | sys s | peak RSS MB |")
print("| --- | --: | --: | --: | --: |")
for m, v in d.items():
    col = lambda f, k: "%s [%s-%s]" % tuple(f % x for x in
        (statistics.median([k(t) for t in v]), min(k(t) for t in v), max(k(t) for t in v)))
    print(f"| {m} | {col('%.2f', lambda t: t[0] + t[1])} | {col('%.2f', lambda t: t[0])} "
          f"| {col('%.2f', lambda t: t[1])} | {col('%.1f', lambda t: t[2])} |")
EOF
echo
echo "verifier, per program (insns: processed, = verified_insns; time: the verifier's own," \
	"from its log at level 4, which the agent asks for under -vv)"
echo "| agent | program | insns | verification ms | whole object load ms |"
echo "| --- | --- | --: | --: | --: |"
for m in "${agents[@]}"; do
	${bin[$m]} agent -vv -d 1 --unwind "${unw[$m]}" -o /dev/null 2>&1 | awk -v m="$m" '
		/sampler: BPF object loaded in/ { l = $(NF - 1) }
		/sampler: verifier: program/ { p[++n] = $5; i[n] = $6; t[n] = $8 }
		END { for (k = 1; k <= n; k++)
			printf "| %s | %s | %s | %.1f | %s |\n", m, substr(p[k], 1, length(p[k]) - 1),
			       i[k], t[k] / 1000, k == 1 ? l : "" }'
done
