"""refine_resume from ``plansuite-eval``, the sample-efficiency experiment and the budget report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from scripted import write_toy_instances
from test_eval_cli import evaluate_cli, fails_with, lines

from plansuite.cli import CONF_DIR, efficiency
from plansuite.planning import budget

REPO = Path(__file__).resolve().parents[1]
NOISY = ["generator=synthetic", "synthetic.p_bad_action=0.2", "synthetic.p_garbage=0.05",
         "synthetic.p_bad_state=0.05"]


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> Path:
    return write_toy_instances(tmp_path_factory.mktemp("data") / "toy", n=8, seed=2)


def test_both_feedback_sources_run_and_say_which_they_used(instances, tmp_path):
    common = [*NOISY, f"instances={instances}", "planner.budget=30"]
    ver = evaluate_cli(*common, "planner=refine_resume", "verifier=oracle_action",
                       f"out_dir={tmp_path / 'v'}")
    env = evaluate_cli(*common, "planner=refine_resume_env", f"out_dir={tmp_path / 'e'}")
    assert (ver["feedback"], env["feedback"]) == ("verifier", "environment")
    assert ver["budget"] == env["budget"] == 30 and ver["loop"] == env["loop"] == "refine_resume"
    assert env["calls"]["verifier"] == 0 and ver["calls"]["verifier"] > 0
    assert env["btr"] == 0 and env["outcomes"]["success"] > 0  # executed plans only
    for name in ("v", "e"):
        records = lines(tmp_path / name / "instances.jsonl")
        assert all(r["calls"]["generator"] <= 30 for r in records)
        for r in records:
            assert r["calls_to_success"] == (r["calls"]["generator"] if r["outcome"] == "success"
                                             else None)
            assert r["events"]["failed_tries"] >= r["events"]["resets"] * 3
    env_records = lines(tmp_path / "e" / "instances.jsonl")
    assert sum(r["events"]["in_plan_mismatches"] for r in env_records) > 0
    assert all(r["val_valid"] for r in env_records if r["outcome"] == "success")
    old = evaluate_cli(*common, "planner=generator_verifier", "verifier=oracle_action",
                       f"out_dir={tmp_path / 'g'}")
    assert old["feedback"] == "verifier" and old["budget"] == 30
    assert all(r["calls"]["generator"] <= 30 for r in lines(tmp_path / "g" / "instances.jsonl"))


def test_feedback_misconfiguration_is_one_clear_line(instances, tmp_path, capsys):
    out = f"out_dir={tmp_path / 'x'}"
    err = fails_with(capsys, "generator=synthetic", "planner=refine_resume_env", "verifier=oracle",
                     f"instances={instances}", out)
    assert "from the environment; set verifier=none" in err
    assert "needs a verifier" in fails_with(capsys, "generator=synthetic", "planner=refine_resume",
                                            f"instances={instances}", out)
    assert "planner.reset_after=0" in fails_with(capsys, "generator=synthetic", "verifier=oracle",
                                                 "planner=refine_resume", "planner.reset_after=0",
                                                 f"instances={instances}", out)


def test_wandb_tags_state_the_feedback_source(instances, tmp_path, monkeypatch):
    import wandb

    seen = {}

    class FakeRun:
        summary: dict = {}

        def log(self, metrics):
            seen["metrics"] = metrics

        def finish(self):
            pass

    monkeypatch.setattr(wandb, "init", lambda **kw: seen.update(kw) or FakeRun())
    evaluate_cli(*NOISY, "planner=refine_resume_env", "planner.budget=10", f"instances={instances}",
                 f"out_dir={tmp_path / 'w'}", "logger=wandb")
    assert {"feedback:environment", "budget:10", "planner:refine_resume_env"} <= set(seen["tags"])


def test_experiment_composes_each_setting_with_its_feedback():
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        for planner, verifier in (("generator_verifier", "oracle"), ("refine_resume", "oracle"),
                                  ("refine_resume_env", "none")):
            cfg = compose(config_name="eval", overrides=[
                "experiment=adaplanner_sample_efficiency", f"planner={planner}",
                "adaplanner.verifier=oracle", "generator=synthetic", "instances=x"],
                return_hydra_config=True)
            assert cfg.verifier == verifier and cfg.planner.budget == 100
            assert cfg.hydra.sweeper.params.planner.split(",")[1:] == ["refine_resume",
                                                                       "refine_resume_env"]


def test_sample_efficiency_sweep_writes_the_comparison(instances, tmp_path):
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "plansuite.cli.eval", "-m",
           "experiment=adaplanner_sample_efficiency",
           *NOISY, "adaplanner.verifier=oracle_action", f"instances={instances}", "logger=none",
           "seed=0,1", "adaplanner.budget=25", "adaplanner.budgets=[5,10,25]",
           f"hydra.sweep.dir={sweep}", "progress_every_s=1000"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.parent.name for p in sweep.glob("*/results.json")) == [
        f"{name}-seed{s}" for name in ("generator_verifier", "refine_resume", "refine_resume_env")
        for s in (0, 1)]
    report = json.loads((sweep / "sample_efficiency.json").read_text())
    assert report["budgets"] == [5, 10, 25] and report["baseline"] == "generator_verifier"
    assert {n: s["feedback"] for n, s in report["settings"].items()} == {
        "generator_verifier": "verifier", "refine_resume": "verifier",
        "refine_resume_env": "environment"}
    # the curve is GRR of the runs themselves at their own budget
    for name, setting in report["settings"].items():
        results = [json.loads((sweep / f"{name}-seed{s}" / "results.json").read_text())
                   for s in (0, 1)]
        assert setting["n"] == 16 and setting["seeds"] == [0, 1]
        assert setting["curve"][-1]["successes"] == sum(r["outcomes"]["success"] for r in results)
        grr = [p["grr"] for p in setting["curve"]]
        assert grr == sorted(grr)
    assert "refine_resume minus generator_verifier" in (sweep / "sample_efficiency.md").read_text()

    dirs = [str(p.parent) for p in sweep.glob("*/results.json")]
    again = budget.compare_runs([budget.load_run(d) for d in dirs], [5, 10, 25],
                                "generator_verifier")
    assert again == report
    with pytest.raises(SystemExit, match="beyond the smallest run budget"):
        efficiency.main([*dirs, "--budgets", "10,50"])
