# The two commands a new user types: `make run` and `make test`.
# Both install missing Debian packages (scripts/install-deps.sh), configure, build, then run.
BUILD   ?= build
JOBS    ?= $(shell nproc)
WERROR  ?= OFF
CMAKE_FLAGS ?=

.PHONY: all deps configure build run test bench-blocks clean test-sanitize fuzz fuzz-build fuzz-regress

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DATTNLAB_WERROR=$(WERROR) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# With a display the GUI opens on the default experiment; otherwise the default report is written to
# out/report/ and its path printed. LESSON=name opens configs/lessons/<name>.json instead.
run: build
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  $(BUILD)/bin/attnlab-gui $(if $(LESSON),--lesson $(LESSON),--config configs/default.json); \
	else \
	  $(BUILD)/bin/attnlab report --config $(if $(LESSON),configs/lessons/$(LESSON).json,configs/default.json) --out out/report; \
	fi

# CTest lists skipped tests ([gpu] ones on a machine without a GPU) by name; skip_reasons.py then says why.
test: build
	@cd $(BUILD) && { ctest --output-on-failure -j $(JOBS); status=$$?; \
	  python3 $(CURDIR)/tests/skip_reasons.py Testing/Temporary/LastTest.log; exit $$status; }

# Building-block throughput (quantizers, SAS, FP8 rounding), one core, M elements/s.
bench-blocks: build
	@$(BUILD)/bin/attnlab_tests "[.bench]" -s 2>&1 | grep "M elements/s"

# The CPU test suite and the attnlab binary under AddressSanitizer and UndefinedBehaviorSanitizer, in their own
# build folder; the first report fails the test that triggered it. CUDA is off there. Built with clang (the
# compiler `make fuzz` needs anyway): the instrumented Eigen-heavy files compile in half GCC's time
# (core/backward.cpp: 49 s against 106 s), the longest part of CI.
# RelWithDebInfo without -DNDEBUG: optimized (the numeric tests stay fast), with line numbers in reports
# (-g1: line tables only, what a report's file:line needs, at a fraction of full debug information's compile
# time) and with assertions on. The reference sweeps stop at N = 257 here (tests/support/sweep.h says why). Leak detection is ASan's default here; attnlab-gui turns it off for itself
# (tests/sanitize/gui_options.cpp says why).
SAN_BUILD ?= build-sanitize
SAN_ASAN_OPTIONS  ?= halt_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1
SAN_UBSAN_OPTIONS ?= halt_on_error=1:print_stacktrace=1
SAN_CXX ?= clang++-16

test-sanitize: deps
	@CXX=$(SAN_CXX) cmake -S . -B $(SAN_BUILD) -G Ninja -DATTNLAB_SANITIZE=address,undefined -DATTNLAB_CUDA=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1" $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(SAN_BUILD) -j $(JOBS)
	@cd $(SAN_BUILD) && $(FUZZ_ENV) ASAN_OPTIONS=$(SAN_ASAN_OPTIONS) UBSAN_OPTIONS=$(SAN_UBSAN_OPTIONS) \
	  ctest --output-on-failure -j $(JOBS)

# libFuzzer targets (tests/fuzz/README.md), built with clang in their own build folder.
# `make fuzz` fuzzes each target for FUZZ_SECONDS (FUZZ_TARGETS picks some); its corpus grows in
# build-fuzz/corpus/<target>, a finding lands in build-fuzz/findings/<target>/ and fails the run.
# `make fuzz-regress` replays every seed and saved finding once under libFuzzer. CI replays the same inputs
# in the sanitizer build instead (make test-sanitize: tests/fuzz/replay_main.cpp), sparing a third build.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= npy safetensors config gpu_spec llm_model measurements
FUZZ_CXX     ?= clang++-16
FUZZ_ENV     := ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer

fuzz-build: deps
	@CXX=$(FUZZ_CXX) cmake -S . -B $(FUZZ_BUILD) -G Ninja -DATTNLAB_FUZZ=ON -DATTNLAB_CUDA=OFF -DBUILD_TESTING=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target attnlab_fuzzers

fuzz-regress: fuzz-build
	@cd $(FUZZ_BUILD) && $(FUZZ_ENV) ctest --output-on-failure -j $(JOBS)

fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/findings/$$t || exit 1; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s" >&2; \
	  $(FUZZ_ENV) $(FUZZ_BUILD)/bin/fuzz_$$t $(FUZZ_BUILD)/corpus/$$t tests/fuzz/seeds/$$t \
	    $$(test -d tests/fuzz/regressions/$$t && echo tests/fuzz/regressions/$$t) \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/findings/$$t/ 2>$(FUZZ_BUILD)/findings/$$t/log.txt \
	    || { tail -n 40 $(FUZZ_BUILD)/findings/$$t/log.txt >&2; echo "fuzz: $$t found a problem (above; input in $(FUZZ_BUILD)/findings/$$t/)" >&2; exit 1; }; \
	  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" $(FUZZ_BUILD)/findings/$$t/log.txt >&2; \
	done

clean:
	@rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)
