# make run: install into .venv and start the server (demo data on first start); make test: run every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Workers: one and a half per core. The suite's tests have their own ports, data dirs and schemas
# (tests/conftest.py), and wait a third of their time on servers, Ray and browsers they start (on
# 2 cores the CPU was 1.4 cores busy): 2 workers took 881 s, 3 took 702 s, 4 took 726 s, each
# run whole and green on the same machine. loadgroup: tests sharing a module-scoped fixture run
# on one worker (tests/conftest.py).
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(max(2, len(os.sched_getaffinity(0)) * 3 // 2))')
PYTEST_ARGS ?= -n $(TEST_WORKERS) --dist loadgroup

.PHONY: run test test-quick test-cluster bench install install-test native web-test-tools clean

# The server starts from the sources at once; the per-record modules compile
# in the background (nice 19, log in build/native/) for the next start, which
# runs them ~1.15-1.2x faster: waiting minutes for that on a first start is
# not worth it (seclake/native.py).
run: $(VENV)/.installed
	@if ! $(MAKE) --no-print-directory -q $(VENV)/.native 2>/dev/null; then \
		echo "make run: compiling the per-record modules in the background for the next start (log: build/native/make.log)"; \
		mkdir -p build/native; \
		setsid nice -n 19 $(MAKE) --no-print-directory $(VENV)/.native >build/native/make.log 2>&1 </dev/null & \
	fi
	$(BIN)/seclake up

# PYTHONFAULTHANDLER: a crash (SIGSEGV in a C extension) prints every thread's
# Python stack, also after pytest's own fault handler is gone at its exit.
test: $(VENV)/.installed-test $(VENV)/.native web-test-tools
	PYTHONFAULTHANDLER=1 ./scripts/test-postgres.sh $(BIN)/python -m pytest --durations=15 $(PYTEST_ARGS)

# A developer's loop: the tests not marked slow, on every core, first failure stops.
test-quick: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n auto -x -m "not slow" $(PYTEST_ARGS_QUICK)

# Cluster mode's tests alone (a real Ray cluster on 127.0.0.1).
test-cluster: $(VENV)/.installed-test $(VENV)/.native
	PYTHONFAULTHANDLER=1 ./scripts/test-postgres.sh $(BIN)/python -m pytest tests/cluster $(PYTEST_ARGS)

# Node test tools, each from its package-lock.json: tests/web (playwright-core;
# the browser is the Debian chromium package) and tests/clients (the public
# npm client ingext-api), tests/service/oidc (the OpenID provider oidc-provider).
# Without npm those tests are skipped (under CI=true
# they fail).
web-test-tools:
	@for dir in tests/web tests/clients tests/service/oidc; do \
		if [ ! -f $$dir/node_modules/.package-lock.json ] || [ $$dir/package-lock.json -nt $$dir/node_modules/.package-lock.json ]; then \
			if command -v npm >/dev/null 2>&1; then \
				echo "installing the node test tools of $$dir (npm ci)"; \
				(cd $$dir && npm ci --no-audit --no-fund --loglevel=error); \
			else echo "npm not found: the tests in $$dir will be skipped"; fi; \
		fi; \
	done

# make bench: the benchmark (docs/benchmarks.md, bench-results/); BENCH_ARGS="--events 200000" for a smaller run.
BENCH_ARGS ?=
bench: $(VENV)/.installed-bench $(VENV)/.native
	$(BIN)/seclake bench $(BENCH_ARGS)

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test
native: $(VENV)/.native

$(BIN)/python:
	@echo "make: creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The sources Cython compiles (seclake/native.py): editing one rebuilds it at
# the next make run/test (until then it runs from source).
NATIVE := setup.py seclake/native.py $(shell $(PYTHON) seclake/native.py) $(wildcard seclake/*/*.pxd)

# Stamps: reinstall when the package metadata changes. pip installs the
# sources only (SECLAKE_NATIVE=0); the compile is a step of its own, so one
# compile serves run, test and bench, and only what changed is rebuilt.
$(VENV)/.installed: pyproject.toml setup.py | $(BIN)/python
	@echo "make: installing seclake and its dependencies into $(VENV) (pip)"
	SECLAKE_NATIVE=0 $(BIN)/python -m pip install --progress-bar on -e .
	touch $@

# The test extra with cluster mode's Ray: `make test` runs every test on a fresh clone.
$(VENV)/.installed-test: pyproject.toml setup.py | $(BIN)/python
	@echo "make: installing seclake with its test and cluster extras into $(VENV) (pip)"
	SECLAKE_NATIVE=0 $(BIN)/python -m pip install --progress-bar on -e ".[test,cluster]"
	touch $@ $(VENV)/.installed

$(VENV)/.installed-bench: pyproject.toml setup.py | $(BIN)/python
	SECLAKE_NATIVE=0 $(BIN)/python -m pip install -e ".[bench]"
	touch $@ $(VENV)/.installed

# The compile: Cython and setuptools as pyproject.toml's build-system asks,
# then seclake/native.py builds each module beside its source, with a count.
# flock: a background compile of make run and a make test never build at once.
$(VENV)/.native: $(NATIVE) | $(VENV)/.installed
	@$(BIN)/python -m pip install --quiet "setuptools>=77" wheel "cython>=3.0,<4"
	flock $(VENV)/.native.lock $(BIN)/python seclake/native.py build
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
