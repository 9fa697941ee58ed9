# Thin entry points; the build itself is CMake. `make run` and `make test` do every
# setup step themselves (deps are installed with apt-get when missing).
SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)

DEB_PACKAGES := build-essential cmake pkg-config libopenmpi-dev openmpi-bin \
  libhdf5-dev hdf5-tools libzstd-dev libcmocka-dev libjansson-dev libxxhash-dev \
  python3-h5py python3-jsonschema python3-xxhash python3-venv gnuplot-nox clang libclang-rt-14-dev \
  slurm-wlm munge libpmix2 libfann-dev universal-ctags clang-format
FUZZ_BUILD ?= build-fuzz
FUZZ_RUNS ?= 4000

.PHONY: deps build asan format fuzz-setup fuzz fuzz-long run farm farm-usage plan plan-usage slurm-local slurm-local-stop commands-table reference paper paper-quick test check test-full clean

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# Each build runs its own $(JOBS) jobs, also under `make -j` (make test): without
# MAKEFLAGS the inner make does not see the outer jobserver, which it would drop anyway
# with a warning ("-jN forced in submake").
build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@MAKEFLAGS=--no-print-directory cmake --build $(BUILD) -j $(JOBS)

# The C sources of src/ and tests/ in the style of .clang-format (clang-format 14), in
# place; `make test` fails while a file differs (integration_format).
format: deps
	@tools/format.py

# -O1, not Debug's -O0: AddressSanitizer's own documentation asks for -O1 or higher "to get
# a reasonable performance"; asserts stay on (no NDEBUG). The unit tier's CPU falls from
# 223 s to 85 s (docs/history/bench-history.md). It builds what its tier runs, the unit-test programs
# (target unit-tests): 98 s of CPU instead of 117 s for every target. -g1, not -g: the
# line tables a sanitizer's stack trace needs (file:line of every frame), without the
# types and locals only a debugger reads: 108 -> 87 s of CPU (docs/history/bench-history.md);
# `make asan ASAN_G=-g` for a gdb session.
ASAN_G ?= -g1
asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 $(ASAN_G)" -DENPU_SANITIZE=ON >/dev/null
	@MAKEFLAGS=--no-print-directory cmake --build $(ASAN_BUILD) -j $(JOBS) --target unit-tests

# Each libFuzzer target runs FUZZ_RUNS inputs with a fixed seed (so CI is reproducible)
# from a corpus seeded with real inputs:
# the shipped JSON files for the loaders, a store written by the unit test for the reader,
# the head of the shipped trace (and rows with UTC offsets) for the trace reader.
# `make fuzz-long` runs each target for FUZZ_LONG_S seconds instead (results/bench.md has
# its figures); `make fuzz-long FUZZ_TARGETS=store` runs one.
FUZZ_CORPORA := config store journal trace
FUZZ_TARGETS := $(FUZZ_CORPORA)
FUZZ_LONG_S ?= 600

fuzz-setup: build
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DENPU_FUZZ=ON -DENPU_TESTS=ON >/dev/null
	@MAKEFLAGS=--no-print-directory cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@rm -rf $(addprefix $(FUZZ_BUILD)/corpus-,$(FUZZ_CORPORA))
	@mkdir -p $(addprefix $(FUZZ_BUILD)/corpus-,$(FUZZ_CORPORA))
	@$(BUILD)/tests/unit/test_store --write $(FUZZ_BUILD)/corpus-store/seed.h5 >/dev/null
	@$(BUILD)/tests/unit/test_farm --write $(FUZZ_BUILD)/corpus-journal
	@head -40 jobs/traces/AzureLLMInferenceTrace_conv.csv > $(FUZZ_BUILD)/corpus-trace/head.csv
	@printf 'TIMESTAMP,ContextTokens,GeneratedTokens\r\n2024-05-10 00:00:00.009930+00:00,12,3\r\n2024-05-10 00:00:01-05:30,7,1\r\n' \
	  > $(FUZZ_BUILD)/corpus-trace/offsets.csv

# The targets run $(JOBS) at a time (each is one process on one core); each prints its
# name and libFuzzer's "Done N runs" line, and a crash fails the target.
FUZZ_EXTRA_config := jobs
fuzz: fuzz-setup
	@MAKEFLAGS= $(MAKE) --no-print-directory -j $(JOBS) $(addprefix fuzz-run-,$(FUZZ_TARGETS))

