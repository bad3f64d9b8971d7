"""Numeric goals (issue 42, item 5): read for any numeric domain file, compared structurally
under renaming, planned by ENHSP and validated by VAL, judged by plansuite-equiv."""

from __future__ import annotations

import json

import pytest
from test_planners21 import needs_enhsp

from plansuite.cli import equiv
from plansuite.errors import PDDLError
from plansuite.nl2pddl.judging.equivalence import compare
from plansuite.pddl import planners, val
from plansuite.pddl.expressions import canonical, expr_text, parse_expr
from plansuite.pddl.model import problem_to_pddl, rename_problem
from plansuite.pddl.numeric_goals import load_problem21, parse_problem21
from plansuite.pddl.parse import load_domain

COUNTERS = """; counters that go up and down; a counter at 3 or more can be marked done
(define (domain counters)
  (:requirements :typing :numeric-fluents)
  (:types counter)
  (:predicates (done ?c - counter))
  (:functions (value ?c - counter) (max-int) (steps))
  (:action increment
    :parameters (?c - counter)
    :precondition (and (<= (+ (value ?c) 1) (max-int)))
    :effect (and (increase (value ?c) 1) (increase (steps) 1)))
  (:action decrement
    :parameters (?c - counter)
    :precondition (and (>= (value ?c) 1))
    :effect (and (decrease (value ?c) 1) (increase (steps) 1)))
  (:action finish
    :parameters (?c - counter)
    :precondition (and (>= (value ?c) 3))
    :effect (and (done ?c))))
"""
REFERENCE = """(define (problem count) (:domain counters)
  (:objects c0 c1 - counter)
  (:init (= (max-int) 5) (= (value c0) 2) (= (value c1) 0) (= (steps) 0))
  (:goal (and (<= (+ (value c0) 1) (value c1))))
  (:metric minimize (steps)))
"""
# c0 -> x, c1 -> y, init reordered, the comparison flipped and its sum's operands swapped
RENAMED = """(define (problem other) (:domain counters)
  (:objects y x - counter)
  (:init (= (steps) 0) (= (value y) 0) (= (value x) 2) (= (max-int) 5))
  (:goal (>= (value y) (+ 1 (value x))))
  (:metric minimize (steps)))
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "counters.pddl").write_text(COUNTERS)
    (tmp_path / "ref.pddl").write_text(REFERENCE)
    return tmp_path


@pytest.fixture
def domain(files):
    return load_domain(files / "counters.pddl")


@pytest.fixture
def reference(files, domain):
    return load_problem21(files / "ref.pddl", domain)


def test_the_numeric_goal_is_read_in_canonical_form(reference):
    assert reference.goal_pos == frozenset()
    assert [expr_text(e) for e in reference.goal_numeric] == ["(<= (+ (value c0) 1) (value c1))"]
    assert reference.metric == "minimize (steps)"


def test_goals_mix_literals_and_comparisons_and_round_trip(domain):
    text = REFERENCE.replace("(:goal (and", "(:goal (and (done c1) (not (< (value c1) 4))")
    problem = parse_problem21(text, domain)
    assert problem.goal_pos == {("done", "c1")}
    assert {expr_text(e) for e in problem.goal_numeric} == {
        "(<= (+ (value c0) 1) (value c1))", "(<= 4 (value c1))"}
    again = parse_problem21(problem_to_pddl(problem, domain), domain)
    assert again.goal_numeric == problem.goal_numeric and again.goal_pos == problem.goal_pos


def test_canonical_expressions_ignore_writing_only():
    def same(a: str, b: str) -> bool:
        return canonical(parse_expr(a)) == canonical(parse_expr(b))

    assert same("(> (f a) (g))", "(< (g) (f a))")
    assert same("(+ (f a) (+ 1 (g)))", "(+ (g) (f a) 1)")  # n-ary and nested sums
    assert same("(- (f a))", "(* -1 (f a))") and same("(+ (f a) 0.5 0.5)", "(+ 1 (f a))")
    assert same("(= (f a) (g))", "(= (g) (f a))")
    assert not same("(- (f a) (g))", "(- (g) (f a))") and not same("(< (f a) 1)", "(<= (f a) 1)")


def test_renamed_copy_is_structurally_equal_with_the_joint_renaming(domain, reference):
    result = compare(reference, RENAMED, domain)
    assert result.parse is True and result.structural is True
    assert result.mapping == {"x": "c0", "y": "c1"}
    assert result.semantic is None  # numeric goal states are not modelled (the reason says so)


def test_rename_problem_renames_numeric_goals(domain, reference):
    swapped = rename_problem(reference, {"c0": "c1", "c1": "c0"})
    assert [expr_text(e) for e in swapped.goal_numeric] == ["(<= (+ (value c1) 1) (value c0))"]


@pytest.mark.parametrize("old, new, reason", [
    ("(+ 1 (value x))", "(+ 2 (value x))", "numeric goal differs: reference has (<= (+ (value "
     "<counter>) 1) (value <counter>)), generated (<= (+ (value <counter>) 2)"),
    ("(>= (value y)", "(> (value y)", "numeric goal differs"),
    ("(>= (value y) (+ 1 (value x)))", "(>= (value x) (+ 1 (value y)))",
     "no renaming of objects makes the problems identical"),
    ("(>= (value y) (+ 1 (value x)))", "(and (>= (value y) (+ 1 (value x))) (< (value x) 9))",
     "numeric goal has 2 comparison(s), reference has 1"),
    ("minimize (steps)", "maximize (steps)", "metric direction differs"),
    ("minimize (steps)", "minimize (+ (steps) (value x))", "metric differs"),
    ("minimize (steps)", "minimize (max-int)", "metric differs"),
])
def test_changed_bound_comparison_roles_or_metric_differ(domain, reference, old, new, reason):
    assert old in RENAMED
    result = compare(reference, RENAMED.replace(old, new), domain)
    assert result.parse is True and result.structural is False and result.mapping is None
    assert reason in result.reasons["structural"], result.reasons


def test_swapped_roles_are_equal_when_the_counters_are_symmetric(domain):
    symmetric = REFERENCE.replace("(= (value c0) 2)", "(= (value c0) 0)")
    swapped = symmetric.replace("(+ (value c0) 1) (value c1)", "(+ (value c1) 1) (value c0)")
    result = compare(parse_problem21(symmetric, domain), swapped, domain)
    assert result.structural is True and result.mapping == {"c0": "c1", "c1": "c0"}


def test_metric_values_follow_the_same_renaming(domain, reference):
    # the metric names x, which the goal maps to c0: a metric over c1 cannot match
    ref = parse_problem21(REFERENCE.replace("minimize (steps)", "minimize (value c1)"), domain)
    assert compare(ref, RENAMED.replace("minimize (steps)", "minimize (value y)"), domain).structural
    assert not compare(ref, RENAMED.replace("minimize (steps)", "minimize (value x)"),
                       domain).structural


@pytest.mark.parametrize("goal, message", [
    ("(<= (+ (value c0) 1))", "goal (<= (+ (value c0) 1)): '<=' compares two expressions, got 1"),
    ("(<= (/ (value c0)) 2)", "'/' takes two operands, got 1"),
    ("(<= (+ (value c0)) 2)", "'+' takes two or more operands, got 1"),
    ("(<= (vlue c0) 1)", "function 'vlue' is not declared in the domain's :functions"),
    ("(<= (value c9) 1)", "object 'c9' is not declared"),
    ("(<= c0 1)", "'c0' is not a number or a function term"),
    ("(not (= (value c0) 1))", "a negated numeric equality is not supported"),
])
def test_a_bad_numeric_goal_is_one_located_line(domain, goal, message):
    text = REFERENCE.replace("(<= (+ (value c0) 1) (value c1))", goal)
    with pytest.raises(PDDLError) as err:
        parse_problem21(text, domain, "bad.pddl")
    assert message in str(err.value) and str(err.value).startswith("bad.pddl")
    assert len(str(err.value).splitlines()) == 1


@pytest.mark.parametrize("goal", ["(not (= (value x) 1))", "(< (value x))", "(< (+) 1)"])
def test_an_unreadable_generated_comparison_does_not_parse(domain, reference, goal):
    text = RENAMED.replace("(:goal (>=", f"(:goal (and {goal} (>=").replace("(:metric", ")(:metric")
    result = compare(reference, text, domain, "gen.pddl")
    assert result.parse is False and result.reasons["parse"].startswith("gen.pddl:4: goal")


def test_a_numeric_goal_in_a_classical_domain_is_refused(tmp_path):
    from plansuite.domains import load_builtin

    bw = load_builtin("blocksworld")
    text = (f"(define (problem p) (:domain {bw.name}) (:objects a) (:init (clear a))\n"
            "  (:goal (and (clear a) (< (height a) 2))))")
    with pytest.raises(PDDLError, match=r"p.pddl:2: goal \(< \(height a\) 2\): a numeric "
                                        f"comparison, but domain '{bw.name}' declares no numeric"):
        parse_problem21(text, bw, "p.pddl")


@needs_enhsp
def test_enhsp_plans_a_numeric_goal_and_val_validates_it(files, domain):
    problem = files / "mixed.pddl"
    problem.write_text(REFERENCE.replace("(:goal (and", "(:goal (and (done c1)"))
    load_problem21(problem, domain)  # our reader accepts what the planner and VAL read
    assert planners.planner_for(domain) == "enhsp"
    result = planners.solve(files / "counters.pddl", problem, time_limit=60, domain=domain)
    assert result.status == "solved" and result.plan
    assert "(finish c1)" in result.plan
    assert val.validate(files / "counters.pddl", problem, result.plan).valid
    # c1 must end at 3 or more: one increment less misses the numeric goal
    short = list(result.plan)
    short.remove("(increment c1)")
    assert not val.validate(files / "counters.pddl", problem, short).valid


def test_plansuite_equiv_takes_the_numeric_domain_file(files, capsys):
    (files / "gen.pddl").write_text(RENAMED)
    (files / "bound.pddl").write_text(RENAMED.replace("(+ 1 (value x))", "(+ 2 (value x))"))
    argv = [str(files / "ref.pddl"), "", "--domain", str(files / "counters.pddl")]
    equiv.main([*argv[:1], str(files / "gen.pddl"), *argv[2:]])
    same = json.loads(capsys.readouterr().out)
    assert same["parse"] is True and same["structural"] is True
    assert same["mapping"] == {"x": "c0", "y": "c1"}
    equiv.main([*argv[:1], str(files / "bound.pddl"), *argv[2:]])
    bound = json.loads(capsys.readouterr().out)
    assert bound["structural"] is False and "numeric goal differs" in bound["reasons"]["structural"]


def test_plansuite_equiv_reports_a_bad_numeric_goal_in_one_line(files, capsys, monkeypatch):
    monkeypatch.delenv("PLANSUITE_DEBUG", raising=False)
    (files / "gen.pddl").write_text(RENAMED.replace("(+ 1 (value x))", "(+ 1 (value x) ("))
    bad_ref = files / "bad.pddl"
    bad_ref.write_text(REFERENCE.replace("1) (value c1)", "1) (value c1 c0)"))
    equiv.main([str(files / "ref.pddl"), str(files / "gen.pddl"), "--domain",
                str(files / "counters.pddl")])
    out = json.loads(capsys.readouterr().out)
    assert out["parse"] is False and "gen.pddl" in out["reasons"]["parse"]
    with pytest.raises(SystemExit) as exit_:
        equiv.main([str(bad_ref), str(bad_ref), "--domain", str(files / "counters.pddl")])
    assert exit_.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {bad_ref}:4: goal (<= (+ (value c0) 1) (value c1 c0)): "
                   "'value' takes 1 argument(s), got 2"]


def test_a_numeric_domain_without_its_requirement_is_read_as_pddl21(tmp_path):
    path = tmp_path / "noreq.pddl"
    path.write_text(COUNTERS.replace(":numeric-fluents", ""))
    with pytest.raises(PDDLError, match="numeric fluents used without :numeric-fluents"):
        load_domain(path)
