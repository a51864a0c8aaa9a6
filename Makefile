# A thin front for CMake.  `make run` builds and runs the k-means demo; `make test`
# builds and runs every test; both install what they need first (Debian).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run test test-quick chaos bench sanitize release no-s3 install clean format

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

run: build
	@examples/kmeans/run.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

# The quick tier alone (a few minutes): what CI also runs under the sanitizers.
test-quick: build
	@cd $(BUILD) && ctest --output-on-failure -L quick -j $(JOBS) --timeout 600

# The combination matrix, every case of it (docs/chaos.md; hours): the counts
# at the end.  CHAOS_ARGS="--only failure=kill9" runs a part.
chaos: build
	@python3 tests/chaos/matrix.py $(BUILD) $(CHAOS_ARGS)

bench: build
	@bench/run.sh $(BUILD)

# The quick multi-process tier under sanitizers (CI runs it).
sanitize: deps
	@cmake -S . -B build-asan -DRALLY_SANITIZE=address,undefined -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
	@cmake --build build-asan -j $(JOBS) -- --no-print-directory
	@cd build-asan && ctest --output-on-failure -L quick -j $(JOBS) --timeout 600
	@cmake -S . -B build-tsan -DRALLY_SANITIZE=thread -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
	@cmake --build build-tsan -j $(JOBS) -- --no-print-directory
	@cd build-tsan && ctest --output-on-failure -L threads -j $(JOBS) --timeout 600

# Everything compiles with -O3 (Release) too: gcc's optimiser sees warnings
# (-Werror) the default build does not.  CI builds it; no test runs there.
release: deps
	@cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build-release -j $(JOBS) -- --no-print-directory

# The optional parts left out (-DRALLY_S3=OFF: no libcurl or expat in
# librally): it builds, refuses s3:// saying how to build it, and its
# snapshots on a directory work.  CI runs it.
no-s3: deps
	@cmake -S . -B build-nos3 -DRALLY_S3=OFF >/dev/null
	@cmake --build build-nos3 -j $(JOBS) -- --no-print-directory
	@cd build-nos3 && ctest --output-on-failure -j $(JOBS) --timeout 600 \
		-R '^(snapshot_no_s3|snapshot_[a-z]+_test|snapshot_resume_kill9|tier2_retention|layers|circles)$$'

# make install PREFIX=/opt/rally (default: CMake's, /usr/local); DESTDIR works too.
install: build
	@cmake --install $(BUILD) $(if $(PREFIX),--prefix "$(PREFIX)")

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-tsan build-release build-nos3
