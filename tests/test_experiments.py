"""Experiment configs (conf/experiment/), command-line sweeps over k and τ, the Optuna search
over τ, the SLURM launcher preset, the multirun + DDP guard, and what W&B runs carry.

Sweeps run as subprocesses at tiny scale (a synthetic generator, a simulator verifier, 8 small
instances); W&B runs are offline and read back from their run files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

from plansuite.cli import CONF_DIR
from plansuite.cli import best_params as best_params_cli
from plansuite.data.builder import DatasetSpec, build_dataset
from plansuite.domains import builtin_path, load_builtin
from plansuite.domains.blocksworld import BlocksworldStates
from plansuite.planning import tuning
from plansuite.report.collect import load_rows
from plansuite.report.tables import table2
from plansuite.tracking import read_offline_run

REPO = Path(__file__).resolve().parents[1]
ALL_EXPERIMENTS = sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml"))
SKILLS = [n for n in ALL_EXPERIMENTS if n.startswith("adaplanner_skills")]  # for plansuite-skills
EXPERIMENTS = [n for n in ALL_EXPERIMENTS if n not in SKILLS]  # for plansuite-eval
PAPER = ["paper_table1", "paper_table2", "paper_fig2_k", "paper_fig3_temperature", "cpu_quickstart"]
TINY = ["generator=synthetic", "optimal.enabled=false", "progress_every_s=1000"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A dataset directory with 8 test and 8 validation instances of 3-5 blocks."""
    out = tmp_path_factory.mktemp("exp") / "data"
    spec = DatasetSpec(name="toy", train_states=4, val_states=1, test_instances=8, val_instances=8,
                       test_max_walk_len=8, chunk_size=4)
    build_dataset(spec, load_builtin("blocksworld"), builtin_path("blocksworld").read_text(),
                  BlocksworldStates(3, 5), out, seed=0, workers=1, progress=lambda _: None)
    return out


def cli(module: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "HF_HUB_OFFLINE": "1",
           **(env or {})}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=300)