fuzz-run-%:
	@set -o pipefail; $(FUZZ_BUILD)/tests/fuzz/fuzz_$* -seed=1 -runs=$(FUZZ_RUNS) -print_final_stats=0 \
	  $(FUZZ_BUILD)/corpus-$* $(FUZZ_EXTRA_$*) 2>&1 | grep -E '^Done [0-9]+ runs' | sed 's/^/fuzz_$*: /'

# Each target for FUZZ_LONG_S seconds on one core, from the same seeds; prints
# libFuzzer's final line (coverage, features, corpus) and stats (runs, exec/s, peak RSS)
# per target and stops at the first crash.
fuzz-long: fuzz-setup
	@set -o pipefail; for t in $(FUZZ_TARGETS); do \
	  extra=$$( [ $$t = config ] && echo $(FUZZ_EXTRA_config) ); \
	  echo "== fuzz_$$t for $(FUZZ_LONG_S) s"; \
	  $(FUZZ_BUILD)/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_LONG_S) -print_final_stats=1 \
	    $(FUZZ_BUILD)/corpus-$$t $$extra 2>&1 | grep -E '^(Done|stat::|#[0-9]+.*DONE|==[0-9]+==ERROR|SUMMARY)' \
	    || exit 1; \
	done

# The farm over every local core (hardware threads count as slots, so -np $(JOBS) needs
# no oversubscription); as root Open MPI wants its two confirmation variables.
MPI_ENV := $(if $(filter 0,$(shell id -u)),OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)

run: build
	$(BUILD)/enpu buckets jobs/demo.json
	$(MPI_ENV) mpirun -np $(JOBS) --use-hwthread-cpus $(BUILD)/enpu farm jobs/demo.json
	$(BUILD)/enpu query results/demo/plans.h5 --phase decode --batch 8 --seq 2048 --slack 0.05 --policy enpu-all
	@echo "note: at 0 % slack the strict budget is T_peak, so eNPU keeps its components at peak behind its DVFS regulator (Table 6), which loses more than NoDVFS's fixed one: why eNPU spends a few % more than NoDVFS there (paper mode: results/figure11.md)"

# `make farm JOB=jobs/x.json [NP=N] [ARGS='--progress-s 30']`: the farm of one job over N
# ranks (default: every local core) as the README shows it, on any machine: as root with
# Open MPI's two confirmation variables, and with --oversubscribe so that N may exceed the
# cores (ranks then share them; the store does not depend on N). Its summary.md and
# validation go to $(RUNS)/<job>/ (ignored by git), never over the shipped reference
# results/<job>/ that `make reference` writes.
NP ?= $(JOBS)
RUNS ?= runs
# Without JOB the usage comes first, before anything is built.
farm: $(if $(JOB),build,farm-usage)
	$(MPI_ENV) mpirun -np $(NP) --oversubscribe $(BUILD)/enpu farm $(JOB) --results $(RUNS) $(ARGS)

farm-usage:
	@echo "usage: make farm JOB=jobs/<job>.json [NP=N] [ARGS='...']" >&2; exit 2

# `make plan CONFIG=config.json TRACE=trace.csv [NP=N] [ARGS='--chip ...']`: from a
# published model config and a trace to validated plans in $(RUNS)/<name>/ (enpu plan:
# job init, the farm over N ranks, the replay and the report; a rerun resumes).
plan: $(if $(and $(CONFIG),$(TRACE)),build,plan-usage)
	$(MPI_ENV) $(BUILD)/enpu plan $(CONFIG) --trace $(TRACE) --np $(NP) --runs $(RUNS) $(ARGS)

plan-usage:
	@echo "usage: make plan CONFIG=<config.json> TRACE=<trace.csv> [NP=N] [ARGS='...']" >&2; exit 2

# The one-node Slurm the tests use (tests/integration/slurm/slurm_cluster.py), started
# by hand and sized to this machine, for trying slurm/*.sbatch without a cluster: it
# prints the `export SLURM_CONF=...` line the Slurm commands need (tools/slurm_local.py).
slurm-local:
	@tools/slurm_local.py start --state $(BUILD)/slurm-local

