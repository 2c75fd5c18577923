# Thin driver over CMake. `make demo` and `make test` each do all the set-up
# (Debian packages, configure, build) on a fresh Debian 12 machine.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# Extra ctest arguments (`make test CTEST_FLAGS="-R analyzer_"`). The JUnit
# file of each run is $(BUILD)/ctest-junit.xml ($(BUILD)-san/ for
# test-sanitize).
CTEST_FLAGS ?=

.PHONY: all deps test-deps configure build demo test test-sanitize fuzz bench clean

all: build

deps:
	@scripts/install-deps.sh

# Always re-run: flags passed now (CI's -DMALLOCK_WERROR=ON) must apply to a
# build directory configured earlier without them.
configure: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

# The tools the tests read mallock's outputs with and the programs they
# run (scripts/install-deps.sh --test-tools says which and why), installed
# before any test starts: a test that installs its own prerequisite while
# others run races them for dpkg's lock, and then skips.
test-deps:
	@scripts/install-deps.sh --test-tools

# --no-tests=error: a build that registers no test is a failure, not a pass.
# CTest counts a skipped test as passed: the JUnit file says which skipped
# and why, printed at the end (.ci/ctest_verdict.py --summary).
JUNIT = $(abspath $(BUILD))/ctest-junit.xml
test: build test-deps
	cd $(BUILD) && { ctest --output-on-failure --no-tests=error -j $(JOBS) \
	  --output-junit $(JUNIT) $(CTEST_FLAGS); rc=$$?; \
	  python3 $(CURDIR)/.ci/ctest_verdict.py --summary $(JUNIT); exit $$rc; }

# The analyzer and format code under ASan+UBSan (a build of its own): the
# tests labelled `sanitize` (the analyzer's and the format's; a shim they
# preload is not sanitized).
JUNIT_SAN = $(abspath $(BUILD))-san/ctest-junit.xml
test-sanitize: deps test-deps
	cmake -S . -B $(BUILD)-san -DMALLOCK_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD)-san -j $(JOBS)
	cd $(BUILD)-san && { ctest -L sanitize --output-on-failure \
	  --no-tests=error -j $(JOBS) --output-junit $(JUNIT_SAN) $(CTEST_FLAGS); \
	  rc=$$?; python3 $(CURDIR)/.ci/ctest_verdict.py --summary $(JUNIT_SAN); \
	  exit $$rc; }

# libFuzzer over the trace reader and the report path (clang build of its own).
FUZZ_SECONDS ?= 60
fuzz: deps
	tests/fuzz/run.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

bench: build
	@scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD)
