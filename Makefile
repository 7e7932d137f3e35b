# mroce top-level driver. CMake does the real work; see CMakeLists.txt.
SHELL := /bin/bash
MAKEFLAGS += --no-print-directory
.DEFAULT_GOAL := build

BUILD_DIR := build
ASAN_DIR  := build-asan
FUZZ_DIR  := build-fuzz
JOBS      ?= 2
CMAKE     ?= cmake
CTEST     ?= ctest
CLANG_FORMAT ?= clang-format

# -O2 -g without -DNDEBUG: assert() stays live in the tested build.
CMAKE_RELEASE_ARGS := -DCMAKE_BUILD_TYPE=RelWithDebInfo \
                      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g" \
                      -DMROCE_SANITIZE=OFF
CMAKE_ASAN_ARGS    := -DCMAKE_BUILD_TYPE=Debug \
                      -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
                      -DMROCE_SANITIZE=ON

SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

FORMAT_DIRS = $(wildcard src include tests tools)
FORMAT_FIND = find $(FORMAT_DIRS) -type f \( -name '*.c' -o -name '*.h' \) -print0

.PHONY: all deps build build-asan test test-fuzz run format format-check clean

all: build

deps:
	bash scripts/install-deps.sh

build:
	$(CMAKE) -S . -B $(BUILD_DIR) $(CMAKE_RELEASE_ARGS)
	$(CMAKE) --build $(BUILD_DIR) -j$(JOBS)

build-asan:
	$(CMAKE) -S . -B $(ASAN_DIR) $(CMAKE_ASAN_ARGS)
	$(CMAKE) --build $(ASAN_DIR) -j$(JOBS)

# Sequential on purpose (safe under make -j): plain build + tests, then
# sanitized build + tests. Any failure stops make with a non-zero status.
test: deps
	$(MAKE) --no-print-directory build
	$(CTEST) --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS)
	$(MAKE) --no-print-directory build-asan
	$(SAN_ENV) $(CTEST) --test-dir $(ASAN_DIR) --output-on-failure -j$(JOBS)
	$(MAKE) --no-print-directory test-fuzz

# libFuzzer targets (clang, tests/fuzz/), each run for a bounded number of
# inputs from generated seeds: about 30 s on 2 cores after the build.
# scripts/run-fuzz.sh [SECONDS] fuzzes for longer with a kept corpus.
CMAKE_FUZZ_ARGS := -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
                   -DCMAKE_C_FLAGS_DEBUG="-O1 -g" -DMROCE_SANITIZE=OFF \
                   -DMROCE_FUZZ=ON
test-fuzz: deps
	$(CMAKE) -S . -B $(FUZZ_DIR) $(CMAKE_FUZZ_ARGS)
	$(CMAKE) --build $(FUZZ_DIR) -j$(JOBS) --target mroce_fuzzers
	$(CTEST) --test-dir $(FUZZ_DIR) --output-on-failure -j$(JOBS) -R '^fuzz_'

# The headline comparison (docs/suite.md): every scenario for MetaRoCE and
# RoCEv2 (1 and 8 QPs) on the 64-host fabric, $(JOBS) runs at a time; writes
# build/headline/{results.json,report.md,plots/} and prints the table.
run: deps
	$(MAKE) --no-print-directory build
	$(BUILD_DIR)/bin/mroce-sim --suite headline --out $(BUILD_DIR)/headline --jobs $(JOBS)

format:
	@if [ -n "$(FORMAT_DIRS)" ]; then \
	    $(FORMAT_FIND) | xargs -0 -r $(CLANG_FORMAT) -i; fi

format-check:
	@if [ -n "$(FORMAT_DIRS)" ]; then \
	    $(FORMAT_FIND) | xargs -0 -r $(CLANG_FORMAT) --dry-run -Werror; fi

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)
