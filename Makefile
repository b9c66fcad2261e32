# litebert: `make demo` and `make test` work on a fresh machine with only python3 and pip.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-slow bench lint clean

# Idempotent: re-installs only when pyproject.toml changes. torch is pinned to the CPU wheel
# that lies on these machines; any looser spec would pull gigabytes of CUDA packages.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

setup: $(STAMP)

# fetch bbc-news, train a tokenizer, build SOP data, pre-train the tiny preset, evaluate,
# export, plot, fine-tune on the bbc-news topics (~9 min on 2 cores); cached in runs/demo.
demo: setup
	$(VENV)/bin/litebert demo --work runs/demo

test: setup
	$(PY) -m pytest

test-slow: setup
	$(PY) -m pytest -m slow

bench: setup
	$(PY) benchmarks/bench_model.py
	$(PY) benchmarks/bench_data.py
	$(PY) benchmarks/bench_pretrain.py
	$(PY) benchmarks/bench_electra.py
	$(PY) benchmarks/bench_xlnet.py
	$(PY) benchmarks/bench_static_step.py
	$(PY) benchmarks/bench_finetune.py

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build src/*.egg-info
