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
#   V=1           show the commands
#
# Layout of build/: vmlinux.h and BPF skeletons in build/bpf/, release objects in
# build/rel/, sanitized objects and test binaries in build/asan/, test workloads
# (plain -O1 with frame pointers, no sanitizers) in build/workloads/.

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
PKGS      := libbpf libelf zlib libzstd libprotobuf-c sqlite3 libcurl libmicrohttpd
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS))

WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wno-missing-field-initializers
BASE_CFLAGS = -std=c17 -D_GNU_SOURCE -g $(WARN) -I. -I$(BUILD)/bpf -I$(BUILD)/gen $(PKG_CFLAGS) \
              -MMD -MP
REL_CFLAGS  = $(BASE_CFLAGS) -O2
SAN_FLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_CFLAGS = $(BASE_CFLAGS) -O1 $(SAN_FLAGS)

# Every C source of the program, subfolders included; cli/ holds main() and the
# subcommands' front ends (the only code that sees argv).
LIB_DIRS  := common agent collector store query
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
# the store's SQL migrations (schema/NNN_*.sql), embedded as C strings
MIGRATIONS := $(sort $(wildcard schema/[0-9]*.sql))
GEN_C     := $(PROTO_C) $(BUILD)/gen/migrations.c
GENERATED := $(SKELS) $(PROTO_H) $(BUILD)/gen/migrations.c

REL_OBJS  := $(patsubst %.c,$(BUILD)/rel/%.o,$(LIB_SRCS) $(GEN_C))
ASAN_OBJS := $(patsubst %.c,$(BUILD)/asan/%.o,$(LIB_SRCS) $(GEN_C))

UNIT_TESTS  := $(patsubst tests/unit/%.c,$(BUILD)/asan/tests/%,$(wildcard tests/unit/test_*.c))
INTEG_TESTS := $(patsubst tests/integration/%.c,$(BUILD)/asan/tests/%,$(wildcard tests/integration/test_*.c))
WORKLOADS   := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(wildcard tests/workloads/*.c))
PY_WORKLOADS := $(wildcard tests/workloads/*.py)
BENCHES     := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))

# Every C file clang-format owns: the program, BPF, tests, workloads, benchmarks.
FORMAT_SRCS = $(LIB_SRCS) $(MAIN_SRCS) $(shell find $(LIB_DIRS) cli bpf -name '*.h') \
	      $(BPF_SRCS) $(wildcard tests/*/*.c tests/*.h tests/*/*.h bench/*.c bench/*.h)

.PHONY: all deps test check check-format check-layout run bench format clean
all: $(BUILD)/smolder

deps:
	$(Q)bash deploy/debian-deps.sh

# `make test` and `make run` install first, then build in a second make so that
# pkg-config and the compilers exist when the rules are read.
test: deps
	$(Q)$(MAKE) check

# tests/run.sh runs exactly these binaries, after checking that they and the
# workloads exist; SMOLDER_TEST_TIMEOUT=SEC changes its per-binary timeout (600 s).
check: check-format check-layout $(BUILD)/smolder $(BUILD)/asan/smolder $(UNIT_TESTS) \
		$(INTEG_TESTS) $(WORKLOADS) $(BENCHES)
	$(Q)bash tests/run.sh $(BUILD) $(addprefix --workload ,$(WORKLOADS) $(PY_WORKLOADS)) \
		$(UNIT_TESTS) $(INTEG_TESTS)

check-format:
	$(call msg,FORMAT,check)
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRCS)

check-layout:
	$(Q)bash tests/check_layout.sh

run: deps
	$(Q)$(MAKE) all
	$(Q)bash deploy/run.sh $(BUILD)/smolder

bench: deps
	$(Q)$(MAKE) all $(WORKLOADS) $(BENCHES)
	$(Q)bash bench/agent_overhead.sh
	$(Q)bash bench/python_overhead.sh
	$(Q)$(BUILD)/bench/ingest_bench 360 /tmp

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
	$(Q)bash schema/embed.sh $(MIGRATIONS) > $@

# ---- user space ------------------------------------------------------------
$(BUILD)/rel/%.o: %.c | $(GENERATED)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(REL_CFLAGS) -c $< -o $@

$(BUILD)/asan/%.o: %.c | $(GENERATED)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ASAN_CFLAGS) -c $< -o $@

$(BUILD)/rel/libsmolder.a: $(REL_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/asan/libsmolder.a: $(ASAN_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/asan/libsmolder-cli.a: $(patsubst %.c,$(BUILD)/asan/%.o,$(CLI_SRCS))
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/smolder: $(patsubst %.c,$(BUILD)/rel/%.o,$(MAIN_SRCS)) $(BUILD)/rel/libsmolder.a
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $^ $(PKG_LIBS) -lpthread

$(BUILD)/asan/smolder: $(patsubst %.c,$(BUILD)/asan/%.o,$(MAIN_SRCS)) $(BUILD)/asan/libsmolder.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lpthread

# ---- tests -----------------------------------------------------------------
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

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