def sweep(*args: str) -> subprocess.CompletedProcess:
    done = cli("plansuite.cli.eval", "-m", *TINY, *args)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def results(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def composed(*overrides: str, config: str = "eval"):
    """The config resolved as inside a job (``${hydra:...}`` included)."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config, list(overrides), return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    try:
        return OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    finally:
        HydraConfig.instance().cfg = None  # no Hydra state for the tests that follow


# ---- composition -----------------------------------------------------------------------------

def test_the_paper_and_gripper_experiments_exist():
    assert {*PAPER, *(f"gripper_{n.removeprefix('paper_')}" for n in PAPER)} <= set(EXPERIMENTS)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_composes_and_each_swept_value_resolves(name):
    extra = ["adaplanner.verifier=oracle"] if name.startswith("adaplanner") else []
    cfg = composed(f"experiment={name}", *extra)
    params = cfg.hydra.sweeper.params
    assert params, f"{name}: sweeps nothing"
    assert cfg.wandb.experiment == name
    for key, values in params.items():
        choices = str(values).split(",")
        for value in {choices[0], choices[-1]}:
            job = composed(f"experiment={name}", *extra, f"{key}={value}")
            assert job.out_dir == f"{job.hydra.sweep.dir}/{job.hydra.sweep.subdir}"
            chosen = OmegaConf.select(job, key)  # a value, or a group's chosen config
            assert (chosen.name if OmegaConf.is_dict(chosen) else chosen) == yaml.safe_load(value)
            if name.startswith("gripper"):
                assert job.domain.name == "gripper" and job.inputs.root == "outputs/demo-gripper"


@pytest.mark.parametrize("name", SKILLS)
def test_skill_experiments_compose_for_plansuite_skills(name):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("skills", [f"experiment={name}", "generator=G", "data_dir=D"])
    assert cfg.rounds >= 1 and cfg.finetune.steps > 0 and cfg.out_dir.startswith("outputs/skills/")
    assert cfg.planner.name == ("refine_resume" if name.endswith("refine") else "generator")


def test_defaults_follow_the_demo_layout_and_one_key_moves_them():
    cfg = composed("experiment=paper_table2", "wandb.verifier_init=base")
    assert (cfg.generator, cfg.verifier, cfg.instances) == (
        "outputs/demo/generator/export", "outputs/demo/verifier-base/export", "outputs/demo/data/test")
    cfg = composed("experiment=paper_table2", "inputs.root=R", "inputs.verifier.generator=V")
    assert (cfg.generator, cfg.verifier, cfg.instances) == ("R/generator/export", "V", "R/data/test")
    assert cfg.planner.k == 25 and cfg.device == "auto"


def test_table1_rows_give_each_planner_its_verifier_and_baselines():
    gen = composed("experiment=paper_table1", "planner=generator")
    ver = composed("experiment=paper_table1", "planner=generator_verifier")
    assert (gen.verifier, gen.wandb.verifier_init, list(gen.baselines), gen.planner.k) == (
        "none", "none", [], 25)
    assert gen.planner.propose_on_failure == "last"  # generator@25 proposes its last attempt
    assert (ver.verifier, list(ver.baselines)) == ("outputs/demo/verifier-generator/export",
                                                   ["oracle", "random_restart"])
    quick = composed("experiment=cpu_quickstart", "planner=generator_verifier", "table1.verifier_init=base")
    assert (quick.verifier, quick.planner.k, quick.limit, quick.device, quick.optimal.enabled) == (
        "outputs/demo/verifier-base/export", 8, 20, "cpu", False)


def test_bad_experiment_name_is_one_clear_error():
    done = cli("plansuite.cli.eval", "experiment=paper_tabel1", "generator=synthetic", "instances=x")
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("error: experiment=paper_tabel1: unknown option (choose from ")
    assert "paper_table1" in done.stderr  # the choices are listed


# ---- command-line sweeps ---------------------------------------------------------------------

def test_k_sweep_from_the_command_line_tags_and_finishes_every_wandb_run(dataset, tmp_path):
    root = tmp_path / "k"
    sweep("experiment=paper_fig2_k", "planner.k=1,8", "inputs.verifier.generator=oracle",
          f"instances={dataset / 'test'}", f"hydra.sweep.dir={root}")
    jobs = sorted(p.parent for p in root.glob("*/results.json"))
    assert [j.name for j in jobs] == ["generator_verifier-generator-k1-t1.0-seed0",
                                      "generator_verifier-generator-k8-t1.0-seed0"]
    for job, k in zip(jobs, (1, 8), strict=True):
        res = results(job)
        assert res["k"] == k and res["run"]["verifier"] == "oracle"
        assert res["baselines"]["random_restart"]["n_instances"] == 8  # random@k next to each point
        (run_dir,) = (job / "wandb").glob("offline-run-*")
        run = read_offline_run(run_dir)
        assert run["finished"] and run["job_type"] == "eval" and run["name"] == job.name
        assert {"experiment:paper_fig2_k", "domain:blocksworld-4ops", "planner:generator_verifier",
                "verifier_init:generator", f"k:{k}", "temperature:1.0", "seed:0"} <= set(run["tags"])
        assert run["group"] == f"paper_fig2_k/generator_verifier-generator-k{k}-t1.0"
        assert run["summary"]["grr"] == res["grr"] and run["summary"]["btr"] == res["btr"]
        assert run["config"]["wandb"]["verifier_init"] == "generator"
    assert results(jobs[1])["grr"] >= results(jobs[0])["grr"]  # more attempts, never fewer solved


def test_temperature_sweep_from_the_command_line(dataset, tmp_path):
    root = tmp_path / "t"
    sweep("experiment=paper_fig3_temperature", "planner.temperature=0.2,1.1", "planner.k=2",
          "inputs.verifier.generator=oracle_action", f"inputs.data={dataset}", "logger=none",
          f"hydra.sweep.dir={root}")
    temps = {results(p.parent)["config"]["planner"]["temperature"]: p.parent.name
             for p in root.glob("*/results.json")}
    assert temps == {0.2: "generator_verifier-generator-k2-t0.2-seed0",
                     1.1: "generator_verifier-generator-k2-t1.1-seed0"}


def test_table2_is_one_tag_apart_and_pairs_in_the_report(dataset, tmp_path):
    root = tmp_path / "t2"
    sweep("experiment=paper_table2", "planner.k=3", "inputs.verifier.base=oracle_action",
          "inputs.verifier.generator=oracle", f"inputs.data={dataset}", f"hydra.sweep.dir={root}")
    runs = {}
    for init, verifier in (("base", "oracle_action"), ("generator", "oracle")):
        job = root / f"generator_verifier-{init}-k3-t1.0-seed0"
        assert results(job)["run"]["verifier"] == verifier
        runs[init] = read_offline_run(next((job / "wandb").glob("offline-run-*")))
    base, gen = set(runs["base"]["tags"]), set(runs["generator"]["tags"])
    assert base ^ gen == {"verifier_init:base", "verifier_init:generator"}  # the only difference
    assert "experiment:paper_table2" in base & gen
    (row,) = table2(load_rows([root]))[1]
    assert row[:3] == ["generator_verifier", "3", "1"]


def test_table1_sweep_writes_its_rows_and_baselines(dataset, tmp_path):
    root = tmp_path / "t1"
    sweep("experiment=paper_table1", "planner.k=3", "inputs.verifier.generator=oracle",
          f"inputs.data={dataset}", "logger=none", f"hydra.sweep.dir={root}")
    rows = {(r.label, r.verifier_init) for r in load_rows([root])}
    assert rows == {("generator-none-k3-t1.0-seed0", "none"),
                    ("generator_verifier-generator-k3-t1.0-seed0", "generator"),
                    ("generator_verifier-generator-k3-t1.0-seed0/oracle", "oracle"),
                    ("generator_verifier-generator-k3-t1.0-seed0/random_restart", "none")}


# ---- Optuna ----------------------------------------------------------------------------------

def test_optuna_tunes_temperature_on_validation_then_evaluates_test(dataset, tmp_path):
    root = tmp_path / "tune"
    args = ["experiment=paper_fig3_temperature", "hparams_search=temperature", "planner.k=2",
            "inputs.verifier.generator=oracle_action", f"tuning.data={dataset}", "logger=none",
            f"hydra.sweep.dir={root}", "hydra.sweeper.n_trials=2",
            f"tuning.storage_dir={tmp_path / 'optuna'}"]
    sweep(*args)
    best = yaml.safe_load((root / "optimization_results.yaml").read_text())
    tau = best["best_params"]["planner.temperature"]
    trials = [results(p.parent) for p in root.glob("generator_verifier-k2-t*-seed0/results.json")]
    assert len(trials) == 2 and all(t["config"]["instances"] == f"{dataset}/val_instances"
                                    for t in trials)
    assert best["best_value"] == max(t["grr"] for t in trials)
    assert any(t["config"]["planner"]["temperature"] == tau for t in trials)
    test = results(root / "test-best")
    assert test["config"]["instances"] == f"{dataset}/test"
    assert test["config"]["planner"]["temperature"] == tau and test["n_instances"] == 8
    assert tuning.best_params(root) == {"planner.temperature": tau}


@pytest.mark.slow
def test_optuna_search_continues_its_sqlite_study(dataset, tmp_path):
    import optuna

    args = ["hparams_search=temperature", "planner.k=2", "verifier=oracle", f"tuning.data={dataset}",
            "logger=none", "tuning.test_instances=null", f"tuning.storage_dir={tmp_path / 'optuna'}"]
    sweep(*args, f"hydra.sweep.dir={tmp_path / 'first'}", "hydra.sweeper.n_trials=2")
    assert not (tmp_path / "first" / "test-best").exists()
    # a plain re-run (its own timestamped sweep folder) continues the study at its stable path
    sweep(*args, f"hydra.sweep.dir={tmp_path / 'second'}", "hydra.sweeper.n_trials=1")
    study = optuna.load_study(study_name="temperature",
                              storage=f"sqlite:///{tmp_path / 'optuna' / 'temperature.db'}")
    assert len(study.trials) == 3 and all(t.state.name == "COMPLETE" for t in study.trials)


def test_a_study_is_not_continued_with_other_settings(dataset, tmp_path):
    args = ["hparams_search=temperature", "verifier=oracle", f"tuning.data={dataset}", "logger=none",
            "tuning.test_instances=null", f"tuning.storage_dir={tmp_path}", "hydra.sweeper.n_trials=1"]
    sweep(*args, "planner.k=3", f"hydra.sweep.dir={tmp_path / 'first'}")
    done = cli("plansuite.cli.eval", "-m", *TINY, *args, "planner.k=2",
               f"hydra.sweep.dir={tmp_path / 'second'}")
    assert done.returncode == 1
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert errors == [f"error: hydra.sweeper.study_name=temperature (sqlite:///{tmp_path}/temperature.db) "
                      "holds trials of other settings (planner.k: 3 -> 2); give another study_name, "
                      "or delete the file"], done.stderr[-2000:]
    assert not list((tmp_path / "second").glob("*/results.json"))  # no trial ran


def test_optuna_returns_the_objective_and_applies_the_argmax(dataset, tmp_path):
    """k matters to the synthetic generator (τ does not), so search k: the best must be k=8."""
    root = tmp_path / "tune_k"
    sweep("hparams_search=temperature", "planner.temperature=1.0", "planner=generator",
          "planner.k=choice(1,8)", "verifier=none", f"tuning.data={dataset}", "logger=none",
          f"hydra.sweep.dir={root}", "hydra.sweeper.n_trials=4", "synthetic.p_bad_action=0.3",
          f"tuning.storage_dir={tmp_path / 'optuna'}")
    trials = {results(p.parent)["k"]: results(p.parent)["grr"]
              for p in root.glob("*/results.json") if p.parent.name != "test-best"}
    assert set(trials) == {1, 8} and trials[8] > trials[1]
    assert tuning.best_params(root) == {"planner.k": 8}
    assert results(root / "test-best")["k"] == 8


def test_tuning_helper_prints_the_overrides_and_refuses_unfinished_searches(tmp_path, capsys):
    (tmp_path / "optimization_results.yaml").write_text(
        "name: optuna\nbest_params:\n  planner.temperature: 0.7\nbest_value: 0.5\n")
    best_params_cli.main([str(tmp_path), "D/test"])
    assert capsys.readouterr().out.strip() == "planner.temperature=0.7 instances=D/test"
    with pytest.raises(SystemExit, match="optimization_results.yaml: not found"):
        best_params_cli.main([str(tmp_path / "missing")])


# ---- launchers and DDP -----------------------------------------------------------------------

def test_slurm_preset_submits_one_task_per_device_on_each_node(dataset, tmp_path):
    """Through the real submitit plugin, with stand-ins for sbatch/srun that refuse the job: the
    submission script it wrote is what SLURM would have run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sbatch", "srun"):
        (bin_dir / tool).write_text("#!/bin/sh\necho refused by the test >&2\nexit 1\n")
        (bin_dir / tool).chmod(0o755)
    root = tmp_path / "slurm"
    done = cli("plansuite.cli.train", "-m", "hydra/launcher=slurm", "trainer=ddp",
               "trainer.devices=4", "trainer.num_nodes=2", "hydra.launcher.partition=gpu",
               f"data_dir={dataset}", f"out_dir={root / 'g'}", f"hydra.sweep.dir={root}",
               env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert done.returncode != 0 and "refused by the test" in done.stderr
    (script,) = (root / ".submitit").glob(".submission_file_*.sh")
    text = script.read_text()
    for line in ("--nodes=2", "--ntasks-per-node=4", "--gpus-per-node=4", "--partition=gpu",
                 "--job-name=train"):
        assert f"#SBATCH {line}\n" in text
    assert "srun" in text and not (root / "g").exists()  # nothing ran here


def test_slurm_preset_gives_an_eval_job_one_task():
    launcher = composed("hydra/launcher=slurm", "experiment=paper_fig2_k").hydra.launcher
    assert (launcher.nodes, launcher.tasks_per_node, launcher.gpus_per_node) == (1, 1, 1)


def test_training_runs_carry_the_seed_and_verifier_init_tags(dataset, tmp_path):
    from plansuite.cli.train import train_spec
    from plansuite.training import make_trainer

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("train", ["model=verifier", "model.init=base", "seed=3", "logger=wandb",
                                f"data_dir={dataset}", f"out_dir={tmp_path}"])
    trainer, _, _ = make_trainer(train_spec(cfg), "blocksworld", "toy")
    init = trainer.logger._wandb_init
    assert {"seed:3", "init:base", "model:verifier", "domain:blocksworld"} <= set(init["tags"])
    assert init["group"] == "blocksworld-verifier"


def test_ddp_inside_a_local_multirun_is_refused_before_training(dataset, tmp_path):
    done = cli("plansuite.cli.train", "-m", "trainer=ddp_sim", f"data_dir={dataset}",
               f"out_dir={tmp_path / 'g'}", f"hydra.sweep.dir={tmp_path / 's'}", "logger=none")
    assert done.returncode == 1
    err = done.stderr.strip().splitlines()[-1]
    assert err.startswith("error: trainer.strategy=ddp") and "ddp_spawn" in err
    assert not (tmp_path / "g").exists()
