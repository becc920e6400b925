#!/usr/bin/env bash
# The collector's memory per open connection (docs/collector.md, Limits): starts
# the release `smolder collector` on a fresh database, opens N keep-alive
# connections from 127.0.0.1 that each complete one GET /healthz and stay idle
# (an agent between uploads), then N more that each sent the first bytes of a
# request line and nothing more (a slowloris), and prints the collector's RSS
# (VmRSS) before and after each step and the KiB per connection.
#
#   bash bench/conns_rss.sh [N]        (default 4000)
#
# SMOLDER=path/to/smolder measures another build. Everything it started is
# stopped at the end.
set -euo pipefail

n=${1:-4000}
here=$(cd "$(dirname "$0")/.." && pwd)
smolder=${SMOLDER:-$here/build/smolder}
dir=$(mktemp -d /tmp/smolder-connsrss.XXXXXX)
pid=

cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

ulimit -n $((2 * n + 1024))
"$smolder" collector --db "$dir/c.db" --listen 127.0.0.1:0 \
	--max-connections $((2 * n + 16)) --max-connections-per-ip $((2 * n + 16)) \
	--request-timeout 1h 2>"$dir/err" &
pid=$!
for _ in $(seq 100); do
	grep -q ' port ' "$dir/err" 2>/dev/null && break
	sleep 0.1
done
port=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$dir/err" | head -1)

python3 - "$pid" "$port" "$n" <<'PY'
import socket, sys, time

pid, port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


def rss_kib():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])


def settle():
    time.sleep(1)  # let the serving threads finish with the last sockets
    return rss_kib()


def get(s):
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
    got = b""
    while b"ok\n" not in got:
        b = s.recv(4096)
        if not b:
            raise SystemExit("closed by the collector")
        got += b


warm = socket.create_connection(("127.0.0.1", port))
for _ in range(100):
    get(warm)
warm.close()
base = settle()
idle = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    get(s)
    idle.append(s)
after_idle = settle()
slow = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /heal")
    slow.append(s)
after_slow = settle()
print(f"no connection:           {base} KiB")
print(f"{n} idle keep-alive:   {after_idle} KiB  "
      f"({(after_idle - base) / n:.1f} KiB each)")
print(f"+ {n} partial request:  {after_slow} KiB  "
      f"({(after_slow - after_idle) / n:.1f} KiB each)")
PY
