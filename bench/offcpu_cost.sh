#!/usr/bin/env bash
# Cost of off-CPU profiling at a high context-switch rate, against the same
# measurement done with bpftrace, in one run, and what it costs the workload.
#
#   bash bench/offcpu_cost.sh [SECONDS]      (default 20; root; after `make`)
#
# Workload: build/workloads/offcpu storm SECONDS 1: two threads ping-pong a byte
# over pipes (every round trip is two blocking reads; on 2 CPUs each wait also
# switches to the idle task). Its round trips are its throughput. One after the
# other, each over the same SECONDS with the same workload:
#   none                 the workload alone
#   smolder cpu          smolder agent -F 99 --bpf-stats (the CPU profile only)
#   smolder offcpu       the same with --off-cpu on (waits of >= 1 ms recorded)
#   smolder offcpu-all   the same with --off-cpu-min-us 1 (every wait recorded)
#   bpftrace             a sched_switch script that, as bcc's offcputime does,
#                        stores each blocking thread's switch-out time and stacks
#                        and sums blocked ns by (kstack, ustack, comm) at its
#                        switch-in, printing the sums at the end (bcc itself
#                        cannot compile here: this kernel ships no headers, and
#                        neither kprobes nor fentry are available for its
#                        finish_task_switch hook)
# Cost = user+sys of the profiler's process + the run time of its BPF programs
# (bpf_prog_info.run_time_ns with kernel.bpf_stats_enabled=1: smolder prints it
# with --bpf-stats; bpftrace's programs are read with bpftool just before it
# stops), which the kernel charges to the switching tasks, not to the profiler.
# Needs tracefs for bpftrace's tracepoint: mounted at /sys/kernel/tracing for the
# run when it is not.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
build=build
[[ -x $build/smolder && -x $build/workloads/offcpu ]] ||
	make -s $build/smolder $build/workloads/offcpu >/dev/null
tmp=$(mktemp -d)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
mounted=
cleanup() {
	sysctl -q kernel.bpf_stats_enabled="$old_stats"
	[[ -n $mounted ]] && umount /sys/kernel/tracing
	rm -rf "$tmp"
}
trap cleanup EXIT
if [[ ! -d /sys/kernel/tracing/events/sched ]]; then
	mount -t tracefs nodev /sys/kernel/tracing
	mounted=1
fi
sysctl -q kernel.bpf_stats_enabled=1

# Seconds of user+sys of a command, from bash's `times` (children line).
cpu_of() {
	bash -c '"$@" >/dev/null 2>>'"$tmp"'/stderr; times' _ "$@" | tail -1 |
		awk '{ split($1,u,"m"); split($2,s,"m"); sub("s","",u[2]); sub("s","",s[2]);
		       printf "%.3f\n", u[1]*60+u[2]+s[1]*60+s[2] }'
}

ctxt() { awk '/^ctxt/ { print $2 }' /proc/stat; }

# Runs the workload for secs seconds; prints "round_trips switches_per_s".
storm() {
	local c0 c1 rt
	c0=$(ctxt)
	rt=$($build/workloads/offcpu storm "$secs" 1 | awk '{ print $2 }')
	c1=$(ctxt)
	echo "$rt $(((c1 - c0) / secs))"
}

cat >"$tmp/offcpu.bt" <<'EOF'
tracepoint:sched:sched_switch
{
	if (args->prev_state != 0 && args->prev_pid != 0) {
		@start[args->prev_pid] = nsecs;
		@kst[args->prev_pid] = kstack;
		@ust[args->prev_pid] = ustack;
		@cm[args->prev_pid] = comm;
	}
	$s = @start[args->next_pid];
	if ($s != 0) {
		@[@kst[args->next_pid], @ust[args->next_pid], @cm[args->next_pid]] = sum(nsecs - $s);
		delete(@start[args->next_pid]);
	}
}
END
{
	clear(@start); clear(@kst); clear(@ust); clear(@cm);
}
EOF

# One profiled run: the profiler (cmd...) starts, the workload runs, the
# profiler stops. Prints "round_trips switches_per_s profiler_cpu_s".
smolder_run() {
	local job out
	cpu_of $build/smolder agent -F 99 -w 10 -d $((secs + 8)) --bpf-stats -o "$tmp/a.folded" "$@" \
		>"$tmp/agent.cpu" 2>&1 &
	job=$!
	sleep 6 # start-up: tables, symbols
	out=$(storm)
	wait $job
	echo "$out $(tail -1 "$tmp/agent.cpu")"
}

