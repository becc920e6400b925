#!/usr/bin/env bash
# Installs the Debian 12 packages smolder needs to build, test and benchmark.
# Idempotent and quick when everything is present: one dpkg-query, apt-get only for
# what is missing. Run as root (CI and the project's machines are root).
set -euo pipefail

packages=(
	# toolchain and BPF (libclang-rt-14-dev: libFuzzer and clang's sanitizers)
	make gcc g++ clang llvm libclang-rt-14-dev pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev
	# native unwinding and names: CFI (libdw), demangling, MiniDebugInfo
	libdw-dev libiberty-dev liblzma-dev
	# libraries the agent, collector and store use
	libcurl4-openssl-dev libzstd-dev libsqlite3-dev protobuf-c-compiler
	libprotobuf-c-dev libmicrohttpd-dev libgnutls28-dev uthash-dev
	# tests and benchmarks
	clang-format libcmocka-dev python3 linux-perf procps binutils sqlite3 libxml2-utils
	protobuf-compiler chromium openssl socat curl
	# the ClickHouse store's tests start a private server of their own (no service);
	# the cluster test a private ZooKeeper (Java) for two servers' distributed DDL
	clickhouse-server clickhouse-client zookeeper
	# deploy/ checked by the tools that read it: systemd-analyze and
	# systemd-sysusers, python3-yaml for the Kubernetes manifests
	systemd python3-yaml
	# `make deb` (debian/): debhelper and its bash-completion sequence, lintian;
	# man-db and groff render smolder(1) in tests/integration/test_deb.c
	debhelper dpkg-dev bash-completion lintian man-db groff-base
	# independent references: go tool pprof reads pprof output; the Debian python3's
	# headers give its struct offsets; bpftrace is the peer bench/churn.sh measures.
	# golang-go also builds tests/clients/go/ (the standard library only, offline)
	golang-go python3-dev bpftrace
	# separate debug symbols found by build id (the names tests), and elfutils'
	# eu-readelf as an independent reader of CFI
	libc6-dbg elfutils
)

# Node.js 20 and npm (the browser tests' playwright-core) come with the machines
# this project runs on, from NodeSource: Debian 12's own nodejs is 18, too old for
# playwright-core, and Debian's npm conflicts with NodeSource's nodejs. So they are
# checked by command, not installed by package name.
for cmd in node npm; do
	if ! command -v "$cmd" >/dev/null 2>&1; then
		echo "deps: $cmd not found: the browser tests need Node.js 20 and npm" >&2
		exit 1
	fi
done

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
	exit 0
fi

echo "deps: installing ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
	echo "deps: must run as root to install packages" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
