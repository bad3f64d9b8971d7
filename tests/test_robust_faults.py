"""Issue 15: broken environments and bad settings end in one line (or are recorded per instance),
never in a traceback or in silently wrong work."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from scripted import write_toy_instances

from plansuite.data.builder import DatasetSpec
from plansuite.data.load import load_instances
from plansuite.domains import builtin_path, load_builtin
from plansuite.errors import ConfigError
from plansuite.pddl import val
from plansuite.planning.baselines import RandomApplicableGenerator
from plansuite.planning.evaluate import EvalSettings, evaluate
from plansuite.planning.journal import lock_shard
from plansuite.planning.loops import PlannerSpec

SPEC = PlannerSpec(name="random_restart", loop="sample", k=5, max_steps=20, propose_on_failure="none")


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> Path:
    return write_toy_instances(tmp_path_factory.mktemp("data") / "toy", n=4, seed=5)


def run_eval(folder: Path, out: Path, spec: PlannerSpec = SPEC, **settings) -> dict | None:
    domain = load_builtin("blocksworld")
    return evaluate(load_instances(folder, domain), domain, builtin_path("blocksworld"),
                    RandomApplicableGenerator(), None, EvalSettings(spec, **settings), out,
                    log=lambda _: None)


def test_a_second_evaluation_into_the_same_out_dir_is_refused_naming_the_holder(instances,
                                                                                 tmp_path):
    out = tmp_path / "eval"
    held = lock_shard(out, 0)
    try:
        with pytest.raises(ConfigError, match=rf"another evaluation of shard 0 is running here "
                                              rf"\(pid {os.getpid()} on .*\)"):
            run_eval(instances, out, val=False)
        assert not (out / "instances.jsonl").exists()
        assert run_eval(instances, tmp_path / "other", val=False, rank=1, world=2) is None
    finally:
        held.close()
    results = run_eval(instances, out, val=False)  # released: the run goes ahead
    assert results is not None and results["n_instances"] == 4


def test_a_val_timeout_on_one_instance_is_recorded_and_the_evaluation_goes_on(instances, tmp_path,
                                                                              monkeypatch):
    real = val.validate_binary()
    fake, marker = tmp_path / "Validate", tmp_path / "hung-once"
    # Hangs on the first plan it is given (exec: no orphan keeps the pipes open), then is VAL.
    fake.write_text(f'#!/bin/sh\nif [ ! -e "{marker}" ]; then echo "$3" > "{marker}"; exec sleep 30; '
                    f'fi\nexec "{real}" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PLANSUITE_VAL", str(fake))
    val.validate_binary.cache_clear()
    try:
        # every instance proposes a plan (the last attempt when none succeeds): VAL sees all four
        results = run_eval(instances, tmp_path / "eval", val_timeout_s=1.0,
                           spec=PlannerSpec(name="random_restart", loop="sample", k=2, max_steps=10,
                                            propose_on_failure="last"))
    finally:
        val.validate_binary.cache_clear()
    records = [json.loads(ln) for ln in (tmp_path / "eval" / "instances.jsonl").read_text()
               .splitlines()]
    assert results["n_instances"] == 4 and len(records) == 4
    hung = [r for r in records if r["problem"] == marker.read_text().strip()]
    assert len(hung) == 1 and hung[0]["val_valid"] is None
    assert "not checked by VAL" in hung[0]["val_message"] and "timed out after 1s" in hung[0]["val_message"]
    others = [r for r in records if r is not hung[0]]
    assert all(r["val_valid"] == r["sim_valid"] is not None for r in others)  # VAL went on


@pytest.mark.parametrize(("values", "message"), [
    ({"k": "abc"}, r"planner.k='abc': must be an integer"),
    ({"k": True}, r"planner.k=True: must be an integer"),
    ({"temperature": "hot"}, r"planner.temperature='hot': must be a number"),
    ({"budget": 2.5}, r"planner.budget=2.5: must be an integer \(or null\)"),
])
def test_planner_settings_of_the_wrong_type_are_one_line(values, message):
    with pytest.raises(ConfigError, match=message):
        PlannerSpec.from_dict({"name": "x", "loop": "sample", **values})
    assert PlannerSpec.from_dict({"name": "x", "loop": "sample", "budget": None}).budget is None


def test_a_dataset_without_training_states_is_refused():
    with pytest.raises(ConfigError, match=r"dataset.train_states=0: must be an integer >= 1"):
        DatasetSpec(train_states=0)


# ---- corrupt exports ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def export(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from plansuite.models.backbone import BackboneConfig, tiny_model
    from plansuite.models.export import save_export
    from plansuite.models.tokenizer import build_atom_tokenizer

    domain = load_builtin("blocksworld")
    tokenizer = build_atom_tokenizer(domain, {"b1": "object", "b2": "object"}, 64)
    torch.manual_seed(0)
    model = tiny_model(BackboneConfig(n_layer=1, n_embd=16, n_head=2, n_positions=64), "causal",
                       tokenizer)
    return save_export(tmp_path_factory.mktemp("exp") / "good", model, tokenizer,
                       {"kind": "generator", "domain": domain.name, "max_new_tokens": 8})


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(("name", "damage", "message"), [
    ("config-list", lambda d: (d / "config.json").write_text("[]"),
     r"config-list/config.json: not a model config \(a JSON object expected, found list\)"),
    ("meta-list", lambda d: (d / "plansuite.json").write_text("[]"),
     r"meta-list/plansuite.json: not an export description"),
    ("truncated", lambda d: _truncate(d / "model.safetensors"),
     r"truncated: model weights unreadable \(SafetensorError"),
])
def test_corrupt_exports_name_the_export_and_the_damage(export, tmp_path, name, damage, message):
    from plansuite.planning.adapters import load_generator

    broken = tmp_path / name
    shutil.copytree(export, broken)
    damage(broken)
    with pytest.raises(ConfigError, match=message) as info:
        load_generator(str(broken))
    assert "\n" not in str(info.value)
    assert load_generator(str(export)) is not None


# ---- Hydra's own failures end in one error line ----------------------------------------------------
@pytest.mark.parametrize(("argv", "line"), [
    (["planner=nonexistent"], "planner=nonexistent: unknown option (choose from fast_downward, "
                              "generator, generator_verifier, posthoc, random_restart, refine_resume, "
                              "refine_resume_env)"),
    (["-m", "planner=generator,bogus"], "planner=bogus: unknown option (choose from fast_downward,"),
    (["planner.kk=3"], "planner.kk: unknown key (known in planner: budget, k, loop,"),
    (["seed=1", "nonsense=3"], "nonsense: unknown key (known in eval: baselines,"),
])
def test_hydra_failures_are_explained_in_one_line(argv, line):
    from plansuite.cli.hydra_diagnosis import explain

    assert explain("eval", argv).startswith(line)


def test_an_out_dir_that_is_a_file_is_explained(tmp_path):
    from plansuite.cli.hydra_diagnosis import explain

    blocker = tmp_path / "afile"
    blocker.write_text("")
    assert explain("eval", [f"out_dir={blocker}"]) == \
        f"out_dir={blocker}: cannot create the output directory (is a file)"
    assert explain("eval", [f"out_dir={blocker / 'sub'}"]) == \
        f"out_dir={blocker / 'sub'}: cannot create the output directory ({blocker} is a file)"
    assert explain("eval", [f"out_dir={tmp_path / 'fine'}"]) is None


def test_the_commands_end_hydra_failures_with_one_error_line(tmp_path):
    import subprocess
    import sys

    blocker = tmp_path / "afile"
    blocker.write_text("")
    for args, expected in ((["planner=nonexistent"], "error: planner=nonexistent: unknown option"),
                           (["planner.kk=3", "generator=random", f"instances={tmp_path}"],
                            "error: planner.kk: unknown key (known in planner: budget, k,"),
                           (["-m", "generator=random", f"instances={tmp_path}", "--cfg", "hydra"],
                            "error: give only one of -m/--multirun, --cfg, --run"),
                           ([f"out_dir={blocker}", "generator=random", f"instances={tmp_path}"],
                            f"error: out_dir={blocker}: cannot create")):
        run = subprocess.run([sys.executable, "-m", "plansuite.cli.eval", *args], text=True,
                             capture_output=True, timeout=300)
        lines = run.stderr.strip().splitlines()
        assert run.returncode == 1 and lines[-1].startswith(expected), run.stderr[-500:]
        assert sum(ln.startswith("error:") for ln in lines) == 1 and "Traceback" not in run.stderr
        if "cannot create" not in expected:  # found before Hydra starts: its own report never printed
            assert lines == lines[-1:], run.stderr


def test_a_missing_plugin_names_the_extra_to_install(monkeypatch, capsys, tmp_path):
    """The Optuna sweeper's config (registered by hydra-optuna-sweeper) removed, as when the
    package is not installed: one line saying which extra installs it, before Hydra starts."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins

    from plansuite.cli import eval as eval_cli

    Plugins.instance()  # the installed plugins register their configs once, here
    monkeypatch.delitem(ConfigStore.instance().repo["hydra"]["sweeper"], "optuna.yaml")
    monkeypatch.setattr(sys, "argv", ["plansuite-eval", "-m", "hparams_search=temperature",
                                      "generator=random", f"hydra.sweep.dir={tmp_path / 'sweep'}"])
    with pytest.raises(SystemExit) as ended:
        eval_cli.main()
    assert ended.value.code == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: hparams_search=temperature: needs hydra/sweeper=optuna, a plugin that is not "
        "installed: pip install 'plansuite[optuna]'"]
    assert not (tmp_path / "sweep").exists()


