# fixres: the two commands a newcomer types are `make demo` and `make test`.
BUILD_DIR ?= build
PRESET    ?= release
JOBS      ?= $(shell nproc)
# Tests run at once by CTest. One more than the cores cut the suite's time by 7 % on 2 cores (the
# tests wait on the processes they start), but the fault tests' bounds (a rank stopped, then the
# survivor's exit within 60 s) are set for one test per core: TEST_JOBS=3 at your own risk.
TEST_JOBS ?= $(JOBS)
PREFIX    ?= $(HOME)/.local
FIXRES    := $(BUILD_DIR)/bin/fixres
CXX_SOURCES = $(shell git ls-files '*.cpp' '*.h')

.PHONY: all deps configure build install torch2-env torch2-python build-cuda test-cuda test test-long test-asan test-tsan test-tsan-c10d fuzz demo demo-seeds bench format format-check clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake --preset $(PRESET)

configure: $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# fixres into $(PREFIX)/bin (default ~/.local/bin, on PATH in most shells) and the docs into
# $(PREFIX)/share/doc/fixres.
install: deps
	@$(MAKE) --no-print-directory build
	cmake --install "$(BUILD_DIR)" --prefix "$(PREFIX)"

test: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory format-check
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(TEST_JOBS) -LE long

# The second build (docs/pytorch2.md): LibTorch inside PyTorch 2.11.0 (CUDA 13) from PyPI, in a
# project-local environment (.venv-torch2, requirements-torch2.txt), built into build-cuda/ with
# CUDA, cuDNN and NCCL. test-cuda runs the CPU suite against those binaries, the Python
# references on that environment's torch 2.11 and torchvision, less the tests labelled one-build
# (tests/CMakeLists.txt: their outcome does not depend on the LibTorch linked).
CUDA_BUILD_DIR ?= build-cuda

torch2-env:
	@scripts/torch2-env.sh

torch2-python:
	@scripts/torch2-env.sh >&2
	@scripts/torch2-env.sh --python

build-cuda: deps
	scripts/build-cuda.sh --build-dir $(CUDA_BUILD_DIR) --jobs $(JOBS)

test-cuda: build-cuda
	cd $(CUDA_BUILD_DIR) && ctest --output-on-failure -j $(TEST_JOBS) -LE 'long|one-build'

test-long: deps
	@scripts/install-deps.sh --fuzz
	@$(MAKE) --no-print-directory build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/) running the fast tests.
test-asan: deps
	cmake --preset asan
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -LE long

# ThreadSanitizer build (build-tsan/) running the tests with threads of our own: the loader's
# workers, the liveness heartbeat and the reducer's asynchronous all-reduces.
test-tsan: deps
	cmake --preset tsan
	cmake --build build-tsan -j $(JOBS) --target fixres_unit_tests dist_worker c10d_shutdown_repro
	tests/sanitizers/tsan.sh build-tsan
	tests/sanitizers/c10d_repro.sh build-tsan

# The c10d/Gloo shutdown check alone: one small program, no fixres code, about a minute.
test-tsan-c10d: deps
	cmake --preset tsan
	cmake --build build-tsan -j $(JOBS) --target c10d_shutdown_repro
	tests/sanitizers/c10d_repro.sh build-tsan

# libFuzzer targets (clang), FUZZ_SECONDS per target (default 600).
FUZZ_SECONDS ?= 600
fuzz: deps
	@scripts/install-deps.sh --fuzz
	fuzz/run.sh $(FUZZ_SECONDS)

demo: deps
	@$(MAKE) --no-print-directory build
	scripts/demo.sh $(FIXRES)

# The demo with seeds 0, 1 and 2 (about 5 minutes each on 2 cores), then the tables of
# docs/results.md: mean and spread over seeds.
demo-seeds: deps
	@$(MAKE) --no-print-directory build
	for s in 0 1 2; do DEMO_SEED=$$s scripts/demo.sh $(FIXRES) || exit 1; done
	scripts/demo_summary.py runs/demo/seed0 runs/demo/seed1 runs/demo/seed2

bench: deps
	@$(MAKE) --no-print-directory build
	cmake --build $(BUILD_DIR) -j $(JOBS) --target fixres_benches
	bench/run.sh $(BUILD_DIR)

format:
	clang-format -i $(CXX_SOURCES)

format-check:
	@clang-format --dry-run -Werror $(CXX_SOURCES) && echo "format-check: ok"

clean:
	rm -rf $(BUILD_DIR)