: >"$tmp/stderr"
base=$(storm)
read -r base_rt base_sw <<<"$base"

: >"$tmp/stderr"
read -r cpu_rt cpu_sw cpu_user <<<"$(smolder_run)"
cpu_bpf=$(grep -o 'bpf: [0-9]* program runs.* s total' "$tmp/stderr" | tail -1 |
	sed -E 's/.* ([0-9.]+) s total/\1/')

: >"$tmp/stderr"
read -r off_rt off_sw off_user <<<"$(smolder_run --off-cpu on)"
off_bpf=$(grep -o 'bpf: .* s total' "$tmp/stderr" | sed -E 's/.* ([0-9.]+) s total/\1/' |
	awk '{ t += $1 } END { printf "%.3f", t }')
off_line=$(grep -o 'bpf: off-cpu: .*' "$tmp/stderr" | tail -1)

: >"$tmp/stderr"
read -r all_rt all_sw all_user <<<"$(smolder_run --off-cpu on --off-cpu-min-us 1)"
all_bpf=$(grep -o 'bpf: .* s total' "$tmp/stderr" | sed -E 's/.* ([0-9.]+) s total/\1/' |
	awk '{ t += $1 } END { printf "%.3f", t }')
all_rec=$(grep -o 'off-cpu: [0-9.]* s recorded in [0-9]* waits' "$tmp/stderr" | tail -1)
all_line=$(grep -o 'bpf: off-cpu: .*' "$tmp/stderr" | tail -1)

# bpftrace: its programs (the tracepoint-type ones loaded since it started:
# smolder's are perf_event and tracing programs) read just before it stops
prog_ids() { bpftool prog show -j | python3 -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin) if p.get("type") == "tracepoint"))'; }
before=$(prog_ids)
: >"$tmp/stderr"
cpu_of bpftrace "$tmp/offcpu.bt" >"$tmp/bt.cpu" 2>&1 &
bt_job=$!
sleep 6
bt_out=$(storm)
read -r bt_bpf bt_runs <<<"$(bpftool prog show -j | python3 -c '
import json, sys
old = set(sys.argv[1].split())
t = n = 0
for p in json.load(sys.stdin):
    if p.get("type") == "tracepoint" and str(p["id"]) not in old:
        t += p.get("run_time_ns", 0)
        n += p.get("run_cnt", 0)
print("%.3f %d" % (t / 1e9, n))' "$before")"
# the bpftrace this script started (the child of cpu_of's bash -c), by its pid
bt_pid=$(pgrep -x bpftrace -P "$(pgrep -x bash -P $bt_job)")
kill -INT "$bt_pid"
wait $bt_job || true
read -r bt_rt bt_sw <<<"$bt_out"
bt_user=$(tail -1 "$tmp/bt.cpu")
bt_per=$(awk -v t="$bt_bpf" -v n="$bt_runs" 'BEGIN { printf "%.0f", n ? t * 1e9 / n : 0 }')

tot() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a + b }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }'; }

cat <<EOF
off-CPU profiling cost, ${secs} s of a ping-pong storm, $(nproc) CPUs, $(uname -r)
                      round trips   switches/s  profiler user+sys + BPF = total (s)   workload
  none                ${base_rt}   ${base_sw}
  smolder cpu         ${cpu_rt}   ${cpu_sw}   ${cpu_user} + ${cpu_bpf} = $(tot "$cpu_user" "$cpu_bpf")   $(pct "$cpu_rt" "$base_rt")
  smolder offcpu      ${off_rt}   ${off_sw}   ${off_user} + ${off_bpf} = $(tot "$off_user" "$off_bpf")   $(pct "$off_rt" "$base_rt")
  smolder offcpu-all  ${all_rt}   ${all_sw}   ${all_user} + ${all_bpf} = $(tot "$all_user" "$all_bpf")   $(pct "$all_rt" "$base_rt")
  bpftrace            ${bt_rt}   ${bt_sw}   ${bt_user} + ${bt_bpf} = $(tot "$bt_user" "$bt_bpf")   $(pct "$bt_rt" "$base_rt")
  BPF per context switch: smolder offcpu ${off_line#*switches, }
                          smolder offcpu-all ${all_line#*switches, }
                          bpftrace ${bt_per} ns mean (${bt_runs} runs of its program)
  smolder offcpu-all: ${all_rec}
EOF
