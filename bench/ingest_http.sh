#!/bin/bash
# The ClickHouse ingest goal over HTTP (docs/benchmarks.md "ClickHouse"):
# NCOLL collectors of the smolder binary given on one ClickHouse, and
# build/bench/ingest_http posting HOSTS x WINDOWS windows of the busy host from
# CONNS connections; it prints rows/s of wall time and per CPU second of the
# collectors and of the server. Everything it started is stopped at the end.
#
#   bench/ingest_http.sh SMOLDER NCOLL WINDOWS HOSTS CONNS [HTTP_PORT TCP_PORT DIR [BENCH]]
#
# By default it starts a private clickhouse-server (data under DIR, the ports
# given) and removes DIR at the end. With CH=clickhouse://HOST:PORT/DATABASE and
# CH_PID=PID (the server's, for its CPU) it uses that running server instead, a
# new DATABASE a run, so that repeated runs are measured on one server that
# stays up, as a fleet's does.
# COLLECTOR_ARGS (words) are added to each collector's command line; beyond 64
# CONNS, give them --max-connections-per-ip (every connection comes from
# 127.0.0.1, as from a proxy).
#
# The server's data should be on a filesystem with a journal, as a production
# server's is: ext4 without one checks each free inode it considers against
# recent deletes (fs/ext4/ialloc.c, find_inode_bit), and ClickHouse makes and
# deletes a part's files at every insert and merge, so such a server spent 16 %
# of its CPU there. The script warns when it finds that.
#
# e.g. bench/ingest_http.sh build/smolder 2 360 4 32 28323 29300 DIR
#      CH=clickhouse://127.0.0.1:28123/run1 CH_PID=SERVER_PID \
#        bench/ingest_http.sh build/smolder 2 90 4 32
set -euo pipefail
bin=$1 ncoll=$2 windows=$3 hosts=$4 conns=$5
hport=${6:-28323} tport=${7:-29300} dir=${8:-/tmp/smolder-ingest-http-ch}
bench=${9:-build/bench/ingest_http}
server=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "${CH:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT

# the private server (the body is not indented: its here-documents)
start_server() {
rm -rf "$dir"
mkdir -p "$dir"/{data,tmp,user_files,format_schemas}
cat >"$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/server.log</log><errorlog>$dir/error.log</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$hport</http_port>
  <tcp_port>$tport</tcp_port>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path>
  <format_schema_path>$dir/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  <max_concurrent_queries>64</max_concurrent_queries>
</yandex>
XML
cat >"$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
XML
"$server" --config-file="$dir/config.xml" >/dev/null 2>&1 &
srv=$!
pids+=("$srv")
for _ in $(seq 300); do
	curl -sf "http://127.0.0.1:$hport/ping" >/dev/null && break
	sleep 0.1
done
}
if [ -n "${CH:-}" ]; then
	if [ -z "${CH_PID:-}" ] || ! kill -0 "$CH_PID"; then
		echo "CH_PID: the running server's pid" >&2
		exit 2
	fi
	mkdir -p "$dir" # the collectors' logs
	db=$CH srv=$CH_PID
else
	start_server
	db=clickhouse://127.0.0.1:$hport/bench
fi
# journal_check DIR: warns when DIR is on ext4 without a journal (see above)
journal_check() {
	local src
	[ "$(findmnt -no FSTYPE --target "$1" 2>/dev/null)" = ext4 ] || return 0
	src=$(findmnt -no SOURCE --target "$1")
	if ! compgen -G "/proc/fs/jbd2/${src##*/}-*" >/dev/null; then
		echo "ingest_http.sh: warning: $1 is on ext4 without a journal ($src):" \
			"the server's CPU is not what a production server spends" >&2
	fi
}
[ -n "${CH:-}" ] || journal_check "$dir"
urls=() cpids=()
for i in $(seq "$ncoll"); do
	port=$((hport + 100 + i))
	# shellcheck disable=SC2086 # COLLECTOR_ARGS are words
	"$bin" collector ${COLLECTOR_ARGS:-} --db "$db" --listen "127.0.0.1:$port" \
		>"$dir/collector$i.log" 2>&1 &
	pids+=("$!")
	cpids+=("$!")
	urls+=("http://127.0.0.1:$port")
	for _ in $(seq 300); do
		curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
		sleep 0.1
	done
done
if [ -n "${CH:-}" ]; then # the server's data directory, now that the tables are made
	where=${CH#clickhouse://}
	path=$(curl -sf "http://${where%%/*}/?database=${where#*/}" --data-binary \
		"SELECT data_path FROM system.tables WHERE database = currentDatabase() LIMIT 1") ||
		true
	[ -z "$path" ] || journal_check "$path"
fi
"$bench" "$windows" "$hosts" "$conns" "$(IFS=,; echo "${urls[*]}")" \
	"$(IFS=,; echo "${cpids[*]}")" "$srv"
for u in "${urls[@]}"; do
	curl -s "$u/metrics" | grep -E '^smolder_(ingest_store_call|batches_ingested)' || true
done
