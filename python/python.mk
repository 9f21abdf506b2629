# Python part: the `ctxbench` package and CLI (python/src/ctxbench).
# Included by the top-level Makefile, which defines BUILD, VENV and PY.
#   make venv         .venv with the package's dependencies and the dev tools
#                     (ruff, pytest, jsonschema, playwright, scikit-build-core)
#   make python-run   `pip install .` (builds the engine through CMake), then
#                     `ctxbench run` the default suite, store it, write report.html
#   make test-python  pytest over python/tests (runs last in `make test`)
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

# `pip install .` builds the engine through scikit-build-core. Here it builds in
# `make engine`'s tree with the same settings (Release, WERROR, tests on), so
# what `make engine` compiled is not compiled again; a plain `pip install .`
# uses build/pip/ instead (pyproject.toml). Build isolation is off: the venv
# has scikit-build-core, and the system cmake/ninja are used.
PY_ENGINE_BUILD ?= $(BUILD)/engine
python-install: venv
	$(PY) -m pip install -q --no-build-isolation \
	  -C build-dir=$(PY_ENGINE_BUILD) -C cmake.define.CTXBENCH_TESTS=ON \
	  -C cmake.define.CTXBENCH_WERROR=ON .

python-run: python-install
	$(VENV)/bin/ctxbench run --report $(REPORT)
	@echo "report written to $(REPORT)"

# Chromium (Debian) opens the report in a test; sshd and PostgreSQL serve the
# remote-run and store tests (started by the tests themselves). Installed when we may.
test-python: python-install
	@if [ "$$(id -u)" -eq 0 ]; then scripts/deps.sh browser servers; fi
	$(PY) -m pytest python/tests $(PYTEST_ARGS)
