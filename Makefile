# smolder: one non-recursive Makefile.
#
#   make          build build/smolder (release: -O2)
#   make deps     install the Debian packages the project needs (idempotent)
#   make test     deps, then build everything with ASan+UBSan and run every test
#   make run      deps, build, run the main job (see README.md)
#   make bench    deps, build, run the benchmarks (see docs/benchmarks.md)
#   make format   clang-format every C source (the settings: .clang-format)
#   make check-format  fail if any C source differs from clang-format's output
#   make check-layout  fail if the folders' include rules are broken (tests/check_layout.sh)
#   make check-docs    fail if a sample output in the docs differs from the golden answer
#                      it names (tests/check_docs.sh)
#   make fuzz     run every libFuzzer target (fuzz/) for FUZZ_SECONDS each (default 60)
#   make fuzz-smoke  every target on its seeds and regressions, then FUZZ_SMOKE_RUNS inputs
#                 in all (part of make test)
#   make deb      the Debian package, build/deb/smolder_VERSION_amd64.deb (debian/, built
#                 with dpkg-buildpackage in a copy of the tree; docs/deploy.md)
#   V=1           show the commands
#
# Layout of build/: vmlinux.h and BPF skeletons in build/bpf/, release objects in
# build/rel/, sanitized objects and test binaries in build/asan/, test workloads
# (plain -O1 with frame pointers, no sanitizers; tests/workloads/nofp/ -O2 without)
# in build/workloads/, the browser tests' Node packages in build/browser/, the
# client tests' Node SDK and Go program in build/clients/ (Go's caches in build/go/).

.DELETE_ON_ERROR:
.SECONDARY:
.SUFFIXES:
MAKEFLAGS += --no-builtin-rules --no-print-directory

V ?= 0
ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-7s %s\n' '$(1)' '$(2)'
endif

BUILD   := build
CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
ARCH    := x86

# Recursive (=) so that pkg-config runs after `make deps` has installed it all.
# libdw decodes CFI (agent/unwind/), liblzma unpacks MiniDebugInfo, libiberty (no
# pkg-config file) demangles C++ and Rust.
PKGS      := libbpf libelf libdw liblzma zlib libzstd libprotobuf-c sqlite3 libcurl \
             libmicrohttpd gnutls
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS)) -liberty

WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wno-missing-field-initializers
BASE_CFLAGS = -std=c17 -D_GNU_SOURCE -g $(WARN) -I. -I$(BUILD)/bpf -I$(BUILD)/gen $(PKG_CFLAGS) \
              -MMD -MP
# EXTRA_CFLAGS, EXTRA_LDFLAGS: added to the release build (debian/rules passes the
# distribution's hardening flags); empty by default.
REL_CFLAGS  = $(BASE_CFLAGS) -O2 $(EXTRA_CFLAGS)
SAN_FLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_CFLAGS = $(BASE_CFLAGS) -O1 $(SAN_FLAGS)

