# plansuite — every target sets itself up: on a fresh machine `make demo` and `make test` are one command each.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# CPU wheel by default (installs from local disk here); GPU users: make install TORCH_SPEC='torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128'
TORCH_SPEC ?= torch==2.13.0
# W&B: online when an API key exists, else offline (plansuite/tracking.py); WANDB_MODE overrides.
export WANDB_SILENT ?= true
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

DEMO_DIR ?= outputs/demo
SMOKE_DIR ?= outputs/smoke
NL2PDDL_DIR ?= outputs/nl2pddl-cpu
REPRO_DIR ?= outputs/reproduce
SEED ?= 0
# the paper's 200 test instances, when ../shared has them (else the dataset's own test split)
PAPER_TEST := $(wildcard ../shared/benchmarks/paper-blocksworld-test)
DATA ?= $(DEMO_DIR)/data
GEN ?= $(DEMO_DIR)/generator/export
EXP ?= paper_fig2_k
ARGS ?=

# Your own STRIPS domain (make demo / make paper-cpu): DOMAIN_FILE=path/domain.pddl, PROBLEMS=folder of
# problems whose initial states seed the random walks (goals ignored), TEST=folder of problems planned
# with their own goals; results under CUSTOM_DIR (default outputs/demo-custom, outputs/paper-cpu-custom).
DOMAIN_FILE ?=
PROBLEMS ?=
TEST ?=
CUSTOM_DIR ?=
CUSTOM_ARGS = domain_file=$(abspath $(DOMAIN_FILE)) problems=$(abspath $(PROBLEMS)) test=$(abspath $(TEST))
require_custom = $(if $(DOMAIN_FILE),@test -f "$(DOMAIN_FILE)" -a -d "$(PROBLEMS)" -a -d "$(TEST)" || { echo "error: DOMAIN_FILE=$(DOMAIN_FILE) PROBLEMS=$(PROBLEMS) TEST=$(TEST): give a domain file and two folders of problems" >&2; exit 2; })

# make paper-cpu DOMAIN=gripper|logistics: the same pipeline on that built-in domain (conf/pipeline/paper_cpu_<domain>.yaml);
# make demo DOMAIN=logistics: the demo on Logistics (conf/pipeline/demo_logistics.yaml)
DOMAIN ?= blocksworld
DEMO := $(if $(filter blocksworld,$(DOMAIN)),demo,demo_$(DOMAIN))
PAPER_CPU := $(if $(filter blocksworld,$(DOMAIN)),paper_cpu,paper_cpu_$(DOMAIN))
PAPER_CPU_DIR ?= outputs/$(subst _,-,$(PAPER_CPU))

.PHONY: help install test test-slow smoke lint bench data train-generator train-verifier eval sweep report notebook demo paper-cpu nl2pddl-cpu reproduce clean

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | sed 's|$$(TORCH_SPEC)|$(TORCH_SPEC)|' | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

install: $(VENV)/.installed ## create .venv with torch ($(TORCH_SPEC)) and plansuite[dev] at the tested versions (constraints.txt)

$(VENV)/.installed: pyproject.toml setup.py constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_SPEC)
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $@

test: install ## fast test tier (1020 tests, about 5 min on 2 cores)
	$(BIN)/pytest -q -n 2

test-slow: install ## slow end-to-end tests (CI runs them too)
	$(BIN)/pytest -q -m slow

lint: install ## ruff
	$(BIN)/ruff check plansuite tests experiments

data: install ## build a dataset: make data PRESET=tiny OUT=outputs/data
	$(BIN)/plansuite-data dataset=$(or $(PRESET),tiny) out_dir=$(or $(OUT),outputs/data/$(or $(PRESET),tiny)) seed=$(SEED)

demo: install ## the CPU quickstart end to end (<= 10 min on 2 cores): data, generator, verifiers, every planner, report (DOMAIN=logistics; your domain: DOMAIN_FILE=f PROBLEMS=dir TEST=dir)
	$(call require_custom)
	@test -f conf/pipeline/$(DEMO).yaml || { echo "error: DOMAIN=$(DOMAIN): no conf/pipeline/$(DEMO).yaml (blocksworld or logistics)" >&2; exit 2; }
	$(PY) -m plansuite.cli.run_pipeline $(if $(DOMAIN_FILE),demo_custom $(CUSTOM_ARGS) root=$(or $(CUSTOM_DIR),outputs/demo-custom),$(DEMO) $(if $(filter blocksworld,$(DOMAIN)),root=$(DEMO_DIR))) seed=$(SEED) $(ARGS)

