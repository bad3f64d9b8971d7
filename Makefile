# plansuite — every target sets itself up: on a fresh machine `make demo` and `make test` are one command each.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# CPU wheel by default (installs from local disk here); GPU users: make install TORCH_SPEC='torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128'
TORCH_SPEC ?= torch==2.13.0
export WANDB_MODE ?= offline
export WANDB_SILENT ?= true
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

DEMO_DIR ?= outputs/demo
SMOKE_DIR ?= outputs/smoke
REPRO_DIR ?= outputs/reproduce
SEED ?= 0

.PHONY: help install test test-slow smoke lint bench data train-generator train-verifier eval sweep report demo reproduce clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

install: $(VENV)/.installed ## create .venv with torch ($(TORCH_SPEC)) and plansuite[dev] (idempotent)

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_SPEC)
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

test: install ## fast test tier (~10 min on 2 cores)
	$(BIN)/pytest -q -n 2

test-slow: install ## slow end-to-end tests (CI runs them too)
	$(BIN)/pytest -q -m slow

lint: install ## ruff
	$(BIN)/ruff check plansuite tests experiments

data: install ## build a dataset: make data PRESET=tiny OUT=outputs/data
	$(BIN)/plansuite-data dataset=$(or $(PRESET),tiny) out_dir=$(or $(OUT),outputs/data/$(or $(PRESET),tiny)) seed=$(SEED)

bench: install ## benchmarks; results land in experiments/bench/
	$(PY) -m experiments.bench

clean: ## remove outputs and caches (keeps .venv)
	rm -rf outputs multirun .pytest_cache .ruff_cache wandb
	find . -name __pycache__ -prune -exec rm -rf {} +
