"""Pipelines (``make demo``/``smoke``/``reproduce``): configs that compose, caching by config,
resume of a killed stage, stale output moved aside, and the smoke pipeline end to end (slow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import plansuite.cli.train  # noqa: F401 -- stores the model schemas train stages compose against
from plansuite import pipeline
from plansuite.cli import CONF_DIR
from plansuite.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
PRIMARY = {"plansuite.cli.data": "data", "plansuite.cli.train": "train", "plansuite.cli.eval": "eval",
           "plansuite.cli.nl2pddl": "nl2pddl"}


@pytest.mark.parametrize("name", ["demo", "smoke", "reproduce", "paper_cpu", "paper_cpu_gripper",
                                  "paper_cpu_logistics", "demo_logistics", "nl2pddl_cpu",
                                  "demo_custom"])
def test_every_stage_of_the_shipped_pipelines_composes(name):
    custom = ["domain_file=/d/domain.pddl", "problems=/d/problems", "test=/d/test"]
    settings, stages = pipeline.load_pipeline(name, custom if name == "demo_custom" else [])
    assert {"root", "seed"} <= set(settings)
    for stage in stages:
        if stage.module in PRIMARY:  # Hydra apps: the stage's overrides must compose
            args = [a for a in pipeline.command(stage, Path(settings["root"]))[3:] if not a.startswith("-")]
            # a null setting interpolated into a string is "None": Hydra reads it as text
            assert not [a for a in args if a.endswith("=None")], stage.name
            with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
                compose(PRIMARY[stage.module], args)


def test_demo_runs_every_planner_on_the_same_instances():
    settings, stages = pipeline.load_pipeline("demo", ["root=R", "k=7"])
    evals = {s.name: s.args for s in stages if s.module == "plansuite.cli.eval"}
    assert set(evals) == {f"eval/{n}" for n in (
        "generator", "generator_verifier-base", "generator_verifier-generator",
        "generator_verifier-onpolicy", "refine_resume-onpolicy", "oracle", "random_restart",
        "fast_downward")}
    for args in evals.values():
        assert {"instances=R/data/test", "planner.k=7", "seed=0"} <= set(args)


def test_demo_custom_runs_the_same_stages_on_your_domain():
    """``make demo DOMAIN_FILE=... PROBLEMS=... TEST=...``: the demo's stages, with the walks
    seeded by PROBLEMS and every planner evaluated on TEST under the given domain file."""
    _, demo = pipeline.load_pipeline("demo", ["root=R"])
    _, custom = pipeline.load_pipeline("demo_custom", ["root=R", "domain_file=/d/domain.pddl",
                                                       "problems=/d/problems", "test=/d/test"])
    assert [s.name for s in custom] == [s.name for s in demo]
    domain = ["domain=custom", "domain.file=/d/domain.pddl", "domain.problems=/d/problems"]
    for stage in custom:
        if stage.module in ("plansuite.cli.eval", "plansuite.cli.data"):
            assert set(domain) <= set(stage.args), stage.name
        if stage.module == "plansuite.cli.eval":
            assert {"instances=/d/test", "limit=null"} <= set(stage.args), stage.name
    with pytest.raises(ConfigError, match="demo_custom.yaml: .*Missing mandatory value"):
        pipeline.load_pipeline("demo_custom", ["root=R"])


def test_the_dagger_stage_feeds_every_verifier_and_planner_and_can_be_turned_off():
    _, stages = pipeline.load_pipeline("demo", ["root=R"])
    names = [s.name for s in stages]
    assert names[:3] == ["data", "generator", "generator-dagger"]
    gen = "R/generator-dagger/export"  # every verifier and planner uses the finetuned one
    for stage in stages:
        if "generator" in str(stage.args) and stage.name not in ("generator", "generator-dagger"):
            assert {f"generator={gen}", f"model.generator_dir={gen}"} & set(stage.args), stage.name
            assert "generator-dagger" in stage.after, stage.name
    dagger = stages[2]
    assert "model.finetune.init_from=R/generator/export" in dagger.args
    _, without = pipeline.load_pipeline("demo", ["root=R", "dagger=false"])
    assert [s.name for s in without] == names[:2] + names[3:]
    assert all("generator-dagger" not in str(s.args) + str(s.after) for s in without)


def _toy(tmp_path: Path, seed: int = 0) -> tuple[dict, list[pipeline.Stage]]:
    """Two real stages: a toy dataset and the random baseline on 3 of its instances."""
    spec = tmp_path / "toy.yaml"
    spec.write_text(f"""
root: {tmp_path / 'run'}
seed: {seed}
stages:
  - name: data
    module: plansuite.cli.data
    args: [dataset=tiny, dataset.train_states=4, dataset.val_states=1, dataset.test_instances=3,
           dataset.val_instances=1, workers=1]
  - name: eval/random
    module: plansuite.cli.eval
    after: [data]
    args: ["instances=${{root}}/data/test", planner=random_restart, planner.k=2, logger=none,
           optimal.enabled=false, val=false, "seed=${{seed}}"]
