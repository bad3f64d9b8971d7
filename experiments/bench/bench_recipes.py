"""What the training recipes of issue 10 cost: training throughput side by side, and evaluation cost.

1. Training: every generator and verifier recipe of ``conf/pipeline/paper_cpu.yaml`` trained for the
   same number of optimizer steps on the same small 3-8-block dataset, one after the other in this
   process (the CLI's ``train()`` path, Lightning and all). Reported per recipe: real tokens/s, the
   wall seconds of the whole fit (for the on-policy verifier that includes sampling the generator
   on its prompts, which is the recipe's real extra cost), and both as ratios to the paper's recipe
   of the same model kind measured in the same run.
2. Evaluation cost: generator calls (and wall seconds) per solved instance of every planner of a
   ``make paper-cpu`` run, read from its ``eval/*/results.json`` (``BENCH_PAPER_CPU_DIR``, default
   ``outputs/paper-cpu``; skipped with a note when absent). Those are the 200-instance runs
   themselves: re-running them here would take the pipeline's half hour again.

Run: ``python -m experiments.bench recipes`` (or ``make bench``).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.domains import domain_file, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.training import CPU_TRAINER, TrainSpec, model_config, train

STEPS = 60  # optimizer steps per recipe: long enough that start-up is a small share of the fit

# (name, model values): the pipeline's recipes at toy scale; the first of each kind is the baseline
GENERATORS = [
    ("generator-paper", {"trajectories": "walk"}),
    ("generator-shortest", {"trajectories": "shortest"}),
    ("generator-shortest-rename", {"trajectories": "shortest", "augment": "rename"}),
]
VERIFIERS = [
    ("verifier-base", {"init": "base", "recipe": "random"}),
    ("verifier-generator", {"init": "generator", "recipe": "random", "calibrate_on": "random"}),
    ("verifier-onpolicy-diff-rename", {
        "init": "generator", "recipe": "onpolicy", "input_kind": "state_action_diff",
        "augment": "rename",
        "onpolicy": {"prompts": 300, "base_recipe": "hard", "base_examples": 1500}}),
]


def fit(data_dir: Path, out_dir: Path, kind: str, values: dict) -> dict:
    small_val = {"val_greedy": 16} if kind == "generator" else {}  # validation is not timed
    model = model_config({"kind": kind, "epochs": 100, **small_val, **values})
    trainer = {**CPU_TRAINER, "max_steps": STEPS, "enable_progress_bar": False,
               "num_sanity_val_steps": 0, "limit_val_batches": 4, "val_check_interval": STEPS}
    result = train(TrainSpec(data_dir, out_dir, model=model, trainer=trainer, seed=0,
                             checkpoint_every_n_steps=10_000, progress_every_n_steps=10_000))
    return {"tokens_per_s": result["tokens_per_s"], "fit_wall_s": result["fit_wall_s"],
            "steps": result["global_step"], "export": result["export"]}


def bench_training() -> dict:
    domain = load_builtin("blocksworld")
    out: dict = {"steps_per_recipe": STEPS}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        spec = DatasetSpec(train_states=400, walks_per_state=2, shortest_paths=True)
        build_dataset(spec, domain, domain_file("blocksworld").read_text(),
                      BlocksworldStates(3, 8), data_dir, seed=0, workers=1, progress=lambda *_: None)
        exports = {}
        for name, values in GENERATORS:
            print(f"[bench] training {name}", flush=True)
            exports[name] = fit(data_dir, Path(tmp) / name, "generator", values)
        for name, values in VERIFIERS:
            print(f"[bench] training {name}", flush=True)
            source = "generator-paper" if name == "verifier-generator" else "generator-shortest-rename"
            if values["init"] == "generator":
                values = {**values, "generator_dir": exports[source]["export"]}
            exports[name] = fit(data_dir, Path(tmp) / name, "verifier", values)
    for names in ([n for n, _ in GENERATORS], [n for n, _ in VERIFIERS]):
        base = exports[names[0]]
        for name in names:
            row = {k: v for k, v in exports[name].items() if k != "export"}
            row["tokens_per_s_vs_paper_recipe"] = round(row["tokens_per_s"] / base["tokens_per_s"], 3)
            row["fit_wall_vs_paper_recipe"] = round(row["fit_wall_s"] / base["fit_wall_s"], 3)
            out[name] = row
    return out


def eval_cost(root: Path) -> dict:
    """Generator calls and wall seconds per solved instance of each planner under ``root/eval``."""
    rows = {}
    for path in sorted(root.glob("eval/*/results.json")):
        r = json.loads(path.read_text())
        solved = r["outcomes"].get("success", 0)
        calls = r.get("calls", {}).get("generator", 0)
        rows[path.parent.name] = {
            "grr": r["grr"], "solved": solved, "instances": r["n_instances"],
            "generator_calls": calls, "verifier_calls": r.get("calls", {}).get("verifier", 0),
            "generator_calls_per_success": round(calls / solved, 1) if solved else None,
            "wall_s": r.get("wall_s"),
            "wall_s_per_success": round(r["wall_s"] / solved, 2) if solved and r.get("wall_s") else None,
        }
    return rows


def main() -> dict:
    root = Path(os.environ.get("BENCH_PAPER_CPU_DIR", "outputs/paper-cpu"))
    results = {"training": bench_training()}
    cost = eval_cost(root) if root.is_dir() else {}
    results["evaluation"] = cost or {
        "note": f"no eval/*/results.json under {root}: run make paper-cpu (or set BENCH_PAPER_CPU_DIR)"}
    results["evaluation_source"] = str(root)
    return results


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
