# Everything a fresh machine needs comes from here: `make test` builds .venv and runs the suite.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test test-fast test-integration test-e2e lint demo

# In-tree plugins are installed editable so their tests import them, in the same pip call as
# cdc[jobs] (the job layer), which requires them; plugins/file is not: the plugin.path tests
# install it the way a user drops it in.
PLUGINS := plugins/debezium-core plugins/mysql plugins/postgres plugins/spark

$(BIN)/.installed: pyproject.toml $(wildcard plugins/*/pyproject.toml)
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,jobs]' $(addprefix -e ,$(PLUGINS))
	touch $@

install: $(BIN)/.installed

# The suite's tiers (tests/tiers.py): unit (no server, no subprocess), integration (real
# servers, in-process), e2e (subprocesses, cdc run, Spark, kills). Two pytest workers: the
# suite is CPU-bound on 2 cores. --dist loadgroup keeps each module's server and process tests
# on one worker (its module fixtures are built once) while unit tests spread one by one; the
# collection is ordered e2e first, so the long tests start while the short ones fill the gaps.
PYTEST := PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest -q -n 2 --dist loadgroup --no-loadscope-reorder

# Everything, as CI runs it: property tests at their written example counts (HYPOTHESIS_PROFILE=ci),
# the 30 slowest tests and each tier's time printed at the end.
test: install
	HYPOTHESIS_PROFILE=ci $(PYTEST) --durations=30

# The unit tier, after every edit: a tenth of each property test's examples (the dev profile).
test-fast: install
	$(PYTEST) -m unit --durations=10

test-integration: install
	HYPOTHESIS_PROFILE=ci $(PYTEST) -m integration --durations=20

test-e2e: install
	HYPOTHESIS_PROFILE=ci $(PYTEST) -m e2e --durations=20

# deptry: every import declared, every dependency used; the cdc distribution from the root,
# each plugin (its own distribution) against its own pyproject.toml.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/deptry .
	for p in $(PLUGINS) plugins/file; do $(BIN)/deptry $$p --config $$p/pyproject.toml || exit 1; done

# The README's one-command demo: a private MariaDB shop streamed into Delta tables in ./lake.
demo: install
	PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python examples/demo/run.py
