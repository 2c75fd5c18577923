# Thin driver over CMake. `make demo` and `make test` each do all the set-up
# (Debian packages, configure, build) on a fresh Debian 12 machine.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# Extra ctest arguments (.ci/run passes --output-junit FILE).
CTEST_FLAGS ?=

.PHONY: all deps configure build demo test test-sanitize fuzz bench clean

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

# --no-tests=error: a build that registers no test is a failure, not a pass.
test: build
	cd $(BUILD) && ctest --output-on-failure --no-tests=error -j $(JOBS) $(CTEST_FLAGS)

# The analyzer and format code under ASan+UBSan (a build of its own): the
# tests labelled `sanitize` (the analyzer's and the format's; a shim they
# preload is not sanitized).
test-sanitize: deps
	cmake -S . -B $(BUILD)-san -DMALLOCK_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD)-san -j $(JOBS)
	cd $(BUILD)-san && ctest -L sanitize --output-on-failure --no-tests=error \
	  -j $(JOBS) $(CTEST_FLAGS)

# libFuzzer over the trace reader and the report path (clang build of its own).
FUZZ_SECONDS ?= 60
fuzz: deps
	tests/fuzz/run.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

bench: build
	@scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD)
