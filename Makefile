# Two commands on a fresh machine: `make demo` runs the main job on embedded defaults,
# `make test` runs every test.  Each installs what it needs on first use (the virtualenv; for
# the tests also Prometheus and PostgreSQL) and is quiet about it unless something fails.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test bench java prometheus postgresql

demo: java $(BIN)/deltalog
	$(BIN)/deltalog demo

# --max-worker-restart 0: a worker that crashes fails the run; a replaced worker under loadgroup
# can wait forever for work (pytest-xdist issues 1323, 1378), and CI would time out silently.
# --durations: the slowest tests in the log, where CI's time goes.
test: java prometheus postgresql $(BIN)/deltalog
	$(BIN)/ruff check workers tests bench
	$(BIN)/mypy workers bench
	$(BIN)/python -m pytest -n 2 --dist loadgroup --max-worker-restart 0 -m "not serial" --durations=10
	$(BIN)/python -m pytest -m serial --durations=10

bench: $(BIN)/deltalog
	$(BIN)/python -m bench

# The package with its development extras, in a virtualenv made on first use.
$(BIN)/deltalog: pyproject.toml
	@echo "installing deltalog and its development tools into $(VENV)..."
	@$(PYTHON) -m venv $(VENV)
	@{ $(BIN)/pip install --disable-pip-version-check --upgrade pip && \
	   $(BIN)/pip install --disable-pip-version-check -e '.[dev]'; } >$(VENV)/install.log 2>&1 \
	   || { cat $(VENV)/install.log >&2; echo "installing into $(VENV) failed" >&2; exit 1; }
	@touch $@

# The local Kafka broker runs on Java 17 from jars that Maven fetches (into ~/.cache/deltalog).
java:
	@command -v java >/dev/null && command -v mvn >/dev/null || { \
	  echo "deltalog needs Java 17 and Maven on PATH (the local Kafka broker's jars come" \
	       "through Maven from Maven Central)" >&2; exit 1; }

prometheus:
	@deploy/install-prometheus.sh

postgresql:
	@deploy/install-postgresql.sh
