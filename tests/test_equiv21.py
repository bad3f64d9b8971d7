"""Structural equivalence of numeric/temporal problems, and plansuite-equiv on them (issue 12)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plansuite.domains import BUILTIN_DIR
from plansuite.nl2pddl.judging.equivalence import canonical_metric, compare
from plansuite.pddl.parse import load_domain, load_problem

DATA = Path(__file__).parent / "data21"
FUEL_DOMAIN = BUILTIN_DIR / "fuel-delivery.pddl"
TWO_TRUCKS = """(define (problem two) (:domain fuel-delivery)
  (:objects t1 t2 - truck la lb - location p1 - package)
  (:init (at t1 la) (at t2 lb) (pkg-at p1 la) (road la lb) (road lb la)
         (= (fuel t1) 4) (= (fuel t2) 7) (= (carried t1) 0) (= (carried t2) 0)
         (= (capacity t1) 1) (= (capacity t2) 2) (= (fuel-used) 0))
  (:goal (and (pkg-at p1 lb)))
  (:metric minimize (+ (fuel-used) (* 2 (fuel t1)))))
"""
# t1 <-> t2 and la -> depot, lb -> shop, every section reordered, the metric's operands swapped
RENAMED = """(define (problem other) (:domain fuel-delivery)
  (:objects depot shop - location p1 - package t2 t1 - truck)
  (:init (= (fuel-used) 0) (= (capacity t1) 2) (= (capacity t2) 1)
         (= (carried t2) 0) (= (carried t1) 0) (= (fuel t2) 4) (= (fuel t1) 7)
         (road shop depot) (road depot shop) (pkg-at p1 depot) (at t1 shop) (at t2 depot))
  (:goal (and (pkg-at p1 shop)))
  (:metric minimize (+ (* (fuel t2) 2) (fuel-used))))
"""


@pytest.fixture(scope="module")
def fuel():
    return load_domain(FUEL_DOMAIN)


@pytest.fixture(scope="module")
def reference(fuel, tmp_path_factory):
    path = tmp_path_factory.mktemp("ref") / "two.pddl"
    path.write_text(TWO_TRUCKS)
    return load_problem(path, fuel)


def test_renamed_and_reordered_numeric_problem_is_structurally_equal(fuel, reference):
    result = compare(reference, RENAMED, fuel)
    assert result.structural is True
    assert result.mapping == {"t2": "t1", "t1": "t2", "depot": "la", "shop": "lb", "p1": "p1"}
    assert result.semantic is None and "does not decide numeric" in result.reasons["semantic"]


def test_values_must_follow_the_same_renaming(fuel, reference):
    # the values swapped between the trucks but the trucks' places not: no bijection fits both
    swapped = RENAMED.replace("(= (fuel t2) 4) (= (fuel t1) 7)", "(= (fuel t2) 7) (= (fuel t1) 4)")
    assert compare(reference, swapped, fuel).structural is False


@pytest.mark.parametrize("old, new, reason", [
    ("(= (fuel t2) 7)", "(= (fuel t2) 6)", "numeric fluent values differ (e.g. (fuel t2): 6, reference 7)"),
    ("(= (fuel-used) 0)", "", "6 numeric fluent values, reference has 7"),
    ("minimize (+", "maximize (+", "metric direction differs"),
    ("(* 2 (fuel t1))", "(* 3 (fuel t1))", "metric differs"),
    ("(* 2 (fuel t1))", "(* 2 (fuel t2))", "metric differs"),
])
def test_changed_value_fluent_or_metric_is_rejected(fuel, reference, old, new, reason):
    assert old in TWO_TRUCKS
    result = compare(reference, TWO_TRUCKS.replace(old, new), fuel)
    assert result.parse is True and result.structural is False
    assert reason in result.reasons["structural"], result.reasons


def test_metric_canonical_form_sorts_commutative_operands_only():
    assert canonical_metric("minimize (* (f a) 2)") == canonical_metric("minimize (* 2 (f a))")
    assert canonical_metric("minimize (- (f a) 2)") != canonical_metric("minimize (- 2 (f a))")
    assert canonical_metric("minimize (total-time)")[0] != canonical_metric("maximize (total-time)")[0]


def test_temporal_problem_durations_are_compared(tmp_path):
    timed = load_domain(BUILTIN_DIR / "timed-delivery.pddl")
    ref = load_problem(DATA / "timed-p1.pddl", timed)
    text = (DATA / "timed-p1.pddl").read_text()
    renamed = text.replace("r1", "bot").replace("ra", "kitchen").replace("rb", "hall")
    assert compare(ref, renamed, timed).structural is True
    slower = compare(ref, text.replace("(move-time r1) 3", "(move-time r1) 5"), timed)
    assert slower.structural is False and "temporal" in slower.reasons["semantic"]


def equiv(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("plansuite-equiv", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "plansuite.cli.equiv"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PLANSUITE_DEBUG": ""})


def test_cli_accepts_renamed_numeric_problem_and_rejects_a_flipped_metric(tmp_path):
    ref, gen, flipped = tmp_path / "ref.pddl", tmp_path / "gen.pddl", tmp_path / "flip.pddl"
    ref.write_text(TWO_TRUCKS)
    gen.write_text(RENAMED)
    flipped.write_text(RENAMED.replace("minimize", "maximize"))
    ok = equiv(str(ref), str(gen), "--domain", str(FUEL_DOMAIN))
    assert ok.returncode == 0, ok.stderr
    verdict = json.loads(ok.stdout)
    assert verdict["structural"] is True and verdict["semantic"] is None
    bad = json.loads(equiv(str(ref), str(flipped), "--domain", str(FUEL_DOMAIN)).stdout)
    assert bad["structural"] is False and "direction" in bad["reasons"]["structural"]


def test_cli_names_the_file_and_construct_of_an_inconsistent_reference(tmp_path):
    ref = tmp_path / "ref.pddl"
    ref.write_text(TWO_TRUCKS.replace("(= (fuel t2) 7)", "(= (fuel t2 la) 7)"))
    out = equiv(str(ref), str(ref), "--domain", str(FUEL_DOMAIN))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        f"error: {ref}:4: init (= (fuel t2 la) ...): 'fuel' takes 1 argument(s), got 2"]
