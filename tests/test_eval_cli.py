"""plansuite-eval end to end on a tiny generated instance folder (no model needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from scripted import write_toy_instances

from plansuite.cli import CONF_DIR
from plansuite.cli.eval import run
from plansuite.domains import builtin_path, load_builtin
from plansuite.pddl.parse import load_problem
from plansuite.pddl.plans import read_plan
from plansuite.pddl.simulator import GroundTask

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> Path:
    return write_toy_instances(tmp_path_factory.mktemp("data") / "toy", n=10, seed=1)


def evaluate_cli(*overrides: str) -> dict | None:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="eval", overrides=["logger=none", "optimal.enabled=false",
                                                     "progress_every_s=1000", *overrides])
    return run(cfg)


def lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()]


def test_random_restart_writes_results_instances_plans(instances, tmp_path):
    out = tmp_path / "rr"
    results = evaluate_cli("planner=random_restart", "planner.k=5", f"instances={instances}",
                           f"out_dir={out}", "optimal.enabled=true",
                           f"optimal.cache_dir={tmp_path / 'fd'}")
    assert results == json.loads((out / "results.json").read_text())
    records = lines(out / "instances.jsonl")
    assert [r["id"] for r in records] == [f"p{i:04d}" for i in range(10)]
    assert results["n_instances"] == 10 and sum(results["outcomes"].values()) == 10
    assert set(results["outcomes"]) == {"success", "bad_action", "bad_next_state", "unparseable",
                                        "goal_not_reached", "no_plan"}
    successes = [r for r in records if r["outcome"] == "success"]
    assert results["grr"] == len(successes) / 10 and len(successes) > 0
    assert results["btr"] == 0  # random actions are applicable with true next states
    lo, hi = results["grr_ci"]
    assert lo <= results["grr"] <= hi
    domain = load_builtin("blocksworld")
    for r in successes:  # plans on disk are the journaled ones, and really solve the problem
        plan = read_plan(out / "plans" / f"{r['id']}.plan")
        assert plan == r["plan"] and r["val_valid"] is True
        assert GroundTask(domain, load_problem(r["problem"], domain)).check_plan(plan).valid
        assert r["optimal_length"] <= r["plan_length"]
    assert results["val"]["checked"] == len(successes) and results["val"]["agreement"] == 1.0
    assert results["plan_quality"]["n"] == len(successes) and results["plan_quality"]["mean_ratio"] >= 1
    assert results["calls"]["generator"] == sum(r["calls"]["generator"] for r in records)
    assert results["config"]["planner"]["name"] == "random_restart"
    assert len(list((tmp_path / "fd").glob("*.json"))) == 10  # optimal lengths cached


def test_oracle_verifier_never_lets_a_bad_transition_through(instances, tmp_path):
    out = tmp_path / "gv"
    results = evaluate_cli("generator=synthetic", "verifier=oracle", "planner=generator_verifier",
                           "planner.k=6", "synthetic.p_bad_action=0.2", "synthetic.p_bad_state=0.1",
                           "synthetic.p_garbage=0.1", f"instances={instances}", f"out_dir={out}",
                           "baselines=[oracle,random_restart]")
    assert results["btr"] == 0 and results["outcomes"]["success"] > 0
    assert set(results["outcomes"]) and results["outcomes"]["success"] + results["outcomes"]["no_plan"] == 10
    assert results["calls"]["verifier"] > 0
    assert set(results["baselines"]) == {"oracle", "random_restart"}
    # the oracle baseline of a run that already uses the oracle is the same run
    assert results["baselines"]["oracle"]["outcomes"] == results["outcomes"]
    base = json.loads((out / "baselines" / "random_restart" / "results.json").read_text())
    assert base["planner"] == "random_restart" and base["k"] == 6


def test_lone_generator_and_posthoc_report_bad_transitions(instances, tmp_path):
    noisy = ["generator=synthetic", "synthetic.p_bad_action=0.3", "synthetic.p_bad_state=0.2",
             f"instances={instances}"]
    gen = evaluate_cli(*noisy, "planner=generator", "planner.k=1", f"out_dir={tmp_path / 'g'}")
    assert gen["btr"] > 0 and gen["outcomes"]["no_plan"] == 0  # a lone generator always proposes
    assert gen["calls"]["verifier"] == 0
    records = lines(tmp_path / "g" / "instances.jsonl")
    assert all(r["val_valid"] == r["sim_valid"] for r in records if r["val_valid"] is not None)
    post = evaluate_cli(*noisy, "planner=posthoc", "planner.k=4", "verifier=oracle_action",
                        f"out_dir={tmp_path / 'p'}")
    # an applicability-only verifier stops bad actions but not wrong predicted states
    assert post["outcomes"]["bad_action"] == 0 and post["outcomes"]["unparseable"] == 0


def test_sequential_reference_engine_gives_the_same_records(instances, tmp_path):
    common = ["generator=synthetic", "verifier=oracle_action", "planner=generator_verifier",
              "planner.k=3", f"instances={instances}", "batch_size=3"]
    evaluate_cli(*common, f"out_dir={tmp_path / 'b'}")
    evaluate_cli(*common, "engine=sequential", f"out_dir={tmp_path / 's'}")

    def strip(r):
        return {k: v for k, v in r.items() if k != "elapsed_s"}

    assert [strip(r) for r in lines(tmp_path / "b" / "instances.jsonl")] == \
        [strip(r) for r in lines(tmp_path / "s" / "instances.jsonl")]


def fails_with(capsys, *overrides: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        evaluate_cli(*overrides)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    return err


def test_bad_input_is_one_clear_line(instances, tmp_path, capsys):
    out = f"out_dir={tmp_path / 'x'}"
    assert "instances: required" in fails_with(capsys, "generator=random", out)
    err = fails_with(capsys, f"generator={tmp_path / 'nope'}", f"instances={instances}", out)
    assert "no such export directory" in err and "nope" in err
    (tmp_path / "empty").mkdir()
    assert "no problem files" in fails_with(capsys, "planner=random_restart",
                                            f"instances={tmp_path / 'empty'}", out)
    assert "needs a verifier" in fails_with(capsys, "generator=random", "verifier=none",
                                            "planner=generator_verifier", f"instances={instances}", out)
    assert "uses no verifier" in fails_with(capsys, "generator=random", "verifier=oracle",
                                            "planner=generator", f"instances={instances}", out)
    assert "the baseline proposes random applicable actions" in fails_with(
        capsys, "planner=random_restart", "generator=synthetic", f"instances={instances}", out)
    assert "verifier_threshold=0.5: give a value in [0, 1] with a learned verifier export" in fails_with(
        capsys, "generator=random", "verifier=oracle", "verifier_threshold=0.5", f"instances={instances}", out)


def test_domain_mismatch_is_one_clear_line(instances, tmp_path, capsys):
    folder = tmp_path / "gripper"
    folder.mkdir()
    (folder / "domain.pddl").write_text(builtin_path("gripper").read_text())
    (folder / "p0.pddl").write_text((instances / "p0000.pddl").read_text())
    err = fails_with(capsys, "planner=random_restart", f"instances={folder}", f"out_dir={tmp_path}")
    # the folder's own domain is used, and its problems (blocksworld) are refused against it
    assert "p0.pddl" in err and "not 'gripper'" in err and len(err.strip().splitlines()) == 1
    (folder / "domain.pddl").unlink()
    (folder / "p0.pddl").write_text((instances / "p0000.pddl").read_text().replace(
        "(:domain blocksworld-4ops)", "(:domain gripper)"))
    assert "gripper" in fails_with(capsys, "planner=random_restart", f"instances={folder}",
                                   f"out_dir={tmp_path}")


def test_verifier_from_another_tokenizer_is_refused(instances, tmp_path, capsys):
    for name, vocab in (("gen", '{"a": 0}'), ("ver", '{"z": 0}')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "vocab.json").write_text(vocab)
    err = fails_with(capsys, f"generator={tmp_path / 'gen'}", f"verifier={tmp_path / 'ver'}",
                     f"instances={instances}", f"out_dir={tmp_path / 'o'}")
    assert "tokenizer differs" in err


def test_console_script_error_and_resume_refuses_other_runs(instances, tmp_path):
    env = {**os.environ, "WANDB_MODE": "offline"}
    cmd = [sys.executable, "-m", "plansuite.cli.eval", "planner=random_restart", "logger=none",
           "optimal.enabled=false", f"instances={instances}", f"out_dir={tmp_path / 'o'}"]
    ok = subprocess.run(cmd + ["planner.k=2"], capture_output=True, text=True, cwd=REPO, env=env)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(cmd + ["planner.k=3"], capture_output=True, text=True, cwd=REPO, env=env)
    assert bad.returncode == 1
    assert bad.stderr.strip().startswith("error: ") and len(bad.stderr.strip().splitlines()) == 1
    assert "different run" in bad.stderr and "'k': 2" in bad.stderr


def test_wandb_offline_run_is_written(instances, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "w"
    evaluate_cli("planner=random_restart", "planner.k=2", f"instances={instances}", f"out_dir={out}",
                 "logger=wandb", "wandb.experiment=unit")
    runs = list((out / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and any(runs[0].rglob("*.wandb"))


@pytest.mark.parametrize("flaw", ["requirement", "non-breaking space"])
def test_a_problem_fast_downward_refuses_is_recorded_and_the_others_are_planned(tmp_path, flaw,
                                                                                 capsys):
    """The suite reads it, Fast Downward does not: its instance carries FD's message (and no
    optimal length), every instance is planned, and the run finishes."""
    folder = write_toy_instances(tmp_path / "data", n=3, seed=1)
    bad = folder / "p0001.pddl"
    text = bad.read_text()
    if flaw == "requirement":
        text = text.replace("(:objects", "(:requirements :strips :numeric-fluents)\n  (:objects", 1)
    else:
        text = text.replace("(:objects ", "(:objects\u00a0", 1)
    bad.write_text(text)
    out = tmp_path / "out"
    results = evaluate_cli("planner=random_restart", "generator=random", f"instances={folder}",
                           f"out_dir={out}", "optimal.enabled=true",
                           f"optimal.cache_dir={tmp_path / 'fd'}")
    records = {r["id"]: r for r in lines(out / "instances.jsonl")}
    assert results["n_instances"] == 3 and sorted(records) == ["p0000", "p0001", "p0002"]
    assert records["p0001"]["optimal_length"] is None
    assert records["p0001"]["optimal_message"].startswith("Fast Downward refused it (exit 31")
    assert list(results["optimal_refused"]) == ["p0001"]
    assert all(r["optimal_length"] is not None and "optimal_message" not in r
               for i, r in records.items() if i != "p0001")
    assert all(r["outcome"] == "success" for r in records.values())  # planned all the same
    logged = [ln for ln in capsys.readouterr().out.splitlines() if "Fast Downward refused" in ln]
    assert len(logged) == 1 and "p0001" in logged[0]


@pytest.mark.parametrize(("override", "message"), [
    ("planner.temperature=-2", "planner.temperature=-2: must be >= 0"),
    ("planner.top_p=0", "planner.top_p=0: must be in (0, 1]"),
    ("device=tpu", "device=tpu: unknown device (choose from cpu"),
])
def test_a_model_free_planner_still_refuses_bad_sampling_settings_and_devices(
        instances, tmp_path, capsys, override, message):
    with pytest.raises(SystemExit) as ended:
        evaluate_cli("planner=random_restart", "generator=random", f"instances={instances}",
                     f"out_dir={tmp_path / 'out'}", override)
    err = capsys.readouterr().err.strip().splitlines()
    assert ended.value.code == 1 and len(err) == 1 and message in err[0], err
    assert not (tmp_path / "out").exists()  # refused before planning