def test_a_sweep_with_one_unknown_option_runs_none_of_its_jobs(tmp_path):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "plansuite.cli.eval", "-m", "generator=random",
                          f"instances={tmp_path}", "planner=random_restart,nonexistent",
                          f"hydra.sweep.dir={tmp_path / 'sweep'}"], text=True, capture_output=True, timeout=300)
    assert run.returncode == 1 and run.stderr.strip().splitlines() == [
        "error: planner=nonexistent: unknown option (choose from fast_downward, generator, "
        "generator_verifier, posthoc, random_restart, refine_resume, refine_resume_env)"]
    assert not (tmp_path / "sweep").exists()


def test_training_without_a_data_dir_is_one_line(capsys):
    pytest.importorskip("lightning")
    from hydra import compose, initialize_config_dir

    from plansuite.cli import CONF_DIR
    from plansuite.cli.train import run

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="train", overrides=["logger=none"])
    with pytest.raises(SystemExit) as info:
        run(cfg)
    assert info.value.code == 1
    assert capsys.readouterr().err == "error: data_dir: required (a dataset directory from plansuite-data)\n"


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "tpu"])
def test_an_unknown_device_lists_the_choices(device):
    from plansuite.planning.adapters import resolve_device

    with pytest.raises(ConfigError, match=rf"device={device}: unknown device \(choose from cpu, "
                                          r"cuda, cuda:N, mps, auto\)"):
        resolve_device(device)
    assert resolve_device("cpu") == "cpu" and resolve_device("cuda:1") == "cuda:1"


