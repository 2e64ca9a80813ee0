# The two commands of the README: `make demo` (the main job) and `make test` (all tests).
# Both install what a fresh Debian bookworm machine lacks first (scripts/setup.sh).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=
PREFIX     ?= /usr/local

.PHONY: all setup build demo test test-sanitize fuzz fuzz-ci bench format clean install deb

all: build

setup:
	@./scripts/setup.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTACKSYM_WERROR=ON $(CMAKE_FLAGS)

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@./scripts/demo.sh $(BUILD)

# scripts/ctest.sh: without the environment's DEBUGINFOD_URLS; failed tests rerun verbosely.
test: build
	./scripts/ctest.sh $(BUILD) $(JOBS)

# ASan + UBSan build of the whole test suite.
test-sanitize: setup
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSTACKSYM_WERROR=ON \
	  -DSTACKSYM_SANITIZE=ON -DSTACKSYM_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ./scripts/ctest.sh $(ASAN_BUILD) $(JOBS)

# libFuzzer targets (clang), each run for FUZZ_SECONDS from a seed corpus made of fixtures.
fuzz: setup
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSTACKSYM_FUZZ=ON -DSTACKSYM_TESTS=ON -DSTACKSYM_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	./scripts/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	./bench/run.sh $(BUILD)

# bin/stacksym, lib/libstacksym.so, the C header, pkg-config and CMake files, man page,
# libexec/stacksym/llvm-symbolizer under PREFIX.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# A Debian package (CPack) in $(BUILD)/package: apt install ./$(BUILD)/package/stacksym_*.deb
deb: build
	cd $(BUILD) && cpack -G DEB

format:
	git ls-files '*.cc' '*.h' '*.c' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
