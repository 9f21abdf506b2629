# ctxbench: the two commands of the quick start are `make run` and `make test`.
# Each installs what it needs (Debian packages as root via scripts/deps.sh,
# Python packages into .venv). Parts own their rules: engine here,
# python/python.mk and riscv/riscv.mk for the others.

SHELL := /bin/bash
BUILD ?= build
VENV ?= .venv
PY := $(VENV)/bin/python
JOBS ?= $(shell nproc)
CMAKE_GEN := -G Ninja

.PHONY: all run test deps-engine engine engine-asan test-engine test-asan cross test-cross engines lint format docs reference-run

all: engine

deps-engine:
	@scripts/deps.sh engine

# ---- engine ---------------------------------------------------------------
engine: deps-engine
	cmake -S engine -B $(BUILD)/engine $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DCTXBENCH_WERROR=ON
	cmake --build $(BUILD)/engine -j $(JOBS)

# Unit tests (GoogleTest) and system tests (pytest over the real binary,
# with the venv's Python so jsonschema is there).
test-engine: engine venv
	cmake -S engine -B $(BUILD)/engine -DPython3_EXECUTABLE=$(CURDIR)/$(PY) > /dev/null
	cmake --build $(BUILD)/engine -j $(JOBS)
	cd $(BUILD)/engine && ctest --output-on-failure -j $(JOBS)

# ASAN_TARGETS empty: the whole tree.
engine-asan: deps-engine
	cmake -S engine -B $(BUILD)/asan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DCTXBENCH_WERROR=ON -DCTXBENCH_SANITIZE=ON
	cmake --build $(BUILD)/asan -j $(JOBS) $(ASAN_TARGETS)

# The engine's tests once more under AddressSanitizer + UBSan (unit tests only:
# the fault tests kill children, which sanitizers report as noise). So the
# tree builds only what `ctest -L unit` runs: engine_unit_tests (which brings
# the uswitch self-test it runs), not the engine binary.
test-asan: ASAN_TARGETS = --target engine_unit_tests
test-asan: engine-asan
	cd $(BUILD)/asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -L unit

# Cross builds for aarch64 and riscv64: only what engine/tests/cross_smoke.sh
# runs under qemu-user, the engine (with the static helpers it depends on)
# and the uswitch self-test.
CROSS_TARGETS := ctxbench-engine ctxbench-uswitch-selftest
cross:
	@scripts/deps.sh engine cross
	for arch in aarch64 riscv64; do \
	  cmake -S engine -B $(BUILD)/$$arch $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DCTXBENCH_WERROR=ON \
	    -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/engine/cmake/toolchain-$$arch-linux.cmake -DCTXBENCH_TESTS=OFF && \
	  cmake --build $(BUILD)/$$arch -j $(JOBS) --target $(CROSS_TARGETS) || exit 1; \
	done

# Static engines for `ctxbench run --host`, one per arch whose compiler is
# here (the host's own, and the cross compilers of `make cross`):
# $(BUILD)/engines/<arch>/ctxbench-engine and ctxbench-exit0. The cross
# archs share `make cross`'s build trees; `make python-install` puts what is
# there into the package (ctxbench/engines/<arch>/).
HOST_ARCH := $(shell uname -m)
ENGINE_ARCHES ?= x86_64 aarch64 riscv64
# The engine and the static helpers it runs from its own directory (and the
# seccomp wrapper, built beside it).
ENGINE_FILES := ctxbench-engine ctxbench-exit0 ctxbench-forkloop ctxbench-seccomp-exec
engines: deps-engine
	@scripts/deps.sh cross || echo "engines: building the archs whose compilers are here"
	for arch in $(ENGINE_ARCHES); do \
	  toolchain=""; \
	  if [ $$arch != $(HOST_ARCH) ]; then \
	    command -v $$arch-linux-gnu-g++ > /dev/null || { echo "engines: no $$arch-linux-gnu-g++, no $$arch engine"; continue; }; \
	    toolchain=-DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/engine/cmake/toolchain-$$arch-linux.cmake; \
	  fi; \
	  cmake -S engine -B $(BUILD)/$$arch $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DCTXBENCH_WERROR=ON \
	    -DCTXBENCH_STATIC=ON -DCTXBENCH_TESTS=OFF $$toolchain && \
	  cmake --build $(BUILD)/$$arch -j $(JOBS) --target ctxbench-engine && \
	  mkdir -p $(BUILD)/engines/$$arch && \
	  cp $(addprefix $(BUILD)/$$arch/,$(ENGINE_FILES)) $(BUILD)/engines/$$arch/ || exit 1; \
	done

