# The two commands a new user types: `make run` and `make test`.
# Both install missing Debian packages (scripts/install-deps.sh), configure, build, then run.
BUILD   ?= build
JOBS    ?= $(shell nproc)
WERROR  ?= OFF
CMAKE_FLAGS ?=

.PHONY: all deps configure build run test bench-blocks clean

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

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Building-block throughput (quantizers, SAS, FP8 rounding), one core, M elements/s.
bench-blocks: build
	@$(BUILD)/bin/attnlab_tests "[.bench]" -s 2>&1 | grep "M elements/s"

clean:
	@rm -rf $(BUILD)
