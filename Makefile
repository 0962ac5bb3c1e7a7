# Everything a fresh machine needs comes from here: `make test` builds .venv and runs the suite.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test lint

# In-tree plugins are installed editable so their tests import them; plugins/file is not:
# the plugin.path tests install it the way a user drops it in.
PLUGINS := plugins/debezium-core plugins/mysql plugins/postgres plugins/spark

$(BIN)/.installed: pyproject.toml $(wildcard plugins/*/pyproject.toml)
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]' $(addprefix -e ,$(PLUGINS))
	touch $@

install: $(BIN)/.installed

test: install
	PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check .
