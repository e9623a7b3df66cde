# fixres: the two commands a newcomer types are `make demo` and `make test`.
BUILD_DIR ?= build
PRESET    ?= release
JOBS      ?= $(shell nproc)
FIXRES    := $(BUILD_DIR)/bin/fixres
CXX_SOURCES = $(shell git ls-files '*.cpp' '*.h')

.PHONY: all deps configure build test test-long demo bench format format-check clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake --preset $(PRESET)

configure: $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory format-check
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE long

test-long: deps
	@$(MAKE) --no-print-directory build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

demo: deps
	@$(MAKE) --no-print-directory build
	scripts/demo.sh $(FIXRES)

bench: deps
	@$(MAKE) --no-print-directory build
	bench/run.sh $(BUILD_DIR)

format:
	clang-format -i $(CXX_SOURCES)

format-check:
	@clang-format --dry-run -Werror $(CXX_SOURCES) && echo "format-check: ok"

clean:
	rm -rf $(BUILD_DIR)
