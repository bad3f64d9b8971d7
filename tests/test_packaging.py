"""The suite as users install it: a wheel (not editable) carries ``conf/`` and its CLIs find it;
the extras split the heavy or old-pinned tools from the core."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[1]


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_old_pinned_and_heavy_tools_are_extras_that_dev_pulls_in():
    project = pyproject()["project"]
    core = " ".join(project["dependencies"])
    for name in ("optuna", "sqlalchemy", "alembic", "submitit", "nbclient", "openai"):
        assert name not in core, name
    assert "pymimir" in core  # dataset.shortest_paths=true plans with it at run time
    extras = project["optional-dependencies"]
    assert {"optuna", "slurm", "notebook", "openai", "dev"} <= set(extras)
    assert any(d.startswith("plansuite[") and all(x in d for x in ("optuna", "slurm", "notebook", "openai"))
               for d in extras["dev"])


def test_constraints_pin_what_the_tests_ran_with():
    pins = dict(line.split("==", 1) for line in (REPO / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    from importlib.metadata import version

    for name in ("lightning", "hydra-core", "wandb", "optuna", "transformers"):
        assert pins[name] == version(name), name
    major, minor = sys.version_info[:2]
    assert pyproject()["project"]["requires-python"].startswith(f">={major}.{minor}")


@pytest.mark.slow
def test_a_wheel_installed_into_a_fresh_venv_runs_plansuite_data(tmp_path):
    source = tmp_path / "source"  # a copy: building in place would leave build/ in the checkout
    for folder in ("plansuite", "conf"):
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for file in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / file, source / file)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels), str(source)], check=True, capture_output=True)
    (wheel,) = wheels.glob("plansuite-*.whl")
    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True)
    # The dependencies come from this environment (no torch download); plansuite itself only
    # from the wheel: this environment's editable hook is a .pth file, which is not read here.
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "plansuite_test_deps.pth").write_text("\n".join(sorted(ours)) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(WANDB_MODE="offline", HF_HUB_OFFLINE="1")
    where = subprocess.run([python, "-c", "import plansuite.cli as c; print(c.CONF_DIR)"],
                           check=True, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert where.stdout.strip().startswith(str(site))  # the wheel's copy of conf/
    out = tmp_path / "data"
    done = subprocess.run([fresh / "bin" / "plansuite-data", "dataset=tiny", f"out_dir={out}",
                           "workers=1"], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "manifest.json").is_file() and any((out / "test").glob("*.pddl"))
    done = subprocess.run([fresh / "bin" / "plansuite-eval", "planner=random_restart",
                           f"instances={out / 'test'}", "limit=2", "logger=none", "val=false",
                           "optimal.enabled=false", f"out_dir={tmp_path / 'eval'}"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "eval" / "results.json").is_file()
