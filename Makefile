# Two commands on a fresh machine: `make demo` runs the main job on embedded defaults,
# `make test` runs every test.  Both create the virtualenv and install on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test bench

$(BIN)/deltalog: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/deltalog
	$(BIN)/deltalog demo

test: $(BIN)/deltalog
	$(BIN)/ruff check workers tests bench
	$(BIN)/mypy workers bench
	$(BIN)/python -m pytest

bench: $(BIN)/deltalog
	$(BIN)/python -m bench