slurm-local-stop:
	@tools/slurm_local.py stop --state $(BUILD)/slurm-local

# The command table of docs/commands.md from the option tables the commands parse with
# (tools/commands_table.py; integration_commands_table fails while it is stale).
commands-table: build
	@tools/commands_table.py --enpu $(BUILD)/enpu

# The committed reference results of the full Llama3-70B job (results/llama3-70b/): the
# farm over 3 ranks, replays of the one-hour trace (1x, 5x, 8x, 16x) and of a 24-hour
# day (1x, and 12x: the load Table 3's nodes are provisioned for), the load sweep,
# validation of a sample of plans, and the report with its plots; the online governors
# beside the plans on the hour, and pelm-lossless trained on its first half and replayed
# on the second; the burst traces of `enpu trace burst` (a minute at 6x, 10 s at 4x every
# minute) swept under each safeguard mode, and the day and the sweep under the paper's
# safeguards beside the default predictive ones. ~9 min on 2 cores.
REF := results/llama3-70b
REPLAY_ON := $(BUILD)/enpu replay --store $(REF)/plans.h5 --cluster jobs/clusters/llama3-70b.json
REPLAY := $(REPLAY_ON) --trace jobs/traces/AzureLLMInferenceTrace_conv.csv
BURSTS := window:--window:1860,60,6 onoff:--onoff:10,50,4

reference: build
	$(MPI_ENV) mpirun -np 3 --oversubscribe $(BUILD)/enpu farm jobs/llama3-70b.json --progress-s 30
	$(REPLAY) --out $(REF)/replay-hour
	$(REPLAY) --rate 5 --out $(REF)/replay-5x
	$(REPLAY) --rate 8 --out $(REF)/replay-8x
	$(REPLAY) --rate 16 --out $(REF)/replay-16x
	$(REPLAY) --day --out $(REF)/replay-day
	$(REPLAY) --day --rate 12 --windows-only --out $(REF)/replay-day-12x
	mkdir -p $(REF)/sweep && $(REPLAY) --rates 0.5,1,2,3,5,8,12,16,24 --out $(REF)/sweep > $(REF)/sweep/sweep.txt
	mkdir -p $(REF)/bursts/sweep-paper && $(REPLAY) --rates 0.5,1,2,3,5,8,12,16,24 --safeguards paper \
	  --out $(REF)/bursts/sweep-paper > $(REF)/bursts/sweep-paper/sweep.txt
	mkdir -p $(REF)/bursts/day-paper && $(REPLAY) --day --safeguards paper --windows-only --out $(REF)/bursts/day-paper \
	  > $(REF)/bursts/day-paper/replay.txt
	mkdir -p $(REF)/bursts/day-12x-paper && $(REPLAY) --day --rate 12 --safeguards paper --windows-only \
	  --out $(REF)/bursts/day-12x-paper > $(REF)/bursts/day-12x-paper/replay.txt
	for b in $(BURSTS); do name=$${b%%:*}; shape=$$(echo $$b | cut -d: -f2-3 | tr : ' '); \
	  $(BUILD)/enpu trace burst jobs/traces/AzureLLMInferenceTrace_conv.csv $$shape -o $(BUILD)/burst-$$name.csv \
	  || exit 1; for m in paper switching predictive; do mkdir -p $(REF)/bursts/$$name-$$m && \
	  $(REPLAY_ON) --trace $(BUILD)/burst-$$name.csv --rates 1,1.5,2,2.5,3 --safeguards $$m \
	  --out $(REF)/bursts/$$name-$$m > $(REF)/bursts/$$name-$$m/sweep.txt || exit 1; done; done
	$(BUILD)/enpu validate $(REF)/plans.h5 --trace jobs/traces/AzureLLMInferenceTrace_conv.csv \
	  --cluster jobs/clusters/llama3-70b.json --sample 24
	$(BUILD)/enpu report $(REF)/plans.h5 --job jobs/llama3-70b.json --replay $(REF)/replay-day-12x
	mkdir -p $(REF)/governors/train-eval && $(REPLAY) --governors ondemand,pid,pelm,pelm-lossless --spec 20,2 \
	  --windows-only --out $(REF)/governors > $(REF)/governors/replay.txt
	head -n 9684 jobs/traces/AzureLLMInferenceTrace_conv.csv > $(BUILD)/conv-first-half.csv
	(head -n 1 jobs/traces/AzureLLMInferenceTrace_conv.csv; tail -n +9685 jobs/traces/AzureLLMInferenceTrace_conv.csv) \
	  > $(BUILD)/conv-second-half.csv
	$(BUILD)/enpu replay --store $(REF)/plans.h5 --cluster jobs/clusters/llama3-70b.json --governors pelm-lossless \
	  --train $(BUILD)/conv-first-half.csv --epochs 3 --eval $(BUILD)/conv-second-half.csv --windows-only \
	  --save-net $(REF)/governors/train-eval/pelm-lossless-net.json --out $(REF)/governors/train-eval \
	  > $(REF)/governors/train-eval/replay.txt 2> $(REF)/governors/train-eval/training.txt
	$(BUILD)/enpu report $(REF)/plans.h5 --replay $(REF)/governors --out $(REF)/governors/report
	$(BUILD)/enpu report $(REF)/plans.h5 --replay $(REF)/governors/train-eval --out $(REF)/governors/train-eval/report

