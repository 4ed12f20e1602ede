# make run: install into .venv and start the server (demo data on first start); make test: run every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: run test bench install install-test clean

run: $(VENV)/.installed
	$(BIN)/seclake up

test: $(VENV)/.installed-test
	./scripts/test-postgres.sh $(BIN)/python -m pytest $(PYTEST_ARGS)

# make bench: the benchmark (docs/benchmarks.md, bench-results/); BENCH_ARGS="--events 200000" for a smaller run.
BENCH_ARGS ?=
bench: $(VENV)/.installed-bench
	$(BIN)/seclake bench $(BENCH_ARGS)

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamps: reinstall only when the package metadata changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@ $(VENV)/.installed

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