""")
    return pipeline.load_pipeline(str(spec), [])


@pytest.mark.parametrize("jobs", [1, 2])
def test_stages_are_cached_by_config_and_resume_after_a_kill(tmp_path, capfd, jobs):
    settings, stages = _toy(tmp_path)
    settings["jobs"] = jobs
    assert pipeline.run_pipeline(settings, stages, dry_run=True) == {"data": "new", "eval/random": "new"}
    assert not (tmp_path / "run").exists()  # a dry run runs nothing
    assert pipeline.run_pipeline(settings, stages) == {"data": "ran", "eval/random": "ran"}
    result = tmp_path / "run" / "eval" / "random" / "results.json"
    first = json.loads(result.read_text())
    assert pipeline.run_pipeline(settings, stages) == {"data": "done", "eval/random": "done"}

    # killed after planning, before its marker: the stage re-runs and its CLI resumes (journal)
    (result.parent / pipeline.STAGE_FILE).unlink()
    assert pipeline.run_pipeline(settings, stages)["eval/random"] == "ran"
    assert "(3 already journaled)" in capfd.readouterr().out
    assert json.loads(result.read_text())["grr"] == first["grr"]

    # another seed for the evaluation only: the dataset stays, the old evaluation is moved aside
    settings, stages = _toy(tmp_path, seed=1)
    settings["jobs"] = jobs
    states = pipeline.run_pipeline(settings, stages)
    assert states == {"data": "done", "eval/random": "ran"}
    aside = list((tmp_path / "run" / "eval").glob("random.stale-*"))
    assert len(aside) == 1 and (aside[0] / "results.json").is_file()

    # back and forth between the two seeds: each earlier output is kept under a name of its own
    for seed in (0, 1):
        settings, stages = _toy(tmp_path, seed=seed)
        settings["jobs"] = jobs
        assert pipeline.run_pipeline(settings, stages)["eval/random"] == "ran"
    aside = sorted(p.name for p in (tmp_path / "run" / "eval").glob("random.stale-*"))
    assert len(aside) == 3 and sum(n.endswith("-2") for n in aside) == 1, aside


def test_a_killed_stage_resumes_only_under_the_config_it_was_started_with(tmp_path, capfd):
    """Killed, then its config changed: its partial output is moved aside, not resumed from."""
    settings, stages = _toy(tmp_path)
    assert pipeline.run_pipeline(settings, stages) == {"data": "ran", "eval/random": "ran"}
    folder = tmp_path / "run" / "eval" / "random"
    started = folder.with_name("random" + pipeline.STARTED_SUFFIX)
    assert not started.exists()  # a finished stage leaves only stage.json
    old = json.loads((folder / pipeline.STAGE_FILE).read_text())["fingerprint"]
    (folder / pipeline.STAGE_FILE).unlink()  # killed: what a started stage leaves
    started.write_text(json.dumps({"stage": "eval/random", "fingerprint": old}))
    assert pipeline.stage_state(folder, old) == "partial"  # the same config resumes
    assert pipeline.stage_state(folder, "another") == "stale"
    settings, stages = _toy(tmp_path, seed=1)
    assert pipeline.run_pipeline(settings, stages) == {"data": "done", "eval/random": "ran"}
    assert "(0 already journaled)" in capfd.readouterr().out  # started afresh
    assert folder.with_name(f"random.stale-{old}").is_dir()
    assert not started.exists()


def test_a_failing_stage_is_one_line_and_keeps_what_is_done(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text(f"root: {tmp_path}\nseed: 0\nstages:\n"
                    "  - {name: e, module: plansuite.cli.eval, args: [planner=nope]}\n")
    done = subprocess.run([sys.executable, "-m", "plansuite.cli.run_pipeline", str(spec)],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "error: pipeline stage e (exit 1) failed; fix and re-run the same command to resume from it")


def test_a_disabled_stage_is_left_out(tmp_path):
    spec = tmp_path / "p.yaml"
    spec.write_text("root: x\nextra: false\nstages:\n  - {name: a, module: m}\n"
                    "  - {name: b, module: m, enabled: '${extra}', after: [a]}\n")
    assert [s.name for s in pipeline.load_pipeline(str(spec), [])[1]] == ["a"]
    assert [s.name for s in pipeline.load_pipeline(str(spec), ["extra=true"])[1]] == ["a", "b"]


@pytest.mark.parametrize("text, message", [
    ("root: x\nstages: []\n", "no stages"),
    ("root: x\nstages:\n  - {name: a, module: m, after: [b]}\n", "runs after unknown or later stage b"),
    ("root: x\nstages:\n  - {name: a, module: m, colour: red}\n", "unknown key colour"),
    ("root: [\n", "ParserError"),
    ("root: x\nstages:\n  - {name: a, module: m, enabled: false}\n  - {name: b, module: m, after: [a]}\n",
     "stage b runs after stage a, which is disabled"),
    ("root: x\nstages:\n  - {name: a, module: m, enabled: maybe}\n", "enabled='maybe' must be"),
])
def test_bad_pipeline_files_are_one_line_errors(tmp_path, text, message):
    spec = tmp_path / "p.yaml"
    spec.write_text(text)
    with pytest.raises(pipeline.ConfigError, match=message):
        pipeline.load_pipeline(str(spec), [])
    with pytest.raises(pipeline.ConfigError, match="no such pipeline .*known: .*demo"):
        pipeline.load_pipeline("nope", [])


@pytest.mark.slow
def test_smoke_pipeline_end_to_end(tmp_path):
    """`make smoke`: every stage, planner and the report; a re-run skips everything."""
    cmd = [sys.executable, "-m", "plansuite.cli.run_pipeline", "smoke", f"root={tmp_path}"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    _, stages = pipeline.load_pipeline("smoke", [f"root={tmp_path}"])
    for stage in stages:
        assert (tmp_path / stage.name / pipeline.STAGE_FILE).is_file()
    for name in ("generator", "oracle", "random_restart"):
        res = json.loads((tmp_path / "eval" / name / "results.json").read_text())
        assert res["n_instances"] == 10
    assert (tmp_path / "report" / "report.html").is_file()
    assert "[compare] generator_verifier-onpolicy vs generator: GRR" in done.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert again.returncode == 0 and again.stdout.count("done, skipped") == len(stages)


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["gripper"])  # logistics: the same stages (test_domain_logistics covers its data and eval)
def test_paper_cpu_pipeline_runs_on_another_domain_at_toy_scale(tmp_path, domain):
    """`make paper-cpu DOMAIN=...`: every recipe, planner, the report and the ablation table."""
    cmd = [sys.executable, "-m", "plansuite.cli.run_pipeline", f"paper_cpu_{domain}", f"root={tmp_path}",
           "dataset=tiny", "limit=4", "k=2", "logger=none", "generator_transitions=200",
           "generator_epochs=1", "verifier_steps=5", "onpolicy_prompts=24", "onpolicy_epochs=1"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    _, stages = pipeline.load_pipeline(f"paper_cpu_{domain}", [f"root={tmp_path}"])
    evals = [s.name for s in stages if s.module == "plansuite.cli.eval"]
    assert len(evals) == 11
    for name in evals:
        res = json.loads((tmp_path / name / "results.json").read_text())
        assert res["n_instances"] == 4 and res["run"]["domain"] == domain
    assert (tmp_path / "report" / "report.html").is_file()
    assert "objects renamed at random per draw" in (tmp_path / "ablation.md").read_text()


def test_make_lists_and_dry_runs_every_target():
    targets = ["install", "demo", "test", "test-slow", "smoke", "lint", "bench", "data", "train-generator", "train-verifier", "eval", "sweep", "report", "reproduce", "nl2pddl-cpu", "clean"]
    listed = subprocess.run(["make", "help"], capture_output=True, text=True, cwd=REPO).stdout
    for target in targets:
        assert f" {target} " in listed.replace("\x1b[36m", " ").replace("\x1b[0m", " ")
        dry = subprocess.run(["make", "-n", target], capture_output=True, text=True, cwd=REPO)
        assert dry.returncode == 0, dry.stderr
    assert "$(" not in listed and "create .venv with torch (torch==" in listed  # values, not names
    dry = subprocess.run(["make", "-n", "reproduce"], capture_output=True, text=True, cwd=REPO).stdout
    assert "-m plansuite.cli.run_pipeline reproduce root=outputs/reproduce" in dry


def test_parallel_stages_overlap_and_alone_stages_do_not(tmp_path, capfd):
    nap = ["-n", "1", "-r", "1", "import time; time.sleep(1)"]  # python -m timeit: a 1 s stage
    stages = [pipeline.Stage("a", "timeit", nap, out_arg=""),
              pipeline.Stage("b", "timeit", nap, out_arg=""),
              pipeline.Stage("c", "timeit", nap, out_arg="", alone=True),
              pipeline.Stage("d", "timeit", nap, after=["a"], out_arg="")]
    states = pipeline.run_pipeline({"root": str(tmp_path), "jobs": 2}, stages)
    assert set(states.values()) == {"ran"}
    events = [line.split("] ", 1)[1] for line in capfd.readouterr().out.splitlines()
              if line.startswith("[pipeline] ") and (": running" in line or "finished in" in line)]
    order = [e.split(":")[0] + (" start" if "running" in e else " end") for e in events]
    assert order.index("b start") < order.index("a end")  # a and b side by side
    assert order.index("c start") > max(order.index("a end"), order.index("b end"))
    assert order.index("d start") > order.index("c end")  # nothing beside an alone stage
