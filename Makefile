# Two commands on a fresh machine: `make reproduce` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8888
# Voila's own default port, so the dashboard and JupyterLab (8888) can run side by side.
DASHBOARD_PORT ?= 8866
# Containers often run as root, where Jupyter refuses to start without --allow-root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
# The file browser lists one entry per notebook (its .ipynb; the paired .py source is hidden).
LAB_HIDE := --ContentsManager.hide_globs="['__pycache__','*.pyc','*.pyo','.DS_Store','*~','*.py','jupytext.toml']"

.PHONY: help install install-test system-deps reproduce reproduce-quick lint test test-fast lab dashboard bench notebooks clean-venv

# What the lint and format gates cover (mypy checks the package: [tool.mypy] in pyproject.toml).
LINT_PATHS := smdlab tests benchmarks tools notebooks

help:
	@echo "make reproduce   regenerate every figure into figures/ (creates $(VENV) if needed)"
	@echo "make lint        ruff (lint + format check) and mypy; the gates make test enforces"
	@echo "make test        install the project, its test extras and system packages; lint, type-check, run all tests"
	@echo "make lab         open JupyterLab on notebooks/ (port $(PORT))"
	@echo "make dashboard   serve the explorer notebook as a Voila dashboard (port $(DASHBOARD_PORT))"
	@echo "make bench       run the benchmarks; writes benchmarks/RESULTS.md"
	@echo "make notebooks   build notebooks/*.ipynb (untracked) from their jupytext sources notebooks/*.py"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Stamps re-run the install when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dashboard: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dashboard]'
	touch $@ $(VENV)/.installed

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,rl]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

# Debian's chromium: static figure export (kaleido) and the real-browser tests (Playwright).
system-deps:
	@bash tools/system-deps.sh

reproduce: install system-deps
	$(VENV)/bin/smdlab reproduce --out figures
	$(PY) tools/sweep_table.py

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

lab: notebooks
	$(VENV)/bin/jupyter lab notebooks/ --port $(PORT) $(ALLOW_ROOT) $(LAB_HIDE)

dashboard: notebooks $(VENV)/.installed-dashboard
	$(VENV)/bin/voila notebooks/03_explorer.ipynb --no-browser --port $(DASHBOARD_PORT)

# Every benchmark; each one's output becomes its section of benchmarks/RESULTS.md.
# BENCH_FLAGS=--quick runs the smaller options (a shared machine).
bench: install-test system-deps
	$(PY) tools/bench_results.py --out benchmarks/RESULTS.md $(BENCH_FLAGS)

# The percent-format .py files are the notebooks' source and the only ones tracked; the .ipynb
# are built here and ignored by git. notebooks/jupytext.toml pairs the two, so saving a notebook
# in JupyterLab writes its cells back to the .py (never its outputs). --update keeps the ids (and
# any outputs) of unchanged cells, so an unchanged source rebuilds its .ipynb byte for byte.
notebooks: install
	$(VENV)/bin/jupytext --update --to ipynb notebooks/[0-9]*.py

clean-venv:
	rm -rf $(VENV)
