"""``plansuite-equiv`` as a user runs it: a subprocess printing JSON, exit 0 unless unreadable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plansuite.domains import builtin_path

REF = """(define (problem ref) (:domain gripper)
  (:objects rooma roomb - room ball1 ball2 - ball left right - gripper)
  (:init (at-robby rooma) (at ball1 rooma) (at ball2 rooma) (free left) (free right))
  (:goal (and (at ball1 roomb) (at ball2 roomb))))
"""
RENAMED_UNDERSPECIFIED_OK = REF.replace("rooma", "kitchen").replace("roomb", "hall").replace(
    "(at ball2 hall))", "(at ball2 hall) (free left))")


def equiv(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("plansuite-equiv", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "plansuite.cli.equiv"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PLANSUITE_DEBUG": ""})


@pytest.fixture
def files(tmp_path):
    def write(name, text):
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def test_match_prints_json_with_mapping(files):
    proc = equiv(files("ref.pddl", REF), files("gen.pddl", RENAMED_UNDERSPECIFIED_OK), "--domain", "gripper")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) >= {"parse", "structural", "semantic", "mapping"}
    assert out["parse"] is True and out["structural"] is False and out["semantic"] is True
    assert out["mapping"]["kitchen"] == "rooma" and out["mapping"]["hall"] == "roomb"


def test_wrong_and_garbage_candidates_still_exit_zero(files, tmp_path):
    wrong = REF.replace("(at ball2 roomb))", "(at ball2 rooma))")
    proc = equiv(files("ref.pddl", REF), files("wrong.pddl", wrong), "--domain", "gripper")
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["semantic"] is False and out["mapping"] is None
    proc = equiv(files("ref.pddl", REF), files("junk.pddl", "here is your problem: (define"), "--domain",
                 str(builtin_path("gripper")))  # a domain file works as well as a built-in name
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["parse"] is False and "parse" in out["reasons"]


def test_unreadable_input_exits_nonzero_with_one_line(files, tmp_path):
    ref = files("ref.pddl", REF)
    for args, needle in (([ref, str(tmp_path / "missing.pddl"), "--domain", "gripper"], "missing.pddl"),
                         ([files("bad.pddl", "(define (problem"), ref, "--domain", "gripper"], "bad.pddl"),
                         ([ref, ref, "--domain", "no-such-domain"], "no-such-domain")):
        proc = equiv(*args)
        assert proc.returncode == 1, proc.stdout
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0]
