# Two commands on a fresh machine: `make reproduce` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8888

.PHONY: help install install-test system-deps reproduce reproduce-quick lint test test-fast lab dashboard bench clean-venv

# What the lint and format gates cover (mypy checks the package: [tool.mypy] in pyproject.toml).
LINT_PATHS := smdlab tests benchmarks tools notebooks

help:
	@echo "make reproduce   regenerate every figure into figures/ (creates $(VENV) if needed)"
	@echo "make lint        ruff (lint + format check) and mypy; the gates make test enforces"
	@echo "make test        install the project, its test extras and system packages; lint, type-check, run all tests"
	@echo "make lab         open JupyterLab on notebooks/"
	@echo "make dashboard   serve the explorer notebook as a Voila dashboard"
	@echo "make bench       run the benchmarks (prints side-by-side ratios)"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Stamps re-run the install when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

# Debian's chromium: static figure export (kaleido) and the real-browser tests (Playwright).
system-deps:
	@bash tools/system-deps.sh

reproduce: install system-deps
	$(VENV)/bin/smdlab reproduce --out figures

reproduce-quick: install system-deps
	$(VENV)/bin/smdlab reproduce --quick --out figures

lint: install-test
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy

test: install-test system-deps lint
	$(PY) -m pytest -q

test-fast: install-test
	$(PY) -m pytest -q -m "not browser and not slow"

lab: install
	$(VENV)/bin/jupyter lab notebooks/

dashboard: install-test
	$(VENV)/bin/voila notebooks/03_explorer.ipynb --no-browser --port $(PORT)

bench: install
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean-venv:
	rm -rf $(VENV)
