"""Multiruns without ``experiment=``: every job of ``plansuite-eval -m`` / ``plansuite-train -m``
gets its own folder under the sweep directory, named by the swept keys."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest
from hydra.core.hydra_config import HydraConfig
from scripted import write_toy_instances

from plansuite.cli.sweep_dirs import job_dirname, swept_keys

TINY_EVAL = ["generator=synthetic", "optimal.enabled=false", "progress_every_s=1000", "logger=none",
             "val=false"]


def multirun(monkeypatch, module, *args: str) -> None:
    """``module.main()`` as ``plansuite-... -m ARGS`` (Hydra's basic launcher runs the jobs in
    this process, one after the other)."""
    monkeypatch.setattr(sys, "argv", [module.__name__, "-m", *args])
    on_sigterm = signal.getsignal(signal.SIGTERM)  # plansuite-eval's main sets its own
    try:
        with pytest.raises(SystemExit) as ended:
            module.main()
            raise SystemExit(0)  # hydra.main returns normally after a multirun
    finally:
        HydraConfig.instance().cfg = None  # no multirun job's state for the tests that follow
        signal.signal(signal.SIGTERM, on_sigterm)
    assert ended.value.code in (0, None)


def results(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def test_swept_keys_are_the_sweeps_of_the_command_line_and_of_the_sweeper_params():
    argv = ["-m", "generator=/a/b", "planner.k=1,2", "seed=range(0,2)", "hydra.sweep.dir=x"]
    assert swept_keys(argv, {"wandb.verifier_init": "base,generator"}) == [
        "planner.k", "seed", "wandb.verifier_init"]
    assert swept_keys(["-m", "generator=/a/b"], None) == []


def test_a_job_folder_names_only_the_swept_values_and_no_path_separator():
    overrides = ["generator=/a/b/export", "verifier=/x/v-1/export", "planner.k=2"]
    assert job_dirname(overrides, ["verifier", "planner.k"]) == "verifier=_x_v-1_export,planner.k=2"
    assert job_dirname(overrides, []) == ""


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> Path:
    return write_toy_instances(tmp_path_factory.mktemp("sweep") / "toy", n=4, seed=2)


def test_plain_eval_multirun_over_verifiers_writes_one_folder_per_job(monkeypatch, instances,
                                                                      tmp_path):
    from plansuite.cli import eval as eval_cli

    root = tmp_path / "sweep"
    multirun(monkeypatch, eval_cli, *TINY_EVAL, f"instances={instances}", "planner.k=2",
             "verifier=oracle,oracle_action", f"hydra.sweep.dir={root}")
    jobs = sorted(p.parent.name for p in root.glob("*/results.json"))
    assert jobs == ["verifier=oracle", "verifier=oracle_action"]
    for name in jobs:
        assert results(root / name)["run"]["verifier"] == name.split("=")[1]


def test_plain_eval_multirun_over_k_writes_one_folder_per_job(monkeypatch, instances, tmp_path):
    from plansuite.cli import eval as eval_cli

    root = tmp_path / "sweep"
    multirun(monkeypatch, eval_cli, *TINY_EVAL, f"instances={instances}", "planner=generator",
             "planner.k=1,2", f"hydra.sweep.dir={root}")
    assert {results(root / f"planner.k={k}")["k"] for k in (1, 2)} == {1, 2}
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["planner.k=1", "planner.k=2"]


def test_plain_train_multirun_over_learning_rates_writes_one_folder_per_job(monkeypatch,
                                                                          tiny_dataset, tmp_path):
    from plansuite.cli import train as train_cli

    root = tmp_path / "sweep"
    multirun(monkeypatch, train_cli, f"data_dir={tiny_dataset}", "logger=none",
             "trainer.enable_progress_bar=false", "trainer.max_steps=3", "model.val_greedy=2",
             "model.backbone.n_layer=1", "model.backbone.n_embd=32", "model.backbone.n_head=2",
             "model.optim.lr=1e-3,2e-3", f"hydra.sweep.dir={root}")
    for lr in ("0.001", "0.002"):
        job = root / f"model.optim.lr={lr}"
        assert results(job)["global_step"] == 3
        saved = json.loads((job / "export" / "plansuite.json").read_text())
        assert saved["config"]["model"]["optim"]["lr"] == float(lr)


def test_the_readme_quick_start_sweep_lands_where_its_report_command_looks(monkeypatch, tmp_path):
    """The README's ``plansuite-eval -m ...`` line, run as written (plus settings that only make it
    fast), writes runs that the next ``plansuite-report outputs/quick/eval`` reads."""
    import shlex

    from plansuite.cli import eval as eval_cli
    from plansuite.report.collect import load_rows

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme.split("### Quick start at tiny scale", 1)[1].split("```bash", 1)[1].split("```")[0]
    lines = [line.split("#")[0] for line in block.replace("\\\n", " ").splitlines()]
    (sweep,) = [shlex.split(line) for line in lines if line.startswith("plansuite-eval -m")]
    (report,) = [shlex.split(line) for line in lines if line.startswith("plansuite-report")]
    monkeypatch.chdir(tmp_path)
    write_toy_instances(tmp_path / "outputs" / "quick" / "data", n=2, seed=3)  # its test/ split
    multirun(monkeypatch, eval_cli, *sweep[2:], "optimal.enabled=false", "progress_every_s=1000",
             "val=false")
    rows = load_rows([report[1]])
    assert sorted(r.label for r in rows) == ["verifier=oracle", "verifier=oracle_action"]
