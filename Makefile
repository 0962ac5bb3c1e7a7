# Everything a fresh machine needs comes from here: `make test` builds .venv and runs the suite.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test lint

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/.installed

test: install
	PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check .
