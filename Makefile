# Thin entry points; the build itself is CMake. `make run` and `make test` do every
# setup step themselves (deps are installed with apt-get when missing).
SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)

DEB_PACKAGES := build-essential cmake pkg-config libopenmpi-dev openmpi-bin \
  libhdf5-dev hdf5-tools libzstd-dev libcmocka-dev libjansson-dev libxxhash-dev \
  python3-h5py python3-jsonschema gnuplot-nox clang libclang-rt-14-dev
FUZZ_BUILD ?= build-fuzz
FUZZ_RUNS ?= 4000

.PHONY: deps build asan fuzz run test clean

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DENPU_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

# Each libFuzzer target runs FUZZ_RUNS inputs with a fixed seed (so CI is reproducible)
# from a corpus seeded with real inputs:
# the shipped JSON files for the loaders, a store written by the unit test for the reader.
fuzz: build
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DENPU_FUZZ=ON -DENPU_TESTS=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_config fuzz_store
	@rm -rf $(FUZZ_BUILD)/corpus-config $(FUZZ_BUILD)/corpus-store
	@mkdir -p $(FUZZ_BUILD)/corpus-config $(FUZZ_BUILD)/corpus-store
	@$(BUILD)/tests/unit/test_store --write $(FUZZ_BUILD)/corpus-store/seed.h5 >/dev/null
	set -o pipefail; $(FUZZ_BUILD)/tests/fuzz/fuzz_config -seed=1 -runs=$(FUZZ_RUNS) -print_final_stats=0 \
	  $(FUZZ_BUILD)/corpus-config jobs 2>&1 | grep -E '^Done [0-9]+ runs'
	set -o pipefail; $(FUZZ_BUILD)/tests/fuzz/fuzz_store -seed=1 -runs=$(FUZZ_RUNS) -print_final_stats=0 \
	  $(FUZZ_BUILD)/corpus-store 2>&1 | grep -E '^Done [0-9]+ runs'

run: build
	$(BUILD)/enpu buckets jobs/demo.json
	$(BUILD)/enpu graph jobs/demo.json --phase prefill --batch 1 --seq 1024
	$(BUILD)/enpu graph jobs/demo.json --phase decode --batch 8 --seq 2048 --time
	$(BUILD)/enpu compile jobs/demo.json --phase decode --batch 8 --seq 2048 --policy all

test: build asan fuzz
	@echo "== unit + integration tests (Release) =="
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@echo "== unit tests under ASan + UBSan =="
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