# Every C source of the program, subfolders included; cli/ holds main() and the
# subcommands' front ends (the only code that sees argv).
LIB_DIRS  := common wire agent collector store query
LIB_SRCS  := $(sort $(shell find $(LIB_DIRS) -name '*.c' 2>/dev/null))
MAIN_SRCS := $(wildcard cli/*.c)
# the front ends without main(), archived for the tests of their option parsers
CLI_SRCS  := $(filter-out cli/main.c,$(MAIN_SRCS))
BPF_SRCS  := $(wildcard bpf/*.bpf.c)
SKELS     := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.skel.h,$(BPF_SRCS))
# protobuf-c code generated from schema/*.proto into build/gen/
PROTOS    := $(wildcard schema/*.proto)
PROTO_C   := $(patsubst schema/%.proto,$(BUILD)/gen/%.pb-c.c,$(PROTOS))
PROTO_H   := $(PROTO_C:.c=.h)
# the store's SQL migrations (schema/sqlite/NNN_*.sql), embedded as C strings
MIGRATIONS := $(sort $(wildcard schema/sqlite/[0-9]*.sql))
# the web UI (ui/, docs/ui.md), embedded as C arrays by ui/embed.sh: the page, its
# scripts and styles, and the vendored uPlot with its license
UI_FILES  := ui/index.html $(sort $(wildcard ui/*.js ui/*.css)) ui/vendor/uPlot.iife.min.js \
	     ui/vendor/uPlot.min.css ui/vendor/uPlot.LICENSE
# the HTML and SVG exports' scripts and styles (ui/export/), embedded as C strings
# by ui/export/embed.sh (query/export_assets.h)
EXPORT_FILES := ui/export/flame.css ui/export/flame.js ui/export/svg.js
GEN_C     := $(PROTO_C) $(BUILD)/gen/migrations.c $(BUILD)/gen/ui_assets.c \
	     $(BUILD)/gen/export_assets.c
GENERATED := $(SKELS) $(PROTO_H) $(BUILD)/gen/migrations.c
# the ClickHouse store's schema (schema/clickhouse/NNN_*.sql), embedded the same way
CH_MIGRATIONS := $(sort $(wildcard schema/clickhouse/[0-9]*.sql))
GEN_C     += $(BUILD)/gen/ch_migrations.c

REL_OBJS  := $(patsubst %.c,$(BUILD)/rel/%.o,$(LIB_SRCS) $(GEN_C))
ASAN_OBJS := $(patsubst %.c,$(BUILD)/asan/%.o,$(LIB_SRCS) $(GEN_C))

UNIT_TESTS  := $(patsubst tests/unit/%.c,$(BUILD)/asan/tests/%,$(wildcard tests/unit/test_*.c))
INTEG_TESTS := $(patsubst tests/integration/%.c,$(BUILD)/asan/tests/%,$(wildcard tests/integration/test_*.c))
WORKLOADS   := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(wildcard tests/workloads/*.c))
PY_WORKLOADS := $(wildcard tests/workloads/*.py)
# the no-frame-pointer workloads (tests/workloads/nofp/, rules at the end)
NOFP_WORKLOADS := $(BUILD)/workloads/unwind $(BUILD)/workloads/unwind_libc
BENCHES     := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))
# the Debian package (`make deb`, rules at "the Debian package" below)
VERSION     := $(shell sed -n 's/^\#define SMOLDER_VERSION "\(.*\)"/\1/p' common/version.h)
DEB         := $(BUILD)/deb/smolder_$(VERSION)_amd64.deb

# Every C file clang-format owns: the program, BPF, tests, workloads, benchmarks.
FORMAT_SRCS = $(LIB_SRCS) $(MAIN_SRCS) $(shell find $(LIB_DIRS) cli bpf -name '*.h') \
	      $(BPF_SRCS) $(wildcard tests/*/*.c tests/*.h tests/*/*.h tests/workloads/nofp/*.[ch] bench/*.c \
	      bench/*.h fuzz/*.c)

.PHONY: all deps test check check-format check-layout check-docs run bench format clean fuzz fuzz-smoke \
	deb
all: $(BUILD)/smolder

deps:
	$(Q)bash deploy/debian-deps.sh

# `make test` and `make run` install first, then build in a second make so that
# pkg-config and the compilers exist when the rules are read.
test: deps
	$(Q)$(MAKE) check

# tests/run.sh runs exactly these binaries, after checking that they and the
# workloads exist; SMOLDER_TEST_TIMEOUT=SEC changes its per-binary timeout (600 s).
check: check-format check-layout check-docs fuzz-smoke $(BUILD)/smolder $(BUILD)/asan/smolder $(UNIT_TESTS) \
		$(INTEG_TESTS) $(WORKLOADS) $(NOFP_WORKLOADS) $(BENCHES) $(DEB)
	$(Q)bash tests/run.sh $(BUILD) \
		$(addprefix --workload ,$(WORKLOADS) $(NOFP_WORKLOADS) $(PY_WORKLOADS)) \
		$(UNIT_TESTS) $(INTEG_TESTS)

check-format:
	$(call msg,FORMAT,check)
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRCS)

check-layout:
	$(Q)bash tests/check_layout.sh

check-docs:
	$(Q)bash tests/check_docs.sh

run: deps
	$(Q)$(MAKE) all
	$(Q)bash deploy/run.sh $(BUILD)/smolder $(ARGS)

bench: deps
	$(Q)$(MAKE) all $(WORKLOADS) $(BENCHES)
	$(Q)bash bench/agent_overhead.sh
	$(Q)bash bench/python_overhead.sh
	$(Q)bash bench/churn.sh
	$(Q)bash bench/unwind_cost.sh
	$(Q)bash bench/unwind_tables.sh
	$(Q)bash bench/unwind_overhead.sh
	$(Q)$(BUILD)/bench/ingest_bench 360 /tmp
	$(Q)bash bench/ingest_pprof.sh $(BUILD)/smolder 90 4
	$(Q)$(BUILD)/bench/block_bench
	$(Q)$(BUILD)/bench/store_bench full /tmp
	$(Q)$(BUILD)/bench/soak 600 200 198 /tmp
	$(Q)UP_QUERIES=1 bash bench/up_rss.sh 540 up

format:
	$(Q)clang-format -i $(FORMAT_SRCS)

clean:
	$(Q)rm -rf $(BUILD)

# ---- BPF -------------------------------------------------------------------
$(BUILD)/bpf/vmlinux.h:
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(BUILD)/bpf/vmlinux.h $(wildcard bpf/*.h)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) \
		-I$(BUILD)/bpf -I. $(shell pkg-config --cflags libbpf) -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# ---- protobuf --------------------------------------------------------------
$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: schema/%.proto
	$(call msg,PROTOC,$<)
	$(Q)mkdir -p $(BUILD)/gen
	$(Q)protoc-c --proto_path=schema --c_out=$(BUILD)/gen $<

$(BUILD)/gen/migrations.c: $(MIGRATIONS) schema/embed.sh
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)bash schema/embed.sh store $(MIGRATIONS) > $@

$(BUILD)/gen/ch_migrations.c: $(CH_MIGRATIONS) schema/embed.sh
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)bash schema/embed.sh ch $(CH_MIGRATIONS) > $@

$(BUILD)/gen/ui_assets.c: $(UI_FILES) ui/embed.sh
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)bash ui/embed.sh $(UI_FILES) > $@

$(BUILD)/gen/export_assets.c: $(EXPORT_FILES) ui/export/embed.sh
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)bash ui/export/embed.sh $(EXPORT_FILES) > $@

# ---- user space ------------------------------------------------------------
$(BUILD)/rel/%.o: %.c | $(GENERATED)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(REL_CFLAGS) -c $< -o $@

$(BUILD)/asan/%.o: %.c | $(GENERATED)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ASAN_CFLAGS) -c $< -o $@

# The libraries are thin archives (ar T): members are named by their path, so that
# objects of the same name in different folders (store/sqlite/gc.o and
# store/clickhouse/gc.o) are two members, each replaced only by itself.
$(BUILD)/rel/libsmolder.a: $(REL_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcsT $@ $^

$(BUILD)/asan/libsmolder.a: $(ASAN_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcsT $@ $^

$(BUILD)/asan/libsmolder-cli.a: $(patsubst %.c,$(BUILD)/asan/%.o,$(CLI_SRCS))
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcsT $@ $^

$(BUILD)/smolder: $(patsubst %.c,$(BUILD)/rel/%.o,$(MAIN_SRCS)) $(BUILD)/rel/libsmolder.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(EXTRA_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lpthread

$(BUILD)/asan/smolder: $(patsubst %.c,$(BUILD)/asan/%.o,$(MAIN_SRCS)) $(BUILD)/asan/libsmolder.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lpthread

# ---- the Debian package ----------------------------------------------------
# dpkg-buildpackage (debhelper, debian/) in a copy of the tree without build/ and
# .git, so that its clean step (make clean) leaves this build/ alone and the package
# is built from nothing; then lintian, whose errors fail the build (warnings are
# listed in docs/deploy.md). Built once as a prerequisite of `make check`, where
# tests/integration/test_deb.c inspects it. DEB_JOBS: its parallel make jobs.
DEB_JOBS  ?= 2
DEB_SRCS  := $(LIB_SRCS) $(MAIN_SRCS) $(BPF_SRCS) $(PROTOS) $(MIGRATIONS) $(CH_MIGRATIONS) $(UI_FILES) $(EXPORT_FILES) \
	     $(shell find $(LIB_DIRS) cli bpf -name '*.h') $(wildcard debian/* debian/source/*) \
	     man/smolder.1 deploy/bash-completion/smolder $(wildcard deploy/systemd/* \
	     deploy/default/*) Makefile schema/embed.sh ui/embed.sh ui/export/embed.sh

deb: $(DEB)

$(DEB): $(DEB_SRCS)
	$(call msg,DEB,$@)
	$(Q)rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/src
	$(Q)tar -C . --exclude=./$(BUILD) --exclude=./.git -cf - . | tar -C $(BUILD)/deb/src -xf -
	$(Q)cd $(BUILD)/deb/src && DEB_BUILD_OPTIONS="parallel=$(DEB_JOBS) nocheck" \
		dpkg-buildpackage -b -us -uc > ../build.log 2>&1 || { tail -40 ../build.log; exit 1; }
	$(Q)lintian --fail-on error --tag-display-limit 0 $@ > $(BUILD)/deb/lintian.log 2>&1 || \
		{ cat $(BUILD)/deb/lintian.log; rm -f $@; exit 1; }
	$(Q)sed 's/^/  lintian: /' $(BUILD)/deb/lintian.log

# ---- fuzzing ---------------------------------------------------------------
# libFuzzer targets (fuzz/fuzz_*.c), one per parser of untrusted input, linked with
# the whole library built anew by clang with -fsanitize=fuzzer-no-link,address,
# undefined (gcc's objects cannot carry libFuzzer's coverage). Seeds: fuzz/seeds/,
# real data from the tree (wire fixtures, golden folded answers, a workload ELF,
# this machine's /proc/self/maps, real CPython line tables); every crash found
# becomes a file in fuzz/regressions/<target>/, replayed by fuzz-smoke.
FUZZ_CC	      ?= clang
FUZZ_SECONDS  ?= 60
# fuzz-smoke's inputs per target, seeds included (libFuzzer's -runs): a count, not
# seconds, so that a slow target is not cut to a few hundred inputs on a busy
# machine. 5000 keeps the whole run near what 5 s a target took (docs/testing.md).
FUZZ_SMOKE_RUNS ?= 5000
FUZZ_CFLAGS    = $(BASE_CFLAGS) -O1 -fsanitize=fuzzer-no-link,address,undefined \
		 -fno-sanitize-recover=all
FUZZ_TARGETS  := $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_BINS     := $(patsubst %,$(BUILD)/fuzz/%,$(FUZZ_TARGETS))
FUZZ_OBJS     := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(LIB_SRCS) $(GEN_C))
PYENV_BINS     = $(shell pyenv root 2>/dev/null)/versions/3.*/bin
# the CPythons smolder reads (3.9 to 3.13), not every one pyenv holds
PYTHONS	       = $(wildcard $(PYENV_BINS)/python3.9 $(PYENV_BINS)/python3.1[0-3]) python3

$(BUILD)/fuzz/obj/%.o: %.c | $(GENERATED)
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(BUILD)/fuzz/libsmolder.a: $(FUZZ_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcsT $@ $^

$(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c $(BUILD)/fuzz/libsmolder.a
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) $(BASE_CFLAGS) -O1 -fsanitize=fuzzer,address,undefined -o $@ $< \
		$(BUILD)/fuzz/libsmolder.a $(PKG_LIBS) -lpthread

# Seed corpora, made from real data each run (read-only to the fuzzers).
$(BUILD)/fuzz/seeds: $(wildcard fuzz/seeds/*/* tests/data/wire/* tests/data/golden/*) \
		fuzz/seeds_python.py $(BUILD)/workloads/shapes
	$(call msg,SEEDS,$@)
	$(Q)rm -rf $@ && mkdir -p $(addprefix $@/,$(FUZZ_TARGETS))
	$(Q)cp tests/data/wire/*.batch $@/fuzz_wire/
	$(Q)cp tests/data/golden/*.folded $@/fuzz_folded/
	$(Q)cp fuzz/seeds/query/* $@/fuzz_query/
	$(Q)cp $(BUILD)/workloads/shapes fuzz/seeds/elf/* $@/fuzz_elf/
	$(Q)cp $(BUILD)/workloads/shapes /usr/bin/true $@/fuzz_cfi/
	$(Q)cat /proc/self/maps > $@/fuzz_maps/self
	$(Q)cp fuzz/seeds/perfmap/* $@/fuzz_perfmap/
	$(Q)cp fuzz/seeds/block/* $@/fuzz_block/
	$(Q)cp fuzz/seeds/labels/* $@/fuzz_labels/
	$(Q)cp fuzz/seeds/ch_answers/* $@/fuzz_ch_answers/
	$(Q)cp fuzz/seeds/access/* $@/fuzz_access/
	$(Q)cat /proc/self/cgroup > $@/fuzz_labels/self
	$(Q)cp fuzz/seeds/pyproc/* $(BUILD)/workloads/shapes $@/fuzz_pyproc/
	$(Q)cat /proc/self/maps > $@/fuzz_pyproc/self-maps
	$(Q)cp fuzz/seeds/procstat/* $@/fuzz_procstat/
	$(Q)cat /proc/self/stat > $@/fuzz_procstat/self-stat
	$(Q)cat /proc/self/status > $@/fuzz_procstat/self-status
	$(Q)cp fuzz/seeds/routes/* $@/fuzz_routes/
	$(Q)cp fuzz/seeds/push/* $@/fuzz_push/
	$(Q)cp fuzz/seeds/pushreq/* $@/fuzz_pushreq/
	$(Q)for py in $(PYTHONS); do $$py fuzz/seeds_python.py $@/fuzz_python || exit 1; done

# Runs each target with the libFuzzer limit $(1) (-max_total_time=S or -runs=N) on a
# corpus of its own; fails on any crash.
define run_fuzzers
	$(Q)set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(BUILD)/fuzz/corpus/$$t $(BUILD)/fuzz/crashes; \
		regs=$$(ls -d fuzz/regressions/$$t 2>/dev/null || true); \
		echo "fuzz: $$t ($(1))"; \
		$(BUILD)/fuzz/$$t $(1) -print_final_stats=1 -timeout=10 \
			-rss_limit_mb=2048 -max_len=65536 \
			-artifact_prefix=$(BUILD)/fuzz/crashes/$$t- \
			$(BUILD)/fuzz/corpus/$$t $(BUILD)/fuzz/seeds/$$t $$regs \
			2> $(BUILD)/fuzz/$$t.log || { tail -40 $(BUILD)/fuzz/$$t.log; exit 1; }; \
		grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' $(BUILD)/fuzz/$$t.log | \
			sed 's/^/  /'; \
	done
endef

fuzz: $(FUZZ_BINS) $(BUILD)/fuzz/seeds
	$(call run_fuzzers,-max_total_time=$(FUZZ_SECONDS))

fuzz-smoke: $(FUZZ_BINS) $(BUILD)/fuzz/seeds
	$(call run_fuzzers,-runs=$(FUZZ_SMOKE_RUNS))

# ---- tests -----------------------------------------------------------------
# The browser tests' Node packages (playwright-core, which downloads no browser:
# the tests drive /usr/bin/chromium) into build/browser/ with `npm ci`: exactly
# the versions and hashes of tests/browser/package-lock.json, from npm's cache
# when it has them, no install scripts.
BROWSER_MODULES := $(BUILD)/browser/node_modules/.package-lock.json

$(BROWSER_MODULES): tests/browser/package.json tests/browser/package-lock.json
	$(call msg,NPM,$(BUILD)/browser)
	$(Q)mkdir -p $(BUILD)/browser
	$(Q)cp tests/browser/package.json tests/browser/package-lock.json $(BUILD)/browser/
	$(Q)cd $(BUILD)/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefer-offline \
		--ignore-scripts --no-audit --no-fund --loglevel=error
	$(Q)touch $@

$(BUILD)/asan/tests/test_browser: $(BROWSER_MODULES)
$(BUILD)/asan/tests/test_ui: $(BROWSER_MODULES)

# The real clients' tests (tests/clients/): the Pyroscope Node.js SDK from npm into
# build/clients/node/ the same way (tests/clients/node/package-lock.json; its
# @datadog/pprof brings its linux-x64 build in the package, so no install script
# runs), and a Go program of the standard library only built by Debian's golang-go
# with no network and no module: its caches in build/go/, the toolchain the local one.
CLIENT_NODE_MODULES := $(BUILD)/clients/node/node_modules/.package-lock.json
GO_ENV = GOCACHE=$(abspath $(BUILD))/go/cache GOPATH=$(abspath $(BUILD))/go/path \
	 GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod GO111MODULE=on GOTELEMETRY=off

$(CLIENT_NODE_MODULES): tests/clients/node/package.json tests/clients/node/package-lock.json
	$(call msg,NPM,$(BUILD)/clients/node)
	$(Q)mkdir -p $(BUILD)/clients/node
	$(Q)cp tests/clients/node/package.json tests/clients/node/package-lock.json \
		$(BUILD)/clients/node/
	$(Q)cd $(BUILD)/clients/node && npm ci --prefer-offline --ignore-scripts --no-audit \
		--no-fund --loglevel=error
	$(Q)touch $@

$(BUILD)/clients/pushpprof: tests/clients/go/go.mod $(wildcard tests/clients/go/*.go)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd tests/clients/go && $(GO_ENV) go build -o $(abspath $@) .

$(BUILD)/asan/tests/test_sdk_node: $(CLIENT_NODE_MODULES)
$(BUILD)/asan/tests/test_sdk_go: $(BUILD)/clients/pushpprof

$(BUILD)/asan/tests/%: tests/unit/%.c $(BUILD)/asan/libsmolder-cli.a $(BUILD)/asan/libsmolder.a \
		tests/testutil.h
	$(call msg,TEST,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ASAN_CFLAGS) -Itests -o $@ $< $(BUILD)/asan/libsmolder-cli.a \
		$(BUILD)/asan/libsmolder.a $(PKG_LIBS) $(shell pkg-config --libs cmocka) -lpthread -lm

$(BUILD)/asan/tests/%: tests/integration/%.c $(BUILD)/asan/libsmolder.a tests/testutil.h \
		tests/integration/agenttest.h
	$(call msg,TEST,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ASAN_CFLAGS) -Itests -o $@ $< $(BUILD)/asan/libsmolder.a \
		$(PKG_LIBS) $(shell pkg-config --libs cmocka) -lpthread -lm

# Benchmark programs: release flags, linked with the release library.
$(BUILD)/bench/%: bench/%.c $(BUILD)/rel/libsmolder.a
	$(call msg,BENCH,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(REL_CFLAGS) -o $@ $< $(BUILD)/rel/libsmolder.a $(PKG_LIBS) -lpthread

# Workloads of known shape: frame pointers on, no inlining, so stacks are exact.
$(BUILD)/workloads/%: tests/workloads/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -std=c17 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline \
		-fno-optimize-sibling-calls -Wall -Wextra -Werror -o $@ $< -lpthread
$(BUILD)/workloads/jitmap: tests/workloads/jitcode.h

# No-frame-pointer workloads (tests/workloads/nofp/), for the tests of unwinding
# from CFI: -O2 and no frame pointer in the executables, their .so and their C++,
# as in distribution builds; no inlining and no sibling calls, so the call chain
# each workload knows is the one in its stacks. unwind links libunw.so by an
# $$ORIGIN rpath (it lives beside it) and the C++ object.
NOFP_FLAGS := -O2 -g -fomit-frame-pointer -fno-inline -fno-optimize-sibling-calls \
	      -fasynchronous-unwind-tables -Wall -Wextra -Werror -Itests/workloads/nofp
NOFP_DEPS  := tests/workloads/nofp/burn.h tests/workloads/jitcode.h

$(BUILD)/workloads/libunw.so: tests/workloads/nofp/libunw.c $(NOFP_DEPS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -std=c17 -D_GNU_SOURCE $(NOFP_FLAGS) -fPIC -shared -o $@ $<

$(BUILD)/workloads/unwcpp.o: tests/workloads/nofp/unwcpp.cpp $(NOFP_DEPS)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)g++ -std=c++17 $(NOFP_FLAGS) -c -o $@ $<

$(BUILD)/workloads/unwind: tests/workloads/nofp/unwind.c $(BUILD)/workloads/unwcpp.o \
		$(BUILD)/workloads/libunw.so $(NOFP_DEPS)
	$(call msg,CC,$@)
	$(Q)$(CC) -std=c17 -D_GNU_SOURCE $(NOFP_FLAGS) -o $@ $< $(BUILD)/workloads/unwcpp.o \
		-L$(BUILD)/workloads -lunw -Wl,-rpath,'$$ORIGIN' -lstdc++

$(BUILD)/workloads/unwind_libc: tests/workloads/nofp/unwind_libc.c $(NOFP_DEPS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -std=c17 -D_GNU_SOURCE $(NOFP_FLAGS) -o $@ $<

# (not under build/deb/: the package's copy of the tree, whose sysusers.d is no .d file)
-include $(shell find $(BUILD) -path $(BUILD)/deb -prune -o -name '*.d' -type f -print 2>/dev/null)