# The paper's evaluation (results/paper/README.md): one job per model in jobs/paper/, every
# stage of tools/paper.py incremental (a rerun with nothing changed runs nothing). The farms
# run over 3 ranks (master + 2 workers). `make paper-quick` is the same pipeline on the
# tiny grid of jobs/paper/quick/ into $(BUILD)/paper-quick (what `make test` checks).
paper: build
	tools/paper.py --enpu $(BUILD)/enpu --np 3 all

paper-quick: build
	tools/paper.py --pipeline jobs/paper/quick/pipeline.json --out $(BUILD)/paper-quick --enpu $(BUILD)/enpu --np 3 all

# Every tier: the fuzzers (fixed seed and run count), then the Release build's unit and
# integration tests with the unit tests under ASan + UBSan alongside, at nice 10: they take
# the CPU the Release tests leave idle while they wait on mpirun, Slurm or a farm's
# progress. Their output follows the Release tests'; either failing fails the target.
ASAN_LOG := $(ASAN_BUILD)/Testing/unit-asan.log
# The Release tier's output (also on the terminal): the last line sums both tiers from
# the two logs (tools/test_summary.sh), so the result is not buried mid-log.
RELEASE_LOG := $(BUILD)/Testing/release.log
# One Release test more than there are cores: the Slurm, signal and fault tests spend
# much of their time waiting (a walltime to pass, Open MPI's kill delays, a daemon's
# poll), and the third test takes the core they leave idle.
TEST_JOBS ?= $(shell echo $$(( $(JOBS) + 1 )))

# The three builds and the fuzzers first, side by side ($(JOBS) make jobs): one after
# another they left a core idle in each configure, link and the fuzzers' tail.
test:
	@$(MAKE) --no-print-directory -j $(JOBS) build asan fuzz
	@echo "== unit + integration tests (Release); unit tests under ASan + UBSan alongside =="
	@mkdir -p $(ASAN_BUILD)/Testing $(BUILD)/Testing; \
	(cd $(ASAN_BUILD) && nice -n 10 ctest --output-on-failure -j $(JOBS) -L unit) > $(ASAN_LOG) 2>&1 & asan=$$!; \
	(cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS)) 2>&1 | tee $(RELEASE_LOG); release=$${PIPESTATUS[0]}; \
	wait $$asan; asan_rc=$$?; \
	echo "== unit tests under ASan + UBSan (ran alongside; $(ASAN_LOG)) =="; cat $(ASAN_LOG); \
	tools/test_summary.sh $(RELEASE_LOG) $$release $(ASAN_LOG) $$asan_rc; \
	exit $$(( release || asan_rc ))

# The pre-commit tier, under 3 minutes on 2 quiet cores: every unit test and the
# integration tests labelled `check` (a farm under mpirun, `enpu query` against h5py, a
# replay). `make test` runs everything.
check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L check

# The unit tests' heaviest cases on the whole model instead of a few layers (test_size.h):
# the same properties at full size, minutes of CPU (unit_search ~2 min on one core).
test-full: build
	cd $(BUILD) && ENPU_TEST_SIZE=full ctest --output-on-failure -j $(JOBS) -L unit

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
