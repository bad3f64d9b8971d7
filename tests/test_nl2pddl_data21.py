"""NL->PDDL data for the PDDL 2.1 domains: references, wording, splits, corruptions (issue 12)."""

from __future__ import annotations

import random

import pytest

from plansuite.domains import load_builtin
from plansuite.nl2pddl.data.dataset import (
    NL2PDDLSpec,
    build_nl2pddl,
    load_critic_examples,
    load_pairs,
)
from plansuite.nl2pddl.data.scenes21 import corrupt21, describe21, scenarios21
from plansuite.nl2pddl.judging.equivalence import compare
from plansuite.pddl.checks import check_problem
from plansuite.pddl.model import problem_to_pddl
from plansuite.pddl.parse import parse_problem


@pytest.mark.parametrize("name", ["fuel-delivery", "timed-delivery"])
def test_reference_problems_are_consistent_and_round_trip(name):
    domain = load_builtin(name)
    found = scenarios21(name, 20, [1, 3], [2, 4], 1, 4, random.Random(0))
    assert len(found) == 8 + 20 and sum(s.abstract for s in found) == 8
    for s in found:
        text = problem_to_pddl(s.problem, domain)
        assert check_problem(parse_problem(text, domain, check=False), domain, text) == []
        assert compare(s.problem, text, domain).structural is True


def test_descriptions_state_the_numbers_and_the_metric():
    domain = load_builtin("fuel-delivery")
    s = scenarios21("fuel-delivery", 0, [2], [3], 1, 4, random.Random(0))[0]
    explicit = describe21(s, "explicit", random.Random(1))
    abstract = describe21(s, "abstract", random.Random(1))
    fuel = int(s.problem.fluents["(fuel truck1)"])
    for text in (explicit, abstract):
        assert f"{fuel} units of fuel" in text and "as little fuel as possible" in text
    assert "package1 at harbor" in explicit and "Every package must end up at harbor" in abstract
    assert domain.level == "numeric"
    timed = scenarios21("timed-delivery", 0, [1], [2], 1, 4, random.Random(0))[1]
    assert f"{int(timed.problem.fluents['(move-time robot1)'])} time units" in \
        describe21(timed, "explicit", random.Random(0))


@pytest.mark.parametrize("name, kind, detail", [
    ("fuel-delivery", "value", "->"), ("fuel-delivery", "direction", "minimize (fuel-used) -> maximize"),
    ("fuel-delivery", "fluent", "dropped (= "), ("timed-delivery", "duration", "(move-time robot1)"),
    ("timed-delivery", "direction", "-> maximize (total-time)"),
])
def test_each_corruption_kind_is_structurally_different(name, kind, detail):
    domain = load_builtin(name)
    s = scenarios21(name, 0, [2], [3], 1, 4, random.Random(0))[0]
    bad = corrupt21(s, domain, kind, random.Random(3))
    assert bad is not None and bad.kind == kind and detail in bad.detail
    assert compare(s.problem, problem_to_pddl(bad.problem, domain), domain).structural is False


def test_duration_corruption_does_not_exist_without_durations():
    domain = load_builtin("fuel-delivery")
    s = scenarios21("fuel-delivery", 0, [2], [3], 1, 4, random.Random(0))[0]
    assert corrupt21(s, domain, "duration", random.Random(0)) is None


def test_dataset_has_disjoint_splits_and_numeric_critic_labels(tmp_path):
    spec = NL2PDDLSpec(name="t", domain="timed-delivery", random_problems=30, min_objects=1,
                       max_objects=3, abstract_sizes=[1, 2], rooms=[2, 3])
    domain = load_builtin("timed-delivery")
    manifest = build_nl2pddl(spec, domain, "(define (domain timed-delivery))", tmp_path / "d", 0,
                             progress=lambda _: None)
    assert manifest["domain"] == "timed-delivery"
    groups = {split: {p.group for p in load_pairs(tmp_path / "d", split)} for split in ("train", "val", "test")}
    assert not (groups["train"] & groups["test"]) and not (groups["train"] & groups["val"])
    labels = {e.label for e in load_critic_examples(tmp_path / "d", "train")}
    assert labels == {"match", "direction", "fluent", "duration"}
    for example in load_critic_examples(tmp_path / "d", "train")[:12]:
        verdict = compare(parse_problem(next(p.problem for p in load_pairs(tmp_path / "d", "train")
                                             if p.id == example.pair), domain),
                          example.problem, domain).structural
        assert verdict is (example.label == "match"), example
