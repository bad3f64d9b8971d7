"""Operational checks: every diagnostic kind, located, and the stage gating."""

from __future__ import annotations

import pytest

from plansuite.domains import builtin_path
from plansuite.nl2pddl.judging.problem_checks import OperationalChecker
from plansuite.pddl.fast_downward import PlanResult
from plansuite.pddl.val import ValResult

BW_OK = """(define (problem p) (:domain blocksworld-4ops)
  (:objects a b c)
  (:init (on-table a) (on-table b) (on-table c) (clear a) (clear b) (clear c) (arm-empty))
  (:goal (and (on a b) (on b c))))
"""
GR_OK = """(define (problem g) (:domain gripper)
  (:objects rooma roomb - room ball1 - ball left right - gripper)
  (:init (at-robby rooma) (at ball1 rooma) (free left) (free right))
  (:goal (and (at ball1 roomb))))
"""


@pytest.fixture(scope="module")
def bw():
    return OperationalChecker(builtin_path("blocksworld"))


@pytest.fixture(scope="module")
def gr():
    return OperationalChecker(builtin_path("gripper"))


def test_a_good_problem_passes_with_a_validated_plan(bw, gr):
    for checker, text in ((bw, BW_OK), (gr, GR_OK)):
        report = checker.check(text)
        assert report.success and report.parsed and report.domain_consistent
        assert report.solvable and report.plan_valid and not report.diagnostics
        assert report.plan and all(step.startswith("(") for step in report.plan)


@pytest.mark.parametrize("text,kind,line", [
    (BW_OK.replace("(on b c))))", "(on b c)))"), "parse", 4),  # unbalanced: located by the parser
    # The parser itself refuses constructs whose requirement is missing.
    (BW_OK.replace("(:goal (and (on a b) (on b c)))", "(:goal (or (on a b) (on b c)))"), "requirement", None),
])
def test_parse_stage(bw, text, kind, line):
    report = bw.check(text)
    assert not report.parsed and not report.success
    assert report.domain_consistent is None and report.solvable is None and report.critic_accepted is None
    [d] = report.diagnostics
    assert d.kind == kind and d.line == line and d.source == "candidate.pddl"
    assert "line" not in d.construct  # the location moved from the text into `line`


@pytest.mark.parametrize("checker,text,kind,construct,line", [
    ("bw", BW_OK.replace("(on b c))", "(on b d))"), "undeclared-object", "goal (on b d)", 4),
    ("bw", BW_OK.replace("(clear c)", "(klear c)"), "undeclared-predicate", "init (klear c)", 3),
    ("bw", BW_OK.replace("(on a b)", "(on a)"), "arity", "goal (on a)", 4),
    ("gr", GR_OK.replace("(at ball1 roomb)", "(at ball1 left)"), "type", "goal (at ball1 left)", 4),
    ("gr", GR_OK.replace("ball1 - ball", "ball1 - box"), "undeclared-type", "object ball1", None),
    ("bw", BW_OK.replace("(:objects a b c)", "(:objects a b c - block)"), "undeclared-type", "object a", None),
    ("bw", BW_OK.replace("(on b c))", "(on b c) (not (clear a)))"), "requirement", "goal", None),
    ("bw", BW_OK.replace("(:domain blocksworld-4ops)", "(:domain blocks)"), "domain-name",
     "(:domain blocks)", None),
])
def test_domain_consistency_kinds(bw, gr, checker, text, kind, construct, line):
    report = {"bw": bw, "gr": gr}[checker].check(text)
    assert report.parsed and report.domain_consistent is False and not report.success
    assert report.solvable is None  # the planner never sees an inconsistent problem
    d = next(d for d in report.diagnostics if d.kind == kind)
    assert d.construct == construct and d.line == line


def test_duplicate_of_a_domain_constant(tmp_path):
    domain = tmp_path / "d.pddl"
    domain.write_text("""(define (domain lamp) (:requirements :strips) (:constants sun)
      (:predicates (lit ?x)) (:action off :parameters (?x) :precondition (lit ?x) :effect (not (lit ?x))))""")
    text = "(define (problem p) (:domain lamp) (:objects sun l1) (:init) (:goal (and (lit l1))))"
    report = OperationalChecker(domain).check(text)
    assert [d.kind for d in report.diagnostics] == ["duplicate"]


def test_unsolvable(bw):
    report = bw.check(BW_OK.replace("(arm-empty)", ""))  # nothing can ever be picked up
    assert report.domain_consistent and report.solvable is False and report.plan_valid is None
    [d] = report.diagnostics
    assert d.kind == "unsolvable" and "cannot be reached" in d.message and d.line == 4  # (:goal


def test_planner_timeout_and_error_and_invalid_plan_are_reported():
    def planner_with(result):
        return OperationalChecker(builtin_path("blocksworld"), planner=lambda d, p: result)

    report = planner_with(PlanResult("timeout", None, 20.0, "time or memory limit")).check(BW_OK)
    assert report.solvable is None and [d.kind for d in report.diagnostics] == ["planner-timeout"]
    report = planner_with(PlanResult("error", None, 0.1, "exit 31: translator crashed")).check(BW_OK)
    assert [d.kind for d in report.diagnostics] == ["planner-error"] and "translator" in report.diagnostics[0].message
    # A plan that VAL rejects (the real VAL, fed a wrong plan by a broken planner).
    report = planner_with(PlanResult("solved", ["(pickup a)", "(stack a c)"], 0.1)).check(BW_OK)
    assert report.solvable is True and report.plan_valid is False and not report.success
    [d] = report.diagnostics
    assert d.kind == "plan-invalid" and "VAL" in d.message


def test_validator_is_called_with_the_planner_plan():
    seen = []

    def validator(domain_file, problem_file, plan):
        seen.append((domain_file.name, problem_file.read_text(), plan))
        return ValResult(True, "Plan valid")

    checker = OperationalChecker(builtin_path("blocksworld"), validator=validator,
                                 planner=lambda d, p: PlanResult("solved", ["(pickup a)"], 0.1))
    assert checker.check(BW_OK).success
    assert seen == [("blocksworld.pddl", BW_OK, ["(pickup a)"])]