def test_a_failed_instantiate_is_one_line_with_key_class_and_cause(capsys):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from plansuite.cli import friendly_errors

    @friendly_errors
    def build():
        cfg = OmegaConf.create({"trainer": {"_target_": "fractions.Fraction", "numerator": "x1"}})
        return instantiate(cfg.trainer)

    with pytest.raises(SystemExit) as info:
        build()
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: trainer: cannot build fractions.Fraction "
                                                   "(ValueError: Invalid literal for Fraction"), err


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("0", "0")])
def test_the_commands_default_to_an_offline_hub_like_the_makefile(given, expected):
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    if given is not None:
        env["HF_HUB_OFFLINE"] = given
    run = subprocess.run([sys.executable, "-c", "import os, plansuite.cli; "
                          "print(os.environ['HF_HUB_OFFLINE'])"], env=env, text=True,
                         capture_output=True, timeout=120)
    assert run.stdout.strip() == expected, run.stderr


def _limited_run(argv: list[str], max_bytes: int, home: Path):
    """A command whose files may not grow past ``max_bytes`` (``ulimit -f``): writes fail with
    EFBIG as they fail with ENOSPC on a full disk (Python ignores SIGXFSZ)."""
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "WANDB_MODE": "offline",
           "HOME": str(home), "OMP_NUM_THREADS": "1"}
    bin_dir = Path(sys.executable).parent
    return subprocess.run([str(bin_dir / argv[0]), *argv[1:]], capture_output=True, text=True,
                          preexec_fn=limit, env=env, timeout=300)


def _assert_one_io_line(run, out_dir: Path) -> None:
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-800:]
    assert [ln for ln in lines if ln.startswith("error:")] == [lines[-1]]
    assert str(out_dir) in lines[-1] and "File too large" in lines[-1], lines[-1]
    assert not [p for p in out_dir.rglob("*") if ".tmp" in p.name]  # no torn temp files


@pytest.mark.parametrize("max_bytes", [3000, 100_000])
def test_an_evaluation_on_a_full_disk_is_one_line_naming_out_dir(tiny_dataset, tmp_path, max_bytes):
    out = tmp_path / "e"
    run = _limited_run(["plansuite-eval", "planner=random_restart", f"instances={tiny_dataset}/test",
                        f"out_dir={out}", "logger=none", "optimal.enabled=false",
                        "save_traces=true"], max_bytes, tmp_path)
    _assert_one_io_line(run, out)


def test_a_dataset_on_a_full_disk_is_one_line_and_leaves_nothing(tmp_path):
    out = tmp_path / "d"
    run = _limited_run(["plansuite-data", "dataset=tiny", f"out_dir={out}"], 20_000, tmp_path)
    _assert_one_io_line(run, out)
    assert not out.exists()  # the dataset is built in a temporary folder, renamed when complete


@pytest.mark.slow
def test_training_on_a_full_disk_is_one_line_naming_out_dir(tiny_dataset, tmp_path):
    out = tmp_path / "t"
    run = _limited_run(["plansuite-train", "model=generator", f"data_dir={tiny_dataset}",
                        f"out_dir={out}", "logger=none", "trainer.max_steps=3"], 100_000, tmp_path)
    _assert_one_io_line(run, out)


def test_an_evaluation_with_another_world_size_beside_a_live_shard_is_refused(instances, tmp_path):
    out = tmp_path / "eval"
    held = lock_shard(out, 1, world=2)  # shard 1 of 2 is running here
    try:
        with pytest.raises(ConfigError, match=r"shard-1 of an evaluation with another world size is "
                                              r"running here \(pid .*shard\.world=2\); "
                                              r"shard\.world=3 now would plan some instances twice"):
            run_eval(instances, out, val=False, rank=2, world=3)
        assert not (out / "journal" / "shard-2.jsonl").exists()
        assert run_eval(instances, out, val=False, rank=0, world=2) is None  # the same split: fine
    finally:
        held.close()
    assert run_eval(instances, out, val=False, rank=0, world=1) is not None  # a later resume: any world
