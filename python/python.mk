# Python part: the `ctxbench` package and CLI (python/src/ctxbench).
# Included by the top-level Makefile, which defines BUILD, VENV and PY.
#   make venv         .venv with the package's dependencies and the dev tools
#                     (ruff, pytest, jsonschema, playwright, scikit-build-core)
#   make python-run   `pip install .` (builds the engine through CMake), then
#                     `ctxbench run --quick` (the first answer, in seconds), then
#                     the default suite and the RISC-V trap lab, all stored,
#                     the latter two in report.html
#   make plotly-js    the report's chart library, from npm (scripts/plotly_js.sh)
#   make test-python  pytest over python/tests (runs last in `make test`): the
#                     tests marked `measures` one at a time, then the others
#                     on $(JOBS) pytest-xdist workers
.PHONY: venv python-install python-run test-python

# The dependency lists live once, in pyproject.toml; read them with tomllib.
PY_REQS = $(VENV)/requirements.txt
REPORT ?= report.html

$(VENV)/.stamp: pyproject.toml python/python.mk
	@scripts/deps.sh engine
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	  print("\n".join(p["dependencies"] + p["optional-dependencies"]["dev"]))' > $(PY_REQS)
	$(PY) -m pip install -q -r $(PY_REQS)
	touch $@

venv: $(VENV)/.stamp

# The report's chart library (docs/report.md, "Size"): plotly.js's cartesian
# bundle from npm, the plotly.js version the plotly package carries, checked
# against this sha512 of its tarball. Kept in the package (ignored by git).
PLOTLY_JS_VERSION := 4.1.1
PLOTLY_JS_SHA512 := a3c1ab15ebac9dcc012316c1ca7449a58e29920541e9c68cf892e9c2b2d86dbb0eedd67c149f9254dd85afe2fb9221bf67ac383f93b426eb3f42be4479f1d57a
PLOTLY_JS := python/src/ctxbench/assets/plotly-cartesian.min.js
$(PLOTLY_JS): python/python.mk scripts/plotly_js.sh
	scripts/plotly_js.sh $(PLOTLY_JS_VERSION) $(PLOTLY_JS_SHA512) $@
.PHONY: plotly-js
plotly-js: $(PLOTLY_JS)

# `pip install .` builds the engine through scikit-build-core. Here it builds in
# `make engine`'s tree with the same settings (Release, WERROR, tests on), so
# what `make engine` compiled is not compiled again; a plain `pip install .`
# uses build/pip/ instead (pyproject.toml). Build isolation is off: the venv
# has scikit-build-core, and the system cmake/ninja are used.
PY_ENGINE_BUILD ?= $(BUILD)/engine
python-install: venv $(PLOTLY_JS)
	$(PY) -m pip install -q --no-build-isolation \
	  -C build-dir=$(PY_ENGINE_BUILD) -C cmake.define.CTXBENCH_TESTS=ON \
	  -C cmake.define.CTXBENCH_WERROR=ON .

# The first answer first: the quick suite (every probe, fewer and shorter
# samples; seconds) with its summary, then the default suite (minutes), then
# the RISC-V trap lab (riscv/riscv.mk's riscv-deps installs its compiler,
# QEMU and the simulators first, so the package is built with the lab's
# images). The three runs are stored, labelled quick, full and riscv-lab; the
# report holds full and the lab, and the job ends with every seed question's
# answer (bench/seed_questions.py --recap), as the report opens with them.
python-run: riscv-deps python-install
	@echo "== ctxbench run --quick: every probe, fewer samples; the full suite follows =="
	$(VENV)/bin/ctxbench run --quick --label quick
	@echo "== ctxbench run: the default suite, full samples (minutes) =="
	$(VENV)/bin/ctxbench run --label full
	@echo "== ctxbench riscv: the RISC-V trap lab's ecall round trip =="
	CTXBENCH_RISCV_LAB=$(CURDIR)/riscv $(VENV)/bin/ctxbench riscv --label riscv-lab
	$(VENV)/bin/ctxbench report full riscv-lab -o $(REPORT)
	@echo "== every seed question's answer (report.html opens with the same) =="
	$(PY) bench/seed_questions.py --ctxbench $(VENV)/bin/ctxbench --recap full riscv-lab
	@echo "report written to $(REPORT)"

# Chromium (Debian) opens the report in a test; sshd and PostgreSQL serve the
# remote-run and store tests (started by the tests themselves). Installed when we may.
# Two pytest runs: the tests marked `measures` (the real engine's probes on a
# real clock) one at a time with nothing beside them, then all the others on
# $(JOBS) pytest-xdist workers (by file, so a module's fixtures are made once).
# A selection (PYTEST_ARGS) that leaves one run nothing to collect (pytest's
# exit status 5) is no failure.
test-python: python-install
	@if [ "$$(id -u)" -eq 0 ]; then scripts/deps.sh browser servers; fi
	$(PY) -m pytest python/tests -m measures $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(PY) -m pytest python/tests -m "not measures" -n $(JOBS) --dist loadfile $(PYTEST_ARGS) || [ $$? -eq 5 ]

# ---- the wheel ----------------------------------------------------------------
# `make wheel`: build/wheel/ctxbench-<version>-py3-none-manylinux_..._<arch>.whl,
# one for this host's arch, whose engines are all static: the host's own under
# ctxbench/bin/ (built in `make engines`' tree for this arch, so not compiled
# twice) and `make engines`' x86_64, aarch64 and riscv64 under
# ctxbench/engines/ for `run --host`; the riscv lab's images too. The tag is
# the one `auditwheel show` gives this arch's engines (scripts/wheel_tag.py
# prints each arch's).
#   make test-wheel   the wheel in a minimal Debian root and over ssh to an
#                     aarch64 root (python/tests/test_wheel_install.py)
.PHONY: wheel test-wheel
WHEEL_DIR := $(BUILD)/wheel
comma := ,
wheel: engines venv $(PLOTLY_JS)
	@scripts/deps.sh riscv || echo "wheel: no riscv64-unknown-elf-gcc, so no trap lab images in the wheel"
	rm -rf $(WHEEL_DIR)/raw
	$(PY) -m pip wheel -q --no-deps --no-build-isolation -w $(WHEEL_DIR)/raw \
	  -C build-dir=$(BUILD)/$(HOST_ARCH) -C cmake.define.CTXBENCH_STATIC=ON \
	  -C cmake.define.CTXBENCH_TESTS=OFF -C cmake.define.CTXBENCH_WERROR=ON \
	  -C cmake.define.CTXBENCH_ENGINES_DIR=$(CURDIR)/$(BUILD)/engines .
	$(PY) scripts/wheel_tag.py $(WHEEL_DIR)/raw/ctxbench-*.whl $(BUILD)/engines $(WHEEL_DIR) \
	  --require $(subst $() ,$(comma),$(ENGINE_ARCHES))
	$(VENV)/bin/auditwheel show $(WHEEL_DIR)/ctxbench-*.whl

# As root: debootstrap, qemu-user-static and binfmt-support, and qemu's binfmt
# entries enabled (a container may need binfmt_misc mounted first); otherwise
# the tests that need them skip, saying what is missing.
test-wheel: wheel
	@if [ "$$(id -u)" -eq 0 ]; then scripts/deps.sh wheel servers && { \
	  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; \
	  for arch in aarch64 riscv64; do update-binfmts --enable qemu-$$arch; done; } || true; fi
	CTXBENCH_WHEEL=$$(ls $(WHEEL_DIR)/ctxbench-*.whl) $(PY) -m pytest python/tests/test_wheel_install.py -v