# Cross-built engines run a smoke set under qemu-user; their records must validate.
test-cross: cross venv
	engine/tests/cross_smoke.sh $(BUILD) $(PY)

lint: venv engine
	@echo "clang-format check"; clang-format --dry-run --Werror $$(git ls-files 'engine/*.cpp' 'engine/*.hpp' 'engine/*.h')
	$(VENV)/bin/ruff check python bench scripts engine/tests
	$(VENV)/bin/ruff format --check python bench scripts engine/tests
	@echo "docs/probes.md is current"; $(BUILD)/engine/ctxbench-engine docs probes --figures $(REFERENCE_RUN) | diff -u docs/probes.md - \
	  || { echo "docs/probes.md is stale: run 'make docs'"; exit 1; }
	@$(BUILD)/engine/ctxbench-engine docs probe-names | diff -u schema/probe-names.json - \
	  || { echo "schema/probe-names.json is stale: run 'make docs'"; exit 1; }
	@echo "docs/reproductions.md is current"; $(PY) bench/reproductions.py --from $(REFERENCE_RUN) | diff -u docs/reproductions.md - \
	  || { echo "docs/reproductions.md is stale: run 'make docs'"; exit 1; }

format: venv
	clang-format -i $$(git ls-files 'engine/*.cpp' 'engine/*.hpp' 'engine/*.h')
	$(VENV)/bin/ruff format python bench scripts engine/tests

# The generated docs: docs/probes.md and docs/reproductions.md take their
# figures from the reference run, schema/probe-names.json from the catalogue.
# Reviewed, never overwritten blindly: each is written beside itself as
# NAME.new and shown as a diff; `make accept-golden` puts them in place.
REFERENCE_RUN := docs/data/reference-run.jsonl
GENERATED := docs/probes.md docs/reproductions.md schema/probe-names.json
docs: engine venv
	$(BUILD)/engine/ctxbench-engine docs probes --figures $(REFERENCE_RUN) > docs/probes.md.new
	$(PY) bench/reproductions.py --from $(REFERENCE_RUN) > docs/reproductions.md.new
	$(BUILD)/engine/ctxbench-engine docs probe-names > schema/probe-names.json.new
	@for file in $(GENERATED); do \
	  if cmp -s "$$file" "$$file.new"; then rm "$$file.new"; else diff -u "$$file" "$$file.new" || true; fi; \
	done
	@for file in $(GENERATED); do [ ! -e "$$file.new" ] || { \
	  echo "changed: review the diffs above, then 'make accept-golden'"; break; }; done

# Accept what was reviewed: every NAME.new that `make docs` or the golden
# tests (CTXBENCH_UPDATE_GOLDEN=1) wrote replaces NAME.
REVIEWED := python/tests/golden docs schema
.PHONY: accept-golden
accept-golden:
	@found=$$(find $(REVIEWED) -name '*.new' -not -path 'docs/data/*'); \
	if [ -z "$$found" ]; then echo "nothing to accept: no *.new under $(REVIEWED)"; fi; \
	for new in $$found; do mv -v "$$new" "$${new%.new}"; done

# A new reference run (the whole catalogue, default settings; minutes, on a
# quiet machine: nothing else running), then what is cut from it, for review:
# the docs (make docs) and the golden output of `ctxbench show` on it
# (python/tests/golden/show_reference_*.txt), each written as NAME.new with
# its diff; a changed golden output fails the test. Review, then `make
# accept-golden`. The run is written to a temporary file first, so a failed
# or interrupted run leaves the old one.
reference-run: engine venv
	$(BUILD)/engine/ctxbench-engine run --out $(REFERENCE_RUN).part
	mv $(REFERENCE_RUN).part $(REFERENCE_RUN)
	$(MAKE) docs
	CTXBENCH_UPDATE_GOLDEN=1 $(PY) -m pytest -q -p no:cacheprovider python/tests/test_units.py -k show_reference

include python/python.mk
include riscv/riscv.mk

run: python-run

# pytest runs last so the closing line CI reads is pytest's summary. The lab's
# tests ran in test-riscv (with every tool required), so test-python skips
# them. The wheel's tests are `make test-wheel`, not part of `make test`: the
# clean root is built from the Debian mirror and the static engines of three
# archs are built for it, about 12 minutes on a 2-vCPU machine, which would
# take CI past its 20 minutes; test-python skips them (no CTXBENCH_WHEEL).
test: PYTEST_ARGS = --ignore=python/tests/test_riscv_lab.py
test: lint test-engine test-asan test-cross test-riscv test-python
