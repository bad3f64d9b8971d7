"""notebooks/analysis.ipynb: committed without outputs, and executed (nbclient) on tiny results
made without any model: random-with-restart at two k, a synthetic generator with two simulator
verifiers tagged as V_base / V_generator (plus baselines), and a noisy generator@1."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from scripted import write_toy_instances
from test_eval_cli import evaluate_cli

from plansuite.report.notebook import execute

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "analysis.ipynb"


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)
    assert any("parameters" in c.metadata.get("tags", []) for c in code)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    instances = write_toy_instances(root / "data", n=10, seed=3)
    common = [f"instances={instances}", "generator=synthetic"]
    for k in (2, 6):
        evaluate_cli(f"instances={instances}", "planner=random_restart", f"planner.k={k}",
                     f"out_dir={root / 'runs' / f'random-k{k}'}")
    evaluate_cli(*common, "planner.k=3", "verifier=oracle_action", "wandb.verifier_init=base",
                 f"out_dir={root / 'runs' / 'gv-base'}")
    evaluate_cli(*common, "planner.k=3", "verifier=oracle", "wandb.verifier_init=generator",
                 "baselines=[oracle,random_restart]", f"out_dir={root / 'runs' / 'gv-generator'}")
    evaluate_cli(*common, "planner=generator", "synthetic.p_bad_action=0.3",
                 f"out_dir={root / 'runs' / 'generator'}")
    return root / "runs"


def test_notebook_executes_on_tiny_results(results, tmp_path, monkeypatch):
    figures = tmp_path / "figures"
    monkeypatch.setenv("PLANSUITE_RESULTS", str(results))
    monkeypatch.setenv("PLANSUITE_FIGURES", str(figures))
    executed = execute(NOTEBOOK, tmp_path / "executed" / "analysis.ipynb", timeout_s=180)  # make notebook
    nb = nbformat.read(executed, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    text = "\n".join(o.get("text", "") + o.get("data", {}).get("text/markdown", "") for o in outputs)
    assert "7 runs (baselines included)" in text  # 5 runs + the 2 baselines of gv-generator
    for label in ("random-k2", "random-k6", "gv-base", "gv-generator/oracle", "generator"):
        assert f"| {label} |" in text
    assert "GRR V_base" in text  # Table 2: the base / generator pair
    assert "median first bad step" in text and "| generator | " in text
    assert "objects |" in text and "solves, the other not" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4
    assert {"fig2_grr_vs_k.png", "outcomes.png"} <= {p.name for p in figures.glob("*.png")}
