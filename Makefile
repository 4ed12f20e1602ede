# make run: install into .venv and start the server (demo data on first start); make test: run every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: run test test-cluster bench install install-test web-test-tools clean

run: $(VENV)/.installed
	$(BIN)/seclake up

# PYTHONFAULTHANDLER: a crash (SIGSEGV in a C extension) prints every thread's
# Python stack, also after pytest's own fault handler is gone at its exit.
test: $(VENV)/.installed-test web-test-tools
	PYTHONFAULTHANDLER=1 ./scripts/test-postgres.sh $(BIN)/python -m pytest $(PYTEST_ARGS)

# Cluster mode's tests alone (a real Ray cluster on 127.0.0.1; installs the cluster extra).
test-cluster: $(VENV)/.installed-test
	$(BIN)/python -m pip install --quiet -e ".[cluster]"
	PYTHONFAULTHANDLER=1 ./scripts/test-postgres.sh $(BIN)/python -m pytest tests/cluster $(PYTEST_ARGS)

# Node test tools, each from its package-lock.json: tests/web (playwright-core;
# the browser is the Debian chromium package) and tests/clients (the public
# npm client ingext-api). Without npm those tests are skipped (under CI=true
# they fail).
web-test-tools:
	@for dir in tests/web tests/clients; do \
		if [ ! -f $$dir/node_modules/.package-lock.json ] || [ $$dir/package-lock.json -nt $$dir/node_modules/.package-lock.json ]; then \
			if command -v npm >/dev/null 2>&1; then \
				(cd $$dir && npm ci --no-audit --no-fund --loglevel=error); \
			else echo "npm not found: the tests in $$dir will be skipped"; fi; \
		fi; \
	done

# make bench: the benchmark (docs/benchmarks.md, bench-results/); BENCH_ARGS="--events 200000" for a smaller run.
BENCH_ARGS ?=
bench: $(VENV)/.installed-bench
	$(BIN)/seclake bench $(BENCH_ARGS)

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The sources Cython compiles at install (seclake/native.py): editing one
# rebuilds it at the next make run/test (until then it runs from source).
NATIVE := setup.py seclake/native.py $(shell $(PYTHON) seclake/native.py) $(wildcard seclake/*/*.pxd)

# Stamps: reinstall when the package metadata or a compiled module changes.
$(VENV)/.installed: pyproject.toml $(NATIVE) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(NATIVE) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@ $(VENV)/.installed

$(VENV)/.installed-bench: pyproject.toml $(NATIVE) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