smoke: install ## the demo pipeline at toy scale (~2 min): checks the wiring
	$(PY) -m plansuite.cli.run_pipeline smoke root=$(SMOKE_DIR) seed=$(SEED) $(ARGS)

paper-cpu: install ## the paper's benchmark on this CPU (<= 2 h on 2 cores): paper data, every recipe and planner on its 200 instances (DOMAIN=gripper: on Gripper; DOMAIN_FILE=f PROBLEMS=dir TEST=dir: yours)
ifdef DOMAIN_FILE
	$(call require_custom)
	$(PY) -m plansuite.cli.run_pipeline paper_cpu_custom $(CUSTOM_ARGS) root=$(or $(CUSTOM_DIR),outputs/paper-cpu-custom) seed=$(SEED) $(ARGS)
else
	@test -f conf/pipeline/$(PAPER_CPU).yaml || { echo "error: DOMAIN=$(DOMAIN): no conf/pipeline/$(PAPER_CPU).yaml (blocksworld, gripper or logistics)" >&2; exit 2; }
	@test -n "$(PAPER_TEST)" -o "$(DOMAIN)" != blocksworld || echo "warning: ../shared/benchmarks/paper-blocksworld-test not found: evaluating on the dataset's own test split" >&2
	$(PY) -m plansuite.cli.run_pipeline $(PAPER_CPU) root=$(PAPER_CPU_DIR) seed=$(SEED) $(if $(and $(PAPER_TEST),$(filter blocksworld,$(DOMAIN))),instances=$(abspath $(PAPER_TEST))) $(ARGS)
endif

nl2pddl-cpu: install ## NL -> PDDL on this CPU (~1.6 h on 2 cores): data, problem generators (and weaker ones), likelihood critic, repair runs and paired tables, Blocksworld and Gripper
	$(PY) -m plansuite.cli.run_pipeline nl2pddl_cpu root=$(NL2PDDL_DIR) seed=$(SEED) $(ARGS)

reproduce: install ## paper scale on a GPU (pretrained gpt2): every table and figure; cached, resumable
	$(PY) -m plansuite.cli.run_pipeline reproduce root=$(REPRO_DIR) seed=$(SEED) $(if $(PAPER_TEST),instances=$(abspath $(PAPER_TEST))) $(ARGS)

train-generator: install ## make train-generator DATA=dir OUT=dir ARGS='model.epochs=3'
	$(BIN)/plansuite-train model=generator data_dir=$(DATA) out_dir=$(or $(OUT),$(DEMO_DIR)/generator) seed=$(SEED) ckpt_path=last $(ARGS)

train-verifier: install ## make train-verifier DATA=dir GEN=export INIT=base|generator RECIPE=random|onpolicy
	$(BIN)/plansuite-train model=verifier data_dir=$(DATA) model.init=$(or $(INIT),generator) model.recipe=$(or $(RECIPE),random) model.generator_dir=$(GEN) out_dir=$(or $(OUT),$(DEMO_DIR)/verifier-$(or $(INIT),generator)) seed=$(SEED) ckpt_path=last $(ARGS)

eval: install ## make eval ARGS='planner=generator_verifier verifier=DIR' (generator, instances from DEMO_DIR)
	$(BIN)/plansuite-eval generator=$(GEN) instances=$(DATA)/test seed=$(SEED) $(ARGS)

sweep: install ## make sweep EXP=paper_fig2_k ARGS='planner.k=1,8' (a multirun of conf/experiment/EXP.yaml)
	$(BIN)/plansuite-eval -m experiment=$(EXP) inputs.root=$(DEMO_DIR) seed=$(SEED) $(ARGS)

report: install ## make report DIRS='outputs/demo/eval outputs/eval' OUT=dir
	$(BIN)/plansuite-report $(or $(DIRS),$(DEMO_DIR)/eval) --out $(or $(OUT),$(DEMO_DIR)/report)

notebook: install ## run notebooks/analysis.ipynb on RESULTS (default: DEMO_DIR) into outputs/analysis/ (figures too)
	PLANSUITE_RESULTS=$(abspath $(or $(RESULTS),$(DEMO_DIR))) PLANSUITE_FIGURES=$(abspath outputs/analysis) \
		$(PY) -m plansuite.cli.run_notebook notebooks/analysis.ipynb outputs/analysis/analysis.ipynb

bench: install ## benchmarks; results land in experiments/bench/
	$(PY) -m experiments.bench

clean: ## remove outputs and caches (keeps .venv)
	rm -rf outputs multirun .pytest_cache .ruff_cache wandb
	find . -name __pycache__ -prune -exec rm -rf {} +
