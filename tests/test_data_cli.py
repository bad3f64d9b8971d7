"""``plansuite-data`` end to end as a subprocess: the presets, a custom domain, and bad input."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

CLI = str(Path(sys.executable).with_name("plansuite-data"))


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    env.pop("PLANSUITE_DEBUG", None)
    return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=env)


def assert_dataset(out: Path, domain_name: str, n_test: int) -> dict:
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["domain"] == domain_name
    for name in ("domain.pddl", "train/trajectories.jsonl", "train/verifier.jsonl",
                 "val/trajectories.jsonl", "val/verifier.jsonl", "test/instances.jsonl",
                 "val_instances/instances.jsonl"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert len(list((out / "test").glob("p*.pddl"))) == n_test == manifest["counts"]["test"]["instances"]
    assert manifest["leakage"]["after_resampling"] == 0
    assert "out_dir" not in manifest["config"]
    return manifest


def assert_clean_failure(proc: subprocess.CompletedProcess, out: Path, *fragments: str) -> None:
    """Exit code != 0, one ``error:`` line naming the problem, no dataset and no temp dir left."""
    assert proc.returncode != 0, proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists() or out.is_file() or not any(out.iterdir()) or \
        (out / "keep.txt").exists()
    if out.parent.is_dir():
        assert not [p for p in out.parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


@pytest.mark.parametrize("domain", ["blocksworld", "gripper", "logistics"])
def test_tiny_preset_end_to_end(domain, tmp_path):
    out = tmp_path / "ds"
    proc = run_cli("dataset=tiny", f"domain={domain}", f"out_dir={out}", "seed=1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"[data] wrote {out}" in proc.stdout
    manifest = assert_dataset(out, {"blocksworld": "blocksworld-4ops"}.get(domain, domain), 50)
    assert manifest["config"]["dataset"]["name"] == "tiny" and manifest["seed"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # nothing else written


@pytest.fixture
def custom_folder(tmp_path, random_problem, keys_domain, keys_file, write_pddl) -> tuple[Path, Path]:
    folder = tmp_path / "keys"
    (folder / "problems").mkdir(parents=True)
    (folder / "domain.pddl").write_text(keys_file.read_text())
    rng = random.Random(11)
    for i in range(8):
        write_pddl(random_problem("keys", rng), keys_domain, folder / "problems" / f"k{i}.pddl")
    return folder / "domain.pddl", folder / "problems"


def test_custom_domain_end_to_end(custom_folder, tmp_path):
    dfile, problems = custom_folder
    out = tmp_path / "ds"
    proc = run_cli("dataset=tiny", "domain=custom", f"domain.file={dfile}",
                   f"domain.problems={problems}", "dataset.test_instances=10",
                   "dataset.val_instances=5", f"out_dir={out}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_dataset(out, "keys", 10)
    assert (out / "domain.pddl").read_text() == dfile.read_text()


def test_bad_input(custom_folder, tmp_path):
    dfile, problems = custom_folder
    out = tmp_path / "out" / "ds"

    broken = tmp_path / "broken.pddl"
    broken.write_text(dfile.read_text().replace("(:action go", "(:action go (", 1))
    proc = run_cli("domain=custom", f"domain.file={broken}", f"domain.problems={problems}",
                   f"out_dir={out}", cwd=tmp_path)
    assert_clean_failure(proc, out, "broken.pddl", "syntax error")

    (problems / "k3.pddl").write_text((problems / "k3.pddl").read_text().replace("(at ", "(att "))
    proc = run_cli("domain=custom", f"domain.file={dfile}", f"domain.problems={problems}",
                   f"out_dir={out}", cwd=tmp_path)
    assert_clean_failure(proc, out, "k3.pddl", "predicate 'att' is not declared")

    proc = run_cli("domain=custom", f"out_dir={out}", cwd=tmp_path)
    assert_clean_failure(proc, out, "domain=custom needs domain.file")

    proc = run_cli("domain.states.max_blocks=0", f"out_dir={out}", cwd=tmp_path)
    assert_clean_failure(proc, out, "domain.states", "max_blocks")

    (tmp_path / "afile").write_text("x")
    proc = run_cli(f"out_dir={tmp_path / 'afile' / 'ds'}", cwd=tmp_path)
    assert_clean_failure(proc, tmp_path / "afile" / "ds", "cannot write here", "not a directory")

    out.mkdir(parents=True)
    (out / "keep.txt").write_text("mine")
    proc = run_cli(f"out_dir={out}", cwd=tmp_path)
    assert_clean_failure(proc, out, "exists and is not empty")
    proc = run_cli(f"out_dir={out}", "overwrite=true", cwd=tmp_path)
    assert_clean_failure(proc, out, "not a plansuite dataset")
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize(("override", "choices"), [
    ("domain=sokoban", "blocksworld, custom, gripper"), ("dataset=huge", "demo, paper, tiny")])
def test_unknown_presets(override, choices, tmp_path):
    out = tmp_path / "ds"
    proc = run_cli(override, f"out_dir={out}", cwd=tmp_path)
    # one line naming the option and listing the choices, before Hydra starts
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1
    assert lines[0].startswith(f"error: {override}: unknown option (choose from {choices}")
    assert list(tmp_path.iterdir()) == []
