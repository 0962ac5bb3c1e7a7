# Everything a fresh machine needs comes from here: `make test` builds .venv and runs the suite.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test lint demo

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

# Two pytest workers, a test file each at a time: the suite is CPU-bound on 2 cores, and two
# files in flight keep both busy while one waits on a server, Spark or a subprocess.
test: install
	PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest -q -n 2 --dist loadfile

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
